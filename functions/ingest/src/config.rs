//! The function's configuration, read and checked once at init. A missing or
//! malformed variable stops start-up with a message naming it; nothing about
//! authentication has a silent default.

use http::header::HeaderName;
use shared::receipt::MAX_PAYLOAD_BYTES;
use shared::Retention;

use crate::auth::{AcceptedSecrets, AuthPolicy};

pub const RECEIPTS_TABLE: &str = "RECEIPTS_TABLE";
pub const RECEIPT_RETENTION_DAYS: &str = "RECEIPT_RETENTION_DAYS";
pub const WEBHOOK_AUTH: &str = "WEBHOOK_AUTH";
pub const WEBHOOK_SECRETS: &str = "WEBHOOK_SECRETS";
pub const MAX_BODY_BYTES: &str = "MAX_BODY_BYTES";

pub const DEFAULT_MAX_BODY_BYTES: usize = 256 * 1024;

/// Shortest secret accepted: a guessable secret is no authentication.
pub const MIN_SECRET_CHARS: usize = 16;

#[derive(Debug, Clone)]
pub struct Config {
    pub receipts_table: String,
    pub retention: Retention,
    pub auth: AuthPolicy,
    pub max_body_bytes: usize,
}

/// Never carries a secret's value, so it is safe to log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{0} is required but not set")]
    Missing(&'static str),
    #[error("{name} is invalid: {reason}")]
    Invalid { name: &'static str, reason: String },
}

fn invalid(name: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        name,
        reason: reason.into(),
    }
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup`, so tests need no process
    /// environment. Empty values count as unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());

        let receipts_table = get(RECEIPTS_TABLE).ok_or(ConfigError::Missing(RECEIPTS_TABLE))?;

        let retention = match get(RECEIPT_RETENTION_DAYS) {
            None => Retention::default(),
            Some(raw) => raw
                .trim()
                .parse()
                .ok()
                .and_then(Retention::days)
                .ok_or_else(|| {
                    invalid(
                        RECEIPT_RETENTION_DAYS,
                        format!("expected whole days from 1 to {}", Retention::MAX_DAYS),
                    )
                })?,
        };

        let max_body_bytes = match get(MAX_BODY_BYTES) {
            None => DEFAULT_MAX_BODY_BYTES,
            Some(raw) => raw
                .trim()
                .parse()
                .ok()
                .filter(|bytes| (1..=MAX_PAYLOAD_BYTES).contains(bytes))
                .ok_or_else(|| {
                    invalid(
                        MAX_BODY_BYTES,
                        format!(
                            "expected bytes from 1 to {MAX_PAYLOAD_BYTES} (a receipt must stay under DynamoDB's 400 KB item limit)"
                        ),
                    )
                })?,
        };

        let auth = parse_auth(
            get(WEBHOOK_AUTH).as_deref(),
            get(WEBHOOK_SECRETS).as_deref(),
        )?;

        Ok(Config {
            receipts_table,
            retention,
            auth,
            max_body_bytes,
        })
    }
}

fn parse_auth(mode: Option<&str>, secrets: Option<&str>) -> Result<AuthPolicy, ConfigError> {
    let mode = mode.ok_or(ConfigError::Missing(WEBHOOK_AUTH))?.trim();
    if mode == "none" {
        return match secrets {
            Some(_) => Err(invalid(
                WEBHOOK_SECRETS,
                "is set while WEBHOOK_AUTH=none; choose an authentication mode or unset it",
            )),
            None => Ok(AuthPolicy::None),
        };
    }
    let header_name = match mode {
        "bearer" | "basic" => None,
        _ => match mode.strip_prefix("header:") {
            Some(name) => Some(HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
                invalid(
                    WEBHOOK_AUTH,
                    "header:<Header-Name> needs a valid HTTP header name",
                )
            })?),
            None => {
                return Err(invalid(
                    WEBHOOK_AUTH,
                    "expected bearer, basic, header:<Header-Name> or none",
                ))
            }
        },
    };
    let secrets = parse_secrets(
        secrets.ok_or(ConfigError::Missing(WEBHOOK_SECRETS))?,
        mode == "basic",
    )?;
    Ok(match (mode, header_name) {
        ("bearer", _) => AuthPolicy::Bearer(secrets),
        ("basic", _) => AuthPolicy::Basic(secrets),
        (_, Some(name)) => AuthPolicy::Header { name, secrets },
        _ => unreachable!("modes were matched above"),
    })
}

/// Comma-separated secrets. The messages say which entry is wrong by its
/// position, never by its value.
fn parse_secrets(raw: &str, basic: bool) -> Result<AcceptedSecrets, ConfigError> {
    let entries: Vec<&str> = raw.split(',').map(str::trim).collect();
    for (index, entry) in entries.iter().enumerate() {
        let position = index + 1;
        if entry.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(invalid(
                WEBHOOK_SECRETS,
                format!("entry {position} contains whitespace"),
            ));
        }
        let secret_part = if basic {
            match entry.split_once(':') {
                Some((user, password)) if !user.is_empty() => password,
                _ => {
                    return Err(invalid(
                        WEBHOOK_SECRETS,
                        format!("entry {position} must be user:password for basic authentication"),
                    ))
                }
            }
        } else {
            entry
        };
        if secret_part.chars().count() < MIN_SECRET_CHARS {
            return Err(invalid(
                WEBHOOK_SECRETS,
                format!("entry {position} is shorter than {MIN_SECRET_CHARS} characters"),
            ));
        }
    }
    Ok(AcceptedSecrets::new(entries))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|name| env.get(name).cloned())
    }

    /// A case name, the environment, and the error it must give.
    type ConfigCase = (&'static str, Vec<(&'static str, &'static str)>, ConfigError);

    const TABLE: (&str, &str) = (RECEIPTS_TABLE, "receipts");

    #[test]
    fn defaults_apply_where_a_default_is_safe() {
        let config = load(&[
            TABLE,
            (WEBHOOK_AUTH, "bearer"),
            (WEBHOOK_SECRETS, "0123456789abcdef"),
        ])
        .unwrap();
        assert_eq!(config.receipts_table, "receipts");
        assert_eq!(config.retention, Retention::default());
        assert_eq!(config.max_body_bytes, 262_144);
        assert!(matches!(config.auth, AuthPolicy::Bearer(ref s) if s.len() == 1));
    }

    #[test]
    fn auth_modes() {
        let basic = load(&[
            TABLE,
            (WEBHOOK_AUTH, "basic"),
            (WEBHOOK_SECRETS, "sf:0123456789abcdef,sf2:fedcba9876543210"),
        ])
        .unwrap();
        assert!(matches!(basic.auth, AuthPolicy::Basic(ref s) if s.len() == 2));
        let header = load(&[
            TABLE,
            (WEBHOOK_AUTH, "header:X-Webhook-Token"),
            (WEBHOOK_SECRETS, "0123456789abcdef"),
        ])
        .unwrap();
        assert!(
            matches!(header.auth, AuthPolicy::Header { ref name, .. } if name == "x-webhook-token")
        );
        let none = load(&[TABLE, (WEBHOOK_AUTH, "none")]).unwrap();
        assert_eq!(none.auth, AuthPolicy::None);
    }

    #[test]
    fn every_bad_configuration_names_its_variable() {
        let good_secret = (WEBHOOK_SECRETS, "0123456789abcdef");
        let cases: Vec<ConfigCase> = vec![
            ("no table", vec![(WEBHOOK_AUTH, "none")], ConfigError::Missing(RECEIPTS_TABLE)),
            ("blank table", vec![(RECEIPTS_TABLE, " "), (WEBHOOK_AUTH, "none")], ConfigError::Missing(RECEIPTS_TABLE)),
            ("no auth mode: no silent default", vec![TABLE], ConfigError::Missing(WEBHOOK_AUTH)),
            ("unknown auth mode", vec![TABLE, (WEBHOOK_AUTH, "hmac"), good_secret], invalid(WEBHOOK_AUTH, "expected bearer, basic, header:<Header-Name> or none")),
            ("bad header name", vec![TABLE, (WEBHOOK_AUTH, "header:bad name"), good_secret], invalid(WEBHOOK_AUTH, "header:<Header-Name> needs a valid HTTP header name")),
            ("bearer without secrets", vec![TABLE, (WEBHOOK_AUTH, "bearer")], ConfigError::Missing(WEBHOOK_SECRETS)),
            ("short secret", vec![TABLE, (WEBHOOK_AUTH, "bearer"), (WEBHOOK_SECRETS, "short")], invalid(WEBHOOK_SECRETS, "entry 1 is shorter than 16 characters")),
            ("empty entry", vec![TABLE, (WEBHOOK_AUTH, "bearer"), (WEBHOOK_SECRETS, "0123456789abcdef,")], invalid(WEBHOOK_SECRETS, "entry 2 is shorter than 16 characters")),
            ("basic without user", vec![TABLE, (WEBHOOK_AUTH, "basic"), good_secret], invalid(WEBHOOK_SECRETS, "entry 1 must be user:password for basic authentication")),
            ("secret with space", vec![TABLE, (WEBHOOK_AUTH, "bearer"), (WEBHOOK_SECRETS, "0123456789 abcdef")], invalid(WEBHOOK_SECRETS, "entry 1 contains whitespace")),
            ("secrets with auth none", vec![TABLE, (WEBHOOK_AUTH, "none"), good_secret], invalid(WEBHOOK_SECRETS, "is set while WEBHOOK_AUTH=none; choose an authentication mode or unset it")),
            ("retention zero", vec![TABLE, (WEBHOOK_AUTH, "none"), (RECEIPT_RETENTION_DAYS, "0")], invalid(RECEIPT_RETENTION_DAYS, "expected whole days from 1 to 3650")),
            ("retention text", vec![TABLE, (WEBHOOK_AUTH, "none"), (RECEIPT_RETENTION_DAYS, "a month")], invalid(RECEIPT_RETENTION_DAYS, "expected whole days from 1 to 3650")),
            ("body limit over the item limit", vec![TABLE, (WEBHOOK_AUTH, "none"), (MAX_BODY_BYTES, "400000")], invalid(MAX_BODY_BYTES, "expected bytes from 1 to 393216 (a receipt must stay under DynamoDB's 400 KB item limit)")),
            ("body limit zero", vec![TABLE, (WEBHOOK_AUTH, "none"), (MAX_BODY_BYTES, "0")], invalid(MAX_BODY_BYTES, "expected bytes from 1 to 393216 (a receipt must stay under DynamoDB's 400 KB item limit)")),
        ];
        for (name, pairs, expected) in cases {
            assert_eq!(load(&pairs).unwrap_err(), expected, "case {name}");
        }
    }

    #[test]
    fn errors_never_quote_a_secret() {
        let err = load(&[
            TABLE,
            (WEBHOOK_AUTH, "bearer"),
            (WEBHOOK_SECRETS, "0123456789abcdef,tiny-secret"),
        ])
        .unwrap_err();
        assert!(!err.to_string().contains("tiny-secret"));
        assert!(err.to_string().starts_with(WEBHOOK_SECRETS));
    }
}
