//! The receipt: the durable record that a delivery was accepted. Its
//! partition key is the idempotency key, so the store itself decides which
//! delivery is first.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::envelope::FormSubmission;
use crate::fingerprint::PayloadFingerprint;
use crate::idempotency::IdempotencyKey;

/// Attribute names, shared by the adapters' expressions and the template.
pub mod attr {
    pub const PK: &str = "pk";
    pub const STATUS: &str = "status";
    pub const PAYLOAD_FINGERPRINT: &str = "payloadFingerprint";
    /// The TTL attribute (epoch seconds).
    pub const EXPIRES_AT: &str = "expiresAt";
}

/// Largest body a receipt can hold. DynamoDB items are limited to 400 KiB,
/// counting attribute names and the other attributes (a key of up to ~300
/// bytes, the fingerprint, timestamps): 384 KiB leaves room for them.
pub const MAX_PAYLOAD_BYTES: usize = 384 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReceiptStatus {
    Received,
    Completed,
    Failed,
}

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

    fn as_duration(self) -> Duration {
        Duration::from_secs(u64::from(self.days) * 24 * 60 * 60)
    }
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            days: Self::DEFAULT_DAYS,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    pub pk: String,
    pub event: String,
    pub submission_id: String,
    /// The envelope without credentials, as compact JSON text. Text rather
    /// than a DynamoDB map: a map is limited to 32 levels of nesting and
    /// 38-digit numbers, and cannot hold empty keys; text holds any body.
    pub payload: String,
    /// Absent only on receipts written before fingerprints existed.
    #[serde(default)]
    pub payload_fingerprint: String,
    pub status: ReceiptStatus,
    /// RFC 3339 in UTC with milliseconds, so text order is time order.
    pub received_at: String,
    /// Epoch seconds after which TTL may delete the receipt.
    #[serde(default)]
    pub expires_at: u64,
}

impl Receipt {
    pub fn new(submission: &FormSubmission, received_at: SystemTime, retention: Retention) -> Self {
        let key = IdempotencyKey::for_submission(submission.event, &submission.submission_id);
        Receipt {
            pk: key.as_str().to_owned(),
            event: submission.event.as_str().to_owned(),
            submission_id: submission.submission_id.as_str().to_owned(),
            payload: submission.payload.to_string(),
            payload_fingerprint: PayloadFingerprint::of(submission.data())
                .as_str()
                .to_owned(),
            status: ReceiptStatus::Received,
            received_at: format_timestamp(received_at),
            expires_at: epoch_seconds(received_at + retention.as_duration()),
        }
    }
}

/// RFC 3339, UTC, always with milliseconds (`2026-11-29T08:38:48.123Z`).
pub fn format_timestamp(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}

fn epoch_seconds(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn submission() -> FormSubmission {
        let body = json!({
            "event": "form.submitted",
            "timestamp": 1_764_403_128,
            "data": {
                "submissionId": "sub_123",
                "apiKey": "sf_live_secret",
                "formData": {"name": "Ada", "email": "ada@example.com"}
            }
        });
        FormSubmission::parse(body.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn receipt_fields() {
        let at = UNIX_EPOCH + Duration::from_millis(1_764_403_128_123);
        let receipt = Receipt::new(&submission(), at, Retention::default());
        assert_eq!(receipt.pk, "staticforms:form.submitted:sub_123");
        assert_eq!(receipt.event, "form.submitted");
        assert_eq!(receipt.submission_id, "sub_123");
        assert_eq!(receipt.status, ReceiptStatus::Received);
        assert_eq!(receipt.received_at, "2025-11-29T07:58:48.123Z");
        assert_eq!(receipt.expires_at, 1_764_403_128 + 30 * 86_400);
        assert!(!receipt.payload.contains("sf_live_secret"));
        let payload: serde_json::Value = serde_json::from_str(&receipt.payload).unwrap();
        assert_eq!(payload["data"]["formData"]["name"], "Ada");
        assert_eq!(payload["timestamp"], 1_764_403_128);
    }

    #[test]
    fn fingerprint_ignores_envelope_fields_that_vary_per_attempt() {
        let first = submission();
        let mut retry = first.clone();
        retry.payload["timestamp"] = json!(1_764_409_999);
        let at = SystemTime::now();
        assert_eq!(
            Receipt::new(&first, at, Retention::default()).payload_fingerprint,
            Receipt::new(&retry, at, Retention::default()).payload_fingerprint
        );
    }

    #[test]
    fn serialised_names_match_the_attribute_constants() {
        let receipt = Receipt::new(&submission(), SystemTime::now(), Retention::default());
        let value = serde_json::to_value(&receipt).unwrap();
        for name in [
            attr::PK,
            attr::STATUS,
            attr::PAYLOAD_FINGERPRINT,
            attr::EXPIRES_AT,
        ] {
            assert!(value.get(name).is_some(), "{name}");
        }
        assert_eq!(value[attr::STATUS], "RECEIVED");
    }

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
