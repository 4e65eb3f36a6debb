//! `DESTINATION=zoho`'s settings, read from the environment once at init:
//! the data centre's accounts server and API domain, the module, what
//! keys a record, which automations run, the field map, and where the
//! Self Client's credentials and the gates' key come from.

use shared::config::{invalid, secret_arn, ConfigError};
use shared::field_map::{FieldMap, Source, FIELD_MAP};
use shared::newest::GateKeySetting;

use crate::destinations::client::check_base_url;
use crate::destinations::token::CrmToken;

pub use shared::destination::zoho::{
    BY_EMAIL, ZOHO_ACCOUNTS_URL, ZOHO_API_URL, ZOHO_CLIENT_ID, ZOHO_CLIENT_SECRET,
    ZOHO_CREDENTIALS_SECRET_ARN, ZOHO_DUPLICATE_CHECK_FIELD, ZOHO_MODULE, ZOHO_REFRESH_TOKEN,
    ZOHO_TRIGGER,
};

pub const DEFAULT_ACCOUNTS_URL: &str = "https://accounts.zoho.com";
pub const DEFAULT_API_URL: &str = "https://www.zohoapis.com";
pub const MODULES: [&str; 2] = ["Leads", "Contacts"];
/// The automations `trigger` may name
/// (<https://www.zoho.com/crm/developer/docs/api/v8/upsert-records.html>).
pub const TRIGGERS: [&str; 3] = ["workflow", "approval", "blueprint"];

/// The Self Client's credentials: never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct ZohoCredentials {
    pub client_id: String,
    pub client_secret: CrmToken,
    pub refresh_token: CrmToken,
}

impl ZohoCredentials {
    pub fn new(client_id: &str, client_secret: &str, refresh_token: &str) -> Option<Self> {
        let client_id = client_id.trim();
        (!client_id.is_empty()).then_some(())?;
        Some(ZohoCredentials {
            client_id: client_id.to_owned(),
            client_secret: CrmToken::new(client_secret)?,
            refresh_token: CrmToken::new(refresh_token)?,
        })
    }

    /// A Secrets Manager value: `{"client_id", "client_secret",
    /// "refresh_token"}`. The error says what is wrong, never a value.
    pub fn from_secret_json(text: &str) -> Result<Self, &'static str> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(|_| {
            "the secret is not a JSON object with client_id, client_secret and refresh_token"
        })?;
        let field = |name| value[name].as_str().unwrap_or("");
        ZohoCredentials::new(
            field("client_id"),
            field("client_secret"),
            field("refresh_token"),
        )
        .ok_or("the secret needs non-blank client_id, client_secret and refresh_token")
    }
}

impl std::fmt::Debug for ZohoCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ZohoCredentials(***)")
    }
}

/// Where the credentials come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialsSetting {
    /// `ZOHO_CLIENT_ID`, `ZOHO_CLIENT_SECRET`, `ZOHO_REFRESH_TOKEN`: local use.
    Inline(ZohoCredentials),
    /// `ZOHO_CREDENTIALS_SECRET_ARN`.
    SecretsManager(String),
}

/// Everything but the credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZohoSettings {
    pub accounts_url: String,
    pub api_url: String,
    pub module: String,
    /// `Email`: one record per address (newest wins, a note per
    /// submission); another field: one record per submission.
    pub duplicate_check_field: String,
    /// The automations that run on our writes (`[]`: none).
    pub trigger: Vec<String>,
    pub field_map: FieldMap,
    /// Only when keyed by e-mail.
    pub gate_key: Option<GateKeySetting>,
    /// The stack's gate key, which seals the shared access token in the
    /// receipts table (every stack has one).
    pub token_key: GateKeySetting,
}

impl ZohoSettings {
    pub fn by_email(&self) -> bool {
        self.duplicate_check_field == BY_EMAIL
    }

