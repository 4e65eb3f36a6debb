//! A sender's own webhook signature, both directions: ingest verifies with
//! it, `receipts smoke` and the local pipeline sign with it, so the two can
//! never disagree. Every scheme here is keyed by the secret the user set in
//! the sender's settings, covers the raw body as received (never a
//! re-serialisation), and is compared in constant time against every
//! accepted secret (several while one is rotated). Each sender's module
//! declares its scheme and cites the page it comes from.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// How one sender signs its deliveries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signature {
    /// Its `WEBHOOK_AUTH` mode (`tally-signature`).
    pub mode: &'static str,
    /// The header that carries the signature (lower case).
    pub header: &'static str,
    /// What is signed, and how the signature is written.
    pub scheme: Scheme,
    /// Whether the sender chooses the key (the stack's secret must then
    /// hold the sender's), rather than taking the one the stack generated.
    pub key_chosen_by_sender: bool,
}

/// What a sender signs, and how it writes the signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// HMAC-SHA256 of the body, after a signed time (`"<millis>:"`) when
    /// the sender signs one (Tally, Typeform, Webflow).
    Hmac {
        encoding: Encoding,
        time: Option<SignedTime>,
    },
    /// `t=<unix seconds>,v1=<hex>` in the one header: HMAC-SHA256 of
    /// `"<t>.<body>"`, refused further than `tolerance` from now (Formspree).
    TimestampedHex { tolerance: Duration },
    /// HMAC-SHA256 of the body followed by the value of another header the
    /// delivery carries (Framer's submission id).
    HmacWithHeader {
        encoding: Encoding,
        also: &'static str,
    },
    /// A JWS (compact, HS256) whose claims are `iss` (`issuer`) and
    /// `sha256`, the hex SHA-256 of the body (Netlify).
    Jws { issuer: &'static str },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Standard base64 after a fixed prefix (`sha256=`, or none).
    Base64 { prefix: &'static str },
    /// Hex digits, either case, after a fixed prefix.
    Hex { prefix: &'static str },
}

/// A time the sender signs with the body: decimal milliseconds since the
/// epoch in `header`, signed as `"<millis>:" + body`, refused further than
/// `tolerance` from now either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignedTime {
    pub header: &'static str,
    pub tolerance: Duration,
}

/// Why a delivery's signature is refused: the operator's log line (ingest
/// logs it), the sender gets a 401. Never quotes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error(
        "no {0} header, or more than one: is the webhook's secret set in the sender's settings?"
    )]
    MissingHeader(&'static str),
    #[error("the signature is not in the sender's encoding")]
    Malformed,
    #[error("the {0} header's time is not whole seconds or milliseconds")]
    InvalidTimestamp(&'static str),
    #[error("the {0} header's time is further from now than the tolerance (a replay, or a clock far off)")]
    OutsideTolerance(&'static str),
    #[error("the signature does not match: another secret, or a changed body")]
    NoMatch,
    #[error("the signed claims are not the sender's: another issuer, or another body")]
    Claims,
}

type Lookup<'f, 'h> = &'f dyn Fn(&'static str) -> Result<&'h str, SignatureError>;

impl Signature {
    /// Checks a delivery against every key in `keys`. `header` gives the
    /// one value of a header (an error when it is missing, repeated or not
    /// text); `tolerance` is the signed time's window (`tolerance()`
    /// unless the deployment chose another).
    pub fn verify<'h>(
        &self,
        header: impl Fn(&'static str) -> Result<&'h str, SignatureError>,
        body: &[u8],
        keys: &[Vec<u8>],
        tolerance: Duration,
        now: SystemTime,
    ) -> Result<(), SignatureError> {
        let header: Lookup<'_, 'h> = &header;
        match self.scheme {
            Scheme::Hmac { encoding, time } => {
                let timestamp = match time {
                    Some(time) => {
                        let timestamp = header(time.header)?;
                        check_time(time.header, timestamp, 1, now, tolerance)?;
                        Some(timestamp)
                    }
                    None => None,
                };
                let presented = encoding
                    .decode(header(self.header)?)
                    .ok_or(SignatureError::Malformed)?;
                let prefix = timestamp.map(|t| format!("{t}:")).unwrap_or_default();
                any_matches(keys, &[&presented], |key| {
                    mac(key, &[prefix.as_bytes(), body])
                })
            }
            Scheme::TimestampedHex { .. } => {
                let (seconds, presented) = timestamped(self.header, header(self.header)?)?;
                check_time(self.header, &seconds, 1000, now, tolerance)?;
                let prefix = format!("{seconds}.");
                let presented: Vec<&[u8]> = presented.iter().map(Vec::as_slice).collect();
                any_matches(keys, &presented, |key| mac(key, &[prefix.as_bytes(), body]))
            }
            Scheme::HmacWithHeader { encoding, also } => {
                let presented = encoding
                    .decode(header(self.header)?)
                    .ok_or(SignatureError::Malformed)?;
                let also = header(also)?;
                any_matches(keys, &[&presented], |key| {
                    mac(key, &[body, also.as_bytes()])
                })
            }
            Scheme::Jws { issuer } => verify_jws(header(self.header)?, issuer, body, keys),
        }
    }

    /// The headers that sign `body` with `key` at `now`, as the sender
    /// sends them; `sent` holds the other headers the delivery carries
    /// (Framer's signature covers its submission id header).
    pub fn sign(
        &self,
        key: &[u8],
        body: &[u8],
        now: SystemTime,
        sent: &[(&str, &str)],
    ) -> Vec<(&'static str, String)> {
        let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
        match self.scheme {
            Scheme::Hmac { encoding, time } => {
                let mut headers = Vec::new();
                let prefix = match time {
                    Some(time) => {
                        let millis = since_epoch.as_millis().to_string();
                        headers.push((time.header, millis.clone()));
                        format!("{millis}:")
                    }
                    None => String::new(),
                };
                let signature = mac(key, &[prefix.as_bytes(), body]);
                headers.push((self.header, encoding.encode(&signature)));
                headers
            }
            Scheme::TimestampedHex { .. } => {
                let seconds = since_epoch.as_secs();
                let signature = mac(key, &[format!("{seconds}.").as_bytes(), body]);
                vec![(
                    self.header,
                    format!("t={seconds},v1={}", hex::encode(signature)),
                )]
            }
            Scheme::HmacWithHeader { encoding, also } => {
                let value = sent
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case(also))
                    .map_or("", |(_, value)| *value);
                let signature = mac(key, &[body, value.as_bytes()]);
                vec![(self.header, encoding.encode(&signature))]
            }
            Scheme::Jws { issuer } => {
                let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
                let claims =
                    serde_json::json!({"iss": issuer, "sha256": hex::encode(Sha256::digest(body))});
                let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
                let signed = format!("{header}.{claims}");
                let signature = URL_SAFE_NO_PAD.encode(mac(key, &[signed.as_bytes()]));
                vec![(self.header, format!("{signed}.{signature}"))]
            }
        }
    }

    /// The signed time's own window, for a scheme that signs a time.
    pub fn tolerance(&self) -> Option<Duration> {
        match self.scheme {
            Scheme::Hmac { time, .. } => time.map(|time| time.tolerance),
            Scheme::TimestampedHex { tolerance } => Some(tolerance),
            Scheme::HmacWithHeader { .. } | Scheme::Jws { .. } => None,
        }
    }

    /// Whether the sender signs the time it sent the delivery (a replay is
    /// then refused after the window).
    pub fn signs_time(&self) -> bool {
        self.tolerance().is_some()
    }

    /// The header a verification reads first: the one missing from an
    /// unsigned delivery.
    pub fn first_header(&self) -> &'static str {
        match self.scheme {
            Scheme::Hmac {
                time: Some(time), ..
            } => time.header,
            _ => self.header,
        }
    }
}

