//! A signing sender's deliveries checked against the accepted secrets
//! (several while one is rotated), with the sender's own scheme
//! (`shared::sender::Signature`: the same code `receipts smoke` signs
//! with). This file is the edge: it reads the headers of the request.

use std::time::{Duration, SystemTime};

use http::HeaderMap;
pub use shared::sender::{Signature, SignatureError};

/// A sender's scheme with the accepted secrets. Its `Debug` shows only how
/// many.
#[derive(Clone, PartialEq, Eq)]
pub struct SenderSignatures {
    signature: &'static Signature,
    /// The signed time's window, for a scheme that signs one.
    tolerance: Duration,
    keys: Vec<Vec<u8>>,
}

impl std::fmt::Debug for SenderSignatures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SenderSignatures({}, {:?}, *** x{})",
            self.signature.mode,
            self.tolerance,
            self.keys.len()
        )
    }
}

/// The one value of `name`: missing, repeated or not text is refused.
pub(crate) fn single<'h>(
    headers: &'h HeaderMap,
    name: &'static str,
) -> Result<&'h str, SignatureError> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (Some(value), None) => value
            .to_str()
            .map(str::trim)
            .map_err(|_| SignatureError::Malformed),
        _ => Err(SignatureError::MissingHeader(name)),
    }
}

/// A sender's scheme with its window: the scheme's own unless the
/// deployment chose another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheme {
    pub signature: &'static Signature,
    pub tolerance: Duration,
}

impl Scheme {
    pub fn of(signature: &'static Signature) -> Self {
        Scheme {
            signature,
            tolerance: signature.tolerance().unwrap_or(Duration::ZERO),
        }
    }
}

impl SenderSignatures {
    pub fn new<'a>(scheme: Scheme, secrets: impl IntoIterator<Item = &'a str>) -> Self {
        SenderSignatures {
            signature: scheme.signature,
            tolerance: scheme.tolerance,
            keys: secrets.into_iter().map(|s| s.as_bytes().to_vec()).collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), SignatureError> {
        self.signature.verify(
            |name| single(headers, name),
            body,
            &self.keys,
            self.tolerance,
            now,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use shared::Sender;
    use std::time::UNIX_EPOCH;

    /// The request's headers as the scheme reads them: what it signs
    /// verifies from a `HeaderMap`; a repeated or non-text header is
    /// refused; `Debug` never shows a secret. The schemes themselves are
    /// tested with the vendors' documented examples in `shared::sender`.
    #[test]
    fn reads_each_header_once_from_the_request() {
        let now = UNIX_EPOCH + Duration::from_millis(1_796_140_800_000);
        let body = br#"{"a":1}"#;
        for sender in Sender::ALL {
            let Some(own) = sender.signature() else {
                continue;
            };
            let verifier =
                SenderSignatures::new(Scheme::of(own), ["a-secret-0001", "b-secret-0002"]);
            let mut headers = HeaderMap::new();
            let sent = sender.sample_headers("sub-1");
            let sent_pairs: Vec<(&str, &str)> =
                sent.iter().map(|(n, v)| (*n, v.as_str())).collect();
            for (name, value) in
                sent.iter()
                    .cloned()
                    .chain(own.sign(b"b-secret-0002", body, now, &sent_pairs))
            {
                headers.append(name, HeaderValue::from_str(&value).unwrap());
            }
            assert_eq!(verifier.verify(&headers, body, now), Ok(()), "{sender:?}");
            let mut repeated = headers.clone();
            let value = repeated.get(own.header).unwrap().clone();
            repeated.append(own.header, value);
            assert_eq!(
                verifier.verify(&repeated, body, now),
                Err(SignatureError::MissingHeader(own.header))
            );
            let mut not_text = headers.clone();
            not_text.insert(own.header, HeaderValue::from_bytes(b"\xff\xfe").unwrap());
            assert_eq!(
                verifier.verify(&not_text, body, now),
                Err(SignatureError::Malformed)
            );
            let shown = format!("{verifier:?}");
            assert!(!shown.contains("secret-000"), "{shown}");
        }
    }
}
