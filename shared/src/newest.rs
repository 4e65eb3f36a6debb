//! "Newest wins" across calls, for destinations keyed by e-mail (HubSpot
//! contacts by email): before a lead is written to contact K, a gate item
//! per normalised e-mail lets through only a submission at least as new as
//! the last one written. The gate items live in the receipts table, under a
//! key no receipt can have, and hold no address: an HMAC of the e-mail with
//! the stack's own gate key ([`GateSecret`]), so whoever may read the
//! table's keys but not that secret cannot test whether a known address
//! submitted. Still pseudonymous data: `receipts forget` deletes the gate,
//! with the same secret.

use std::fmt;
use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::config::{invalid, secret_arn, ConfigError};
use crate::time::{format_timestamp, parse_timestamp};

pub use crate::keys::GATE_KEY_PREFIX;

/// The gate key itself (local use).
pub const GATE_KEY: &str = "GATE_KEY";
/// The Secrets Manager secret holding the gate key (a deployed stack: the
/// template generates it, and outputs its ARN as `GateKeySecretArn`).
pub const GATE_KEY_SECRET_ARN: &str = "GATE_KEY_SECRET_ARN";

/// Where the key of the newest-wins gates comes from, for a destination
/// that keeps them (one record per e-mail address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateKeySetting {
    /// `GATE_KEY`, for local use.
    Inline(GateSecret),
    /// `GATE_KEY_SECRET_ARN`: read from Secrets Manager once, at init.
    SecretsManager(String),
    /// The stack's key as one destination of several uses it
    /// ([`GateSecret::for_destination`]): its gates are its own.
    ForDestination {
        stack: Box<GateKeySetting>,
        destination: &'static str,
    },
}

impl GateKeySetting {
    /// This key as `destination`'s own, in a stack of several.
    pub fn for_destination(self, destination: &'static str) -> GateKeySetting {
        GateKeySetting::ForDestination {
            stack: Box::new(self),
            destination,
        }
    }

    /// `GATE_KEY` or `GATE_KEY_SECRET_ARN`, read through `get`, for a
    /// destination: required when it keeps gates (`keeps_gates`), and
    /// `None` otherwise (every stack has the key: it also keys the items
    /// of double submits, which the worker reads with [`Self::of_stack`]).
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        keeps_gates: bool,
    ) -> Result<Option<GateKeySetting>, ConfigError> {
        match (keeps_gates, Self::of_stack(get)?) {
            (true, None) => Err(ConfigError::Missing(
                "GATE_KEY or GATE_KEY_SECRET_ARN (one record per e-mail address keeps newest-wins gates)",
            )),
            (true, setting) => Ok(setting),
            (false, _) => Ok(None),
        }
    }

    /// The stack's gate key, where it is set: `GATE_KEY` or
    /// `GATE_KEY_SECRET_ARN`, never both.
    pub fn of_stack(
        get: &impl Fn(&str) -> Option<String>,
    ) -> Result<Option<GateKeySetting>, ConfigError> {
        let setting = match (get(GATE_KEY), get(GATE_KEY_SECRET_ARN)) {
            (None, None) => None,
            (Some(text), None) => Some(GateKeySetting::Inline(GateSecret::new(&text).ok_or_else(
                || {
                    invalid(
                        GATE_KEY,
                        format!("must be at least {} characters", GateSecret::MIN_LEN),
                    )
                },
            )?)),
            (None, Some(arn)) => Some(GateKeySetting::SecretsManager(secret_arn(
                GATE_KEY_SECRET_ARN,
                &arn,
            )?)),
            (Some(_), Some(_)) => {
                return Err(invalid(
                    GATE_KEY_SECRET_ARN,
                    format!("set either {GATE_KEY} or {GATE_KEY_SECRET_ARN}, not both"),
                ))
            }
        };
        Ok(setting)
    }
}

/// The stack's key for gate items (`GATE_KEY` or `GATE_KEY_SECRET_ARN`):
/// text of at least [`GateSecret::MIN_LEN`] characters. Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct GateSecret(Vec<u8>);

impl GateSecret {
    /// The shortest key taken: 32 characters (the template generates 64).
    pub const MIN_LEN: usize = 32;

    /// `text`, trimmed, when it is long enough.
    pub fn new(text: &str) -> Option<GateSecret> {
        let text = text.trim();
        (text.len() >= Self::MIN_LEN).then(|| GateSecret(text.as_bytes().to_vec()))
    }

    /// The gate item of one person: `gate#hmac:` and the HMAC-SHA256 of the
    /// normalised e-mail under this key, in lowercase hex.
    pub fn gate_key(&self, normalised_email: &str) -> String {
        format!(
            "{GATE_KEY_PREFIX}hmac:{}",
            self.hmac_hex(&[normalised_email])
        )
    }

