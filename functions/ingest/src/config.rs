//! The function's configuration, read and checked once at init. A missing or
//! malformed variable stops start-up with a message naming it. Nothing about
//! authentication is silently weaker than asked: Static Forms' mode must be
//! chosen; a signing sender's default is its own signature, which still
//! needs its secrets.

use std::time::Duration;

use http::header::HeaderName;
pub use shared::config::ConfigError;
use shared::config::{
    dynamodb_endpoint, invalid, non_empty, number_in, receipts_table, seconds_in, secret_arn,
};
use shared::receipt::MAX_PAYLOAD_BYTES;

use crate::auth::{Scheme, SecretSet, Verifier};
use crate::sender_signatures::Scheme as SignatureScheme;
use crate::standard_webhooks::DEFAULT_TOLERANCE;
use shared::idempotency::KeyHeader;
use shared::Sender;

pub use shared::config::RECEIPTS_TABLE;
pub const WEBHOOK_AUTH: &str = "WEBHOOK_AUTH";
pub const WEBHOOK_SECRETS: &str = "WEBHOOK_SECRETS";
pub const MAX_BODY_BYTES: &str = "MAX_BODY_BYTES";
pub const WEBHOOK_SECRETS_ARN: &str = "WEBHOOK_SECRETS_ARN";
pub const WEBHOOK_SECRETS_REFRESH_SECONDS: &str = "WEBHOOK_SECRETS_REFRESH_SECONDS";
pub const WEBHOOK_TOLERANCE_SECONDS: &str = "WEBHOOK_TOLERANCE_SECONDS";
pub const WEBHOOK_API_KEYS: &str = "WEBHOOK_API_KEYS";
pub const IDEMPOTENCY_KEY: &str = "IDEMPOTENCY_KEY";
/// Who sends the deliveries: a name of `Sender::ALL`, `staticforms` by
/// default.
pub const SENDER: &str = "SENDER";

/// How old the secrets from Secrets Manager may get before a re-read: a
/// secret revoked there stops being accepted within this interval.
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(300);
pub const WEBHOOK_SECRETS_MAX_STALE_SECONDS: &str = "WEBHOOK_SECRETS_MAX_STALE_SECONDS";
/// How long a set of secrets that could not be re-read stays accepted.
pub const DEFAULT_MAX_STALE: Duration = Duration::from_secs(3600);

pub const DEFAULT_MAX_BODY_BYTES: usize = 256 * 1024;

#[derive(Debug, Clone)]
pub struct Config {
    pub receipts_table: String,
    /// `SENDER`: whose envelope, key and answers the deliveries carry.
    pub sender: Sender,
    pub auth: AuthConfig,
    /// `WEBHOOK_API_KEYS`: when set, `data.apiKey` must be one of these.
    pub form_keys: Option<SecretSet>,
    /// `IDEMPOTENCY_KEY`: whether the `Idempotency-Key` header is required.
    pub key_header: KeyHeader,
    pub max_body_bytes: usize,
    /// `DYNAMODB_ENDPOINT`: a local DynamoDB-protocol server, or AWS's.
    pub dynamodb_endpoint: Option<String>,
    /// `METRICS_NAMESPACE` and `OBSERVABILITY`: where the EMF metrics go,
    /// and which are emitted.
    pub metrics: shared::metrics::Metrics,
    /// `RECEIPT_RETENTION_DAYS`: a signed body older than this is a replay
    /// of a receipt that has expired (`Sender::is_replay_past_retention`).
    pub retention: shared::Retention,
    /// `ROUTES_REREAD_SECONDS`: how often the routes are read again.
    pub routes_reread: Duration,
    /// A browser-posted sender's origins, thank-you page and bot check.
    pub browser: Option<crate::browser::config::BrowserConfig>,
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the configuration through `lookup`, so tests need no process
    /// environment. Empty values count as unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = non_empty(lookup);

        let receipts_table = receipts_table(&get)?;

