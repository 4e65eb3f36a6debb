//! `DESTINATION=hubspot`'s settings, read from the environment once at
//! init: the base URL, the API version, what keys a contact, the field map,
//! where the token comes from, and, for contacts by email, where the key of
//! the newest-wins gates comes from.

use shared::config::{invalid, ConfigError};
use shared::field_map::{FieldMap, Source, FIELD_MAP};
use shared::newest::GateKeySetting;

use crate::destinations::client::{check_base_url, is_property_name};
use crate::destinations::token::{token_setting, TokenSetting};

pub use shared::destination::hubspot::{
    HUBSPOT_API_VERSION, HUBSPOT_BASE_URL, HUBSPOT_ID_PROPERTY, HUBSPOT_MESSAGE_PROPERTY,
    HUBSPOT_TOKEN, HUBSPOT_TOKEN_SECRET_ARN,
};

pub const DEFAULT_BASE_URL: &str = "https://api.hubapi.com";

/// The newest date version HubSpot documents for contacts batch upsert
/// (see the module's pages): path `/crm/objects/2026-09/contacts/batch/upsert`.
/// From 2026-09 HubSpot applies an account's own validation rules to API
/// writes (<https://developers.hubspot.com/changelog/crm-api-write-validation-enforcement>):
/// a lead that breaks one is refused with a 400 for the whole call, which
/// `send` narrows to that lead.
pub const DEFAULT_API_VERSION: &str = "2026-09";

/// `HUBSPOT_API_VERSION`: `v3`, or a date version `YYYY-MM`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiVersion {
    V3,
    Dated(String),
}

impl ApiVersion {
    pub fn parse(raw: &str) -> Option<Self> {
        let raw = raw.trim();
        if raw == "v3" {
            return Some(ApiVersion::V3);
        }
        let (year, month) = raw.split_once('-')?;
        let month_ok = month.len() == 2 && month.parse::<u8>().is_ok_and(|m| (1..=12).contains(&m));
        let year_ok = year.len() == 4 && year.bytes().all(|b| b.is_ascii_digit());
        (year_ok && month_ok).then(|| ApiVersion::Dated(raw.to_owned()))
    }

    pub fn upsert_path(&self) -> String {
        format!("{}/batch/upsert", self.objects_path("contacts"))
    }

    /// The path of an object type's records: `/crm/v3/objects/notes`, or
    /// `/crm/objects/<date>/notes`.
    pub fn objects_path(&self, object: &str) -> String {
        match self {
            ApiVersion::V3 => format!("/crm/v3/objects/{object}"),
            ApiVersion::Dated(date) => format!("/crm/objects/{date}/{object}"),
        }
    }
}

/// `HUBSPOT_ID_PROPERTY`: what makes two submissions one contact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdProperty {
    /// One contact per person: the email, trimmed and lower-cased.
    Email,
    /// One contact per submission: a custom property with unique values
    /// holding the submission id.
    Custom(String),
}

impl IdProperty {
    pub fn name(&self) -> &str {
        match self {
            IdProperty::Email => "email",
            IdProperty::Custom(name) => name,
        }
    }
}

/// Everything but the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubSpotSettings {
    pub base_url: String,
    pub api_version: ApiVersion,
    pub id_property: IdProperty,
    pub field_map: FieldMap,
    /// With [`IdProperty::Email`] (and only then): the gates' key.
    pub gate_key: Option<GateKeySetting>,
}

impl HubSpotSettings {
    /// `DESTINATION=hubspot`'s settings and where its token comes from.
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<(Self, TokenSetting), ConfigError> {
        let token = match token_setting(get, HUBSPOT_TOKEN, HUBSPOT_TOKEN_SECRET_ARN)? {
            TokenSetting::None => {
                return Err(ConfigError::Missing(
                    "HUBSPOT_TOKEN or HUBSPOT_TOKEN_SECRET_ARN",
                ))
            }
            token => token,
        };
        let base_url = get(HUBSPOT_BASE_URL)
            .map(|url| url.trim().trim_end_matches('/').to_owned())
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        check_base_url(HUBSPOT_BASE_URL, &base_url, allow_http)?;
        let api_version =
            get(HUBSPOT_API_VERSION).unwrap_or_else(|| DEFAULT_API_VERSION.to_owned());
        let api_version = ApiVersion::parse(&api_version)
            .ok_or_else(|| invalid(HUBSPOT_API_VERSION, "expected v3 or a date version YYYY-MM"))?;
        let id_property = match get(HUBSPOT_ID_PROPERTY).as_deref().map(str::trim) {
            None | Some("email") => IdProperty::Email,
            Some(name) if is_property_name(name) => IdProperty::Custom(name.to_owned()),
            Some(_) => {
                return Err(invalid(
                    HUBSPOT_ID_PROPERTY,
                    "expected email or a property's internal name (letters, digits, _)",
                ))
            }
        };
        let field_map = match get(FIELD_MAP) {
            Some(text) => {
                if get(HUBSPOT_MESSAGE_PROPERTY).is_some() {
                    return Err(invalid(
                        HUBSPOT_MESSAGE_PROPERTY,
                        "applies only without FIELD_MAP (map the message there); unset it",
                    ));
                }
                FieldMap::parse(&text).map_err(|error| invalid(FIELD_MAP, error.to_string()))?
            }
            None => default_field_map(get(HUBSPOT_MESSAGE_PROPERTY).as_deref()),
        };
        if let Some(bad) = field_map.properties().find(|p| !is_property_name(p)) {
            return Err(invalid(
                FIELD_MAP,
                format!("names {bad:?}, which is not a HubSpot property's internal name (letters, digits, _)"),
            ));
        }
        let gate_key = GateKeySetting::from_lookup(get, id_property == IdProperty::Email)?;
        Ok((
            HubSpotSettings {
                base_url,
                api_version,
                id_property,
                field_map,
                gate_key,
            },
            token,
        ))
    }
}

