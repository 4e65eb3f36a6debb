//! The pure check of one delivery's credentials against the secrets in
//! force: a bearer token, HTTP Basic credentials, a custom header, or a
//! Standard Webhooks signature over the raw body. No I/O, no configuration.
//!
//! Only SHA-256 digests of shared secrets are kept, and candidates are
//! compared digest to digest in constant time against every accepted secret,
//! so neither timing nor length tells an attacker how close a guess was.

use std::time::SystemTime;

use base64::Engine;
use http::header::{HeaderName, AUTHORIZATION};
use http::HeaderMap;
use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

use crate::sender_signatures::SenderSignatures;
use crate::standard_webhooks::StandardWebhooks;

/// The digests of a set of accepted values (secrets, or form keys). Its
/// `Debug` shows only how many.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretSet(Vec<[u8; 32]>);

impl SecretSet {
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Self {
        SecretSet(secrets.into_iter().map(|s| digest(s.as_bytes())).collect())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Compared with every member, whatever matched first.
    pub fn contains(&self, candidate: &[u8]) -> bool {
        let candidate = digest(candidate);
        let found = self.0.iter().fold(Choice::from(0), |found, secret| {
            found | secret.ct_eq(&candidate)
        });
        found.into()
    }
}

impl std::fmt::Debug for SecretSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretSet(*** x{})", self.0.len())
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// What a delivery presents: everything a scheme may read, nothing parsed.
#[derive(Debug, Clone, Copy)]
pub struct Presented<'a> {
    pub headers: &'a HeaderMap,
    /// The raw query string, without `?`; only `Query` reads it.
    pub query: Option<&'a str>,
    /// The raw body as received; only a signature reads it.
    pub body: &'a [u8],
    pub now: SystemTime,
}

/// A scheme with the secrets it accepts: decides one delivery, purely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verifier {
    /// No authentication: only when `WEBHOOK_AUTH=none` is set explicitly.
    None,
    /// `Authorization: Bearer <secret>`.
    Bearer(SecretSet),
    /// `Authorization: Basic base64(<user>:<password>)`; secrets are `user:password`.
    Basic(SecretSet),
    /// `<name>: <secret>`.
    Header {
        name: HeaderName,
        secrets: SecretSet,
    },
    /// `?<param>=<secret>` in the URL, for senders that can only be given
    /// a URL. Weaker: URLs end up in more places than headers do.
    Query { param: String, secrets: SecretSet },
    /// `webhook-signature` over the raw body, within the timestamp tolerance.
    StandardWebhooks(StandardWebhooks),
    /// The sender's own signature over the raw body (`Sender::signature`).
    SenderSignature(SenderSignatures),
}

/// A refused sender, with the `WWW-Authenticate` challenge to answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the sender's credentials are missing or not accepted")]
pub struct Unauthenticated {
    pub challenge: Option<&'static str>,
}

pub const BEARER_CHALLENGE: &str = "Bearer realm=\"webhooks\"";
pub const BASIC_CHALLENGE: &str = "Basic realm=\"webhooks\", charset=\"UTF-8\"";

impl Verifier {
    pub fn verify(&self, presented: Presented<'_>) -> Result<(), Unauthenticated> {
        let headers = presented.headers;
        let accepted = match self {
            Verifier::None => true,
            Verifier::StandardWebhooks(verifier) => {
                signature_accepted(verifier.verify(headers, presented.body, presented.now))
            }
            Verifier::SenderSignature(verifier) => {
                signature_accepted(verifier.verify(headers, presented.body, presented.now))
            }
            Verifier::Bearer(secrets) => authorization_credentials(headers, "bearer")
                .is_some_and(|token| secrets.contains(token.as_bytes())),
            Verifier::Basic(secrets) => authorization_credentials(headers, "basic")
                .and_then(|encoded| {
                    base64::engine::general_purpose::STANDARD
                        .decode(encoded)
                        .ok()
                })
                .is_some_and(|pair| secrets.contains(&pair)),
            Verifier::Header { name, secrets } => {
                single_header(headers, name).is_some_and(|value| secrets.contains(value))
            }
            Verifier::Query { param, secrets } => presented
                .query
                .and_then(|query| single_query_value(query, param))
                .is_some_and(|value| secrets.contains(&value)),
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
            Verifier::Bearer(_) => Some(BEARER_CHALLENGE),
            Verifier::Basic(_) => Some(BASIC_CHALLENGE),
            Verifier::None
            | Verifier::Header { .. }
            | Verifier::Query { .. }
            | Verifier::StandardWebhooks(_)
            | Verifier::SenderSignature(_) => None,
        }
    }
}

