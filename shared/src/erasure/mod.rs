//! An erasure stays an erasure. `receipts forget` removes a person's form
//! data from the stack, but the sender still lists their submissions, and
//! an import (`receipts import`, the scheduled audit) would store and
//! deliver any whose receipt is gone or never existed. So forget leaves a
//! marker: an item keyed by the person's pseudonym under the stack's gate
//! key ([`GateSecret`]: no address is stored, and whoever may read the
//! table's keys but not that secret cannot test one), holding when the
//! person was erased, kept as long as receipts are. A listed submission of
//! that person made before then is counted `erased`, never imported.

pub mod plan;

use std::time::SystemTime;

use crate::newest::GateSecret;

pub use crate::keys::ERASURE_KEY_PREFIX;

/// The marker of one person: [`ERASURE_KEY_PREFIX`], `hmac:` and the
/// HMAC-SHA256 of `erased:` and the normalised e-mail under the gate key
/// (its own domain, so a marker's key is not the person's gate key).
pub fn marker_key(secret: &GateSecret, normalised_email: &str) -> String {
    format!(
        "{ERASURE_KEY_PREFIX}hmac:{}",
        secret.hmac_hex(&["erased:", normalised_email])
    )
}

/// Whether a submission made `submitted_at` is one the erasure at
/// `erased_at` covers: made before it. A person who submits again after
/// being erased is a new lead.
pub fn covers(erased_at: SystemTime, submitted_at: SystemTime) -> bool {
    submitted_at < erased_at
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_marker_is_keyed_by_a_pseudonym_of_its_own() {
        let secret = GateSecret::new(&"k".repeat(GateSecret::MIN_LEN)).unwrap();
        let marker = marker_key(&secret, "ada@example.com");
        assert!(marker.starts_with("erased#hmac:"));
        assert_eq!(marker.len(), "erased#hmac:".len() + 64);
        assert!(!marker.contains("ada"));
        assert_ne!(
            marker.trim_start_matches("erased#"),
            secret
                .gate_key("ada@example.com")
                .trim_start_matches("gate#"),
            "not the person's gate key"
        );
        assert_ne!(marker, marker_key(&secret, "bob@example.com"));
        let other = GateSecret::new(&"o".repeat(GateSecret::MIN_LEN)).unwrap();
        assert_ne!(marker, marker_key(&other, "ada@example.com"));
        assert!(!crate::receipt::is_receipt_key(&marker));
    }

    #[test]
    fn an_erasure_covers_what_was_submitted_before_it() {
        let at = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        assert!(covers(at(100), at(99)));
        assert!(!covers(at(100), at(100)));
        assert!(!covers(at(100), at(101)));
    }
}