    /// `DESTINATION=zoho`'s settings and where its credentials come from.
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<(Self, CredentialsSetting), ConfigError> {
        let credentials = match (
            get(ZOHO_CLIENT_ID),
            get(ZOHO_CLIENT_SECRET),
            get(ZOHO_REFRESH_TOKEN),
            get(ZOHO_CREDENTIALS_SECRET_ARN),
        ) {
            (None, None, None, Some(arn)) => CredentialsSetting::SecretsManager(secret_arn(
                ZOHO_CREDENTIALS_SECRET_ARN,
                &arn,
            )?),
            (Some(id), Some(secret), Some(refresh), None) => CredentialsSetting::Inline(
                ZohoCredentials::new(&id, &secret, &refresh)
                    .ok_or_else(|| invalid(ZOHO_CLIENT_ID, "is blank"))?,
            ),
            (_, _, _, Some(_)) => {
                return Err(invalid(
                    ZOHO_CREDENTIALS_SECRET_ARN,
                    "set either it or ZOHO_CLIENT_ID, ZOHO_CLIENT_SECRET and ZOHO_REFRESH_TOKEN, not both",
                ))
            }
            _ => {
                return Err(ConfigError::Missing(
                    "ZOHO_CLIENT_ID, ZOHO_CLIENT_SECRET and ZOHO_REFRESH_TOKEN, or ZOHO_CREDENTIALS_SECRET_ARN",
                ))
            }
        };
        let url = |variable: &'static str, default: &str| -> Result<String, ConfigError> {
            let url = get(variable)
                .unwrap_or_else(|| default.to_owned())
                .trim()
                .trim_end_matches('/')
                .to_owned();
            check_base_url(variable, &url, allow_http)?;
            Ok(url)
        };
        let accounts_url = url(ZOHO_ACCOUNTS_URL, DEFAULT_ACCOUNTS_URL)?;
        let api_url = url(ZOHO_API_URL, DEFAULT_API_URL)?;
        let module = get(ZOHO_MODULE).unwrap_or_else(|| MODULES[0].to_owned());
        let module = module.trim();
        if !MODULES.contains(&module) {
            return Err(invalid(ZOHO_MODULE, "expected Leads or Contacts"));
        }
        let duplicate_check_field = get(ZOHO_DUPLICATE_CHECK_FIELD)
            .unwrap_or_else(|| BY_EMAIL.to_owned())
            .trim()
            .to_owned();
        if !is_api_name(&duplicate_check_field) {
            return Err(invalid(
                ZOHO_DUPLICATE_CHECK_FIELD,
                "expected Email or a unique field's API name (letters, digits, _)",
            ));
        }
        let trigger = trigger(&get(ZOHO_TRIGGER).unwrap_or_else(|| "workflow".to_owned()))?;
        let by_email = duplicate_check_field == BY_EMAIL;
        let field_map = match get(FIELD_MAP) {
            Some(text) => {
                FieldMap::parse(&text).map_err(|error| invalid(FIELD_MAP, error.to_string()))?
            }
            None => default_field_map(by_email),
        };
        if let Some(bad) = field_map.properties().find(|name| !is_api_name(name)) {
            return Err(invalid(
                FIELD_MAP,
                format!("names {bad:?}, which is no field API name (letters, digits, _)"),
            ));
        }
        let field_map = field_map.with_fallbacks(&[("Last_Name", "[not provided]")]);
        let token_key = GateKeySetting::of_stack(get)?.ok_or(ConfigError::Missing(
            "GATE_KEY or GATE_KEY_SECRET_ARN (Zoho's shared access token is sealed with it)",
        ))?;
        let gate_key = by_email.then(|| token_key.clone());
        Ok((
            ZohoSettings {
                accounts_url,
                api_url,
                module: module.to_owned(),
                duplicate_check_field,
                trigger,
                field_map,
                gate_key,
                token_key,
            },
            credentials,
        ))
    }
}

/// `ZOHO_TRIGGER`: `none`, or a comma-separated list of [`TRIGGERS`].
fn trigger(text: &str) -> Result<Vec<String>, ConfigError> {
    let text = text.trim();
    if text == "none" {
        return Ok(Vec::new());
    }
    let names: Vec<String> = text.split(',').map(|name| name.trim().to_owned()).collect();
    if names.is_empty() || names.iter().any(|name| !TRIGGERS.contains(&name.as_str())) {
        return Err(invalid(
            ZOHO_TRIGGER,
            "expected none, or workflow, approval and blueprint separated by commas",
        ));
    }
    Ok(names)
}

