//! `DESTINATION=mailchimp`'s settings, read from the environment once at
//! init: the audience, where the API is, the field map (merge tags), where
//! the API key and the gates' key come from.

use shared::config::{invalid, ConfigError};
use shared::field_map::{FieldMap, Source, FIELD_MAP};
use shared::newest::GateKeySetting;

use crate::destinations::client::check_base_url;
use crate::destinations::token::{token_setting, TokenSetting};

pub use shared::destination::mailchimp::{
    data_centre, subscriber_hash, MAILCHIMP_API_KEY, MAILCHIMP_API_KEY_SECRET_ARN,
    MAILCHIMP_BASE_URL, MAILCHIMP_LIST_ID,
};

/// Everything but the API key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailchimpSettings {
    pub list_id: String,
    /// `MAILCHIMP_BASE_URL`; `None`: the API key's data centre says.
    pub base_url: Option<String>,
    pub field_map: FieldMap,
    pub gate_key: GateKeySetting,
}

impl MailchimpSettings {
    /// `DESTINATION=mailchimp`'s settings and where its API key comes from.
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<(Self, TokenSetting), ConfigError> {
        let key = match token_setting(get, MAILCHIMP_API_KEY, MAILCHIMP_API_KEY_SECRET_ARN)? {
            TokenSetting::None => {
                return Err(ConfigError::Missing(
                    "MAILCHIMP_API_KEY or MAILCHIMP_API_KEY_SECRET_ARN",
                ))
            }
            key => key,
        };
        let list_id = get(MAILCHIMP_LIST_ID)
            .map(|id| id.trim().to_owned())
            .ok_or(ConfigError::Missing(MAILCHIMP_LIST_ID))?;
        if list_id.len() > 64 || !list_id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(invalid(
                MAILCHIMP_LIST_ID,
                "expected the audience id: letters and digits (Audience > Settings > \
                 Audience name and defaults)",
            ));
        }
        let base_url =
            get(MAILCHIMP_BASE_URL).map(|url| url.trim().trim_end_matches('/').to_owned());
        if let Some(url) = &base_url {
            check_base_url(MAILCHIMP_BASE_URL, url, allow_http)?;
        }
        let field_map = match get(FIELD_MAP) {
            Some(text) => {
                FieldMap::parse(&text).map_err(|error| invalid(FIELD_MAP, error.to_string()))?
            }
            None => default_field_map(),
        };
        if let Some(bad) = field_map.properties().find(|tag| !is_merge_tag(tag)) {
            return Err(invalid(
                FIELD_MAP,
                format!(
                    "names {bad:?}, which is no merge tag (capitals, digits and _, at most 10: \
                     Audience > Settings > Audience fields and *|MERGE|* tags)"
                ),
            ));
        }
        let gate_key = GateKeySetting::from_lookup(get, true)?
            .ok_or(ConfigError::Missing("GATE_KEY or GATE_KEY_SECRET_ARN"))?;
        Ok((
            MailchimpSettings {
                list_id,
                base_url,
                field_map,
                gate_key,
            },
            key,
        ))
    }
}

/// Where the API is for `api_key`: its data centre's host.
pub fn api_url(api_key: &str) -> Option<String> {
    data_centre(api_key).map(|centre| format!("https://{centre}.api.mailchimp.com"))
}

/// A merge tag: capitals, digits and `_`, at most 10 characters
/// (<https://mailchimp.com/help/getting-started-with-merge-tags/>).
pub fn is_merge_tag(tag: &str) -> bool {
    (1..=10).contains(&tag.len())
        && tag
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// Mailchimp's default: the first and last name in every audience's own
/// `FNAME` and `LNAME`; the message and every other field go to the
/// submission's note.
pub fn default_field_map() -> FieldMap {
    FieldMap::new(vec![
        ("FNAME".to_owned(), Source::FirstName),
        ("LNAME".to_owned(), Source::LastName),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::newest::GATE_KEY_SECRET_ARN;
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)]) -> Result<(MailchimpSettings, TokenSetting), ConfigError> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let get = shared::config::non_empty(move |name| env.get(name).cloned());
        MailchimpSettings::from_lookup(&get, false)
    }

    const ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:mailchimp-AbCdEf";
    const GATE_ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gate-AbCdEf";

    #[test]
    fn defaults_and_every_setting() {
        let (settings, key) = load(&[
            (MAILCHIMP_API_KEY_SECRET_ARN, ARN),
            (MAILCHIMP_LIST_ID, "a1b2c3d4e5"),
            (GATE_KEY_SECRET_ARN, GATE_ARN),
        ])
        .unwrap();
        assert_eq!(
            settings,
            MailchimpSettings {
                list_id: "a1b2c3d4e5".into(),
                base_url: None,
                field_map: default_field_map(),
                gate_key: GateKeySetting::SecretsManager(GATE_ARN.into()),
            }
        );
        assert_eq!(key, TokenSetting::SecretsManager(ARN.into()));
        assert_eq!(
            api_url("0123-us21").as_deref(),
            Some("https://us21.api.mailchimp.com")
        );
    }

    #[test]
    fn every_wrong_setting_is_named() {
        let base = [
            (MAILCHIMP_API_KEY_SECRET_ARN, ARN),
            (MAILCHIMP_LIST_ID, "a1b2c3d4e5"),
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
            (MAILCHIMP_LIST_ID, "", MAILCHIMP_LIST_ID),
            (MAILCHIMP_LIST_ID, "a1/../b", "audience id"),
            (FIELD_MAP, r#"{"fname":"name"}"#, "merge tag"),
            (FIELD_MAP, r#"{"LONGER_THAN_10":"name"}"#, "merge tag"),
            (
                MAILCHIMP_BASE_URL,
                "http://mailchimp.example.com",
                MAILCHIMP_BASE_URL,
            ),
            (MAILCHIMP_API_KEY_SECRET_ARN, "", "MAILCHIMP_API_KEY"),
        ];
        for (name, value, said) in rows {
            let error = with(name, value);
            assert!(error.contains(said), "{name}={value}: {error}");
        }
    }
}