    /// The key of one destination's own gates and person memories, in a
    /// stack of several: derived from this one and the destination's name,
    /// so no two destinations share a gate item (each keeps its own newest
    /// stamp, notes and memories), and no adapter needs to know another
    /// exists. The first destination a stack names keeps the stack's key
    /// itself, so its gates are those it always had.
    pub fn for_destination(&self, name: &str) -> GateSecret {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(b"destination\0");
        mac.update(name.as_bytes());
        GateSecret(mac.finalize().into_bytes().to_vec())
    }

    /// A 32-byte key of its own for `purpose`, derived from this one
    /// (HMAC-SHA256 of `key\0` and the purpose): another use never holds
    /// the gate key itself, and no two purposes share a key.
    pub fn derive_key(&self, purpose: &str) -> [u8; 32] {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(b"key\0");
        mac.update(purpose.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// The HMAC-SHA256 of `parts`, one after the other, under this key, in
    /// lowercase hex: the one pseudonym rule for every item keyed by a
    /// person (a gate, an erasure's marker).
    pub(crate) fn hmac_hex(&self, parts: &[&str]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        for part in parts {
            mac.update(part.as_bytes());
        }
        hex::encode(mac.finalize().into_bytes())
    }
}

impl fmt::Debug for GateSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("GateSecret(<redacted>)")
    }
}

/// The gate item an earlier version wrote for a person: `gate#email:` and
/// the unkeyed SHA-256 of the normalised e-mail. No delivery writes one any
/// more; `receipts forget` still deletes it until its retention ends.
pub fn unkeyed_gate_key(normalised_email: &str) -> String {
    format!(
        "{GATE_KEY_PREFIX}email:{}",
        hex::encode(Sha256::digest(normalised_email.as_bytes()))
    )
}

/// Whether a lead stamped `candidate` may overwrite what a lead stamped
/// `last_written` wrote (both receipt timestamps, whose text order is time
/// order): at least as new. The same submission again passes.
pub fn may_overwrite(candidate: &str, last_written: Option<&str>) -> bool {
    last_written.is_none_or(|last| candidate >= last)
}

/// How far ahead of our own arrival time a sender's clock may run before
/// its stamp is no longer believed.
pub const SENDER_CLOCK_SKEW: Duration = Duration::from_secs(5 * 60);

/// A sender's stamp of when a form was submitted, bounded by what we saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SenderTime {
    /// The sender sent none (or none we could read).
    Absent,
    /// At most [`SENDER_CLOCK_SKEW`] after the receipt's arrival: kept.
    Kept(String),
    /// Later than the arrival plus the skew (a sender's clock error, or a
    /// date planted by whoever can post to the webhook): the arrival time
    /// stands in for it, so it can never outrank a genuine later
    /// submission of the same person.
    Replaced(String),
}

impl SenderTime {
    /// Bounds `stamp` (receipt-timestamp text) by `received_at`, the
    /// receipt's arrival. Times from outside are claims; the arrival is
    /// what we observed.
    pub fn bounded(stamp: Option<String>, received_at: &str) -> SenderTime {
        let Some(stamp) = stamp else {
            return SenderTime::Absent;
        };
        let latest = parse_timestamp(received_at).and_then(|at| at.checked_add(SENDER_CLOCK_SKEW));
        match (parse_timestamp(&stamp), latest) {
            (Some(at), Some(latest)) if at > latest => SenderTime::Replaced(
                parse_timestamp(received_at)
                    .map_or_else(|| received_at.to_owned(), format_timestamp),
            ),
            _ => SenderTime::Kept(stamp),
        }
    }

