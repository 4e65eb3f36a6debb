//! `DESTINATION=salesforce`'s settings, read from the environment once at
//! init: the org's login URL, the object and external ID field, the API
//! version, the field map, and where the client credentials come from.

use serde_json::Value;
use shared::config::{invalid, secret_arn, ConfigError};
use shared::field_map::{FieldMap, Source, FIELD_MAP};

use crate::destinations::client::{check_base_url, is_property_name};
use crate::destinations::token::CrmToken;

/// The newest generally available version in Salesforce's version list
/// (see the module's pages); sObject Collections upsert needs 46.0 or later.
pub const DEFAULT_API_VERSION: &str = "v67.0";
pub const DEFAULT_OBJECT: &str = "Lead";
pub const DEFAULT_EXTERNAL_ID_FIELD: &str = "StaticForms_Submission_Id__c";

/// An External Client App's id and secret. `Debug` shows neither.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    pub(super) client_id: String,
    pub(super) client_secret: CrmToken,
}

impl ClientCredentials {
    pub fn new(client_id: &str, client_secret: &str) -> Option<Self> {
        let client_id = client_id.trim();
        let client_secret = CrmToken::new(client_secret)?;
        (!client_id.is_empty()).then(|| ClientCredentials {
            client_id: client_id.to_owned(),
            client_secret,
        })
    }

    /// A Secrets Manager value: `{"client_id": "...", "client_secret": "..."}`.
    /// The error says what is wrong, never a value.
    pub fn from_secret_json(text: &str) -> Result<Self, &'static str> {
        let value: Value = serde_json::from_str(text)
            .map_err(|_| "the secret is not a JSON object with client_id and client_secret")?;
        let field = |name| value[name].as_str().unwrap_or("");
        ClientCredentials::new(field("client_id"), field("client_secret"))
            .ok_or("the secret needs non-blank client_id and client_secret")
    }
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientCredentials(***)")
    }
}

/// Everything but the credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SalesforceSettings {
    /// The org's My Domain URL.
    pub login_url: String,
    pub api_version: String,
    pub object: String,
    pub external_id_field: String,
    pub field_map: FieldMap,
    /// `SALESFORCE_AUTO_ASSIGN`: whether the org's active assignment rules
    /// run on our writes (`Sforce-Auto-Assign`). Off by default: they run on
    /// updates too, so a redelivered lead would undo an owner a person set.
    pub auto_assign: bool,
}

pub use shared::destination::salesforce::{
    SALESFORCE_API_VERSION, SALESFORCE_AUTO_ASSIGN, SALESFORCE_CLIENT_ID, SALESFORCE_CLIENT_SECRET,
    SALESFORCE_CREDENTIALS_SECRET_ARN, SALESFORCE_EXTERNAL_ID_FIELD, SALESFORCE_LOGIN_URL,
    SALESFORCE_OBJECT,
};

/// Where Salesforce's client credentials come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialsSetting {
    /// `SALESFORCE_CLIENT_ID` and `SALESFORCE_CLIENT_SECRET`, for local use.
    Inline(ClientCredentials),
    /// `SALESFORCE_CREDENTIALS_SECRET_ARN`: `{"client_id", "client_secret"}`.
    SecretsManager(String),
}

