//! The worker's configuration, read and checked once at init: the common
//! settings here, each destination's own in its module
//! (`destinations::<name>`), which this one delegates to. Invalid
//! combinations stop start-up with one message naming the variable; a CRM's
//! credentials are never part of a message.

use std::time::Duration;

pub use shared::config::ConfigError;
use shared::config::{
    dynamodb_endpoint, flag, invalid, non_empty, number_in, receipts_table, retention_days,
    seconds_in, TEN_YEARS_SECONDS,
};
use shared::delivery::Redelivery;
pub use shared::field_map::FIELD_MAP;

use crate::decide::{DeliveryRules, DEFAULT_MAX_AGE_SECONDS};
use crate::deliver::DEFAULT_RECONCILE_AFTER;
pub use crate::destinations::client::CRM_ALLOW_HTTP;
pub use crate::destinations::token::{CrmToken, TokenSetting};
pub use crate::destinations::{DestinationConfig, DestinationKind, DestinationsConfig};
use shared::destination::set::{DestinationSet, SetError};

pub use shared::config::RECEIPTS_TABLE;
pub const DESTINATION: &str = "DESTINATION";
pub const WORKER_CONCURRENCY: &str = "WORKER_CONCURRENCY";
pub const DELIVERY_MAX_AGE_SECONDS: &str = "DELIVERY_MAX_AGE_SECONDS";
pub use shared::config::RECEIPT_RETENTION_DAYS;
pub const RECONCILE_AFTER_SECONDS: &str = "RECONCILE_AFTER_SECONDS";
pub const REDELIVERY_BASE_SECONDS: &str = "REDELIVERY_BASE_SECONDS";
pub const REDELIVERY_MAX_SECONDS: &str = "REDELIVERY_MAX_SECONDS";
/// `true` keeps a delivered receipt's payload (personal data) until TTL;
/// by default the completion removes it.
pub const KEEP_PAYLOAD_AFTER_DELIVERY: &str = "KEEP_PAYLOAD_AFTER_DELIVERY";

pub const DEFAULT_CONCURRENCY: usize = 8;
pub const MAX_CONCURRENCY: usize = 100;