fn mac(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().to_vec()
}

/// Whether any key's MAC (`expected`) is one of the `presented`, each
/// compared in constant time.
fn any_matches(
    keys: &[Vec<u8>],
    presented: &[&[u8]],
    expected: impl Fn(&[u8]) -> Vec<u8>,
) -> Result<(), SignatureError> {
    let matches = keys.iter().any(|key| {
        let expected = expected(key);
        presented
            .iter()
            .any(|presented| bool::from(expected.as_slice().ct_eq(presented)))
    });
    if matches {
        Ok(())
    } else {
        Err(SignatureError::NoMatch)
    }
}

/// `t=<seconds>,v1=<hex>[,v1=<hex>...]`: the time as its canonical
/// digits (as Formspree's own verifier reads it, an integer) and every
/// `v1` signature; other keys are ignored.
fn timestamped(
    header: &'static str,
    value: &str,
) -> Result<(String, Vec<Vec<u8>>), SignatureError> {
    let mut seconds = None;
    let mut signatures = Vec::new();
    for part in value.split(',') {
        let Some((name, text)) = part.trim().split_once('=') else {
            return Err(SignatureError::Malformed);
        };
        match name {
            "t" if seconds.is_none() => {
                if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(SignatureError::InvalidTimestamp(header));
                }
                let parsed: u64 = text
                    .parse()
                    .map_err(|_| SignatureError::InvalidTimestamp(header))?;
                seconds = Some(parsed.to_string());
            }
            "t" => return Err(SignatureError::Malformed),
            "v1" => signatures.push(decode_hex(text).ok_or(SignatureError::Malformed)?),
            _ => {}
        }
    }
    match (seconds, signatures.is_empty()) {
        (Some(seconds), false) => Ok((seconds, signatures)),
        _ => Err(SignatureError::Malformed),
    }
}