        let max_body_bytes = match get(MAX_BODY_BYTES) {
            None => DEFAULT_MAX_BODY_BYTES,
            Some(raw) => number_in(&raw, 1..=MAX_PAYLOAD_BYTES).ok_or_else(|| {
                    invalid(
                        MAX_BODY_BYTES,
                        format!(
                            "expected bytes from 1 to {MAX_PAYLOAD_BYTES} (a receipt must stay under DynamoDB's 400 KB item limit)"
                        ),
                    )
                })?,
        };

        let sender = match get(SENDER) {
            None => Sender::StaticForms,
            Some(raw) => Sender::parse(&raw)
                .ok_or_else(|| invalid(SENDER, format!("expected {}", Sender::names())))?,
        };
        let auth = parse_auth(&get, sender)?;
        let only_static_forms = |name: &'static str| {
            invalid(
                name,
                format!(
                    "applies only to SENDER=staticforms ({} sends no such thing); unset it",
                    sender.name()
                ),
            )
        };
        let form_keys = match get(WEBHOOK_API_KEYS) {
            Some(_) if sender != Sender::StaticForms => {
                return Err(only_static_forms(WEBHOOK_API_KEYS))
            }
            raw => raw.map(|raw| form_keys(&raw)).transpose()?,
        };
        // A key always comes from the body (a header that is sent must
        // still match it); Static Forms may require the header, for a
        // proxy that adds it.
        let key_header = match get(IDEMPOTENCY_KEY) {
            Some(_) if sender != Sender::StaticForms => {
                return Err(only_static_forms(IDEMPOTENCY_KEY))
            }
            None => KeyHeader::Derive,
            Some(raw) => KeyHeader::parse(&raw)
                .ok_or_else(|| invalid(IDEMPOTENCY_KEY, "expected required or derive"))?,
        };
        let dynamodb_endpoint = dynamodb_endpoint(&get)?;
        let metrics = shared::config::metrics(&get)?;
        let retention = shared::config::retention_days(&get)?;
        let routes_reread = shared::config::routes_reread(&get)?;
        let browser = crate::browser::config::BrowserConfig::from_lookup(&get, sender)?;

        Ok(Config {
            receipts_table,
            sender,
            auth,
            form_keys,
            key_header,
            max_body_bytes,
            dynamodb_endpoint,
            metrics,
            retention,
            routes_reread,
            browser,
        })
    }
}

/// Where the accepted secrets come from.
#[derive(Debug, Clone)]
pub enum AuthConfig {
    /// `WEBHOOK_SECRETS`, or no secrets with `WEBHOOK_AUTH=none`: fixed for
    /// the container's life.
    Fixed(Verifier),
    /// `WEBHOOK_SECRETS_ARN`: read at init, re-read at least every
    /// `refresh_interval` (see `auth::refresh`).
    SecretsManager {
        arn: String,
        scheme: Scheme,
        refresh_interval: Duration,
        /// `WEBHOOK_SECRETS_MAX_STALE_SECONDS`: a set that could not be
        /// re-read for this long is no longer accepted (fail closed).
        max_stale: Duration,
    },
}

/// The verifier for `text`, its errors named after `origin` (the variable
/// the text came from).
pub fn verifier_from(
    scheme: &Scheme,
    text: &str,
    origin: &'static str,
) -> Result<Verifier, ConfigError> {
    scheme
        .verifier(text)
        .map_err(|error| invalid(origin, error.to_string()))
}

/// The accepted form keys: Static Forms API keys, comma-separated. A form's
/// key is in its public HTML, so this is an allow-list of forms rather than a
/// secret; it is still only kept as digests and compared in constant time.
fn form_keys(raw: &str) -> Result<SecretSet, ConfigError> {
    let entries: Vec<&str> = raw.split(',').map(str::trim).collect();
    for (index, entry) in entries.iter().enumerate() {
        if entry.is_empty() || entry.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(invalid(
                WEBHOOK_API_KEYS,
                format!("entry {} is empty or contains whitespace", index + 1),
            ));
        }
    }
    Ok(SecretSet::new(entries))
}