impl SalesforceSettings {
    /// `DESTINATION=salesforce`'s settings and where its credentials come
    /// from.
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<(Self, CredentialsSetting), ConfigError> {
        let login_url = get(SALESFORCE_LOGIN_URL)
            .ok_or(ConfigError::Missing(SALESFORCE_LOGIN_URL))?
            .trim()
            .trim_end_matches('/')
            .to_owned();
        check_base_url(SALESFORCE_LOGIN_URL, &login_url, allow_http)?;
        let credentials = match (
        get(SALESFORCE_CLIENT_ID),
        get(SALESFORCE_CLIENT_SECRET),
        get(SALESFORCE_CREDENTIALS_SECRET_ARN),
    ) {
        (Some(id), Some(secret), None) => CredentialsSetting::Inline(
            ClientCredentials::new(&id, &secret)
                .ok_or_else(|| invalid(SALESFORCE_CLIENT_ID, "is blank"))?,
        ),
        (None, None, Some(arn)) => CredentialsSetting::SecretsManager(secret_arn(
            SALESFORCE_CREDENTIALS_SECRET_ARN,
            &arn,
        )?),
        (None, None, None) => {
            return Err(ConfigError::Missing(
                "SALESFORCE_CLIENT_ID and SALESFORCE_CLIENT_SECRET, or SALESFORCE_CREDENTIALS_SECRET_ARN",
            ))
        }
        (Some(_), None, None) => return Err(ConfigError::Missing(SALESFORCE_CLIENT_SECRET)),
        (None, Some(_), None) => return Err(ConfigError::Missing(SALESFORCE_CLIENT_ID)),
        (_, _, Some(_)) => {
            return Err(invalid(
                SALESFORCE_CREDENTIALS_SECRET_ARN,
                "set either it or SALESFORCE_CLIENT_ID and SALESFORCE_CLIENT_SECRET, not both",
            ))
        }
    };
        let name = |variable: &'static str, default: &str| -> Result<String, ConfigError> {
            let value = get(variable).unwrap_or_else(|| default.to_owned());
            let value = value.trim();
            if is_property_name(value) {
                Ok(value.to_owned())
            } else {
                Err(invalid(
                    variable,
                    "expected an API name (letters, digits, _)",
                ))
            }
        };
        let object = name(SALESFORCE_OBJECT, DEFAULT_OBJECT)?;
        let external_id_field = name(SALESFORCE_EXTERNAL_ID_FIELD, DEFAULT_EXTERNAL_ID_FIELD)?;
        let api_version = salesforce_version(
        &get(SALESFORCE_API_VERSION)
            .unwrap_or_else(|| DEFAULT_API_VERSION.to_owned()),
    )
    .ok_or_else(|| {
        invalid(
            SALESFORCE_API_VERSION,
            "expected a version from v46.0 on, such as v67.0 (sObject Collections upsert needs 46.0)",
        )
    })?;
        let field_map = match get(FIELD_MAP) {
            Some(text) => {
                FieldMap::parse(&text).map_err(|error| invalid(FIELD_MAP, error.to_string()))?
            }
            None => default_field_map(),
        };
        if let Some(bad) = field_map.properties().find(|p| !is_property_name(p)) {
            return Err(invalid(
                FIELD_MAP,
                format!(
                "names {bad:?}, which is not a Salesforce field's API name (letters, digits, _)"
            ),
            ));
        }
        let field_map = if object == "Lead" {
            with_lead_requirements(field_map)
        } else {
            field_map
        };
        Ok((
            SalesforceSettings {
                login_url,
                api_version,
                object,
                external_id_field,
                field_map,
                auto_assign: shared::config::flag(get, SALESFORCE_AUTO_ASSIGN)?,
            },
            credentials,
        ))
    }
}

/// Whether Salesforce runs the org's assignment rules on a write: without
/// it, they run on updates too
/// (https://developer.salesforce.com/docs/platform/api-rest/guide/headers-autoassign.md).
pub const AUTO_ASSIGN_HEADER: &str = "Sforce-Auto-Assign";

impl SalesforceSettings {
    /// The value of [`AUTO_ASSIGN_HEADER`] on every upsert.
    pub fn auto_assign_header(&self) -> &'static str {
        if self.auto_assign {
            "TRUE"
        } else {
            "FALSE"
        }
    }
}

/// `v67.0` or `67.0`, from 46.0 on, as `v67.0`.
fn salesforce_version(raw: &str) -> Option<String> {
    let number = raw.trim().trim_start_matches('v');
    let (major, minor) = number.split_once('.')?;
    let major: u32 = major.parse().ok()?;
    (minor == "0" && (46..1000).contains(&major)).then(|| format!("v{major}.0"))
}

/// Salesforce's default for a Lead: `FirstName`/`LastName` as for
/// HubSpot, `Email`, `Phone`, `Company`, and the message with every
/// other field (`*`) as `Description`; see `with_lead_requirements` for
/// the required two.
pub fn default_field_map() -> FieldMap {
    FieldMap::new(vec![
        ("FirstName".to_owned(), Source::FirstName),
        ("LastName".to_owned(), Source::LastName),
        ("Email".to_owned(), Source::Field("email".to_owned())),
        ("Phone".to_owned(), Source::Field("phone".to_owned())),
        ("Company".to_owned(), Source::Field("company".to_owned())),
        ("Description".to_owned(), Source::MessageAndRest),
    ])
}

