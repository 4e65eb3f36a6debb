//! `DESTINATION=attio`'s settings, read from the environment once at init:
//! where the API is, the field map (person attributes), where the token
//! and the gates' key come from.

use shared::config::{invalid, ConfigError};
use shared::field_map::{FieldMap, Source, FIELD_MAP};
use shared::newest::GateKeySetting;

use crate::destinations::client::check_base_url;
use crate::destinations::token::{token_setting, TokenSetting};

pub use shared::destination::attio::{
    ATTIO_API_TOKEN, ATTIO_API_TOKEN_SECRET_ARN, ATTIO_BASE_URL, DEFAULT_BASE_URL,
};

/// The field map's names for the parts of Attio's `name` attribute (a
/// personal name, written as one value of its three parts).
pub const FIRST_NAME: &str = "first_name";
pub const LAST_NAME: &str = "last_name";

/// Attributes the adapter writes itself, never through the field map:
/// the address it matches on, and the name it builds from its parts.
const OWN_ATTRIBUTES: [&str; 2] = ["email_addresses", "name"];

/// Everything but the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttioSettings {
    /// `ATTIO_BASE_URL`, or Attio's API.
    pub base_url: String,
    pub field_map: FieldMap,
    pub gate_key: GateKeySetting,
}

impl AttioSettings {
    /// `DESTINATION=attio`'s settings and where its token comes from.
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<(Self, TokenSetting), ConfigError> {
        let token = match token_setting(get, ATTIO_API_TOKEN, ATTIO_API_TOKEN_SECRET_ARN)? {
            TokenSetting::None => {
                return Err(ConfigError::Missing(
                    "ATTIO_API_TOKEN or ATTIO_API_TOKEN_SECRET_ARN",
                ))
            }
            token => token,
        };
        let base_url = get(ATTIO_BASE_URL).map_or_else(
            || DEFAULT_BASE_URL.to_owned(),
            |url| url.trim().trim_end_matches('/').to_owned(),
        );
        check_base_url(ATTIO_BASE_URL, &base_url, allow_http)?;
        let field_map = match get(FIELD_MAP) {
            Some(text) => {
                FieldMap::parse(&text).map_err(|error| invalid(FIELD_MAP, error.to_string()))?
            }
            None => default_field_map(),
        };
        if let Some(bad) = field_map.properties().find(|name| !is_slug(name)) {
            return Err(invalid(
                FIELD_MAP,
                format!(
                    "names {bad:?}, which is no attribute's slug (lower-case letters, digits and \
                     _, as People > an attribute > Settings shows it)"
                ),
            ));
        }
        if let Some(own) = field_map
            .properties()
            .find(|name| OWN_ATTRIBUTES.contains(name))
        {
            return Err(invalid(
                FIELD_MAP,
                format!(
                    "names {own:?}, which the destination writes itself (the address it \
                     matches on; the name from first_name and last_name)"
                ),
            ));
        }
        let gate_key = GateKeySetting::from_lookup(get, true)?
            .ok_or(ConfigError::Missing("GATE_KEY or GATE_KEY_SECRET_ARN"))?;
        Ok((
            AttioSettings {
                base_url,
                field_map,
                gate_key,
            },
            token,
        ))
    }
}

/// An attribute's slug as the API takes it: lower-case letters, digits and
/// `_`, starting with a letter
/// (<https://docs.attio.com/docs/slugs-and-ids>).
pub fn is_slug(name: &str) -> bool {
    (1..=100).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Attio's default: the name's first and last parts; the message and
/// every other field go to the submission's note.
pub fn default_field_map() -> FieldMap {
    FieldMap::new(vec![
        (FIRST_NAME.to_owned(), Source::FirstName),
        (LAST_NAME.to_owned(), Source::LastName),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::newest::GATE_KEY_SECRET_ARN;
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)]) -> Result<(AttioSettings, TokenSetting), ConfigError> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let get = shared::config::non_empty(move |name| env.get(name).cloned());
        AttioSettings::from_lookup(&get, false)
    }

    const ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:attio-AbCdEf";
    const GATE_ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gate-AbCdEf";

    #[test]
    fn defaults_and_every_setting() {
        let (settings, token) = load(&[
            (ATTIO_API_TOKEN_SECRET_ARN, ARN),
            (GATE_KEY_SECRET_ARN, GATE_ARN),
        ])
        .unwrap();
        assert_eq!(
            settings,
            AttioSettings {
                base_url: "https://api.attio.com".into(),
                field_map: default_field_map(),
                gate_key: GateKeySetting::SecretsManager(GATE_ARN.into()),
            }
        );
        assert_eq!(token, TokenSetting::SecretsManager(ARN.into()));
        let (local, token) = load(&[
            (ATTIO_API_TOKEN, "local-token"),
            (ATTIO_BASE_URL, "http://127.0.0.1:4010/"),
            (FIELD_MAP, r#"{"first_name":"name","job_title":"role"}"#),
            (GATE_KEY_SECRET_ARN, GATE_ARN),
        ])
        .unwrap();
        assert_eq!(local.base_url, "http://127.0.0.1:4010");
        assert!(matches!(token, TokenSetting::Inline(_)));
    }

    #[test]
    fn every_wrong_setting_is_named() {
        let base = [
            (ATTIO_API_TOKEN_SECRET_ARN, ARN),
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
            (FIELD_MAP, r#"{"JobTitle":"role"}"#, "slug"),
            (FIELD_MAP, r#"{"1st":"name"}"#, "slug"),
            (FIELD_MAP, r#"{"email_addresses":"email"}"#, "writes itself"),
            (FIELD_MAP, r#"{"name":"name"}"#, "writes itself"),
            (ATTIO_BASE_URL, "http://attio.example.com", ATTIO_BASE_URL),
            (ATTIO_API_TOKEN_SECRET_ARN, "", "ATTIO_API_TOKEN"),
            (GATE_KEY_SECRET_ARN, "", "GATE_KEY"),
        ];
        for (name, value, said) in rows {
            let error = with(name, value);
            assert!(error.contains(said), "{name}={value}: {error}");
        }
    }
}