/// A compact JWS signed with HS256 by one of `keys`, whose claims name
/// `issuer` and the body's SHA-256. The algorithm is never taken from the
/// token beyond checking it is HS256 (no `none`, no other key type).
fn verify_jws(
    token: &str,
    issuer: &str,
    body: &[u8],
    keys: &[Vec<u8>],
) -> Result<(), SignatureError> {
    let mut parts = token.split('.');
    let (Some(header), Some(claims), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(SignatureError::Malformed);
    };
    let json = |part: &str| -> Result<serde_json::Value, SignatureError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|_| SignatureError::Malformed)?;
        serde_json::from_slice(&bytes).map_err(|_| SignatureError::Malformed)
    };
    if json(header)?.get("alg").and_then(serde_json::Value::as_str) != Some("HS256") {
        return Err(SignatureError::Malformed);
    }
    let presented = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| SignatureError::Malformed)?;
    let signed = format!("{header}.{claims}");
    any_matches(keys, &[&presented], |key| mac(key, &[signed.as_bytes()]))?;
    let claims = json(claims)?;
    let digest = Sha256::digest(body);
    let names_body = claims
        .get("sha256")
        .and_then(serde_json::Value::as_str)
        .and_then(decode_hex)
        .is_some_and(|claimed| claimed.as_slice() == digest.as_slice());
    let names_issuer = claims.get("iss").and_then(serde_json::Value::as_str) == Some(issuer);
    if names_body && names_issuer {
        Ok(())
    } else {
        Err(SignatureError::Claims)
    }
}

impl Encoding {
    fn decode(self, text: &str) -> Option<Vec<u8>> {
        match self {
            Encoding::Base64 { prefix } => STANDARD.decode(text.strip_prefix(prefix)?).ok(),
            Encoding::Hex { prefix } => decode_hex(text.strip_prefix(prefix)?),
        }
    }

    fn encode(self, bytes: &[u8]) -> String {
        match self {
            Encoding::Base64 { prefix } => format!("{prefix}{}", STANDARD.encode(bytes)),
            Encoding::Hex { prefix } => format!("{prefix}{}", hex::encode(bytes)),
        }
    }
}