/// A Zoho field's API name: letters, digits and `_`.
pub fn is_api_name(name: &str) -> bool {
    (1..=100).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Zoho's default: the names, e-mail and phone on the record; the message
/// and every other field in a note per submission (by e-mail) or in the
/// record's `Description` (by submission, one record each).
pub fn default_field_map(by_email: bool) -> FieldMap {
    let mut entries = vec![
        ("First_Name".to_owned(), Source::FirstName),
        ("Last_Name".to_owned(), Source::LastName),
        ("Email".to_owned(), Source::Field("email".to_owned())),
        ("Phone".to_owned(), Source::Field("phone".to_owned())),
    ];
    if !by_email {
        entries.push(("Description".to_owned(), Source::MessageAndRest));
    }
    FieldMap::new(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::newest::GATE_KEY_SECRET_ARN;
    use std::collections::HashMap;

    const ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:zoho-AbCdEf";
    const GATE_ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gate-AbCdEf";

    fn load(pairs: &[(&str, &str)]) -> Result<(ZohoSettings, CredentialsSetting), ConfigError> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let get = shared::config::non_empty(move |name| env.get(name).cloned());
        ZohoSettings::from_lookup(&get, false)
    }

    #[test]
    fn defaults_by_email_and_by_submission() {
        let (settings, credentials) = load(&[
            (ZOHO_CREDENTIALS_SECRET_ARN, ARN),
            (GATE_KEY_SECRET_ARN, GATE_ARN),
        ])
        .unwrap();
        assert_eq!(credentials, CredentialsSetting::SecretsManager(ARN.into()));
        assert_eq!(settings.accounts_url, DEFAULT_ACCOUNTS_URL);
        assert_eq!(settings.api_url, DEFAULT_API_URL);
        assert_eq!(settings.module, "Leads");
        assert!(settings.by_email());
        assert_eq!(settings.trigger, ["workflow"]);
        assert_eq!(
            settings.gate_key,
            Some(GateKeySetting::SecretsManager(GATE_ARN.into()))
        );
        assert_eq!(
            settings.token_key,
            GateKeySetting::SecretsManager(GATE_ARN.into()),
            "the shared token sealed with the stack's key"
        );
        let (by_submission, _) = load(&[
            (ZOHO_CREDENTIALS_SECRET_ARN, ARN),
            (GATE_KEY_SECRET_ARN, GATE_ARN),
            (ZOHO_DUPLICATE_CHECK_FIELD, "Submission_Id"),
            (ZOHO_TRIGGER, "none"),
            (ZOHO_MODULE, "Contacts"),
            (ZOHO_API_URL, "https://www.zohoapis.eu/"),
        ])
        .unwrap();
        assert!(!by_submission.by_email());
        assert_eq!(by_submission.gate_key, None, "no gates by submission");
        assert_eq!(
            by_submission.token_key,
            GateKeySetting::SecretsManager(GATE_ARN.into()),
            "its token sealed all the same"
        );
        assert_eq!(
            load(&[(ZOHO_CREDENTIALS_SECRET_ARN, ARN)]).unwrap_err(),
            ConfigError::Missing(
                "GATE_KEY or GATE_KEY_SECRET_ARN (Zoho's shared access token is sealed with it)"
            ),
            "every stack has the gate key"
        );
        assert!(by_submission.trigger.is_empty());
        assert_eq!(by_submission.api_url, "https://www.zohoapis.eu");
        assert!(by_submission
            .field_map
            .properties()
            .any(|p| p == "Description"));
    }

    #[test]
    fn every_wrong_setting_is_named() {
        let rows = [
            (ZOHO_MODULE, "Deals", ZOHO_MODULE),
            (ZOHO_TRIGGER, "workflow,emails", ZOHO_TRIGGER),
            (
                ZOHO_DUPLICATE_CHECK_FIELD,
                "Email Address",
                ZOHO_DUPLICATE_CHECK_FIELD,
            ),
            (ZOHO_API_URL, "http://www.zohoapis.com", ZOHO_API_URL),
            (FIELD_MAP, r#"{"Last Name":"name"}"#, FIELD_MAP),
            (ZOHO_CLIENT_ID, "id", ZOHO_CREDENTIALS_SECRET_ARN),
        ];
        for (name, value, said) in rows {
            let error = load(&[
                (ZOHO_CREDENTIALS_SECRET_ARN, ARN),
                (GATE_KEY_SECRET_ARN, GATE_ARN),
                (name, value),
            ])
            .unwrap_err()
            .to_string();
            assert!(error.contains(said), "{name}={value}: {error}");
        }
        let missing = load(&[(GATE_KEY_SECRET_ARN, GATE_ARN)])
            .unwrap_err()
            .to_string();
        assert!(missing.contains("ZOHO_REFRESH_TOKEN"), "{missing}");
        assert_eq!(
            ZohoCredentials::from_secret_json(r#"{"client_id":"1000.X","client_secret":"s"}"#),
            Err("the secret needs non-blank client_id, client_secret and refresh_token")
        );
    }
}
