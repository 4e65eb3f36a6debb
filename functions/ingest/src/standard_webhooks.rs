//! Standard Webhooks signatures (the scheme Svix and many senders use),
//! checked on the raw body before anything parses it.
//!
//! - headers `webhook-id`, `webhook-timestamp`, `webhook-signature` (or the
//!   same names with the `svix-` prefix);
//! - HMAC-SHA256 over `<id>.<timestamp>.<raw body>`, keyed by the base64
//!   part of a `whsec_<base64>` secret;
//! - `webhook-signature` holds space-separated `v1,<base64>` entries: one
//!   that matches any accepted secret passes, compared in constant time;
//! - the timestamp must be within the tolerance of now, in both directions,
//!   so a captured delivery cannot be replayed later.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use http::HeaderMap;
use sha2::Sha256;
use subtle::ConstantTimeEq;

pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(300);
const SECRET_PREFIX: &str = "whsec_";
/// The spec's secrets are 24 to 64 random bytes.
const MIN_KEY_BYTES: usize = 24;

/// The HMAC keys of the accepted secrets. Its `Debug` shows only how many.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningKeys(Vec<Vec<u8>>);

impl std::fmt::Debug for SigningKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKeys(*** x{})", self.0.len())
    }
}

/// Why a secret is not a usable `whsec_` secret. Never quotes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SecretFormatError {
    #[error("must be whsec_ followed by base64")]
    NotWhsec,
    #[error("must decode to at least 24 bytes")]
    TooShort,
}

impl SigningKeys {
    pub fn parse<'a>(
        secrets: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, (usize, SecretFormatError)> {
        let mut keys = Vec::new();
        for (index, secret) in secrets.into_iter().enumerate() {
            let encoded = secret
                .strip_prefix(SECRET_PREFIX)
                .ok_or((index, SecretFormatError::NotWhsec))?;
            let key = STANDARD
                .decode(encoded)
                .map_err(|_| (index, SecretFormatError::NotWhsec))?;
            if key.len() < MIN_KEY_BYTES {
                return Err((index, SecretFormatError::TooShort));
            }
            keys.push(key);
        }
        Ok(SigningKeys(keys))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Why a delivery's signature is refused. Logged; the sender gets a 401.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the {0} header is missing")]
    MissingHeader(&'static str),
    #[error("webhook-timestamp is not whole Unix seconds")]
    InvalidTimestamp,
    #[error("webhook-timestamp is older than the tolerance")]
    Stale,
    #[error("webhook-timestamp is further in the future than the tolerance")]
    FromTheFuture,
    #[error("webhook-signature has no v1,<base64> entry")]
    MalformedSignatures,
    #[error("no signature matches an accepted secret")]
    NoMatch,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandardWebhooks {
    keys: SigningKeys,
    tolerance: Duration,
}

/// The three header values, from the `webhook-` family or else `svix-`.
struct SignedHeaders<'h> {
    id: &'h str,
    timestamp: &'h str,
    signatures: &'h str,
}

fn signed_headers(headers: &HeaderMap) -> Result<SignedHeaders<'_>, SignatureError> {
    let prefix = if headers.contains_key("webhook-id") || !headers.contains_key("svix-id") {
        "webhook"
    } else {
        "svix"
    };
    let get = |name: &'static str, svix: &'static str| {
        let name = if prefix == "webhook" { name } else { svix };
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .ok_or(SignatureError::MissingHeader(name))
    };
    Ok(SignedHeaders {
        id: get("webhook-id", "svix-id")?,
        timestamp: get("webhook-timestamp", "svix-timestamp")?,
        signatures: get("webhook-signature", "svix-signature")?,
    })
}

impl StandardWebhooks {
    pub fn new(keys: SigningKeys, tolerance: Duration) -> Self {
        StandardWebhooks { keys, tolerance }
    }

    pub fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), SignatureError> {
        let signed = signed_headers(headers)?;
        self.check_timestamp(signed.timestamp, now)?;

        let candidates: Vec<Vec<u8>> = signed
            .signatures
            .split(' ')
            .filter_map(|entry| entry.split_once(','))
            .filter(|(version, _)| *version == "v1")
            .filter_map(|(_, signature)| STANDARD.decode(signature).ok())
            .collect();
        if candidates.is_empty() {
            return Err(SignatureError::MalformedSignatures);
        }

        let mut matched = subtle::Choice::from(0);
        for key in &self.keys.0 {
            let expected = sign(key, signed.id, signed.timestamp, body);
            for candidate in &candidates {
                matched |= expected.as_slice().ct_eq(candidate.as_slice());
            }
        }
        if bool::from(matched) {
            Ok(())
        } else {
            Err(SignatureError::NoMatch)
        }
    }

