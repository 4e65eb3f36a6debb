//! A browser-posted sender's settings (`Profile::browser`, the plain HTML
//! form), read once at init: the page origins that may post, the thank-you
//! page, and the Turnstile widget's secret and where to verify its tokens.
//! Each is refused for a sender a browser does not post.

use shared::config::{invalid, secret_arn, ConfigError};
use shared::origin::{allowed_origin, origin_of};
use shared::Sender;

pub const ALLOWED_ORIGINS: &str = "ALLOWED_ORIGINS";
pub const THANK_YOU_URL: &str = "THANK_YOU_URL";
pub const TURNSTILE_SECRET: &str = "TURNSTILE_SECRET";
pub const TURNSTILE_SECRET_ARN: &str = "TURNSTILE_SECRET_ARN";
pub const TURNSTILE_VERIFY_URL: &str = "TURNSTILE_VERIFY_URL";
/// `true`: `TURNSTILE_VERIFY_URL` may be plain http anywhere, for a local
/// fake on Docker's bridge (`sam local invoke`); never set in AWS.
pub const TURNSTILE_ALLOW_HTTP: &str = "TURNSTILE_ALLOW_HTTP";

/// Cloudflare's siteverify:
/// <https://developers.cloudflare.com/turnstile/get-started/server-side-validation/>.
pub const DEFAULT_VERIFY_URL: &str = "https://challenges.cloudflare.com/turnstile/v0/siteverify";

/// The widget's secret key, given inline or kept in Secrets Manager.
#[derive(Clone, PartialEq, Eq)]
pub enum TurnstileSecret {
    Inline(String),
    SecretsManager(String),
}

