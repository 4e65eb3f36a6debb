//! Sender authentication, before the body is parsed: a bearer token, HTTP
//! Basic credentials, a custom header, or a Standard Webhooks signature over
//! the raw body. Several secrets may be accepted at once so they can be
//! rotated without downtime; secrets kept in Secrets Manager are re-read,
//! at most once per interval, when a delivery fails.
//!
//! Only SHA-256 digests of shared secrets are kept, and candidates are
//! compared digest to digest in constant time against every accepted secret,
//! so neither timing nor length tells an attacker how close a guess was.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine;
use http::header::{HeaderName, AUTHORIZATION};
use http::HeaderMap;
use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

use crate::config::{AuthMode, AuthSetting, WEBHOOK_SECRETS_ARN};
use crate::secrets::SecretSource;
use crate::standard_webhooks::StandardWebhooks;
use shared::refresh::RefreshGate;

/// The digests of the accepted secrets. Its `Debug` shows only how many.
#[derive(Clone, PartialEq, Eq)]
pub struct AcceptedSecrets(Vec<[u8; 32]>);

impl AcceptedSecrets {
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Self {
        AcceptedSecrets(secrets.into_iter().map(|s| digest(s.as_bytes())).collect())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn contains(&self, candidate: &[u8]) -> bool {
        let candidate = digest(candidate);
        let found = self.0.iter().fold(Choice::from(0), |found, secret| {
            found | secret.ct_eq(&candidate)
        });
        found.into()
    }
}

impl std::fmt::Debug for AcceptedSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AcceptedSecrets(*** x{})", self.0.len())
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthPolicy {
    /// No authentication: only when `WEBHOOK_AUTH=none` is set explicitly.
    None,
    /// `Authorization: Bearer <secret>`.
    Bearer(AcceptedSecrets),
    /// `Authorization: Basic base64(<user>:<password>)`; secrets are `user:password`.
    Basic(AcceptedSecrets),
    /// `<name>: <secret>`.
    Header {
        name: HeaderName,
        secrets: AcceptedSecrets,
    },
    /// `webhook-signature` over the raw body, within the timestamp tolerance.
    StandardWebhooks(StandardWebhooks),
}

/// A refused sender, with the `WWW-Authenticate` challenge to answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the sender's credentials are missing or not accepted")]
pub struct Unauthenticated {
    pub challenge: Option<&'static str>,
}

const BEARER_CHALLENGE: &str = "Bearer realm=\"webhooks\"";
const BASIC_CHALLENGE: &str = "Basic realm=\"webhooks\", charset=\"UTF-8\"";

impl AuthPolicy {
    /// `body` is the raw body as received; only a signature reads it.
    pub fn authenticate(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), Unauthenticated> {
        let accepted = match self {
            AuthPolicy::None => true,
            AuthPolicy::StandardWebhooks(verifier) => match verifier.verify(headers, body, now) {
                Ok(()) => true,
                Err(reason) => {
                    tracing::debug!(reason = %reason, "signature refused");
                    false
                }
            },
            AuthPolicy::Bearer(secrets) => authorization_credentials(headers, "bearer")
                .is_some_and(|token| secrets.contains(token.as_bytes())),
            AuthPolicy::Basic(secrets) => authorization_credentials(headers, "basic")
                .and_then(|encoded| {
                    base64::engine::general_purpose::STANDARD
                        .decode(encoded)
                        .ok()
                })
                .is_some_and(|pair| secrets.contains(&pair)),
            AuthPolicy::Header { name, secrets } => {
                single_header(headers, name).is_some_and(|value| secrets.contains(value))
            }
        };
        if accepted {
            Ok(())
        } else {
            Err(Unauthenticated {
                challenge: self.challenge(),
            })
        }
    }

    fn challenge(&self) -> Option<&'static str> {
        match self {
            AuthPolicy::Bearer(_) => Some(BEARER_CHALLENGE),
            AuthPolicy::Basic(_) => Some(BASIC_CHALLENGE),
            AuthPolicy::None | AuthPolicy::Header { .. } | AuthPolicy::StandardWebhooks(_) => None,
        }
    }
}

