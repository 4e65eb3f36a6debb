//! `DESTINATION=pipedrive`'s settings, read from the environment once at
//! init: the API base, how far Pipedrive's search may lag behind its
//! writes, the field map, where the token and the gates' key come from.

use std::time::Duration;

use shared::config::{invalid, ConfigError};
use shared::field_map::{FieldMap, Source, FIELD_MAP};
use shared::newest::GateKeySetting;

use crate::destinations::client::check_base_url;
use crate::destinations::token::{token_setting, TokenSetting};

pub use shared::destination::pipedrive::{
    DEFAULT_SEARCH_LAG_SECONDS, PIPEDRIVE_API_TOKEN, PIPEDRIVE_API_TOKEN_SECRET_ARN,
    PIPEDRIVE_BASE_URL, PIPEDRIVE_SEARCH_LAG_SECONDS,
};

pub const DEFAULT_BASE_URL: &str = "https://api.pipedrive.com";

/// The longest lag a setting may name: a create waits this long before a
/// second one may start, and a lead waits with it.
pub const MAX_SEARCH_LAG_SECONDS: u64 = 3600;

/// The person's own fields a map may name; every other key is a custom
/// field's: 40 hexadecimal characters, different in every account
/// (<https://pipedrive.readme.io/docs/core-api-concepts-custom-fields>).
pub const OWN_FIELDS: [&str; 3] = ["name", "email", "phone"];

/// Everything but the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipedriveSettings {
    pub base_url: String,
    pub search_lag: Duration,
    pub field_map: FieldMap,
    pub gate_key: GateKeySetting,
}

impl PipedriveSettings {
    /// `DESTINATION=pipedrive`'s settings and where its token comes from.
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<(Self, TokenSetting), ConfigError> {
        let token = match token_setting(get, PIPEDRIVE_API_TOKEN, PIPEDRIVE_API_TOKEN_SECRET_ARN)? {
            TokenSetting::None => {
                return Err(ConfigError::Missing(
                    "PIPEDRIVE_API_TOKEN or PIPEDRIVE_API_TOKEN_SECRET_ARN",
                ))
            }
            token => token,
        };
        let base_url = get(PIPEDRIVE_BASE_URL)
            .map(|url| url.trim().trim_end_matches('/').to_owned())
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        check_base_url(PIPEDRIVE_BASE_URL, &base_url, allow_http)?;
        let lag = match get(PIPEDRIVE_SEARCH_LAG_SECONDS) {
            None => DEFAULT_SEARCH_LAG_SECONDS,
            Some(text) => text
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|seconds| (1..=MAX_SEARCH_LAG_SECONDS).contains(seconds))
                .ok_or_else(|| {
                    invalid(
                        PIPEDRIVE_SEARCH_LAG_SECONDS,
                        format!("expected whole seconds from 1 to {MAX_SEARCH_LAG_SECONDS}"),
                    )
                })?,
        };
        let field_map = match get(FIELD_MAP) {
            Some(text) => {
                FieldMap::parse(&text).map_err(|error| invalid(FIELD_MAP, error.to_string()))?
            }
            None => default_field_map(),
        };
        if let Some(bad) = field_map.properties().find(|key| !is_field_key(key)) {
            return Err(invalid(
                FIELD_MAP,
                format!(
                    "names {bad:?}, which is neither name, email nor phone nor a Pipedrive custom \
                     field's key (40 hexadecimal characters: Settings > Data fields, or GET \
                     /api/v2/personFields)"
                ),
            ));
        }
        let gate_key = GateKeySetting::from_lookup(get, true)?
            .ok_or(ConfigError::Missing("GATE_KEY or GATE_KEY_SECRET_ARN"))?;
        Ok((
            PipedriveSettings {
                base_url,
                search_lag: Duration::from_secs(lag),
                field_map,
                gate_key,
            },
            token,
        ))
    }
}