impl std::fmt::Debug for TurnstileSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TurnstileSecret::Inline(_) => f.write_str("Inline(<redacted>)"),
            TurnstileSecret::SecretsManager(arn) => write!(f, "SecretsManager({arn})"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserConfig {
    /// `ALLOWED_ORIGINS`: the origins (`https://example.com`) whose pages
    /// may post, as browsers send them in `Origin`.
    pub origins: Vec<String>,
    /// `THANK_YOU_URL`: where a posted form's browser is sent next (303);
    /// on an allowed origin.
    pub thank_you_url: Option<String>,
    pub secret: TurnstileSecret,
    /// `TURNSTILE_VERIFY_URL`: Cloudflare's siteverify, or a local fake.
    pub verify_url: String,
}

const NAMES: [&str; 6] = [
    ALLOWED_ORIGINS,
    THANK_YOU_URL,
    TURNSTILE_SECRET,
    TURNSTILE_SECRET_ARN,
    TURNSTILE_VERIFY_URL,
    TURNSTILE_ALLOW_HTTP,
];

impl BrowserConfig {
    /// The settings of `sender` when a browser posts it; `None` otherwise,
    /// when none of them may be set.
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        sender: Sender,
    ) -> Result<Option<Self>, ConfigError> {
        if !sender.profile().browser {
            return match NAMES.iter().find(|name| get(name).is_some()) {
                Some(name) => Err(invalid(
                    name,
                    format!(
                        "applies only to a form a browser posts (SENDER=html), not {}; unset it",
                        sender.name()
                    ),
                )),
                None => Ok(None),
            };
        }
        let raw = get(ALLOWED_ORIGINS).ok_or(ConfigError::Missing(ALLOWED_ORIGINS))?;
        let mut origins = Vec::new();
        for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let origin = allowed_origin(entry).ok_or_else(|| {
                invalid(
                    ALLOWED_ORIGINS,
                    format!(
                        "{entry:?} is no page origin: https://host[:port], nothing after it \
                         (http only for localhost)"
                    ),
                )
            })?;
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        if origins.is_empty() {
            return Err(ConfigError::Missing(ALLOWED_ORIGINS));
        }
        let thank_you_url =
            match get(THANK_YOU_URL) {
                None => None,
                Some(url) => {
                    let url = url.trim().to_owned();
                    match origin_of(&url) {
                        Some(origin) if origins.contains(&origin) => Some(url),
                        _ => return Err(invalid(
                            THANK_YOU_URL,
                            "must be an address on one of ALLOWED_ORIGINS (never another site: \
                             no open redirect)",
                        )),
                    }
                }
            };
        let secret = match (get(TURNSTILE_SECRET), get(TURNSTILE_SECRET_ARN)) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    TURNSTILE_SECRET_ARN,
                    "set either TURNSTILE_SECRET or TURNSTILE_SECRET_ARN, not both",
                ))
            }
            (Some(secret), None) => TurnstileSecret::Inline(secret.trim().to_owned()),
            (None, Some(arn)) => {
                TurnstileSecret::SecretsManager(secret_arn(TURNSTILE_SECRET_ARN, &arn)?)
            }
            (None, None) => {
                return Err(ConfigError::Missing(
                    "TURNSTILE_SECRET or TURNSTILE_SECRET_ARN",
                ))
            }
        };
        let verify_url = get(TURNSTILE_VERIFY_URL)
            .map_or_else(|| DEFAULT_VERIFY_URL.to_owned(), |u| u.trim().to_owned());
        let allow_http = match get(TURNSTILE_ALLOW_HTTP).as_deref().map(str::trim) {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => return Err(invalid(TURNSTILE_ALLOW_HTTP, "expected true or false")),
        };
        let local_http = allow_http && verify_url.starts_with("http://");
        if origin_of(&verify_url).is_none() && !local_http {
            return Err(invalid(
                TURNSTILE_VERIFY_URL,
                "must be an https URL (http only on the loopback, for a local fake)",
            ));
        }
        Ok(Some(BrowserConfig {
            origins,
            thank_you_url,
            secret,
            verify_url,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(sender: Sender, pairs: &[(&str, &str)]) -> Result<Option<BrowserConfig>, ConfigError> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let get = shared::config::non_empty(move |name| env.get(name).cloned());
        BrowserConfig::from_lookup(&get, sender)
    }

    const ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:turnstile-AbCdEf";

    #[test]
    fn every_setting_and_its_default() {
        let config = load(
            Sender::Html,
            &[
                (
                    ALLOWED_ORIGINS,
                    "https://Example.com/, https://shop.example.com:8443",
                ),
                (THANK_YOU_URL, "https://example.com/thanks"),
                (TURNSTILE_SECRET_ARN, ARN),
            ],
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            config.origins,
            ["https://example.com", "https://shop.example.com:8443"]
        );
        assert_eq!(
            config.thank_you_url.as_deref(),
            Some("https://example.com/thanks")
        );
        assert_eq!(config.secret, TurnstileSecret::SecretsManager(ARN.into()));
        assert_eq!(config.verify_url, DEFAULT_VERIFY_URL);
        let local = load(
            Sender::Html,
            &[
                (ALLOWED_ORIGINS, "http://127.0.0.1:9002"),
                (TURNSTILE_SECRET, "0x4AAAAAAA-secret"),
                (
                    TURNSTILE_VERIFY_URL,
                    "http://127.0.0.1:4010/turnstile/v0/siteverify",
                ),
            ],
        )
        .unwrap()
        .unwrap();
        assert_eq!(local.thank_you_url, None);
        assert!(!format!("{local:?}").contains("0x4AAAAAAA"), "never shown");
        assert_eq!(load(Sender::Tally, &[]).unwrap(), None);
        let bridge = load(
            Sender::Html,
            &[
                (ALLOWED_ORIGINS, "https://example.com"),
                (TURNSTILE_SECRET, "s"),
                (
                    TURNSTILE_VERIFY_URL,
                    "http://172.17.0.1:4010/turnstile/v0/siteverify",
                ),
                (TURNSTILE_ALLOW_HTTP, "true"),
            ],
        );
        assert!(
            bridge.is_ok(),
            "a local fake on Docker's bridge: {bridge:?}"
        );
    }

    #[test]
    fn every_wrong_setting_is_named() {
        let base = [
            (ALLOWED_ORIGINS, "https://example.com"),
            (TURNSTILE_SECRET, "0x4AAAAAAA-secret"),
        ];
        let with = |name: &'static str, value: &'static str| {
            let mut pairs: Vec<(&str, &str)> =
                base.iter().copied().filter(|(n, _)| *n != name).collect();
            if !value.is_empty() {
                pairs.push((name, value));
            }
            load(Sender::Html, &pairs).unwrap_err().to_string()
        };
        let rows = [
            (ALLOWED_ORIGINS, "", ALLOWED_ORIGINS),
            (ALLOWED_ORIGINS, "http://example.com", "no page origin"),
            (
                ALLOWED_ORIGINS,
                "https://example.com/contact",
                "no page origin",
            ),
            (ALLOWED_ORIGINS, " , ", ALLOWED_ORIGINS),
            (
                THANK_YOU_URL,
                "https://evil.example/thanks",
                "open redirect",
            ),
            (THANK_YOU_URL, "/thanks", "open redirect"),
            (
                TURNSTILE_SECRET,
                "",
                "TURNSTILE_SECRET or TURNSTILE_SECRET_ARN",
            ),
            (TURNSTILE_SECRET_ARN, ARN, "not both"),
            (
                TURNSTILE_VERIFY_URL,
                "http://challenges.example.com/v",
                TURNSTILE_VERIFY_URL,
            ),
            (
                TURNSTILE_VERIFY_URL,
                "ftp://127.0.0.1/v",
                TURNSTILE_VERIFY_URL,
            ),
        ];
        for (name, value, said) in rows {
            let error = with(name, value);
            assert!(error.contains(said), "{name}={value}: {error}");
            assert!(!error.contains("0x4AAAAAAA"), "{error}");
        }
        let other = load(Sender::Tally, &[(ALLOWED_ORIGINS, "https://example.com")])
            .unwrap_err()
            .to_string();
        assert!(other.contains("SENDER=html"), "{other}");
    }
}