/// Re-reads secrets kept in Secrets Manager after a failed delivery, at most
/// once per interval, so a rotated secret is picked up without a cold start
/// and a flood of bad requests cannot become a flood of reads.
pub struct SecretRefresh {
    source: Arc<dyn SecretSource>,
    mode: AuthMode,
    gate: RefreshGate,
}

impl SecretRefresh {
    /// `read_at` is when the current secrets were read (init).
    pub fn new(
        source: Arc<dyn SecretSource>,
        mode: AuthMode,
        interval: Duration,
        read_at: Instant,
    ) -> Self {
        SecretRefresh {
            source,
            mode,
            gate: RefreshGate::new(interval, read_at),
        }
    }
}

/// The policy in force, and how to renew it.
pub struct Authenticator {
    policy: RwLock<Arc<AuthPolicy>>,
    refresh: Option<SecretRefresh>,
}

impl Authenticator {
    pub fn fixed(policy: AuthPolicy) -> Self {
        Authenticator {
            policy: RwLock::new(Arc::new(policy)),
            refresh: None,
        }
    }

    /// For inline secrets (`WEBHOOK_SECRETS`, or none). `None` when the
    /// secrets are in Secrets Manager: see `secrets::authenticator`.
    pub fn inline(setting: &AuthSetting) -> Option<Self> {
        match setting {
            AuthSetting::Inline(policy) => Some(Authenticator::fixed(policy.clone())),
            AuthSetting::SecretsManager { .. } => None,
        }
    }

    pub fn refreshing(policy: AuthPolicy, refresh: SecretRefresh) -> Self {
        Authenticator {
            policy: RwLock::new(Arc::new(policy)),
            refresh: Some(refresh),
        }
    }

    fn current(&self) -> Arc<AuthPolicy> {
        Arc::clone(
            &self
                .policy
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }

    pub async fn authenticate(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), Unauthenticated> {
        let refused = match self.current().authenticate(headers, body, now) {
            Ok(()) => return Ok(()),
            Err(refused) => refused,
        };
        let Some(refresh) = self
            .refresh
            .as_ref()
            .filter(|r| r.gate.claim(Instant::now()))
        else {
            return Err(refused);
        };
        let renewed = match refresh.source.fetch().await {
            Ok(value) => refresh
                .mode
                .policy(&value, WEBHOOK_SECRETS_ARN)
                .map_err(|e| e.to_string()),
            Err(error) => Err(error.to_string()),
        };
        match renewed {
            Ok(policy) => {
                tracing::info!("webhook secrets re-read after a failed delivery");
                let policy = Arc::new(policy);
                *self
                    .policy
                    .write()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::clone(&policy);
                policy.authenticate(headers, body, now)
            }
            Err(error) => {
                // Keep the secrets in force; the next read is due after the interval.
                tracing::warn!(error = %error, "webhook secrets could not be re-read");
                Err(refused)
            }
        }
    }
}

/// The value of a header sent exactly once; a repeated credential header is
/// ambiguous and refused.
fn single_header<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Option<&'h [u8]> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (Some(value), None) => Some(value.as_bytes()),
        _ => None,
    }
}