/// A signed time: decimal digits (as the senders' own verifiers parse it,
/// so the signed text is exactly these digits) counting units of
/// `unit_millis` milliseconds since the epoch (1: milliseconds, 1000:
/// seconds), within `tolerance` of `now` in either direction.
fn check_time(
    header: &'static str,
    timestamp: &str,
    unit_millis: u128,
    now: SystemTime,
    tolerance: Duration,
) -> Result<(), SignatureError> {
    if timestamp.is_empty() || !timestamp.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SignatureError::InvalidTimestamp(header));
    }
    let sent: u128 = timestamp
        .parse()
        .map_err(|_| SignatureError::InvalidTimestamp(header))?;
    let sent_millis = sent.saturating_mul(unit_millis);
    let now = now
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    if sent_millis.abs_diff(now) > tolerance.as_millis() {
        return Err(SignatureError::OutsideTolerance(header));
    }
    Ok(())
}

/// Hex digits in either case; `None` for anything else. Digits are checked
/// first: `from_str_radix` alone takes a sign (`+a`), so one signature would
/// have several spellings.
fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Test help: the one value of `name` among `pairs`, as a server sees it.
#[cfg(test)]
pub(crate) fn lookup<'h>(
    pairs: &'h [(&str, &str)],
) -> impl Fn(&'static str) -> Result<&'h str, SignatureError> + 'h {
    move |name| {
        let mut values = pairs.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name));
        match (values.next(), values.next()) {
            (Some((_, value)), None) => Ok(value),
            _ => Err(SignatureError::MissingHeader(name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sender;

    #[test]
    fn every_signing_sender_verifies_what_it_signs_and_nothing_else() {
        let now = UNIX_EPOCH + Duration::from_millis(1_796_140_800_123);
        let body = br#"{"a":1}"#;
        let keys = vec![b"other-0001".to_vec(), b"the-key-0001".to_vec()];
        for sender in Sender::ALL {
            let Some(signature) = sender.signature() else {
                continue;
            };
            let tolerance = signature.tolerance().unwrap_or(Duration::ZERO);
            let sent = sender.sample_headers("sub-1");
            let sent: Vec<(&str, &str)> = sent.iter().map(|(n, v)| (*n, v.as_str())).collect();
            let signed = signature.sign(b"the-key-0001", body, now, &sent);
            let mut pairs: Vec<(&str, &str)> =
                signed.iter().map(|(n, v)| (*n, v.as_str())).collect();
            pairs.extend(sent.iter().copied());
            assert_eq!(
                signature.verify(lookup(&pairs), body, &keys, tolerance, now),
                Ok(()),
                "{sender:?}"
            );
            // A JWS signs the body's hash among its claims: its signature
            // holds, its claims do not.
            let other_body = match signature.scheme {
                Scheme::Jws { .. } => SignatureError::Claims,
                _ => SignatureError::NoMatch,
            };
            assert_eq!(
                signature.verify(lookup(&pairs), br#"{"a": 1}"#, &keys, tolerance, now),
                Err(other_body),
                "{sender:?}: a re-serialised body is other bytes"
            );
            assert_eq!(
                signature.verify(lookup(&pairs), body, &keys[..1], tolerance, now),
                Err(SignatureError::NoMatch),
                "{sender:?}"
            );
            assert_eq!(
                signature.verify(lookup(&[]), body, &keys, tolerance, now),
                Err(SignatureError::MissingHeader(signature.first_header())),
                "{sender:?}"
            );
        }
    }

    #[test]
    fn hex() {
        assert_eq!(decode_hex("00ff"), Some(vec![0, 255]));
        assert_eq!(decode_hex("0"), None);
        assert_eq!(decode_hex("zz"), None);
        assert_eq!(decode_hex("é0"), None);
        assert_eq!(decode_hex("+a"), None, "a sign is not a hex digit");
        assert_eq!(decode_hex("-a"), None);
        assert_eq!(decode_hex("+a0f"), None);
        assert_eq!(decode_hex("0A0f"), Some(vec![10, 15]));
    }
}