/// A query parameter's name as `WEBHOOK_AUTH=query:<param>` gives it:
/// characters that need no encoding in a URL, so the sender's URL and the
/// check agree.
fn query_param(raw: &str) -> Result<String, ConfigError> {
    let name = raw.trim();
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.~".contains(c);
    if (1..=64).contains(&name.len()) && name.chars().all(plain) {
        Ok(name.to_owned())
    } else {
        Err(invalid(
            WEBHOOK_AUTH,
            "query:<param> needs a parameter name of 1 to 64 letters, digits, '-', '_', '.' or '~'",
        ))
    }
}

fn parse_auth(
    get: &dyn Fn(&str) -> Option<String>,
    sender: Sender,
) -> Result<AuthConfig, ConfigError> {
    // A sender's own signature is its default; Static Forms signs nothing,
    // so its mode is always chosen.
    // A browser's post carries no secret (a page keeps none): its origin
    // and bot check prove it (`browser`).
    let mode_text = match (get(WEBHOOK_AUTH), sender.signature()) {
        (Some(mode), _) => mode,
        (None, Some(own)) => own.mode.to_owned(),
        (None, None) if sender.profile().browser => "none".to_owned(),
        (None, None) => return Err(ConfigError::Missing(WEBHOOK_AUTH)),
    };
    let inline = get(WEBHOOK_SECRETS);
    let arn = get(WEBHOOK_SECRETS_ARN).map(|arn| arn.trim().to_owned());

    let scheme = match mode_text.trim() {
        "none" => Scheme::None,
        "bearer" => Scheme::Bearer,
        "basic" => Scheme::Basic,
        "standard-webhooks" => Scheme::StandardWebhooks {
            tolerance: seconds_in(
                &get,
                WEBHOOK_TOLERANCE_SECONDS,
                DEFAULT_TOLERANCE,
                1..=3600,
            )?,
        },
        mode if Sender::of_signature_mode(mode).is_some() => {
            let own = sender.signature().filter(|own| own.mode == mode).ok_or_else(|| {
                invalid(
                    WEBHOOK_AUTH,
                    format!("{mode} is another sender's signature (SENDER={})", sender.name()),
                )
            })?;
            let mut scheme = SignatureScheme::of(own);
            if let Some(tolerance) = own.tolerance() {
                scheme.tolerance =
                    seconds_in(&get, WEBHOOK_TOLERANCE_SECONDS, tolerance, 1..=3600)?;
            }
            Scheme::SenderSignature(scheme)
        }
        other if other.starts_with("query:") => Scheme::Query(query_param(&other["query:".len()..])?),
        other => match other.strip_prefix("header:") {
            Some(name) => {
                Scheme::Header(HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
                    invalid(
                        WEBHOOK_AUTH,
                        "header:<Header-Name> needs a valid HTTP header name",
                    )
                })?)
            }
            None => {
                return Err(invalid(
                    WEBHOOK_AUTH,
                    format!(
                        "expected bearer, basic, header:<Header-Name>, query:<param>, standard-webhooks, {} or none",
                        Sender::signature_modes().join(", ")
                    ),
                ))
            }
        },
    };
    let signs_time = match &scheme {
        Scheme::StandardWebhooks { .. } => true,
        Scheme::SenderSignature(own) => own.signature.signs_time(),
        _ => false,
    };
    if get(WEBHOOK_TOLERANCE_SECONDS).is_some() && !signs_time {
        return Err(invalid(
            WEBHOOK_TOLERANCE_SECONDS,
            "applies only to a mode that signs a time (standard-webhooks, or a sender's own signature with one); unset it",
        ));
    }
    if get(WEBHOOK_SECRETS_REFRESH_SECONDS).is_some() && arn.is_none() {
        return Err(invalid(
            WEBHOOK_SECRETS_REFRESH_SECONDS,
            "applies only with WEBHOOK_SECRETS_ARN; unset it",
        ));
    }
    if get(WEBHOOK_SECRETS_MAX_STALE_SECONDS).is_some() && arn.is_none() {
        return Err(invalid(
            WEBHOOK_SECRETS_MAX_STALE_SECONDS,
            "applies only with WEBHOOK_SECRETS_ARN; unset it",
        ));
    }

    match (scheme, inline, arn) {
        (Scheme::None, None, None) => Ok(AuthConfig::Fixed(Verifier::None)),
        (Scheme::None, _, _) => Err(invalid(
            WEBHOOK_AUTH,
            "is none while secrets are set; choose an authentication mode or unset the secrets",
        )),
        (_, Some(_), Some(_)) => Err(invalid(
            WEBHOOK_SECRETS_ARN,
            "set either WEBHOOK_SECRETS or WEBHOOK_SECRETS_ARN, not both",
        )),
        (_, None, None) => Err(ConfigError::Missing(
            "WEBHOOK_SECRETS or WEBHOOK_SECRETS_ARN",
        )),
        (scheme, Some(secrets), None) => Ok(AuthConfig::Fixed(verifier_from(
            &scheme,
            &secrets,
            WEBHOOK_SECRETS,
        )?)),
        (scheme, None, Some(arn)) => {
            let arn = secret_arn(WEBHOOK_SECRETS_ARN, &arn)?;
            let refresh_interval = seconds_in(
                &get,
                WEBHOOK_SECRETS_REFRESH_SECONDS,
                DEFAULT_REFRESH_INTERVAL,
                1..=86_400,
            )?;
            let max_stale = seconds_in(
                &get,
                WEBHOOK_SECRETS_MAX_STALE_SECONDS,
                DEFAULT_MAX_STALE,
                60..=86_400,
            )?;
            if max_stale < refresh_interval {
                return Err(invalid(
                    WEBHOOK_SECRETS_MAX_STALE_SECONDS,
                    format!("must be at least {WEBHOOK_SECRETS_REFRESH_SECONDS}"),
                ));
            }
            Ok(AuthConfig::SecretsManager {
                arn,
                scheme,
                refresh_interval,
                max_stale,
            })
        }
    }
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

    fn fixed_verifier(pairs: &[(&str, &str)]) -> Verifier {
        match load(pairs).unwrap().auth {
            AuthConfig::Fixed(verifier) => verifier,
            other => panic!("expected inline secrets, got {other:?}"),
        }
    }

    /// A case name, the environment, and the error it must give.
    type ConfigCase = (&'static str, Vec<(&'static str, &'static str)>, ConfigError);

    const TABLE: (&str, &str) = (RECEIPTS_TABLE, "receipts");
    const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:webhook-AbCdEf";

    #[test]
    fn defaults_apply_where_a_default_is_safe() {
        let config = load(&[
            TABLE,
            (WEBHOOK_AUTH, "bearer"),
            (WEBHOOK_SECRETS, "0123456789abcdef"),
        ])
        .unwrap();
        assert_eq!(config.receipts_table, "receipts");
        assert_eq!(config.max_body_bytes, 262_144);
        assert_eq!(config.form_keys, None, "every form, unless listed");
        assert_eq!(
            config.key_header,
            KeyHeader::Derive,
            "Static Forms sends no Idempotency-Key"
        );
        assert!(matches!(config.auth, AuthConfig::Fixed(Verifier::Bearer(ref s)) if s.len() == 1));
    }

    #[test]
    fn auth_modes() {
        let basic = fixed_verifier(&[
            TABLE,
            (WEBHOOK_AUTH, "basic"),
            (WEBHOOK_SECRETS, "sf:0123456789abcdef,sf2:fedcba9876543210"),
        ]);
        assert!(matches!(basic, Verifier::Basic(ref s) if s.len() == 2));
        let header = fixed_verifier(&[
            TABLE,
            (WEBHOOK_AUTH, "header:X-Webhook-Token"),
            (WEBHOOK_SECRETS, "0123456789abcdef"),
        ]);
        assert!(matches!(header, Verifier::Header { ref name, .. } if name == "x-webhook-token"));
        let query = fixed_verifier(&[
            TABLE,
            (WEBHOOK_AUTH, "query:token"),
            (WEBHOOK_SECRETS, "0123456789abcdef"),
        ]);
        assert!(matches!(query, Verifier::Query { ref param, .. } if param == "token"));
        let signed = fixed_verifier(&[
            TABLE,
            (WEBHOOK_AUTH, "standard-webhooks"),
            (WEBHOOK_SECRETS, WHSEC),
        ]);
        assert!(matches!(signed, Verifier::StandardWebhooks(_)));
        assert_eq!(
            fixed_verifier(&[TABLE, (WEBHOOK_AUTH, "none")]),
            Verifier::None
        );
    }

    #[test]
    fn form_keys_and_the_key_header() {
        let config = load(&[
            TABLE,
            (WEBHOOK_AUTH, "none"),
            (WEBHOOK_API_KEYS, " sf_key_1 , sf_key_2 "),
            (IDEMPOTENCY_KEY, "derive"),
        ])
        .unwrap();
        let keys = config.form_keys.unwrap();
        assert_eq!(keys.len(), 2);
        assert!(keys.contains(b"sf_key_2"));
        assert!(!keys.contains(b" sf_key_2 "));
        assert_eq!(config.key_header, KeyHeader::Derive);
    }

    #[test]
    fn secrets_from_secrets_manager() {
        let config = load(&[
            TABLE,
            (WEBHOOK_AUTH, "standard-webhooks"),
            (WEBHOOK_SECRETS_ARN, ARN),
            (WEBHOOK_TOLERANCE_SECONDS, "120"),
            (WEBHOOK_SECRETS_REFRESH_SECONDS, "5"),
        ])
        .unwrap();
        match config.auth {
            AuthConfig::SecretsManager {
                arn,
                scheme,
                refresh_interval,
                max_stale,
            } => {
                assert_eq!(max_stale, DEFAULT_MAX_STALE);
                assert_eq!(arn, ARN);
                assert_eq!(
                    scheme,
                    Scheme::StandardWebhooks {
                        tolerance: Duration::from_secs(120)
                    }
                );
                assert_eq!(refresh_interval, Duration::from_secs(5));
            }
            other => panic!("{other:?}"),
        }
        let default_refresh =
            load(&[TABLE, (WEBHOOK_AUTH, "bearer"), (WEBHOOK_SECRETS_ARN, ARN)]).unwrap();
        assert!(
            matches!(default_refresh.auth, AuthConfig::SecretsManager { refresh_interval, .. } if refresh_interval == DEFAULT_REFRESH_INTERVAL)
        );
    }

    #[test]
    fn each_sender_defaults_to_its_own_signature_and_a_key_from_the_body() {
        use crate::sender_signatures::{Scheme, SenderSignatures};
        let secret = (WEBHOOK_SECRETS, "a-signing-secret-0001");
        for sender in Sender::ALL {
            let Some(own) = sender.signature() else {
                continue;
            };
            let name = sender.name();
            let config = load(&[TABLE, (SENDER, name), secret]).unwrap();
            assert_eq!(config.sender, sender);
            assert_eq!(config.key_header, KeyHeader::Derive, "{name}");
            match config.auth {
                AuthConfig::Fixed(Verifier::SenderSignature(verifier)) => {
                    assert_eq!(
                        verifier,
                        SenderSignatures::new(Scheme::of(own), ["a-signing-secret-0001"])
                    );
                }
                other => panic!("{name}: {other:?}"),
            }
            // Another mode stays available (a sender's unsigned webhooks).
            let query =
                load(&[TABLE, (SENDER, name), (WEBHOOK_AUTH, "query:token"), secret]).unwrap();
            assert!(matches!(
                query.auth,
                AuthConfig::Fixed(Verifier::Query { .. })
            ));
            // The window of a signed time is the deployment's choice.
            let tolerance = load(&[
                TABLE,
                (SENDER, name),
                secret,
                (WEBHOOK_TOLERANCE_SECONDS, "60"),
            ]);
            match own.tolerance() {
                Some(_) => {
                    let mut scheme = Scheme::of(own);
                    scheme.tolerance = Duration::from_secs(60);
                    assert!(matches!(
                        tolerance.unwrap().auth,
                        AuthConfig::Fixed(Verifier::SenderSignature(ref v)) if *v == SenderSignatures::new(scheme, ["a-signing-secret-0001"])
                    ));
                }
                None => assert!(tolerance.is_err(), "{name}"),
            }
        }
        assert_eq!(
            load(&[TABLE, (WEBHOOK_AUTH, "none")]).unwrap().sender,
            Sender::StaticForms
        );
    }

    #[test]
    fn every_bad_configuration_names_its_variable() {
        let good_secret = (WEBHOOK_SECRETS, "0123456789abcdef");
        let cases: Vec<ConfigCase> = vec![
            ("no table", vec![(WEBHOOK_AUTH, "none")], ConfigError::Missing(RECEIPTS_TABLE)),
            ("blank table", vec![(RECEIPTS_TABLE, " "), (WEBHOOK_AUTH, "none")], ConfigError::Missing(RECEIPTS_TABLE)),
            ("no auth mode: no silent default", vec![TABLE], ConfigError::Missing(WEBHOOK_AUTH)),
            ("unknown auth mode", vec![TABLE, (WEBHOOK_AUTH, "hmac"), good_secret], invalid(WEBHOOK_AUTH, format!("expected bearer, basic, header:<Header-Name>, query:<param>, standard-webhooks, {} or none", Sender::signature_modes().join(", ")))),
            ("unknown sender", vec![TABLE, (SENDER, "zapier"), (WEBHOOK_AUTH, "none")], invalid(SENDER, format!("expected {}", Sender::names()))),
            ("another sender's signature", vec![TABLE, (SENDER, "tally"), (WEBHOOK_AUTH, "typeform-signature"), good_secret], invalid(WEBHOOK_AUTH, "typeform-signature is another sender's signature (SENDER=tally)")),
            ("a vendor signature for static forms", vec![TABLE, (WEBHOOK_AUTH, "tally-signature"), good_secret], invalid(WEBHOOK_AUTH, "tally-signature is another sender's signature (SENDER=staticforms)")),
            ("form keys for tally", vec![TABLE, (SENDER, "tally"), good_secret, (WEBHOOK_API_KEYS, "sf_key")], invalid(WEBHOOK_API_KEYS, "applies only to SENDER=staticforms (tally sends no such thing); unset it")),
            ("key header rule for typeform", vec![TABLE, (SENDER, "typeform"), good_secret, (IDEMPOTENCY_KEY, "required")], invalid(IDEMPOTENCY_KEY, "applies only to SENDER=staticforms (typeform sends no such thing); unset it")),
            ("tally's signature without secrets", vec![TABLE, (SENDER, "tally")], ConfigError::Missing("WEBHOOK_SECRETS or WEBHOOK_SECRETS_ARN")),
            ("bad header name", vec![TABLE, (WEBHOOK_AUTH, "header:bad name"), good_secret], invalid(WEBHOOK_AUTH, "header:<Header-Name> needs a valid HTTP header name")),
            ("query without a name", vec![TABLE, (WEBHOOK_AUTH, "query:"), good_secret], invalid(WEBHOOK_AUTH, "query:<param> needs a parameter name of 1 to 64 letters, digits, '-', '_', '.' or '~'")),
            ("query name to encode", vec![TABLE, (WEBHOOK_AUTH, "query:my token"), good_secret], invalid(WEBHOOK_AUTH, "query:<param> needs a parameter name of 1 to 64 letters, digits, '-', '_', '.' or '~'")),
            ("bearer without secrets", vec![TABLE, (WEBHOOK_AUTH, "bearer")], ConfigError::Missing("WEBHOOK_SECRETS or WEBHOOK_SECRETS_ARN")),
            ("both secret forms", vec![TABLE, (WEBHOOK_AUTH, "bearer"), good_secret, (WEBHOOK_SECRETS_ARN, ARN)], invalid(WEBHOOK_SECRETS_ARN, "set either WEBHOOK_SECRETS or WEBHOOK_SECRETS_ARN, not both")),
            ("not an ARN", vec![TABLE, (WEBHOOK_AUTH, "bearer"), (WEBHOOK_SECRETS_ARN, "webhook-secret")], invalid(WEBHOOK_SECRETS_ARN, "must be a Secrets Manager secret ARN (arn:...)")),
            ("short secret", vec![TABLE, (WEBHOOK_AUTH, "bearer"), (WEBHOOK_SECRETS, "short")], invalid(WEBHOOK_SECRETS, "entry 1 is shorter than 16 characters")),
            ("empty entry", vec![TABLE, (WEBHOOK_AUTH, "bearer"), (WEBHOOK_SECRETS, "0123456789abcdef,")], invalid(WEBHOOK_SECRETS, "entry 2 is shorter than 16 characters")),
            ("basic without user", vec![TABLE, (WEBHOOK_AUTH, "basic"), good_secret], invalid(WEBHOOK_SECRETS, "entry 1 must be user:password for basic authentication")),
            ("secret with space", vec![TABLE, (WEBHOOK_AUTH, "bearer"), (WEBHOOK_SECRETS, "0123456789 abcdef")], invalid(WEBHOOK_SECRETS, "entry 1 contains whitespace")),
            ("signing secret not whsec", vec![TABLE, (WEBHOOK_AUTH, "standard-webhooks"), good_secret], invalid(WEBHOOK_SECRETS, "entry 1 must be whsec_ followed by base64")),
            ("signing secret too short", vec![TABLE, (WEBHOOK_AUTH, "standard-webhooks"), (WEBHOOK_SECRETS, "whsec_c2hvcnQ=")], invalid(WEBHOOK_SECRETS, "entry 1 must decode to at least 24 bytes")),
            ("tolerance zero", vec![TABLE, (WEBHOOK_AUTH, "standard-webhooks"), (WEBHOOK_SECRETS, WHSEC), (WEBHOOK_TOLERANCE_SECONDS, "0")], invalid(WEBHOOK_TOLERANCE_SECONDS, "expected whole seconds from 1 to 3600")),
            ("tolerance without signatures", vec![TABLE, (WEBHOOK_AUTH, "bearer"), good_secret, (WEBHOOK_TOLERANCE_SECONDS, "60")], invalid(WEBHOOK_TOLERANCE_SECONDS, "applies only to a mode that signs a time (standard-webhooks, or a sender's own signature with one); unset it")),
            ("refresh without an ARN", vec![TABLE, (WEBHOOK_AUTH, "bearer"), good_secret, (WEBHOOK_SECRETS_REFRESH_SECONDS, "60")], invalid(WEBHOOK_SECRETS_REFRESH_SECONDS, "applies only with WEBHOOK_SECRETS_ARN; unset it")),
            ("secrets with auth none", vec![TABLE, (WEBHOOK_AUTH, "none"), good_secret], invalid(WEBHOOK_AUTH, "is none while secrets are set; choose an authentication mode or unset the secrets")),
            ("an ARN with auth none", vec![TABLE, (WEBHOOK_AUTH, "none"), (WEBHOOK_SECRETS_ARN, ARN)], invalid(WEBHOOK_AUTH, "is none while secrets are set; choose an authentication mode or unset the secrets")),
            ("blank form key", vec![TABLE, (WEBHOOK_AUTH, "none"), (WEBHOOK_API_KEYS, "sf_key_1,,sf_key_2")], invalid(WEBHOOK_API_KEYS, "entry 2 is empty or contains whitespace")),
            ("unknown key rule", vec![TABLE, (WEBHOOK_AUTH, "none"), (IDEMPOTENCY_KEY, "optional")], invalid(IDEMPOTENCY_KEY, "expected required or derive")),
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
