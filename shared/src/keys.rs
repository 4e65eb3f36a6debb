//! The receipts table's key rules: which items are receipts, the prefixes
//! of the items that are not (gates, configuration, erasure markers), and
//! the reference a receipt holds of its form instead of its id. A leaf:
//! the modules that own those items re-export their prefix from here.

/// The start of every gate item's key. A receipt's key starts with its
/// sender's name and a colon (`staticforms:`), which never holds `#`.
pub const GATE_KEY_PREFIX: &str = "gate#";

/// The start of every key of the receipts table that holds the stack's
/// configuration: no receipt key starts so (`receipt::is_receipt_key`), and
/// the stream filter, which passes the senders' prefixes only, never
/// passes one.
pub const CONFIG_KEY_PREFIX: &str = "config#";
/// The start of every marker's key: no receipt's (`<sender>:`), no
/// gate's, no configuration item's.
pub const ERASURE_KEY_PREFIX: &str = "erased#";

/// The start of the key of an erasure's progress and record
/// (`forget#<id>`, `receipts forget --everywhere`): no personal data in it.
pub const ERASURE_JOB_KEY_PREFIX: &str = "forget#";

/// The start of every call slot's key (`slot#mailchimp#3`): a destination
/// account's limit of calls at once, shared by every worker instance.
pub const SLOT_KEY_PREFIX: &str = "slot#";

/// The start of the key of a destination's shared access token
/// (`token#zoho`), refreshed once per expiry by one worker instance.
pub const TOKEN_KEY_PREFIX: &str = "token#";

/// The starts of the receipts table's keys that are no receipts: the
/// newest-wins gates, the stack's configuration (its routes, the audit's
/// progress), erasure markers and erasures' records, call slots and
/// shared access tokens.
pub const NOT_RECEIPT_PREFIXES: [&str; 6] = [
    GATE_KEY_PREFIX,
    CONFIG_KEY_PREFIX,
    ERASURE_KEY_PREFIX,
    ERASURE_JOB_KEY_PREFIX,
    SLOT_KEY_PREFIX,
    TOKEN_KEY_PREFIX,
];

/// Whether an item of the receipts table is a receipt.
pub fn is_receipt_key(pk: &str) -> bool {
    !NOT_RECEIPT_PREFIXES
        .iter()
        .any(|prefix| pk.starts_with(prefix))
}

/// What a receipt says of its form (`receipt::attr::FORM_REF`): the first
/// 16 hex digits of the SHA-256 of the sender's form id, so the worker
/// finds the form's route without the receipt holding the id itself (a
/// Static Forms form id is its `apiKey`, a credential).
pub fn form_ref(form: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(form.as_bytes());
    hex::encode(&digest[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_item_that_is_not_a_receipt_passes_for_one() {
        for key in [
            "gate#hmac:ab",
            "config#routes",
            "config#audit",
            "erased#hmac:ab",
            "slot#mailchimp#3",
            "token#zoho",
        ] {
            assert!(!is_receipt_key(key), "{key}");
        }
        assert!(is_receipt_key("tally:FORM_RESPONSE:a"));
    }
}