/// HubSpot's default: its standard contact properties `email`,
/// `firstname`, `lastname` (from `firstName`/`lastName`, or `name` split
/// at its last space), `phone` and `company`, and the message with
/// every other field (`*`) into `message` (a contact property of every
/// account), or into `message_property` when the user names one.
pub fn default_field_map(message_property: Option<&str>) -> FieldMap {
    let message_property = message_property
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .unwrap_or("message");
    FieldMap::new(vec![
        ("email".to_owned(), Source::Field("email".to_owned())),
        ("firstname".to_owned(), Source::FirstName),
        ("lastname".to_owned(), Source::LastName),
        ("phone".to_owned(), Source::Field("phone".to_owned())),
        ("company".to_owned(), Source::Field("company".to_owned())),
        (message_property.to_owned(), Source::MessageAndRest),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::destinations::client::CRM_ALLOW_HTTP;
    use crate::destinations::hubspot::{ApiVersion, IdProperty};
    use shared::newest::{GateSecret, GATE_KEY, GATE_KEY_SECRET_ARN};
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)]) -> Result<(HubSpotSettings, TokenSetting), ConfigError> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let get = shared::config::non_empty(move |name| env.get(name).cloned());
        HubSpotSettings::from_lookup(&get, false)
    }

    const ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hubspot-AbCdEf";
    const GATE_ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gate-AbCdEf";
    const A_GATE_KEY: &str = "a-local-gate-key-of-at-least-32-characters";

    #[test]
    fn defaults_and_every_setting() {
        assert_eq!(
            load(&[
                (HUBSPOT_TOKEN_SECRET_ARN, ARN),
                (GATE_KEY_SECRET_ARN, GATE_ARN)
            ])
            .unwrap(),
            (
                HubSpotSettings {
                    base_url: "https://api.hubapi.com".into(),
                    api_version: ApiVersion::Dated("2026-09".into()),
                    id_property: IdProperty::Email,
                    field_map: default_field_map(None),
                    gate_key: Some(GateKeySetting::SecretsManager(GATE_ARN.into())),
                },
                TokenSetting::SecretsManager(ARN.into()),
            )
        );
        let (settings, token) = load(&[
            (HUBSPOT_TOKEN, "pat-local"),
            (HUBSPOT_BASE_URL, "http://127.0.0.1:9300/"),
            (HUBSPOT_API_VERSION, "v3"),
            (HUBSPOT_ID_PROPERTY, "staticforms_submission_id"),
            (FIELD_MAP, r#"{"email":"email","hs_lead_status":"=NEW"}"#),
        ])
        .unwrap();
        assert_eq!(settings.base_url, "http://127.0.0.1:9300");
        assert_eq!(settings.api_version, ApiVersion::V3);
        assert_eq!(
            settings.id_property,
            IdProperty::Custom("staticforms_submission_id".into())
        );
        assert_eq!(
            settings.field_map.properties().collect::<Vec<_>>(),
            ["email", "hs_lead_status"]
        );
        assert_eq!(settings.gate_key, None, "no gates by submission");
        assert!(matches!(token, TokenSetting::Inline(ref t) if t.expose() == "pat-local"));
        let (with_message, _) = load(&[
            (HUBSPOT_TOKEN, "pat-local"),
            (HUBSPOT_MESSAGE_PROPERTY, "message"),
            (GATE_KEY, A_GATE_KEY),
        ])
        .unwrap();
        assert_eq!(
            with_message.gate_key,
            Some(GateKeySetting::Inline(GateSecret::new(A_GATE_KEY).unwrap()))
        );
        assert_eq!(with_message.field_map, default_field_map(Some("message")));
    }

    #[test]
    fn invalid_settings_name_their_variable() {
        let with_token = |extra: &[(&'static str, &'static str)]| {
            let mut pairs = vec![(HUBSPOT_TOKEN, "pat-local")];
            pairs.extend_from_slice(extra);
            load(&pairs).unwrap_err()
        };
        #[rustfmt::skip]
        let rows: Vec<(&str, ConfigError, ConfigError)> = vec![
            ("no token", load(&[]).unwrap_err(), ConfigError::Missing("HUBSPOT_TOKEN or HUBSPOT_TOKEN_SECRET_ARN")),
            ("both tokens", with_token(&[(HUBSPOT_TOKEN_SECRET_ARN, ARN)]), invalid(HUBSPOT_TOKEN_SECRET_ARN, "set either HUBSPOT_TOKEN or HUBSPOT_TOKEN_SECRET_ARN, not both")),
            ("http base url", with_token(&[(HUBSPOT_BASE_URL, "http://api.example.com")]), invalid(HUBSPOT_BASE_URL, format!("must be https:// (http:// sends the CRM token in clear text; it is allowed for loopback addresses, or with {CRM_ALLOW_HTTP}=true for local runs)"))),
            ("base url with a query", with_token(&[(HUBSPOT_BASE_URL, "https://api.example.com?x=1")]), invalid(HUBSPOT_BASE_URL, "must have no query or fragment")),
            ("version", with_token(&[(HUBSPOT_API_VERSION, "v4")]), invalid(HUBSPOT_API_VERSION, "expected v3 or a date version YYYY-MM")),
            ("id property label", with_token(&[(HUBSPOT_ID_PROPERTY, "Submission ID")]), invalid(HUBSPOT_ID_PROPERTY, "expected email or a property's internal name (letters, digits, _)")),
            ("field map text", with_token(&[(FIELD_MAP, "email=email")]), invalid(FIELD_MAP, r#"is not a JSON object of property names to form field names (with sam deploy, quote the FieldMap parameter whole: FieldMap='{"email":"email"}')"#)),
            ("field map label", with_token(&[(FIELD_MAP, r#"{"First Name":"firstName"}"#)]), invalid(FIELD_MAP, "names \"First Name\", which is not a HubSpot property's internal name (letters, digits, _)")),
            ("email without a gate key", with_token(&[]), ConfigError::Missing("GATE_KEY or GATE_KEY_SECRET_ARN (one record per e-mail address keeps newest-wins gates)")),
            ("short gate key", with_token(&[(GATE_KEY, "pat-local-gate")]), invalid(GATE_KEY, "must be at least 32 characters")),
            ("gate key not an arn", with_token(&[(GATE_KEY_SECRET_ARN, "gate")]), invalid(GATE_KEY_SECRET_ARN, "must be a Secrets Manager secret ARN (arn:...)")),
            ("both gate keys", with_token(&[(GATE_KEY, A_GATE_KEY), (GATE_KEY_SECRET_ARN, GATE_ARN)]), invalid(GATE_KEY_SECRET_ARN, "set either GATE_KEY or GATE_KEY_SECRET_ARN, not both")),
            ("message with a map", with_token(&[(FIELD_MAP, r#"{"email":"email"}"#), (HUBSPOT_MESSAGE_PROPERTY, "message")]), invalid(HUBSPOT_MESSAGE_PROPERTY, "applies only without FIELD_MAP (map the message there); unset it")),
        ];
        for (name, error, expected) in rows {
            assert_eq!(error, expected, "case {name}");
            assert!(!error.to_string().contains("pat-local"), "case {name}");
        }
    }

    use crate::destinations::port::test_lead as lead;

    #[test]
    fn hubspot_defaults() {
        let lead = lead(
            "Ada King Lovelace",
            " ada@example.com ",
            serde_json::json!({"phone": "555", "company": "Analytical Engines", "utm": "x"}),
        );
        let rows = [
            (
                None,
                serde_json::json!({"email": "ada@example.com", "firstname": "Ada King", "lastname": "Lovelace", "phone": "555", "company": "Analytical Engines", "message": "Please call\n\nutm: x"}),
            ),
            (
                Some("notes"),
                serde_json::json!({"email": "ada@example.com", "firstname": "Ada King", "lastname": "Lovelace", "phone": "555", "company": "Analytical Engines", "notes": "Please call\n\nutm: x"}),
            ),
            (
                Some("  "),
                serde_json::json!({"email": "ada@example.com", "firstname": "Ada King", "lastname": "Lovelace", "phone": "555", "company": "Analytical Engines", "message": "Please call\n\nutm: x"}),
            ),
        ];
        for (message_property, expected) in rows {
            let map = default_field_map(message_property);
            assert_eq!(
                serde_json::Value::Object(map.apply(&lead)),
                expected,
                "{message_property:?}"
            );
        }
    }
}
