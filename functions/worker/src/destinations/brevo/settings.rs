//! `DESTINATION=brevo`'s settings, read from the environment once at init:
//! where the API is, the field map (contact attributes), where the API key
//! and the gates' key come from.

use shared::config::{invalid, ConfigError};
use shared::field_map::{FieldMap, Source, FIELD_MAP};
use shared::newest::GateKeySetting;

use crate::destinations::client::check_base_url;
use crate::destinations::token::{token_setting, TokenSetting};

pub use shared::destination::brevo::{
    BREVO_API_KEY, BREVO_API_KEY_SECRET_ARN, BREVO_BASE_URL, DEFAULT_BASE_URL,
};

/// Everything but the API key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrevoSettings {
    /// `BREVO_BASE_URL`, or Brevo's API.
    pub base_url: String,
    pub field_map: FieldMap,
    pub gate_key: GateKeySetting,
}

impl BrevoSettings {
    /// `DESTINATION=brevo`'s settings and where its API key comes from.
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<(Self, TokenSetting), ConfigError> {
        let key = match token_setting(get, BREVO_API_KEY, BREVO_API_KEY_SECRET_ARN)? {
            TokenSetting::None => {
                return Err(ConfigError::Missing(
                    "BREVO_API_KEY or BREVO_API_KEY_SECRET_ARN",
                ))
            }
            key => key,
        };
        let base_url = get(BREVO_BASE_URL).map_or_else(
            || DEFAULT_BASE_URL.to_owned(),
            |url| url.trim().trim_end_matches('/').to_owned(),
        );
        check_base_url(BREVO_BASE_URL, &base_url, allow_http)?;
        let field_map = match get(FIELD_MAP) {
            Some(text) => {
                FieldMap::parse(&text).map_err(|error| invalid(FIELD_MAP, error.to_string()))?
            }
            None => default_field_map(),
        };
        if let Some(bad) = field_map.properties().find(|name| !is_attribute(name)) {
            return Err(invalid(
                FIELD_MAP,
                format!(
                    "names {bad:?}, which is no contact attribute's name (capitals, digits and _, \
                     as Contacts > Settings > Contact attributes shows them)"
                ),
            ));
        }
        let gate_key = GateKeySetting::from_lookup(get, true)?
            .ok_or(ConfigError::Missing("GATE_KEY or GATE_KEY_SECRET_ARN"))?;
        Ok((
            BrevoSettings {
                base_url,
                field_map,
                gate_key,
            },
            key,
        ))
    }
}

/// A contact attribute's name as the API takes it: "passed in capital
/// letter" (<https://developers.brevo.com/reference/create-contact>):
/// capitals, digits and `_`, starting with a capital.
pub fn is_attribute(name: &str) -> bool {
    (1..=100).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// Brevo's default: the first and last name in the attributes every
/// English-language account has, `FIRSTNAME` and `LASTNAME`; the message
/// and every other field go to the submission's note. (An account set up
/// in French names them `PRENOM` and `NOM`: map them in `FIELD_MAP`.)
pub fn default_field_map() -> FieldMap {
    FieldMap::new(vec![
        ("FIRSTNAME".to_owned(), Source::FirstName),
        ("LASTNAME".to_owned(), Source::LastName),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::newest::GATE_KEY_SECRET_ARN;
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)]) -> Result<(BrevoSettings, TokenSetting), ConfigError> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let get = shared::config::non_empty(move |name| env.get(name).cloned());
        BrevoSettings::from_lookup(&get, false)
    }

    const ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:brevo-AbCdEf";
    const GATE_ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gate-AbCdEf";

    #[test]
    fn defaults_and_every_setting() {
        let (settings, key) = load(&[
            (BREVO_API_KEY_SECRET_ARN, ARN),
            (GATE_KEY_SECRET_ARN, GATE_ARN),
        ])
        .unwrap();
        assert_eq!(
            settings,
            BrevoSettings {
                base_url: "https://api.brevo.com".into(),
                field_map: default_field_map(),
                gate_key: GateKeySetting::SecretsManager(GATE_ARN.into()),
            }
        );
        assert_eq!(key, TokenSetting::SecretsManager(ARN.into()));
        let (local, key) = load(&[
            (BREVO_API_KEY, "xkeysib-local"),
            (BREVO_BASE_URL, "http://127.0.0.1:4010/"),
            (FIELD_MAP, r#"{"PRENOM":"name","SMS":"phone"}"#),
            (GATE_KEY_SECRET_ARN, GATE_ARN),
        ])
        .unwrap();
        assert_eq!(local.base_url, "http://127.0.0.1:4010");
        assert!(matches!(key, TokenSetting::Inline(_)));
    }

    #[test]
    fn every_wrong_setting_is_named() {
        let base = [
            (BREVO_API_KEY_SECRET_ARN, ARN),
            (GATE_KEY_SECRET_ARN, GATE_ARN),
        ];
        let with = |name: &'static str, value: &'static str| {
            let mut pairs: Vec<(&str, &str)> =
                base.iter().copied().filter(|(n, _)| *n != name).collect();
            if !value.is_empty() {
                pairs.push((name, value));
            }
            load(&pairs).unwrap_err().to_string()
        };
        let rows = [
            (FIELD_MAP, r#"{"firstname":"name"}"#, "contact attribute"),
            (FIELD_MAP, r#"{"1NAME":"name"}"#, "contact attribute"),
            (BREVO_BASE_URL, "http://brevo.example.com", BREVO_BASE_URL),
            (BREVO_API_KEY_SECRET_ARN, "", "BREVO_API_KEY"),
            (GATE_KEY_SECRET_ARN, "", "GATE_KEY"),
        ];
        for (name, value, said) in rows {
            let error = with(name, value);
            assert!(error.contains(said), "{name}={value}: {error}");
        }
    }
}
