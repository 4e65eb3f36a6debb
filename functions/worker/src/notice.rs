//! The new-lead notice's setting and its one adapter (`shared::notice`):
//! the stack's notice URL (`NOTIFY_URL`, or `NOTIFY_URL_SECRET_ARN` read
//! from Secrets Manager at init), and a JSON POST to it. The URL is a
//! credential (a Slack incoming webhook's is): no message or log line ever
//! quotes it.

use std::time::Duration;

use serde_json::Value;
use shared::config::{invalid, secret_arn, ConfigError};
use shared::notice::{NOTIFY_URL, NOTIFY_URL_SECRET_ARN};

/// How long a notice may take: a chat webhook answers in well under this.
const NOTICE_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the notice URL comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum NotifySetting {
    /// `NOTIFY_URL` (local runs and tests).
    Inline(String),
    /// `NOTIFY_URL_SECRET_ARN`: read once, at init.
    SecretsManager(String),
}

impl std::fmt::Debug for NotifySetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotifySetting::Inline(_) => f.write_str("Inline(<redacted>)"),
            NotifySetting::SecretsManager(arn) => write!(f, "SecretsManager({arn:?})"),
        }
    }
}

impl NotifySetting {
    /// The setting, where one is given; `allow_http` as for a CRM URL.
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<Option<NotifySetting>, ConfigError> {
        match (get(NOTIFY_URL), get(NOTIFY_URL_SECRET_ARN)) {
            (None, None) => Ok(None),
            (Some(url), None) => {
                check_url(NOTIFY_URL, &url, allow_http)?;
                Ok(Some(NotifySetting::Inline(url)))
            }
            (None, Some(arn)) => Ok(Some(NotifySetting::SecretsManager(secret_arn(
                NOTIFY_URL_SECRET_ARN,
                &arn,
            )?))),
            (Some(_), Some(_)) => Err(invalid(
                NOTIFY_URL_SECRET_ARN,
                format!("set either {NOTIFY_URL} or {NOTIFY_URL_SECRET_ARN}, not both"),
            )),
        }
    }
}

/// https, or http to loopback or with `CRM_ALLOW_HTTP` (local runs).
fn check_url(name: &'static str, url: &str, allow_http: bool) -> Result<(), ConfigError> {
    let parsed =
        shared::endpoint::Url::parse(url).map_err(|_| invalid(name, "is not an absolute URL"))?;
    shared::endpoint::check_scheme(&parsed, allow_http)
        .map_err(|problem| invalid(name, problem.to_string()))
}

/// How one send ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// 2xx.
    Accepted,
    /// The endpoint answered otherwise (its status), or was not reached:
    /// nothing was shown, send it again later.
    Refused(Option<u16>),
    /// The request went and no answer came: it may have been shown.
    NoAnswer,
}

/// The notice URL's one adapter.
pub struct Notifier {
    client: reqwest::Client,
    url: String,
}

impl Notifier {
    /// The notifier a setting names, its secret read at init through
    /// `client`; `None` without a setting.
    pub async fn from_setting(
        setting: Option<&NotifySetting>,
        allow_http: bool,
        client: impl FnOnce() -> aws_sdk_secretsmanager::Client,
    ) -> Result<Option<Notifier>, ConfigError> {
        let url = match setting {
            None => return Ok(None),
            Some(NotifySetting::Inline(url)) => url.clone(),
            Some(NotifySetting::SecretsManager(arn)) => {
                let url = crate::secrets::secret_text(&client(), arn)
                    .await
                    .map_err(|error| {
                        invalid(
                            NOTIFY_URL_SECRET_ARN,
                            format!("the secret could not be read ({})", error.reason),
                        )
                    })?;
                let url = url.trim().to_owned();
                check_url(NOTIFY_URL_SECRET_ARN, &url, allow_http)?;
                url
            }
        };
        Notifier::new(url).map(Some)
    }

    /// A notifier that POSTs to `url` (checked by the setting).
    pub fn new(url: String) -> Result<Notifier, ConfigError> {
        let client = crate::destinations::client::client(NOTICE_TIMEOUT)
            .map_err(|_| invalid(NOTIFY_URL, "no HTTP client could be built"))?;
        Ok(Notifier { client, url })
    }

    /// POSTs `body` as JSON.
    pub async fn send(&self, body: &Value) -> Sent {
        match self.client.post(&self.url).json(body).send().await {
            Ok(answer) if answer.status().is_success() => Sent::Accepted,
            Ok(answer) => Sent::Refused(Some(answer.status().as_u16())),
            Err(error) if error.is_connect() || error.is_builder() => Sent::Refused(None),
            Err(_) => Sent::NoAnswer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notice_url_is_checked_and_never_shown() {
        let setting = |url: Option<&str>, arn: Option<&str>, allow_http: bool| {
            let get = |name: &str| match name {
                NOTIFY_URL => url.map(str::to_owned),
                NOTIFY_URL_SECRET_ARN => arn.map(str::to_owned),
                _ => None,
            };
            NotifySetting::from_lookup(&get, allow_http)
        };
        let hook = "https://hooks.slack.com/services/T0/B0/secretpart";
        let arn = "arn:aws:secretsmanager:us-east-1:1:secret:notify";
        assert_eq!(setting(None, None, false), Ok(None));
        assert_eq!(
            setting(Some(hook), None, false),
            Ok(Some(NotifySetting::Inline(hook.into())))
        );
        assert_eq!(
            setting(None, Some(arn), false),
            Ok(Some(NotifySetting::SecretsManager(arn.into())))
        );
        assert!(setting(Some("http://127.0.0.1:9/n"), None, false).is_ok());
        let refused = [
            setting(Some("http://chat.example.com/n"), None, false),
            setting(Some("hooks.slack.com/services/secretpart"), None, false),
            setting(Some(hook), Some(arn), false),
            setting(None, Some("notify"), false),
        ];
        for refusal in refused {
            let message = refusal.unwrap_err().to_string();
            assert!(!message.contains("secretpart"), "{message}");
        }
        assert!(!format!("{:?}", NotifySetting::Inline(hook.into())).contains("secretpart"));
    }
}