    fn check_timestamp(&self, timestamp: &str, now: SystemTime) -> Result<(), SignatureError> {
        if timestamp.is_empty() || !timestamp.bytes().all(|b| b.is_ascii_digit()) {
            return Err(SignatureError::InvalidTimestamp);
        }
        let sent = timestamp
            .parse::<u64>()
            .map_err(|_| SignatureError::InvalidTimestamp)?;
        let now = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let tolerance = self.tolerance.as_secs();
        if sent.saturating_add(tolerance) < now {
            Err(SignatureError::Stale)
        } else if sent > now.saturating_add(tolerance) {
            Err(SignatureError::FromTheFuture)
        } else {
            Ok(())
        }
    }
}

/// HMAC-SHA256 of `<id>.<timestamp>.<body>`.
pub fn sign(key: &[u8], id: &str, timestamp: &str, body: &[u8]) -> Vec<u8> {
    // HMAC takes keys of any length; this cannot fail.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.finalize().into_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderName, HeaderValue};

    // The example from the Standard Webhooks specification.
    const SPEC_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const SPEC_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const SPEC_TIMESTAMP: u64 = 1_614_265_330;
    const SPEC_BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SPEC_SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn verifier(secrets: &[&str]) -> StandardWebhooks {
        StandardWebhooks::new(
            SigningKeys::parse(secrets.iter().copied()).unwrap(),
            DEFAULT_TOLERANCE,
        )
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(n, v)| {
                (
                    HeaderName::from_bytes(n.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                )
            })
            .collect()
    }

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    #[test]
    fn the_specification_example_verifies() {
        let ts = SPEC_TIMESTAMP.to_string();
        let sent = headers(&[
            ("webhook-id", SPEC_ID),
            ("webhook-timestamp", &ts),
            ("webhook-signature", SPEC_SIGNATURE),
        ]);
        assert_eq!(
            verifier(&[SPEC_SECRET]).verify(&sent, SPEC_BODY, at(SPEC_TIMESTAMP)),
            Ok(())
        );
    }

    /// A case name, the headers, the body, the time of checking, the verdict.
    type SignatureCase = (
        &'static str,
        Vec<(&'static str, String)>,
        &'static [u8],
        u64,
        Result<(), SignatureError>,
    );

    #[test]
    fn signature_rules() {
        let ts = SPEC_TIMESTAMP.to_string();
        let other_secret = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
        let rows: Vec<SignatureCase> = vec![
            (
                "svix names",
                vec![
                    ("svix-id", SPEC_ID.into()),
                    ("svix-timestamp", ts.clone()),
                    ("svix-signature", SPEC_SIGNATURE.into()),
                ],
                SPEC_BODY,
                SPEC_TIMESTAMP,
                Ok(()),
            ),
            (
                "bad then good",
                vec![
                    ("webhook-id", SPEC_ID.into()),
                    ("webhook-timestamp", ts.clone()),
                    ("webhook-signature", format!("v1,Zm9v {SPEC_SIGNATURE}")),
                ],
                SPEC_BODY,
                SPEC_TIMESTAMP,
                Ok(()),
            ),
            (
                "other versions ignored",
                vec![
                    ("webhook-id", SPEC_ID.into()),
                    ("webhook-timestamp", ts.clone()),
                    ("webhook-signature", format!("v1a,abc {SPEC_SIGNATURE}")),
                ],
                SPEC_BODY,
                SPEC_TIMESTAMP,
                Ok(()),
            ),
            (
                "just inside the past tolerance",
                vec![
                    ("webhook-id", SPEC_ID.into()),
                    ("webhook-timestamp", ts.clone()),
                    ("webhook-signature", SPEC_SIGNATURE.into()),
                ],
                SPEC_BODY,
                SPEC_TIMESTAMP + 300,
                Ok(()),
            ),
            (
                "one byte of the body changed",
                vec![
                    ("webhook-id", SPEC_ID.into()),
                    ("webhook-timestamp", ts.clone()),
                    ("webhook-signature", SPEC_SIGNATURE.into()),
                ],
                br#"{"test": 2432232315}"#,
                SPEC_TIMESTAMP,
                Err(SignatureError::NoMatch),
            ),
            (
                "id changed",
                vec![
                    ("webhook-id", "msg_other".into()),
                    ("webhook-timestamp", ts.clone()),
                    ("webhook-signature", SPEC_SIGNATURE.into()),
                ],
                SPEC_BODY,
                SPEC_TIMESTAMP,
                Err(SignatureError::NoMatch),
            ),
            (
                "stale",
                vec![
                    ("webhook-id", SPEC_ID.into()),
                    ("webhook-timestamp", ts.clone()),
                    ("webhook-signature", SPEC_SIGNATURE.into()),
                ],
                SPEC_BODY,
                SPEC_TIMESTAMP + 301,
                Err(SignatureError::Stale),
            ),
            (
                "future",
                vec![
                    ("webhook-id", SPEC_ID.into()),
                    ("webhook-timestamp", ts.clone()),
                    ("webhook-signature", SPEC_SIGNATURE.into()),
                ],
                SPEC_BODY,
                SPEC_TIMESTAMP - 301,
                Err(SignatureError::FromTheFuture),
            ),
            (
                "timestamp not a number",
                vec![
                    ("webhook-id", SPEC_ID.into()),
                    ("webhook-timestamp", "1614265330.5".into()),
                    ("webhook-signature", SPEC_SIGNATURE.into()),
                ],
                SPEC_BODY,
                SPEC_TIMESTAMP,
                Err(SignatureError::InvalidTimestamp),
            ),
            (
                "negative timestamp",
                vec![
                    ("webhook-id", SPEC_ID.into()),
                    ("webhook-timestamp", "-1".into()),
                    ("webhook-signature", SPEC_SIGNATURE.into()),
                ],
                SPEC_BODY,
                SPEC_TIMESTAMP,
                Err(SignatureError::InvalidTimestamp),
            ),
            (
                "no id",
                vec![
                    ("webhook-timestamp", ts.clone()),
                    ("webhook-signature", SPEC_SIGNATURE.into()),
                ],
                SPEC_BODY,
                SPEC_TIMESTAMP,
                Err(SignatureError::MissingHeader("webhook-id")),
            ),
            (
                "no signature",
                vec![
                    ("webhook-id", SPEC_ID.into()),
                    ("webhook-timestamp", ts.clone()),
                ],
                SPEC_BODY,
                SPEC_TIMESTAMP,
                Err(SignatureError::MissingHeader("webhook-signature")),
            ),
            (
                "no v1 entry",
                vec![
                    ("webhook-id", SPEC_ID.into()),
                    ("webhook-timestamp", ts.clone()),
                    (
                        "webhook-signature",
                        "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=".into(),
                    ),
                ],
                SPEC_BODY,
                SPEC_TIMESTAMP,
                Err(SignatureError::MalformedSignatures),
            ),
            (
                "v1 entry not base64",
                vec![
                    ("webhook-id", SPEC_ID.into()),
                    ("webhook-timestamp", ts.clone()),
                    ("webhook-signature", "v1,%%%".into()),
                ],
                SPEC_BODY,
                SPEC_TIMESTAMP,
                Err(SignatureError::MalformedSignatures),
            ),
            (
                "wrong secret",
                vec![
                    ("webhook-id", SPEC_ID.into()),
                    ("webhook-timestamp", ts.clone()),
                    (
                        "webhook-signature",
                        format!(
                            "v1,{}",
                            STANDARD.encode(sign(
                                &STANDARD.decode(&other_secret[6..]).unwrap(),
                                SPEC_ID,
                                &ts,
                                SPEC_BODY
                            ))
                        ),
                    ),
                ],
                SPEC_BODY,
                SPEC_TIMESTAMP,
                Err(SignatureError::NoMatch),
            ),
        ];
        let verifier = verifier(&[SPEC_SECRET]);
        for (name, pairs, body, now, expected) in rows {
            let pairs: Vec<(&str, &str)> = pairs.iter().map(|(n, v)| (*n, v.as_str())).collect();
            assert_eq!(
                verifier.verify(&headers(&pairs), body, at(now)),
                expected,
                "case {name}"
            );
        }
    }

    #[test]
    fn during_rotation_either_secret_passes() {
        let new_secret = format!("whsec_{}", STANDARD.encode([7u8; 32]));
        let ts = SPEC_TIMESTAMP.to_string();
        let both = verifier(&[SPEC_SECRET, &new_secret]);
        let signed_with_new = format!(
            "v1,{}",
            STANDARD.encode(sign(&[7u8; 32], SPEC_ID, &ts, SPEC_BODY))
        );
        for signature in [SPEC_SIGNATURE, signed_with_new.as_str()] {
            let sent = headers(&[
                ("webhook-id", SPEC_ID),
                ("webhook-timestamp", &ts),
                ("webhook-signature", signature),
            ]);
            assert_eq!(
                both.verify(&sent, SPEC_BODY, at(SPEC_TIMESTAMP)),
                Ok(()),
                "{signature}"
            );
        }
    }

    #[test]
    fn secret_format() {
        assert!(SigningKeys::parse([SPEC_SECRET]).is_ok());
        assert_eq!(
            SigningKeys::parse(["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]),
            Err((0, SecretFormatError::NotWhsec))
        );
        assert_eq!(
            SigningKeys::parse([SPEC_SECRET, "whsec_%%%"]),
            Err((1, SecretFormatError::NotWhsec))
        );
        assert_eq!(
            SigningKeys::parse(["whsec_c2hvcnQ="]),
            Err((0, SecretFormatError::TooShort))
        );
        assert!(!format!("{:?}", SigningKeys::parse([SPEC_SECRET]).unwrap()).contains("MfKQ"));
    }
}