/// A key a person may be written with: one of its own fields, or a custom
/// field's 40-character key.
pub fn is_field_key(key: &str) -> bool {
    OWN_FIELDS.contains(&key) || (key.len() == 40 && key.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Pipedrive's default: the person's name, e-mail and phone; the message
/// and every other field go to the submission's note.
pub fn default_field_map() -> FieldMap {
    FieldMap::new(vec![
        ("name".to_owned(), Source::Field("name".to_owned())),
        ("email".to_owned(), Source::Field("email".to_owned())),
        ("phone".to_owned(), Source::Field("phone".to_owned())),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::newest::{GateSecret, GATE_KEY, GATE_KEY_SECRET_ARN};
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)]) -> Result<(PipedriveSettings, TokenSetting), ConfigError> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let get = shared::config::non_empty(move |name| env.get(name).cloned());
        PipedriveSettings::from_lookup(&get, false)
    }

    const ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:pipedrive-AbCdEf";
    const GATE_ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gate-AbCdEf";
    const A_GATE_KEY: &str = "a-local-gate-key-of-at-least-32-characters";
    const CUSTOM: &str = "dcf558aac1ae4e8c4f849ba5e668430d8df9be12";

    #[test]
    fn defaults_and_every_setting() {
        assert_eq!(
            load(&[
                (PIPEDRIVE_API_TOKEN_SECRET_ARN, ARN),
                (GATE_KEY_SECRET_ARN, GATE_ARN)
            ])
            .unwrap(),
            (
                PipedriveSettings {
                    base_url: DEFAULT_BASE_URL.into(),
                    search_lag: Duration::from_secs(DEFAULT_SEARCH_LAG_SECONDS),
                    field_map: default_field_map(),
                    gate_key: GateKeySetting::SecretsManager(GATE_ARN.into()),
                },
                TokenSetting::SecretsManager(ARN.into()),
            )
        );
        let map = format!(r#"{{"name":"name","email":"email","{CUSTOM}":"company"}}"#);
        let (settings, token) = load(&[
            (PIPEDRIVE_API_TOKEN, "local-token"),
            (PIPEDRIVE_BASE_URL, "http://127.0.0.1:9300/"),
            (PIPEDRIVE_SEARCH_LAG_SECONDS, "5"),
            (FIELD_MAP, &map),
            (GATE_KEY, A_GATE_KEY),
        ])
        .unwrap();
        assert_eq!(settings.base_url, "http://127.0.0.1:9300");
        assert_eq!(settings.search_lag, Duration::from_secs(5));
        assert_eq!(
            settings.field_map.properties().collect::<Vec<_>>(),
            ["name", "email", CUSTOM]
        );
        assert_eq!(
            settings.gate_key,
            GateKeySetting::Inline(GateSecret::new(A_GATE_KEY).unwrap())
        );
        assert!(matches!(token, TokenSetting::Inline(ref t) if t.expose() == "local-token"));
    }

    #[test]
    fn invalid_settings_name_their_variable() {
        let with_token = |extra: &[(&'static str, &'static str)]| {
            let mut pairs = vec![(PIPEDRIVE_API_TOKEN, "t"), (GATE_KEY, A_GATE_KEY)];
            pairs.extend_from_slice(extra);
            load(&pairs).unwrap_err()
        };
        let lag = format!("expected whole seconds from 1 to {MAX_SEARCH_LAG_SECONDS}");
        #[rustfmt::skip]
        let rows: Vec<(&str, ConfigError, ConfigError)> = vec![
            ("no token", load(&[(GATE_KEY, A_GATE_KEY)]).unwrap_err(), ConfigError::Missing("PIPEDRIVE_API_TOKEN or PIPEDRIVE_API_TOKEN_SECRET_ARN")),
            ("no gate key", load(&[(PIPEDRIVE_API_TOKEN, "t")]).unwrap_err(), ConfigError::Missing("GATE_KEY or GATE_KEY_SECRET_ARN (one record per e-mail address keeps newest-wins gates)")),
            ("lag zero", with_token(&[(PIPEDRIVE_SEARCH_LAG_SECONDS, "0")]), invalid(PIPEDRIVE_SEARCH_LAG_SECONDS, lag.clone())),
            ("lag words", with_token(&[(PIPEDRIVE_SEARCH_LAG_SECONDS, "a minute")]), invalid(PIPEDRIVE_SEARCH_LAG_SECONDS, lag.clone())),
            ("lag too long", with_token(&[(PIPEDRIVE_SEARCH_LAG_SECONDS, "86400")]), invalid(PIPEDRIVE_SEARCH_LAG_SECONDS, lag)),
            ("label as a key", with_token(&[(FIELD_MAP, r#"{"Company":"company"}"#)]), invalid(FIELD_MAP, "names \"Company\", which is neither name, email nor phone nor a Pipedrive custom field's key (40 hexadecimal characters: Settings > Data fields, or GET /api/v2/personFields)")),
        ];
        for (case, got, expected) in rows {
            assert_eq!(got, expected, "{case}");
        }
    }

    #[test]
    fn field_keys() {
        for (key, ok) in [
            ("name", true),
            ("phone", true),
            (CUSTOM, true),
            ("DCF558AAC1AE4E8C4F849BA5E668430D8DF9BE12", true),
            ("dcf558aac1ae4e8c4f849ba5e668430d8df9be1", false),
            ("dcf558aac1ae4e8c4f849ba5e668430d8df9be1z", false),
            ("org_id", false),
            ("", false),
        ] {
            assert_eq!(is_field_key(key), ok, "{key}");
        }
    }
}
