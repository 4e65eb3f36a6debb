//! A sender's own webhook signature, both directions: ingest verifies with
//! it, `receipts smoke` and the local pipeline sign with it, so the two can
//! never disagree. Every scheme here is an HMAC-SHA256 of the raw body as
//! received (never a re-serialisation), keyed by the secret the user set in
//! the sender's settings, optionally prefixed by a signed time
//! (`"<millis>:" + body`), and compared in constant time against every
//! accepted secret (several while one is rotated). Each sender's module
//! declares its scheme and cites the page it comes from.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// How one sender signs its deliveries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signature {
    /// Its `WEBHOOK_AUTH` mode (`tally-signature`).
    pub mode: &'static str,
    /// The header that carries the signature (lower case).
    pub header: &'static str,
    pub encoding: Encoding,
    /// The signed time, when the sender signs one.
    pub time: Option<SignedTime>,
    /// Whether the sender chooses the key (the stack's secret must then
    /// hold the sender's), rather than taking the one the stack generated.
    pub key_chosen_by_sender: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Standard base64 after a fixed prefix (`sha256=`, or none).
    Base64 { prefix: &'static str },
    /// Hex digits, either case.
    Hex,
}

/// A time the sender signs with the body: decimal milliseconds since the
/// epoch in `header`, signed as `"<millis>:" + body`, refused further than
/// `tolerance` from now either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignedTime {
    pub header: &'static str,
    pub tolerance: Duration,
}

/// Why a delivery's signature is refused. Logged at debug; the sender gets
/// a 401. Never quotes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the {0} header is missing or sent more than once")]
    MissingHeader(&'static str),
    #[error("the signature is not in the sender's encoding")]
    Malformed,
    #[error("the {0} header is not whole milliseconds")]
    InvalidTimestamp(&'static str),
    #[error("the {0} header is further from now than the tolerance")]
    OutsideTolerance(&'static str),
    #[error("no signature matches an accepted secret")]
    NoMatch,
}

impl Signature {
    /// Checks a delivery against every key in `keys`. `header` gives the
    /// one value of a header (an error when it is missing, repeated or not
    /// text); `tolerance` is the signed time's window (`time.tolerance`
    /// unless the deployment chose another).
    pub fn verify<'h>(
        &self,
        header: impl Fn(&'static str) -> Result<&'h str, SignatureError>,
        body: &[u8],
        keys: &[Vec<u8>],
        tolerance: Duration,
        now: SystemTime,
    ) -> Result<(), SignatureError> {
        let timestamp = match self.time {
            Some(time) => {
                let timestamp = header(time.header)?;
                check_millis(time.header, timestamp, now, tolerance)?;
                Some(timestamp)
            }
            None => None,
        };
        let presented = self
            .encoding
            .decode(header(self.header)?)
            .ok_or(SignatureError::Malformed)?;
        let matches = keys.iter().any(|key| {
            let expected = mac(key, timestamp, body);
            expected.as_slice().ct_eq(&presented).into()
        });
        if matches {
            Ok(())
        } else {
            Err(SignatureError::NoMatch)
        }
    }

    /// The headers that sign `body` with `key` at `now`, as the sender
    /// sends them.
    pub fn sign(&self, key: &[u8], body: &[u8], now: SystemTime) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        let timestamp = self.time.map(|time| {
            let millis = now
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis()
                .to_string();
            headers.push((time.header, millis.clone()));
            millis
        });
        let signature = mac(key, timestamp.as_deref(), body);
        headers.push((self.header, self.encoding.encode(&signature)));
        headers
    }
}

fn mac(key: &[u8], timestamp: Option<&str>, body: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    if let Some(timestamp) = timestamp {
        mac.update(timestamp.as_bytes());
        mac.update(b":");
    }
    mac.update(body);
    mac.finalize().into_bytes().to_vec()
}

impl Encoding {
    fn decode(self, text: &str) -> Option<Vec<u8>> {
        match self {
            Encoding::Base64 { prefix } => STANDARD.decode(text.strip_prefix(prefix)?).ok(),
            Encoding::Hex => decode_hex(text),
        }
    }

    fn encode(self, bytes: &[u8]) -> String {
        match self {
            Encoding::Base64 { prefix } => format!("{prefix}{}", STANDARD.encode(bytes)),
            Encoding::Hex => bytes.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }
}

/// A signed time: decimal milliseconds since the epoch (as the senders'
/// own verifiers parse it, so the signed text is exactly these digits),
/// within `tolerance` of `now` in either direction.
fn check_millis(
    header: &'static str,
    timestamp: &str,
    now: SystemTime,
    tolerance: Duration,
) -> Result<(), SignatureError> {
    if timestamp.is_empty() || !timestamp.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SignatureError::InvalidTimestamp(header));
    }
    let sent: u128 = timestamp
        .parse()
        .map_err(|_| SignatureError::InvalidTimestamp(header))?;
    let now = now
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    if sent.abs_diff(now) > tolerance.as_millis() {
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
            let tolerance = signature.time.map_or(Duration::ZERO, |time| time.tolerance);
            let signed = signature.sign(b"the-key-0001", body, now);
            let pairs: Vec<(&str, &str)> = signed.iter().map(|(n, v)| (*n, v.as_str())).collect();
            assert_eq!(
                signature.verify(lookup(&pairs), body, &keys, tolerance, now),
                Ok(()),
                "{sender:?}"
            );
            assert_eq!(
                signature.verify(lookup(&pairs), br#"{"a": 1}"#, &keys, tolerance, now),
                Err(SignatureError::NoMatch),
                "{sender:?}: a re-serialised body is other bytes"
            );
            assert_eq!(
                signature.verify(lookup(&pairs), body, &keys[..1], tolerance, now),
                Err(SignatureError::NoMatch),
                "{sender:?}"
            );
            assert_eq!(
                signature.verify(lookup(&[]), body, &keys, tolerance, now),
                Err(SignatureError::MissingHeader(
                    signature.time.map_or(signature.header, |time| time.header)
                )),
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