#[derive(Debug)]
pub struct Config {
    pub receipts_table: String,
    /// `DESTINATION`: one destination, or several comma-separated.
    pub destinations: DestinationsConfig,
    pub concurrency: usize,
    pub delivery: DeliveryRules,
    /// A reconciliation pass leaves receipts younger than this to the stream.
    pub reconcile_after: Duration,
    /// `DYNAMODB_ENDPOINT`: a local DynamoDB-protocol server, or AWS's.
    pub dynamodb_endpoint: Option<String>,
    /// `METRICS_NAMESPACE` and `OBSERVABILITY`: where the EMF metrics go,
    /// and which are emitted.
    pub metrics: shared::metrics::Metrics,
    /// `ROUTES_REREAD_SECONDS`: how often the routes are read again.
    pub routes_reread: Duration,
    /// The scheduled audit, when `SENDER_API_TOKEN_SECRET_ARN` is set.
    pub audit: Option<crate::audit::AuditSettings>,
    /// The stack's gate key (`GATE_KEY` or `GATE_KEY_SECRET_ARN`), which
    /// keys the items of double submits (`duplicate_window`). A deployed
    /// stack always has one; without it no two submissions are compared.
    pub gate_key: Option<shared::newest::GateKeySetting>,
    /// Where new-lead notices go (`NOTIFY_URL` or `NOTIFY_URL_SECRET_ARN`);
    /// none, no notice. With it, `CRM_ALLOW_HTTP` as for a CRM URL.
    pub notify: Option<crate::notice::NotifySetting>,
    pub allow_http: bool,
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup`; empty values count as unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = non_empty(lookup);
        let allow_http = flag(&get, CRM_ALLOW_HTTP)?;

        let receipts_table = receipts_table(&get)?;

        let set = match get(DESTINATION) {
            None => return Err(ConfigError::Missing(DESTINATION)),
            Some(raw) => DestinationSet::parse(&raw).map_err(|error| match error {
                // One name, as before several could be named.
                SetError::Unknown(_) if !raw.contains(',') => invalid(
                    DESTINATION,
                    format!("expected {}", DestinationKind::names()),
                ),
                error => invalid(DESTINATION, error.to_string()),
            })?,
        };
        let destinations = crate::destinations::read_all(&set, &get, allow_http)?;

        let concurrency = match get(WORKER_CONCURRENCY) {
            None => DEFAULT_CONCURRENCY,
            Some(raw) => number_in(&raw, 1..=MAX_CONCURRENCY).ok_or_else(|| {
                invalid(
                    WORKER_CONCURRENCY,
                    format!("expected a whole number from 1 to {MAX_CONCURRENCY}"),
                )
            })?,
        };

        let retention = retention_days(&get)?;
        let max_age = seconds(&get, DELIVERY_MAX_AGE_SECONDS, DEFAULT_MAX_AGE_SECONDS)?;
        let base = seconds(
            &get,
            REDELIVERY_BASE_SECONDS,
            Redelivery::default().base.as_secs(),
        )?;
        let cap = seconds(
            &get,
            REDELIVERY_MAX_SECONDS,
            Redelivery::default().cap.as_secs(),
        )?;
        if cap < base {
            return Err(invalid(
                REDELIVERY_MAX_SECONDS,
                format!("must be at least {REDELIVERY_BASE_SECONDS}"),
            ));
        }
        let delivery = DeliveryRules {
            max_age,
            redelivery: Redelivery { base, cap },
            retention,
            keep_payload: flag(&get, KEEP_PAYLOAD_AFTER_DELIVERY)?,
        };
        let reconcile_after = seconds(
            &get,
            RECONCILE_AFTER_SECONDS,
            DEFAULT_RECONCILE_AFTER.as_secs(),
        )?;

        Ok(Config {
            receipts_table,
            destinations,
            concurrency,
            delivery,
            reconcile_after,
            dynamodb_endpoint: dynamodb_endpoint(&get)?,
            metrics: shared::config::metrics(&get)?,
            routes_reread: shared::config::routes_reread(&get)?,
            audit: crate::audit::AuditSettings::from_lookup(&get)?,
            gate_key: shared::newest::GateKeySetting::of_stack(&get)?,
            notify: crate::notice::NotifySetting::from_lookup(&get, allow_http)?,
            allow_http,
        })
    }
}

/// A whole number of seconds from 1 to ten years, or `default`.
fn seconds(
    get: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    default: u64,
) -> Result<Duration, ConfigError> {
    seconds_in(
        get,
        name,
        Duration::from_secs(default),
        1..=TEN_YEARS_SECONDS,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::destinations::http::{HttpConfig, CRM_TOKEN, CRM_TOKEN_SECRET_ARN, CRM_URL};
    use crate::destinations::hubspot::build::HubSpotConfig;
    use crate::destinations::hubspot::*;
    use crate::destinations::leads_table::*;
    use shared::newest::{GateKeySetting, GateSecret, GATE_KEY};
    use std::collections::HashMap;

    /// A case name, the environment, and the error it must give.
    type ConfigCase = (&'static str, Vec<(&'static str, &'static str)>, ConfigError);

    fn load(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|name| env.get(name).cloned())
    }

    const TABLE: (&str, &str) = (RECEIPTS_TABLE, "receipts");

    #[test]
    fn valid_configurations() {
        let http = load(&[
            TABLE,
            (DESTINATION, "http"),
            (CRM_URL, "https://crm.example.com/leads/{externalId}"),
            (CRM_TOKEN, "t0ken"),
        ])
        .unwrap();
        assert_eq!(http.concurrency, 8);
        assert_eq!(http.delivery, DeliveryRules::default());
        assert_eq!(http.reconcile_after, Duration::from_secs(600));
        assert!(
            matches!(http.destinations.first().settings::<HttpConfig>(), Some(HttpConfig { token: TokenSetting::Inline(token), .. }) if token.expose() == "t0ken")
        );
        let arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:crm-AbCdEf";
        let from_secret = load(&[
            TABLE,
            (DESTINATION, "http"),
            (CRM_URL, "https://crm/leads/{externalId}"),
            (CRM_TOKEN_SECRET_ARN, arn),
        ])
        .unwrap();
        assert_eq!(
            from_secret.destinations.first().settings(),
            Some(&HttpConfig {
                url: "https://crm/leads/{externalId}".into(),
                token: TokenSetting::SecretsManager(arn.into()),
                erase_url: None,
            })
        );
        let no_token = load(&[
            TABLE,
            (DESTINATION, "http"),
            (CRM_URL, "https://crm/leads/{externalId}"),
        ])
        .unwrap();
        assert!(matches!(
            no_token.destinations.first().settings(),
            Some(HttpConfig {
                token: TokenSetting::None,
                ..
            })
        ));

        let by_email = load(&[
            TABLE,
            (DESTINATION, "dynamodb"),
            (LEADS_TABLE, "leads"),
            (LEAD_KEY, "email"),
            (WORKER_CONCURRENCY, "16"),
        ])
        .unwrap();
        assert_eq!(
            by_email.destinations.first().settings(),
            Some(&LeadsTableSettings {
                table: "leads".into(),
                lead_key: LeadKey::Email,
                retention: None,
            })
        );
        assert_eq!(by_email.concurrency, 16);

        let tuned = load(&[
            TABLE,
            (DESTINATION, "dynamodb"),
            (LEADS_TABLE, "leads"),
            (RECEIPT_RETENTION_DAYS, "7"),
            (DELIVERY_MAX_AGE_SECONDS, "86400"),
            (RECONCILE_AFTER_SECONDS, "5"),
            (REDELIVERY_BASE_SECONDS, "2"),
            (REDELIVERY_MAX_SECONDS, "30"),
            (KEEP_PAYLOAD_AFTER_DELIVERY, "true"),
        ])
        .unwrap();
        assert!(tuned.delivery.keep_payload);
        assert_eq!(tuned.delivery.redelivery.cap, Duration::from_secs(30));
        assert_eq!(tuned.delivery.max_age, Duration::from_secs(86_400));
        assert_eq!(tuned.delivery.redelivery.base, Duration::from_secs(2));
        assert_eq!(tuned.reconcile_after, Duration::from_secs(5));

        let by_submission =
            load(&[TABLE, (DESTINATION, "dynamodb"), (LEADS_TABLE, "leads")]).unwrap();
        assert!(matches!(
            by_submission.destinations.first().settings(),
            Some(LeadsTableSettings {
                lead_key: LeadKey::Submission,
                ..
            })
        ));
    }

    /// Each CRM's own settings are tested beside it
    /// (`destinations::<name>::settings`); here, that `DESTINATION` hands
    /// them over and refuses the other destinations' variables.
    #[test]
    fn crm_destinations_delegate_their_settings() {
        let hubspot_arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hubspot-AbCdEf";
        assert_eq!(
            load(&[
                TABLE,
                (DESTINATION, "hubspot"),
                (HUBSPOT_TOKEN_SECRET_ARN, hubspot_arn),
                (GATE_KEY, "a-local-gate-key-of-at-least-32-characters"),
            ])
            .unwrap()
            .destinations
            .first()
            .settings(),
            Some(&HubSpotConfig {
                settings: HubSpotSettings {
                    base_url: "https://api.hubapi.com".into(),
                    api_version: ApiVersion::Dated("2026-09".into()),
                    id_property: IdProperty::Email,
                    field_map: default_field_map(None),
                    gate_key: Some(GateKeySetting::Inline(
                        GateSecret::new("a-local-gate-key-of-at-least-32-characters").unwrap()
                    )),
                },
                token: TokenSetting::SecretsManager(hubspot_arn.into()),
            })
        );
        // CRM_ALLOW_HTTP reaches the settings.
        assert!(load(&[
            TABLE,
            (DESTINATION, "hubspot"),
            (HUBSPOT_TOKEN, "pat-local"),
            (HUBSPOT_BASE_URL, "http://hubspot.internal"),
            (CRM_ALLOW_HTTP, "true"),
            (GATE_KEY, "a-local-gate-key-of-at-least-32-characters"),
        ])
        .is_ok());

        let hubspot = |extra: &[(&'static str, &'static str)]| {
            let mut pairs = vec![
                TABLE,
                (DESTINATION, "hubspot"),
                (HUBSPOT_TOKEN, "pat-local"),
            ];
            pairs.extend_from_slice(extra);
            load(&pairs).unwrap_err()
        };
        #[rustfmt::skip]
        let rows: Vec<(&str, ConfigError, ConfigError)> = vec![
            ("hubspot with a CRM_URL", hubspot(&[(CRM_URL, "https://crm/{externalId}")]), invalid(CRM_URL, "does not apply to DESTINATION=hubspot; unset it")),
            ("hubspot with a leads table", hubspot(&[(LEADS_TABLE, "leads")]), invalid(LEADS_TABLE, "does not apply to DESTINATION=hubspot; unset it")),
            ("hubspot's own error", hubspot(&[(HUBSPOT_API_VERSION, "v4")]), invalid(HUBSPOT_API_VERSION, "expected v3 or a date version YYYY-MM")),
            ("keep payload not a flag", load(&[TABLE, (DESTINATION, "dynamodb"), (LEADS_TABLE, "leads"), (KEEP_PAYLOAD_AFTER_DELIVERY, "yes")]).unwrap_err(), invalid(KEEP_PAYLOAD_AFTER_DELIVERY, "expected true or false")),
            ("dynamodb with a field map", load(&[TABLE, (DESTINATION, "dynamodb"), (LEADS_TABLE, "leads"), (FIELD_MAP, "{}")]).unwrap_err(), invalid(FIELD_MAP, "does not apply to DESTINATION=dynamodb; unset it")),
        ];
        for (name, error, expected) in rows {
            assert_eq!(error, expected, "case {name}");
            assert!(
                !error.to_string().contains("never-shown-secret"),
                "case {name}"
            );
        }
    }

    #[test]
    fn invalid_configurations_name_their_variable() {
        let cases: Vec<ConfigCase> = vec![
            (
                "no table",
                vec![
                    (DESTINATION, "http"),
                    (CRM_URL, "https://crm/leads/{externalId}"),
                ],
                ConfigError::Missing(RECEIPTS_TABLE),
            ),
            (
                "no destination",
                vec![TABLE],
                ConfigError::Missing(DESTINATION),
            ),
            (
                "unknown destination",
                vec![TABLE, (DESTINATION, "no-such-crm")],
                invalid(
                    DESTINATION,
                    format!("expected {}", DestinationKind::names()),
                ),
            ),
            (
                "http without url",
                vec![TABLE, (DESTINATION, "http")],
                ConfigError::Missing(CRM_URL),
            ),
            (
                "relative url",
                vec![
                    TABLE,
                    (DESTINATION, "http"),
                    (CRM_URL, "/leads/{externalId}"),
                ],
                invalid(CRM_URL, "is not an absolute URL"),
            ),
            (
                "ftp url",
                vec![
                    TABLE,
                    (DESTINATION, "http"),
                    (CRM_URL, "ftp://crm/leads/{externalId}"),
                ],
                invalid(CRM_URL, "must be an https:// URL with a host"),
            ),
            (
                "http with a leads table",
                vec![
                    TABLE,
                    (DESTINATION, "http"),
                    (CRM_URL, "https://crm/leads/{externalId}"),
                    (LEADS_TABLE, "leads"),
                ],
                invalid(LEADS_TABLE, "does not apply to DESTINATION=http; unset it"),
            ),
            (
                "http with a lead key",
                vec![
                    TABLE,
                    (DESTINATION, "http"),
                    (CRM_URL, "https://crm/leads/{externalId}"),
                    (LEAD_KEY, "email"),
                ],
                invalid(LEAD_KEY, "does not apply to DESTINATION=http; unset it"),
            ),
            (
                "dynamodb without table",
                vec![TABLE, (DESTINATION, "dynamodb")],
                ConfigError::Missing(LEADS_TABLE),
            ),
            (
                "dynamodb with a crm url",
                vec![
                    TABLE,
                    (DESTINATION, "dynamodb"),
                    (LEADS_TABLE, "leads"),
                    (CRM_URL, "https://crm/leads/{externalId}"),
                ],
                invalid(CRM_URL, "does not apply to DESTINATION=dynamodb; unset it"),
            ),
            (
                "dynamodb with a crm token",
                vec![
                    TABLE,
                    (DESTINATION, "dynamodb"),
                    (LEADS_TABLE, "leads"),
                    (CRM_TOKEN, "t"),
                ],
                invalid(
                    CRM_TOKEN,
                    "does not apply to DESTINATION=dynamodb; unset it",
                ),
            ),
            (
                "both token forms",
                vec![
                    TABLE,
                    (DESTINATION, "http"),
                    (CRM_URL, "https://crm/leads/{externalId}"),
                    (CRM_TOKEN, "t"),
                    (CRM_TOKEN_SECRET_ARN, "arn:aws:secretsmanager:x"),
                ],
                invalid(
                    CRM_TOKEN_SECRET_ARN,
                    "set either CRM_TOKEN or CRM_TOKEN_SECRET_ARN, not both",
                ),
            ),
            (
                "token secret not an ARN",
                vec![
                    TABLE,
                    (DESTINATION, "http"),
                    (CRM_URL, "https://crm/leads/{externalId}"),
                    (CRM_TOKEN_SECRET_ARN, "crm-token"),
                ],
                invalid(
                    CRM_TOKEN_SECRET_ARN,
                    "must be a Secrets Manager secret ARN (arn:...)",
                ),
            ),
            (
                "dynamodb with a token secret",
                vec![
                    TABLE,
                    (DESTINATION, "dynamodb"),
                    (LEADS_TABLE, "leads"),
                    (CRM_TOKEN_SECRET_ARN, "arn:aws:secretsmanager:x"),
                ],
                invalid(
                    CRM_TOKEN_SECRET_ARN,
                    "does not apply to DESTINATION=dynamodb; unset it",
                ),
            ),
            (
                "unknown lead key",
                vec![
                    TABLE,
                    (DESTINATION, "dynamodb"),
                    (LEADS_TABLE, "leads"),
                    (LEAD_KEY, "phone"),
                ],
                invalid(LEAD_KEY, "expected submission or email"),
            ),
            (
                "zero concurrency",
                vec![
                    TABLE,
                    (DESTINATION, "dynamodb"),
                    (LEADS_TABLE, "leads"),
                    (WORKER_CONCURRENCY, "0"),
                ],
                invalid(WORKER_CONCURRENCY, "expected a whole number from 1 to 100"),
            ),
            (
                "zero max age",
                vec![
                    TABLE,
                    (DESTINATION, "dynamodb"),
                    (LEADS_TABLE, "leads"),
                    (DELIVERY_MAX_AGE_SECONDS, "0"),
                ],
                invalid(
                    DELIVERY_MAX_AGE_SECONDS,
                    "expected whole seconds from 1 to 315360000",
                ),
            ),
            (
                "retention not a number",
                vec![
                    TABLE,
                    (DESTINATION, "dynamodb"),
                    (LEADS_TABLE, "leads"),
                    (RECEIPT_RETENTION_DAYS, "a month"),
                ],
                invalid(
                    RECEIPT_RETENTION_DAYS,
                    "expected a whole number of days from 1 to 3650",
                ),
            ),
            (
                "reconcile after not a number",
                vec![
                    TABLE,
                    (DESTINATION, "dynamodb"),
                    (LEADS_TABLE, "leads"),
                    (RECONCILE_AFTER_SECONDS, "soon"),
                ],
                invalid(
                    RECONCILE_AFTER_SECONDS,
                    "expected whole seconds from 1 to 315360000",
                ),
            ),
            (
                "backoff cap below its base",
                vec![
                    TABLE,
                    (DESTINATION, "dynamodb"),
                    (LEADS_TABLE, "leads"),
                    (REDELIVERY_BASE_SECONDS, "60"),
                    (REDELIVERY_MAX_SECONDS, "30"),
                ],
                invalid(
                    REDELIVERY_MAX_SECONDS,
                    "must be at least REDELIVERY_BASE_SECONDS",
                ),
            ),
            (
                "huge concurrency",
                vec![
                    TABLE,
                    (DESTINATION, "dynamodb"),
                    (LEADS_TABLE, "leads"),
                    (WORKER_CONCURRENCY, "1000"),
                ],
                invalid(WORKER_CONCURRENCY, "expected a whole number from 1 to 100"),
            ),
        ];
        for (name, pairs, expected) in cases {
            assert_eq!(load(&pairs).unwrap_err(), expected, "case {name}");
        }
    }

    #[test]
    fn crm_urls() {
        let one_per_lead =
            "must contain {externalId} exactly once, in the path: each lead needs its own URL";
        let clear_text = "must be https:// (http:// sends the CRM token in clear text; it is allowed for loopback addresses, or with CRM_ALLOW_HTTP=true for local runs)";
        let rows: Vec<(&str, Option<&str>, Option<&str>)> = vec![
            ("https://crm.example.com/leads/{externalId}", None, None),
            (
                "https://crm.example.com/leads/{externalId}?upsert=true",
                None,
                None,
            ),
            ("http://127.0.0.1:9001/leads/{externalId}", None, None),
            ("http://127.8.0.1/leads/{externalId}", None, None),
            ("http://localhost:9001/leads/{externalId}", None, None),
            ("http://[::1]:9001/leads/{externalId}", None, None),
            (
                "http://172.17.0.1:9101/leads/{externalId}",
                Some("true"),
                None,
            ),
            ("https://crm.example.com/leads", None, Some(one_per_lead)),
            (
                "https://crm.example.com/leads/{externalId}/{externalId}",
                None,
                Some(one_per_lead),
            ),
            (
                "https://crm.example.com/leads?id={externalId}",
                None,
                Some(one_per_lead),
            ),
            (
                "https://crm.example.com/leads#{externalId}",
                None,
                Some(one_per_lead),
            ),
            (
                "https://{externalId}.crm.example.com/leads",
                None,
                Some(one_per_lead),
            ),
            (
                "http://crm.example.com/leads/{externalId}",
                None,
                Some(clear_text),
            ),
            (
                "http://172.17.0.1:9101/leads/{externalId}",
                Some("false"),
                Some(clear_text),
            ),
            ("http://10.0.0.5/leads/{externalId}", None, Some(clear_text)),
        ];
        for (url, allow_http, error) in rows {
            let mut pairs = vec![TABLE, (DESTINATION, "http"), (CRM_URL, url)];
            if let Some(allow) = allow_http {
                pairs.push((CRM_ALLOW_HTTP, allow));
            }
            let loaded = load(&pairs);
            match error {
                None => assert!(loaded.is_ok(), "{url}: {loaded:?}"),
                Some(reason) => assert_eq!(loaded.unwrap_err(), invalid(CRM_URL, reason), "{url}"),
            }
        }
        assert_eq!(
            load(&[
                TABLE,
                (DESTINATION, "http"),
                (CRM_URL, "https://crm/leads/{externalId}"),
                (CRM_ALLOW_HTTP, "yes"),
            ])
            .unwrap_err(),
            invalid(CRM_ALLOW_HTTP, "expected true or false")
        );
    }

    #[test]
    fn the_token_never_shows_in_debug_output() {
        let config = load(&[
            TABLE,
            (DESTINATION, "http"),
            (CRM_URL, "https://crm/leads/{externalId}"),
            (CRM_TOKEN, "super-secret-token"),
        ])
        .unwrap();
        assert!(!format!("{config:?}").contains("super-secret-token"));
    }
}