    /// The time that orders this submission, if any.
    pub fn into_stamp(self) -> Option<String> {
        match self {
            SenderTime::Absent => None,
            SenderTime::Kept(stamp) | SenderTime::Replaced(stamp) => Some(stamp),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_key_is_required_with_gates_and_ignored_by_other_destinations() {
        let key = "k".repeat(GateSecret::MIN_LEN);
        let arn = "arn:aws:secretsmanager:us-east-1:1:secret:gate";
        type Row<'a> = (
            Option<&'a str>,
            Option<&'a str>,
            bool,
            Result<Option<GateKeySetting>, ConfigError>,
        );
        let rows: Vec<Row> = vec![
            (Some(&key), None, true, Ok(Some(GateKeySetting::Inline(GateSecret::new(&key).unwrap())))),
            (None, Some(arn), true, Ok(Some(GateKeySetting::SecretsManager(arn.into())))),
            (None, None, false, Ok(None)),
            (None, None, true, Err(ConfigError::Missing("GATE_KEY or GATE_KEY_SECRET_ARN (one record per e-mail address keeps newest-wins gates)"))),
            (Some(&key), None, false, Ok(None)),
            (None, Some(arn), false, Ok(None)),
            (Some("short"), None, true, Err(invalid(GATE_KEY, "must be at least 32 characters"))),
            (None, Some("gate"), true, Err(invalid(GATE_KEY_SECRET_ARN, "must be a Secrets Manager secret ARN (arn:...)"))),
            (Some(&key), Some(arn), true, Err(invalid(GATE_KEY_SECRET_ARN, "set either GATE_KEY or GATE_KEY_SECRET_ARN, not both"))),
        ];
        for (inline, secret, keeps, expected) in rows {
            let get = |name: &str| match name {
                GATE_KEY => inline.map(str::to_owned),
                GATE_KEY_SECRET_ARN => secret.map(str::to_owned),
                _ => None,
            };
            assert_eq!(
                GateKeySetting::from_lookup(&get, keeps),
                expected,
                "{inline:?} {secret:?} {keeps}"
            );
        }
    }

    #[test]
    fn a_sender_time_beyond_the_arrival_plus_the_skew_is_replaced_by_the_arrival() {
        let arrival = "2026-12-01T10:00:00.000Z";
        let rows = [
            (None, SenderTime::Absent),
            (
                Some("2026-12-01T09:59:00.000Z"),
                SenderTime::Kept("2026-12-01T09:59:00.000Z".into()),
            ),
            (
                Some("2026-12-01T10:05:00.000Z"),
                SenderTime::Kept("2026-12-01T10:05:00.000Z".into()),
            ),
            (
                Some("2026-12-01T10:05:00.001Z"),
                SenderTime::Replaced(arrival.into()),
            ),
            (
                Some("9999-12-31T23:59:59.000Z"),
                SenderTime::Replaced(arrival.into()),
            ),
        ];
        for (stamp, expected) in rows {
            assert_eq!(
                SenderTime::bounded(stamp.map(str::to_owned), arrival),
                expected,
                "{stamp:?}"
            );
        }
    }

    #[test]
    fn each_destination_of_a_stack_has_gates_of_its_own() {
        let stack = GateSecret::new(&"k".repeat(32)).unwrap();
        let email = "ada@example.com";
        let hubspot = stack.for_destination("hubspot");
        let mailchimp = stack.for_destination("mailchimp");
        assert_ne!(hubspot.gate_key(email), stack.gate_key(email));
        assert_ne!(hubspot.gate_key(email), mailchimp.gate_key(email));
        assert_eq!(
            hubspot.gate_key(email),
            stack.for_destination("hubspot").gate_key(email),
            "the same on every instance"
        );
        assert!(hubspot.gate_key(email).starts_with("gate#hmac:"));
        assert_eq!(format!("{hubspot:?}"), "GateSecret(<redacted>)");
    }

    #[test]
    fn gate_keys_hold_no_email_and_never_look_like_receipts() {
        let secret = GateSecret::new(&"k".repeat(32)).unwrap();
        let key = secret.gate_key("ada@example.com");
        assert!(key.starts_with("gate#hmac:"));
        assert_eq!(key.len(), "gate#hmac:".len() + 64);
        assert!(!key.contains("ada"), "{key}");
        assert_eq!(
            key,
            secret.gate_key("ada@example.com"),
            "one gate per person"
        );
        assert_ne!(key, secret.gate_key("grace@example.com"));
        use crate::receipt::is_receipt_key;
        assert!(!is_receipt_key(&key));
        let unkeyed = unkeyed_gate_key("ada@example.com");
        assert!(unkeyed.starts_with("gate#email:") && !is_receipt_key(&unkeyed));
    }

    #[test]
    fn a_gate_key_needs_the_stack_secret_to_be_computed() {
        let ada = "ada@example.com";
        let ours = GateSecret::new(&"a".repeat(64)).unwrap();
        let theirs = GateSecret::new(&"b".repeat(64)).unwrap();
        assert_ne!(ours.gate_key(ada), theirs.gate_key(ada));
        assert_ne!(ours.gate_key(ada), unkeyed_gate_key(ada));
        // HMAC-SHA256 as Python's hmac module computes it.
        assert_eq!(
            ours.gate_key(ada),
            "gate#hmac:0e252c62066fc1964bbd57db552593375d1e85033407cbdff2fdf533a8ce3b07"
        );
    }

    #[test]
    fn a_gate_secret_is_long_enough_and_never_printed() {
        assert!(GateSecret::new("short").is_none());
        assert!(GateSecret::new(&" ".repeat(40)).is_none());
        let secret = GateSecret::new(&"s3cret".repeat(6)).unwrap();
        assert!(!format!("{secret:?}").contains("s3cret"));
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
