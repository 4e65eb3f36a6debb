//! "Newest wins" across calls, for destinations keyed by e-mail (HubSpot
//! contacts by email): before a lead is written to contact K, a gate item
//! per normalised e-mail lets through only a submission at least as new as
//! the last one written. The gate items live in the receipts table, under a
//! key no receipt can have, and hold no address: the e-mail's SHA-256, never
//! the e-mail (still pseudonymous data: `receipts forget` deletes the gate).

use sha2::{Digest, Sha256};

/// The start of every gate item's key. A receipt's key starts with its
/// sender's name and a colon (`staticforms:`), which never holds `#`.
pub const GATE_KEY_PREFIX: &str = "gate#";

/// The gate item of one person: `gate#email:` and the SHA-256 of the
/// normalised e-mail, in lowercase hex.
pub fn gate_key(normalised_email: &str) -> String {
    format!(
        "{GATE_KEY_PREFIX}email:{}",
        hex::encode(Sha256::digest(normalised_email.as_bytes()))
    )
}

/// Whether an item of the receipts table is a receipt (and not a gate).
pub fn is_receipt_key(pk: &str) -> bool {
    !pk.starts_with(GATE_KEY_PREFIX)
}

/// Whether a lead stamped `candidate` may overwrite what a lead stamped
/// `last_written` wrote (both receipt timestamps, whose text order is time
/// order): at least as new. The same submission again passes.
pub fn may_overwrite(candidate: &str, last_written: Option<&str>) -> bool {
    last_written.is_none_or(|last| candidate >= last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_keys_hold_no_email_and_never_look_like_receipts() {
        let key = gate_key("ada@example.com");
        assert!(key.starts_with("gate#email:"));
        assert_eq!(key.len(), "gate#email:".len() + 64);
        assert!(!key.contains("ada"), "{key}");
        assert_eq!(key, gate_key("ada@example.com"), "one gate per person");
        assert_ne!(key, gate_key("grace@example.com"));
        assert!(!is_receipt_key(&key));
        assert!(is_receipt_key("staticforms:form.submitted:sub_1"));
        assert!(is_receipt_key("staticforms:form.submitted:gate#1"));
    }

    #[test]
    fn only_a_submission_at_least_as_new_passes() {
        let rows = [
            ("2026-12-01T10:00:00.000Z", None, true),
            (
                "2026-12-01T10:00:00.000Z",
                Some("2026-12-01T09:00:00.000Z"),
                true,
            ),
            (
                "2026-12-01T10:00:00.000Z",
                Some("2026-12-01T10:00:00.000Z"),
                true,
            ),
            (
                "2026-12-01T09:00:00.000Z",
                Some("2026-12-01T10:00:00.000Z"),
                false,
            ),
        ];
        for (candidate, last, passes) in rows {
            assert_eq!(
                may_overwrite(candidate, last),
                passes,
                "{candidate} {last:?}"
            );
        }
    }
}