/// The credentials of `Authorization: <scheme> <credentials>`, the scheme
/// matched without regard to case as RFC 9110 says.
fn authorization_credentials<'h>(headers: &'h HeaderMap, scheme: &str) -> Option<&'h str> {
    let value = std::str::from_utf8(single_header(headers, &AUTHORIZATION)?).ok()?;
    let (given_scheme, credentials) = value.trim().split_once(' ')?;
    given_scheme
        .eq_ignore_ascii_case(scheme)
        .then(|| credentials.trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&str, &[u8])]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_bytes(value).unwrap(),
            );
        }
        map
    }

    /// A case name, the headers sent (name, value), and whether they pass.
    type HeaderCase = (&'static str, Vec<(&'static str, &'static [u8])>, bool);

    fn basic(pair: &str) -> Vec<u8> {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
        .into_bytes()
    }

    #[test]
    fn bearer_rules() {
        let policy = AuthPolicy::Bearer(AcceptedSecrets::new([
            "current-secret-0001",
            "previous-secret-002",
        ]));
        let cases: [HeaderCase; 10] = [
            (
                "current secret",
                vec![("authorization", b"Bearer current-secret-0001")],
                true,
            ),
            (
                "previous secret during rotation",
                vec![("authorization", b"Bearer previous-secret-002")],
                true,
            ),
            (
                "scheme in other case",
                vec![("Authorization", b"bearer current-secret-0001")],
                true,
            ),
            (
                "wrong secret",
                vec![("authorization", b"Bearer current-secret-0002")],
                false,
            ),
            (
                "prefix of a secret",
                vec![("authorization", b"Bearer current-secret")],
                false,
            ),
            (
                "secret with extra text",
                vec![("authorization", b"Bearer current-secret-00011")],
                false,
            ),
            ("missing header", vec![], false),
            (
                "basic scheme",
                vec![("authorization", b"Basic current-secret-0001")],
                false,
            ),
            ("no credentials", vec![("authorization", b"Bearer")], false),
            (
                "sent twice",
                vec![
                    ("authorization", b"Bearer current-secret-0001"),
                    ("authorization", b"Bearer current-secret-0001"),
                ],
                false,
            ),
        ];
        for (name, pairs, accepted) in cases {
            let result = policy.authenticate(&headers(&pairs), b"", SystemTime::now());
            assert_eq!(result.is_ok(), accepted, "case {name}");
            if let Err(refused) = result {
                assert_eq!(refused.challenge, Some(BEARER_CHALLENGE), "case {name}");
            }
        }
    }

    #[test]
    fn basic_rules() {
        let policy = AuthPolicy::Basic(AcceptedSecrets::new(["staticforms:long-password-0001"]));
        let good = basic("staticforms:long-password-0001");
        let wrong_user = basic("admin:long-password-0001");
        let wrong_password = basic("staticforms:long-password-0002");
        let cases: [(&str, &[u8], bool); 5] = [
            ("right pair", &good, true),
            ("wrong user", &wrong_user, false),
            ("wrong password", &wrong_password, false),
            ("not base64", b"Basic %%%", false),
            (
                "bearer scheme",
                b"Bearer staticforms:long-password-0001",
                false,
            ),
        ];
        for (name, value, accepted) in cases {
            let result = policy.authenticate(
                &headers(&[("authorization", value)]),
                b"",
                SystemTime::now(),
            );
            assert_eq!(result.is_ok(), accepted, "case {name}");
            if let Err(refused) = result {
                assert_eq!(refused.challenge, Some(BASIC_CHALLENGE));
            }
        }
    }

    #[test]
    fn custom_header_rules() {
        let policy = AuthPolicy::Header {
            name: HeaderName::from_static("x-webhook-token"),
            secrets: AcceptedSecrets::new(["header-secret-000001"]),
        };
        let cases: [HeaderCase; 4] = [
            (
                "right value",
                vec![("X-Webhook-Token", b"header-secret-000001")],
                true,
            ),
            (
                "wrong value",
                vec![("x-webhook-token", b"header-secret-000002")],
                false,
            ),
            (
                "other header",
                vec![("authorization", b"header-secret-000001")],
                false,
            ),
            ("missing", vec![], false),
        ];
        for (name, pairs, accepted) in cases {
            let result = policy.authenticate(&headers(&pairs), b"", SystemTime::now());
            assert_eq!(result.is_ok(), accepted, "case {name}");
            if let Err(refused) = result {
                assert_eq!(refused.challenge, None);
            }
        }
    }

    #[test]
    fn none_accepts_anything() {
        assert!(AuthPolicy::None
            .authenticate(&HeaderMap::new(), b"", SystemTime::now())
            .is_ok());
    }

    #[test]
    fn debug_never_shows_a_secret() {
        let secrets = AcceptedSecrets::new(["visible-if-broken-123"]);
        let shown = format!("{:?}", AuthPolicy::Bearer(secrets));
        assert!(!shown.contains("visible-if-broken"));
        assert!(shown.contains("***"));
    }
}