/// Whether a signature check passed; why not is logged at debug (the
/// sender only learns 401).
fn signature_accepted<E: std::fmt::Display>(checked: Result<(), E>) -> bool {
    match checked {
        Ok(()) => true,
        Err(reason) => {
            // The operator's one clue to a misconfigured sender: which part
            // failed (no header: no secret set at the sender; no match:
            // another secret, or a changed body). Never a value.
            tracing::warn!(reason = %reason, "signature refused");
            false
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

/// The decoded value of `name` in a query string, when it occurs exactly
/// once: `application/x-www-form-urlencoded` rules (`+` is a space, `%XX` a
/// byte). A repeated parameter is ambiguous and refused, as a repeated
/// header is.
pub fn single_query_value(query: &str, name: &str) -> Option<Vec<u8>> {
    let mut found = None;
    for pair in query.split('&') {
        let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        if form_decode(raw_name) != name.as_bytes() {
            continue;
        }
        if found.is_some() {
            return None;
        }
        found = Some(form_decode(raw_value));
    }
    found
}

fn form_decode(raw: &str) -> Vec<u8> {
    let spaced = raw.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced).collect()
}

/// The credentials of `Authorization: <scheme> <credentials>`, the scheme
/// matched without regard to case as RFC 9110 says.
pub fn authorization_credentials<'h>(headers: &'h HeaderMap, scheme: &str) -> Option<&'h str> {
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

    fn presented(headers: &HeaderMap) -> Presented<'_> {
        Presented {
            headers,
            query: None,
            body: b"",
            now: SystemTime::now(),
        }
    }

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
        let policy = Verifier::Bearer(SecretSet::new([
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
            let result = policy.verify(presented(&headers(&pairs)));
            assert_eq!(result.is_ok(), accepted, "case {name}");
            if let Err(refused) = result {
                assert_eq!(refused.challenge, Some(BEARER_CHALLENGE), "case {name}");
            }
        }
    }

    #[test]
    fn basic_rules() {
        let policy = Verifier::Basic(SecretSet::new(["staticforms:long-password-0001"]));
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
            let result = policy.verify(presented(&headers(&[("authorization", value)])));
            assert_eq!(result.is_ok(), accepted, "case {name}");
            if let Err(refused) = result {
                assert_eq!(refused.challenge, Some(BASIC_CHALLENGE));
            }
        }
    }

    #[test]
    fn custom_header_rules() {
        let policy = Verifier::Header {
            name: HeaderName::from_static("x-webhook-token"),
            secrets: SecretSet::new(["header-secret-000001"]),
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
            let result = policy.verify(presented(&headers(&pairs)));
            assert_eq!(result.is_ok(), accepted, "case {name}");
            if let Err(refused) = result {
                assert_eq!(refused.challenge, None);
            }
        }
    }

    #[test]
    fn query_rules() {
        let verifier = Verifier::Query {
            param: "token".into(),
            secrets: SecretSet::new(["query-secret-0000001", "query secret+0000002"]),
        };
        let cases: [(&str, Option<&str>, bool); 12] = [
            ("right value", Some("token=query-secret-0000001"), true),
            (
                "among other parameters",
                Some("a=1&token=query-secret-0000001&b"),
                true,
            ),
            (
                "percent-encoded",
                Some("token=query%2Dsecret%2D0000001"),
                true,
            ),
            (
                "plus is a space",
                Some("token=query+secret%2B0000002"),
                true,
            ),
            ("encoded name", Some("t%6Fken=query-secret-0000001"), true),
            ("wrong value", Some("token=query-secret-0000009"), false),
            ("prefix", Some("token=query-secret"), false),
            ("other name", Some("Token=query-secret-0000001"), false),
            ("no value", Some("token"), false),
            (
                "sent twice",
                Some("token=query-secret-0000001&token=query-secret-0000001"),
                false,
            ),
            ("empty query", Some(""), false),
            ("no query", None, false),
        ];
        let headers = HeaderMap::new();
        for (name, query, accepted) in cases {
            let result = verifier.verify(Presented {
                query,
                ..presented(&headers)
            });
            assert_eq!(result.is_ok(), accepted, "case {name}");
            if let Err(refused) = result {
                assert_eq!(refused.challenge, None);
            }
        }
    }

    #[test]
    fn query_values_decode_like_a_form() {
        let rows: [(&str, &str, Option<&[u8]>); 6] = [
            ("a=1&b=2", "b", Some(b"2")),
            ("a=%ff%00", "a", Some(b"\xff\x00")),
            ("a=%zz", "a", Some(b"%zz")),
            ("a", "a", Some(b"")),
            ("a=1&a=2", "a", None),
            ("&&=&", "a", None),
        ];
        for (query, name, expected) in rows {
            assert_eq!(
                single_query_value(query, name).as_deref(),
                expected,
                "{query:?} {name:?}"
            );
        }
    }

    #[test]
    fn none_accepts_anything() {
        assert!(Verifier::None.verify(presented(&HeaderMap::new())).is_ok());
    }

    #[test]
    fn debug_never_shows_a_secret() {
        let secrets = SecretSet::new(["visible-if-broken-123"]);
        let shown = format!("{:?}", Verifier::Bearer(secrets));
        assert!(!shown.contains("visible-if-broken"));
        assert!(shown.contains("***"));
    }
}