/// Salesforce refuses a Lead without `LastName` or `Company`: when the
/// map gives none, `LastName` is `Unknown` and `Company` is
/// `[not provided]`, so a lead without a name still arrives.
pub fn with_lead_requirements(map: FieldMap) -> FieldMap {
    map.with_fallbacks(&[("LastName", "Unknown"), ("Company", "[not provided]")])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::destinations::client::CRM_ALLOW_HTTP;
    use crate::destinations::salesforce::build::SalesforceConfig;
    use std::collections::HashMap;

    fn load(
        pairs: &[(&str, &str)],
    ) -> Result<(SalesforceSettings, CredentialsSetting), ConfigError> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let get = shared::config::non_empty(move |name| env.get(name).cloned());
        SalesforceSettings::from_lookup(&get, false)
    }

    const ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:salesforce-AbCdEf";
    const LOGIN: (&str, &str) = (SALESFORCE_LOGIN_URL, "https://acme.my.salesforce.com/");

    #[test]
    fn defaults_and_every_setting() {
        assert_eq!(
            load(&[LOGIN, (SALESFORCE_CREDENTIALS_SECRET_ARN, ARN)]).unwrap(),
            (
                SalesforceSettings {
                    login_url: "https://acme.my.salesforce.com".into(),
                    api_version: "v67.0".into(),
                    object: "Lead".into(),
                    external_id_field: "StaticForms_Submission_Id__c".into(),
                    field_map: with_lead_requirements(default_field_map()),
                    auto_assign: false,
                },
                CredentialsSetting::SecretsManager(ARN.into()),
            )
        );
        let (settings, credentials) = load(&[
            (SALESFORCE_LOGIN_URL, "http://127.0.0.1:9001"),
            (SALESFORCE_CLIENT_ID, "3MVG9local"),
            (SALESFORCE_CLIENT_SECRET, "local-secret"),
            (SALESFORCE_OBJECT, "Prospect__c"),
            (SALESFORCE_EXTERNAL_ID_FIELD, "Submission__c"),
            (SALESFORCE_API_VERSION, "62.0"),
            (SALESFORCE_AUTO_ASSIGN, "true"),
            (FIELD_MAP, r#"{"Email__c":"email"}"#),
        ])
        .unwrap();
        assert_eq!(settings.api_version, "v62.0");
        assert!(settings.auto_assign);
        assert_eq!(settings.object, "Prospect__c");
        assert_eq!(settings.external_id_field, "Submission__c");
        assert_eq!(
            settings.field_map,
            FieldMap::parse(r#"{"Email__c":"email"}"#).unwrap(),
            "no Lead requirements for another object"
        );
        assert_eq!(
            credentials,
            CredentialsSetting::Inline(
                ClientCredentials::new("3MVG9local", "local-secret").unwrap()
            )
        );
    }

    #[test]
    fn invalid_settings_name_their_variable() {
        let with_login = |extra: &[(&'static str, &'static str)]| {
            let mut pairs = vec![LOGIN];
            pairs.extend_from_slice(extra);
            load(&pairs).unwrap_err()
        };
        let id = (SALESFORCE_CLIENT_ID, "3MVG9");
        let secret = (SALESFORCE_CLIENT_SECRET, "never-shown-secret");
        assert_eq!(
            with_login(&[id, secret, (SALESFORCE_AUTO_ASSIGN, "yes")]),
            invalid(SALESFORCE_AUTO_ASSIGN, "expected true or false")
        );
        #[rustfmt::skip]
        let rows: Vec<(&str, ConfigError, ConfigError)> = vec![
            ("no login url", load(&[id, secret]).unwrap_err(), ConfigError::Missing(SALESFORCE_LOGIN_URL)),
            ("no credentials", with_login(&[]), ConfigError::Missing("SALESFORCE_CLIENT_ID and SALESFORCE_CLIENT_SECRET, or SALESFORCE_CREDENTIALS_SECRET_ARN")),
            ("id without secret", with_login(&[id]), ConfigError::Missing(SALESFORCE_CLIENT_SECRET)),
            ("secret without id", with_login(&[secret]), ConfigError::Missing(SALESFORCE_CLIENT_ID)),
            ("both forms", with_login(&[id, secret, (SALESFORCE_CREDENTIALS_SECRET_ARN, ARN)]), invalid(SALESFORCE_CREDENTIALS_SECRET_ARN, "set either it or SALESFORCE_CLIENT_ID and SALESFORCE_CLIENT_SECRET, not both")),
            ("not an arn", with_login(&[(SALESFORCE_CREDENTIALS_SECRET_ARN, "salesforce")]), invalid(SALESFORCE_CREDENTIALS_SECRET_ARN, "must be a Secrets Manager secret ARN (arn:...)")),
            ("old version", with_login(&[id, secret, (SALESFORCE_API_VERSION, "v45.0")]), invalid(SALESFORCE_API_VERSION, "expected a version from v46.0 on, such as v67.0 (sObject Collections upsert needs 46.0)")),
            ("object label", with_login(&[id, secret, (SALESFORCE_OBJECT, "Web Lead")]), invalid(SALESFORCE_OBJECT, "expected an API name (letters, digits, _)")),
            ("field label", with_login(&[id, secret, (FIELD_MAP, r#"{"Last Name":"lastName"}"#)]), invalid(FIELD_MAP, "names \"Last Name\", which is not a Salesforce field's API name (letters, digits, _)")),
            ("http login", load(&[(SALESFORCE_LOGIN_URL, "http://acme.my.salesforce.com"), id, secret]).unwrap_err(), invalid(SALESFORCE_LOGIN_URL, format!("must be https:// (http:// sends the CRM token in clear text; it is allowed for loopback addresses, or with {CRM_ALLOW_HTTP}=true for local runs)"))),
        ];
        for (name, error, expected) in rows {
            assert_eq!(error, expected, "case {name}");
            assert!(
                !error.to_string().contains("never-shown-secret"),
                "case {name}"
            );
        }
    }

    /// `DESTINATION=salesforce` hands these settings over through the
    /// worker's configuration and refuses another kind's variables.
    #[test]
    fn the_worker_configuration_hands_them_over() {
        use crate::config::{Config, DESTINATION, RECEIPTS_TABLE};
        use shared::config::invalid;
        let config = |extra: &[(&'static str, &'static str)]| {
            let mut env: HashMap<&str, &str> = HashMap::from([
                (RECEIPTS_TABLE, "receipts"),
                (DESTINATION, "salesforce"),
                LOGIN,
            ]);
            env.extend(extra.iter().copied());
            Config::from_lookup(|name| env.get(name).map(|v| v.to_string()))
        };
        assert_eq!(
            config(&[(SALESFORCE_CREDENTIALS_SECRET_ARN, ARN)])
                .unwrap()
                .destinations
                .first()
                .settings::<SalesforceConfig>(),
            Some(&SalesforceConfig {
                settings: SalesforceSettings {
                    login_url: "https://acme.my.salesforce.com".into(),
                    api_version: "v67.0".into(),
                    object: "Lead".into(),
                    external_id_field: "StaticForms_Submission_Id__c".into(),
                    field_map: with_lead_requirements(default_field_map()),
                    auto_assign: false,
                },
                credentials: CredentialsSetting::SecretsManager(ARN.into()),
            })
        );
        let inline = [
            (SALESFORCE_CLIENT_ID, "3MVG9"),
            (SALESFORCE_CLIENT_SECRET, "never-shown-secret"),
        ];
        for (extra, error) in [
            (
                ("HUBSPOT_TOKEN", "x"),
                invalid(
                    "HUBSPOT_TOKEN",
                    "does not apply to DESTINATION=salesforce; unset it",
                ),
            ),
            (
                (SALESFORCE_OBJECT, "Web Lead"),
                invalid(
                    SALESFORCE_OBJECT,
                    "expected an API name (letters, digits, _)",
                ),
            ),
        ] {
            let mut pairs = inline.to_vec();
            pairs.push(extra);
            let refused = config(&pairs).unwrap_err();
            assert_eq!(refused, error);
            assert!(!refused.to_string().contains("never-shown-secret"));
        }
    }

    use crate::destinations::port::test_lead as lead;

    #[test]
    fn salesforce_lead_defaults() {
        let map = with_lead_requirements(default_field_map());
        let rows = [
            (
                lead(
                    "Ada King Lovelace",
                    "ada@example.com",
                    serde_json::json!({"company": "AE", "phone": "555"}),
                ),
                serde_json::json!({"FirstName": "Ada King", "LastName": "Lovelace", "Email": "ada@example.com", "Phone": "555", "Company": "AE", "Description": "Please call"}),
            ),
            (
                lead("Prince", "", serde_json::json!({})),
                serde_json::json!({"FirstName": "Prince", "LastName": "Unknown", "Company": "[not provided]", "Description": "Please call"}),
            ),
            (
                lead("", "", serde_json::json!({"lastName": "Hopper"})),
                serde_json::json!({"LastName": "Hopper", "Company": "[not provided]", "Description": "Please call"}),
            ),
        ];
        for (lead, expected) in rows {
            assert_eq!(
                serde_json::Value::Object(map.apply(&lead)),
                expected,
                "{}",
                lead.name
            );
        }
        // A user's map keeps the requirements too.
        let own = with_lead_requirements(FieldMap::parse(r#"{"Email":"email"}"#).unwrap());
        assert_eq!(
            serde_json::Value::Object(own.apply(&lead("", "a@b.c", serde_json::json!({})))),
            serde_json::json!({"Email": "a@b.c", "LastName": "Unknown", "Company": "[not provided]"})
        );
    }
}
