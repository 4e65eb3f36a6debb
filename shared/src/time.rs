//! Time as the receipts table keeps it: RFC 3339 text in UTC to the
//! millisecond (text order is time order), epoch seconds for TTL, and how
//! long receipts are kept. A leaf: every rule that reads or writes a time
//! stands on it, and it on nothing of ours.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long receipts are kept before TTL removes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    days: u32,
}

impl Retention {
    pub const DEFAULT_DAYS: u32 = 30;
    pub const MAX_DAYS: u32 = 3650;

    /// `None` for zero or more than ten years.
    pub fn days(days: u32) -> Option<Self> {
        (1..=Self::MAX_DAYS)
            .contains(&days)
            .then_some(Retention { days })
    }

    pub fn as_duration(self) -> Duration {
        Duration::from_secs(u64::from(self.days) * 24 * 60 * 60)
    }

    /// The `expiresAt` of a receipt delivered at `completed_at`.
    pub fn expiry_after(self, completed_at: SystemTime) -> u64 {
        epoch_seconds(completed_at + self.as_duration())
    }
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            days: Self::DEFAULT_DAYS,
        }
    }
}

/// A receipt timestamp as stored (`receivedAt`, `nextAttemptAt`...): RFC
/// 3339, UTC, milliseconds, so that text order is time order. A type of its
/// own so that a ledger call cannot take a key for a time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(String);

impl Timestamp {
    pub fn at(time: SystemTime) -> Self {
        Timestamp(format_timestamp(time))
    }

    /// A timestamp read back from a receipt, as it was stored.
    pub fn from_stored(text: impl Into<String>) -> Self {
        Timestamp(text.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// RFC 3339, UTC, always with milliseconds (`2026-11-29T08:38:48.123Z`).
pub fn format_timestamp(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}

/// Reads a timestamp written by [`format_timestamp`] (any RFC 3339 in UTC).
pub fn parse_timestamp(text: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339(text).ok()
}

pub fn epoch_seconds(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_bounds() {
        assert_eq!(Retention::days(0), None);
        assert!(Retention::days(1).is_some());
        assert!(Retention::days(Retention::MAX_DAYS).is_some());
        assert_eq!(Retention::days(Retention::MAX_DAYS + 1), None);
    }

    #[test]
    fn timestamps_sort_as_text_in_time_order() {
        let a = UNIX_EPOCH + Duration::from_millis(1_764_403_128_000);
        let b = a + Duration::from_millis(5);
        assert!(format_timestamp(a) < format_timestamp(b));
        assert_eq!(format_timestamp(a), "2025-11-29T07:58:48.000Z");
    }
}
