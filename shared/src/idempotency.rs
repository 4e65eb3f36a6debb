//! The idempotency key: `<sender>:<event>:<stable id>` (Static Forms'
//! `staticforms:form.submitted:<submissionId>`, Tally's
//! `tally:FORM_RESPONSE:<submissionId>`...), the identity of a delivery
//! across every retry. It is built from the body, and an `Idempotency-Key`
//! header that is sent must equal it, so a mapping mistake or a broken proxy
//! is refused before anything is written.

use crate::envelope::SubmissionId;
use crate::sender::Sender;

/// The header's name, lower case as `http::HeaderName` stores it.
pub const HEADER_NAME: &str = "idempotency-key";

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

/// Whether a delivery must carry the `Idempotency-Key` header
/// (`IDEMPOTENCY_KEY`). Either way the key used is the one built from the
/// body, and a header that is sent must equal it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyHeader {
    /// A delivery without the header is refused.
    Required,
    /// The default: no sender sends the header (Static Forms included), so
    /// the key is derived from the body; a header that is sent is checked.
    #[default]
    Derive,
}

impl KeyHeader {
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim() {
            "required" => Some(KeyHeader::Required),
            "derive" => Some(KeyHeader::Derive),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("the Idempotency-Key header is missing (IDEMPOTENCY_KEY=derive accepts deliveries without it)")]
    Missing,
    #[error("the Idempotency-Key header is sent more than once")]
    Repeated,
    #[error("the Idempotency-Key header does not equal staticforms:<event>:<data.submissionId> built from the body")]
    Mismatch,
}

impl IdempotencyKey {
    pub fn for_submission(sender: Sender, submission_id: &SubmissionId) -> Self {
        IdempotencyKey(format!(
            "{}:{}:{}",
            sender.name(),
            sender.event_name(),
            submission_id.as_str()
        ))
    }

    /// Rebuilds a key that was stored earlier (a receipt's `pk`).
    pub fn from_stored(stored: String) -> Self {
        IdempotencyKey(stored)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Checks the values of every `Idempotency-Key` header the request
    /// carried: exactly one, byte for byte equal to this key, or none when
    /// `rule` lets the key be derived from the body.
    pub fn verify_header(&self, values: &[&[u8]], rule: KeyHeader) -> Result<(), KeyError> {
        match values {
            [] if rule == KeyHeader::Derive => Ok(()),
            [] => Err(KeyError::Missing),
            [value] if *value == self.0.as_bytes() => Ok(()),
            [_] => Err(KeyError::Mismatch),
            _ => Err(KeyError::Repeated),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: &str) -> IdempotencyKey {
        IdempotencyKey::for_submission(Sender::StaticForms, &SubmissionId::parse(id).unwrap())
    }

    #[test]
    fn key_is_built_from_event_and_submission_id() {
        assert_eq!(
            key("sub_123").as_str(),
            "staticforms:form.submitted:sub_123"
        );
        assert_eq!(key("a:b").as_str(), "staticforms:form.submitted:a:b");
    }

    /// A case name, the header values sent, and the verdict when the header
    /// is required.
    type HeaderCase = (&'static str, &'static [&'static [u8]], Result<(), KeyError>);

    #[test]
    fn header_setting() {
        let rows = [
            ("required", Some(KeyHeader::Required)),
            (" derive ", Some(KeyHeader::Derive)),
            ("Derive", None),
            ("optional", None),
        ];
        for (raw, expected) in rows {
            assert_eq!(KeyHeader::parse(raw), expected, "{raw:?}");
        }
        assert_eq!(KeyHeader::default(), KeyHeader::Derive);
    }

    #[test]
    fn header_rules() {
        let expected = key("sub_123");
        let cases: [HeaderCase; 9] = [
            ("exact", &[b"staticforms:form.submitted:sub_123"], Ok(())),
            ("missing", &[], Err(KeyError::Missing)),
            (
                "other submission",
                &[b"staticforms:form.submitted:sub_124"],
                Err(KeyError::Mismatch),
            ),
            ("bare submission id", &[b"sub_123"], Err(KeyError::Mismatch)),
            (
                "other prefix",
                &[b"stripe:form.submitted:sub_123"],
                Err(KeyError::Mismatch),
            ),
            (
                "case differs",
                &[b"StaticForms:form.submitted:sub_123"],
                Err(KeyError::Mismatch),
            ),
            (
                "trailing space",
                &[b"staticforms:form.submitted:sub_123 "],
                Err(KeyError::Mismatch),
            ),
            ("not utf-8", &[b"\xff\xfe"], Err(KeyError::Mismatch)),
            (
                "sent twice",
                &[
                    b"staticforms:form.submitted:sub_123",
                    b"staticforms:form.submitted:sub_123",
                ],
                Err(KeyError::Repeated),
            ),
        ];
        for (name, values, result) in cases {
            assert_eq!(
                expected.verify_header(values, KeyHeader::Required),
                result,
                "case {name}"
            );
            // Deriving forgives only a missing header.
            let derived = if values.is_empty() { Ok(()) } else { result };
            assert_eq!(
                expected.verify_header(values, KeyHeader::Derive),
                derived,
                "case {name}, derive"
            );
        }
    }
}
