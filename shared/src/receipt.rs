//! The receipt: the durable record that a delivery was accepted. Its
//! partition key is the idempotency key, so the store itself decides which
//! delivery is first.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::fingerprint::PayloadFingerprint;
use crate::idempotency::IdempotencyKey;
pub use crate::keys::{is_receipt_key, NOT_RECEIPT_PREFIXES};
use crate::sender::FormSubmission;
pub use crate::time::{format_timestamp, parse_timestamp, Retention, Timestamp};

/// Attribute names, shared by the adapters' expressions and the template.
pub mod attr {
    pub const PK: &str = "pk";
    pub const EVENT: &str = "event";
    pub const SUBMISSION_ID: &str = "submissionId";
    pub const STATUS: &str = "status";
    /// The envelope as sent, without credentials: the only attribute that
    /// holds personal data (see [`super::PERSONAL_ATTRIBUTES`]).
    pub const PAYLOAD: &str = "payload";
    pub const PAYLOAD_FINGERPRINT: &str = "payloadFingerprint";
    pub const RECEIVED_AT: &str = "receivedAt";
    /// The UTC day of `receivedAt` (`2026-12-05`): the partition key of
    /// [`super::DAY_INDEX`], whose sort key is `receivedAt`. Absent on
    /// receipts stored before the index existed (`receipts reindex`).
    pub const RECEIVED_DAY: &str = "receivedDay";
    /// The TTL attribute (epoch seconds): set when the receipt is
    /// delivered, never before, so TTL only removes receipts whose lead is
    /// in the destination.
    pub const EXPIRES_AT: &str = "expiresAt";
    /// The receipt's queue: [`super::PENDING`] while it is RECEIVED,
    /// [`super::FAILED`] while it is FAILED, absent once COMPLETED. The
    /// partition key of the sparse [`super::QUEUE_INDEX`]. (Stored as
    /// `pending`, its name from when only pending receipts carried it.)
    pub const QUEUE: &str = "pending";
    /// When the next delivery attempt is due (for a FAILED receipt: when it
    /// was last due): the index's sort key.
    pub const NEXT_ATTEMPT_AT: &str = "nextAttemptAt";
    pub const ATTEMPTS: &str = "attempts";
    pub const LAST_ATTEMPT_AT: &str = "lastAttemptAt";
    pub const LAST_ERROR: &str = "lastError";
    pub const LAST_HTTP_STATUS: &str = "lastHttpStatus";
    pub const COMPLETED_AT: &str = "completedAt";
    pub const FAILED_AT: &str = "failedAt";
    pub const FAILURE_REASON: &str = "failureReason";
    pub const FAILURE_HTTP_STATUS: &str = "failureHttpStatus";
    /// When an operator last put the receipt back in the queue.
    pub const REDRIVEN_AT: &str = "redrivenAt";
    /// Claims taken since the last outcome was recorded: a delivery that
    /// dies, or cannot write its outcome, leaves one behind.
    pub const UNRECORDED_CLAIMS: &str = "unrecordedClaims";
    /// Of those, the claims taken to deliver the receipt alone (a suspect:
    /// a claim of it went unrecorded before). Only these are charged to the
    /// receipt: a delivery alone that dies died of this receipt.
    pub const SOLO_CLAIMS: &str = "soloClaims";
    /// A newest-wins gate item's stamp: the newest submission written to
    /// that person (see `shared::newest`).
    pub const NEWEST_AT: &str = "newestAt";
    /// When `receipts forget` removed the receipt's personal data.
    pub const ERASED_AT: &str = "erasedAt";
    /// The spam rule a QUARANTINED receipt broke (`honeypot:<field>`,
    /// `blocked-domain`, `links`, `too-fast`): a rule's name, never the data.
    pub const QUARANTINE_RULE: &str = "quarantineRule";
    /// When an operator released it from quarantine (`receipts release`).
    pub const RELEASED_AT: &str = "releasedAt";
    /// Which form it came from, as `routes::form_ref`: a hash, never the
    /// sender's form id; absent when the sender names no form, and on
    /// receipts stored before routes existed.
    pub const FORM_REF: &str = "formRef";
    /// Until when a delivery holds it (`ReceiptLedger::claim`): not in the
    /// queue index, so taking and releasing a claim writes no index entry.
    pub const CLAIMED_UNTIL: &str = "claimedUntil";
    /// Where it came from when not from a webhook: [`super::IMPORTED`].
    pub const SOURCE: &str = "source";
    /// The destination a COMPLETED receipt's lead was written to (its
    /// catalog name: `hubspot`, `salesforce`, `http`, `dynamodb`).
    pub const DELIVERED_TO: &str = "deliveredTo";
    /// The destination's id of the record it wrote (`crate::record`):
    /// absent when it answered none, or for a stale delivery.
    pub const RECORD_ID: &str = "recordId";
    /// A link to that record, where the adapter knows one.
    pub const RECORD_URL: &str = "recordUrl";
    /// Why the destination refused a REFUSED receipt's person for good: its
    /// own code (`Forgotten Email Not Subscribed`), never its free text.
    pub const REFUSAL: &str = "refusal";
    /// The key of the receipt a DUPLICATE one repeats
    /// (`crate::duplicates`).
    pub const DUPLICATE_OF: &str = "duplicateOf";
    /// Its new-lead notice (`crate::notice`): `PENDING`, `SENT` or
    /// `UNCONFIRMED`; absent where no notice is sent.
    pub const NOTICE: &str = "notice";
    /// Until when one delivery holds the notice to send it.
    pub const NOTICE_CLAIMED_UNTIL: &str = "noticeClaimedUntil";
    /// Sends the endpoint refused or did not take.
    pub const NOTICE_ATTEMPTS: &str = "noticeAttempts";
    /// When the endpoint accepted it.
    pub const NOTICED_AT: &str = "noticedAt";
    /// The answers a route names for its notice (`notify_fields`), as a
    /// JSON object, kept only while the notice waits: personal data.
    pub const NOTICE_FIELDS: &str = "noticeFields";
    /// Each destination's lane of a receipt of a stack with several
    /// (`crate::lanes`): a map by destination name of its state, attempts,
    /// next attempt, last error and record. Absent in a stack of one
    /// destination, whose lane is the receipt's own attributes.
    pub const DESTINATIONS: &str = "destinations";
}

/// The `source` of a receipt `receipts import` stored from the sender's
/// own list of submissions. Its webhook, arriving late, is a duplicate
/// whatever its bytes: the import stored what the sender listed, which
/// may differ from what its webhook carries.
pub const IMPORTED: &str = "import";

/// The attributes of a receipt that hold personal data. Removed when the
/// lead is delivered (unless `KEEP_PAYLOAD_AFTER_DELIVERY`) and when a
/// person is forgotten; read by the operator's CLI only with `--payload`.
/// Failure reasons are codes (a CRM's own code or category, a field name,
/// an HTTP status), never a CRM's free text, so they are not in this list.
pub const PERSONAL_ATTRIBUTES: &[&str] = &[attr::PAYLOAD, attr::NOTICE_FIELDS];

/// Every attribute of a receipt but the personal ones: what an operator
/// reads without `--payload` (a projection, so the data never leaves
/// DynamoDB), and what the IAM policy for such an operator allows. The
/// payload's fingerprint is left out too: it is derived from the payload,
/// and nothing an operator does needs it.
pub const OPERATOR_ATTRIBUTES: &[&str] = &[
    attr::PK,
    attr::EVENT,
    attr::SUBMISSION_ID,
    attr::STATUS,
    attr::RECEIVED_AT,
    attr::RECEIVED_DAY,
    attr::EXPIRES_AT,
    attr::QUEUE,
    attr::NEXT_ATTEMPT_AT,
    attr::ATTEMPTS,
    attr::LAST_ATTEMPT_AT,
    attr::LAST_ERROR,
    attr::LAST_HTTP_STATUS,
    attr::COMPLETED_AT,
    attr::FAILED_AT,
    attr::FAILURE_REASON,
    attr::FAILURE_HTTP_STATUS,
    attr::REDRIVEN_AT,
    attr::UNRECORDED_CLAIMS,
    attr::SOLO_CLAIMS,
    attr::ERASED_AT,
    attr::QUARANTINE_RULE,
    attr::RELEASED_AT,
    attr::FORM_REF,
    attr::CLAIMED_UNTIL,
    attr::SOURCE,
    attr::DELIVERED_TO,
    attr::RECORD_ID,
    attr::RECORD_URL,
    attr::REFUSAL,
    attr::DUPLICATE_OF,
    attr::NOTICE,
    attr::NOTICE_CLAIMED_UNTIL,
    attr::NOTICE_ATTEMPTS,
    attr::NOTICED_AT,
    attr::DESTINATIONS,
];

/// The sparse global secondary index of the receipts that wait: for an
/// attempt (partition [`PENDING`], sorted by when it is due) or for a
/// person (partition [`FAILED`]). Only items that carry the queue attribute
/// are in it, so finding the due ones costs in proportion to what waits,
/// never to the receipts kept for the retention window. It projects the
/// keys and `receivedAt` only (about 100 bytes an entry): counting what
/// waits never reads a payload, and a receipt's payload is written to the
/// table alone, not again to the index. A pass takes the full receipt from
/// its claim.
pub const QUEUE_INDEX: &str = "queue-by-due";

/// The global secondary index of every receipt by the day it arrived
/// (partition `receivedDay`, sorted by `receivedAt`): the console's inbox
/// reads it newest first, a page at a time, and its counts read one
/// period's entries, never the whole table. It projects only what a row
/// and a count show ([`DAY_INDEX_ATTRIBUTES`]), no personal data, and
/// nothing a claim, a defer or a notice changes: a receipt's entry is
/// written when it arrives and rewritten only when its status or its
/// destinations' answers change.
pub const DAY_INDEX: &str = "receipts-by-day";

/// What [`DAY_INDEX`] projects besides its keys and the table's.
pub const DAY_INDEX_ATTRIBUTES: &[&str] = &[
    attr::EVENT,
    attr::SUBMISSION_ID,
    attr::STATUS,
    attr::FORM_REF,
    attr::SOURCE,
    attr::QUARANTINE_RULE,
    attr::DELIVERED_TO,
    attr::DESTINATIONS,
];

/// The day a receipt received at `received_at` (RFC 3339, UTC) is kept
/// under in [`DAY_INDEX`]: its first ten characters, when they are a date.
pub fn received_day(received_at: &str) -> Option<&str> {
    let day = received_at.get(..10)?;
    let bytes = day.as_bytes();
    let digits = |range: std::ops::Range<usize>| bytes[range].iter().all(u8::is_ascii_digit);
    (digits(0..4) && bytes[4] == b'-' && digits(5..7) && bytes[7] == b'-' && digits(8..10))
        .then_some(day)
}

/// The queue of receipts waiting for an attempt. Pending receipts are few
/// (a CRM outage's worth), well within one index partition's throughput.
pub const PENDING: &str = "PENDING";

/// The queue of receipts that failed and wait for a person (`receipts
/// redrive`): counted by every pass, so an alarm stays on while one exists.
pub const FAILED: &str = "FAILED";

/// The queue of delivered receipts whose new-lead notice waits to be sent
/// (`crate::notice`), due at `nextAttemptAt`: counted by every pass.
pub const NOTICE: &str = "NOTICE";

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
    /// Forgotten at a person's request before it was delivered
    /// (`receipts forget`): never delivered or redriven; its key and
    /// fingerprint stay until TTL removes it, so a retried delivery is
    /// still a duplicate and stores nothing.
    Erased,
    /// Held back by a spam rule (`quarantineRule`): answered and kept like
    /// any other, never delivered until `receipts release` makes it
    /// RECEIVED; expires the retention after its arrival.
    Quarantined,
    /// The destination refused this person for good, on purpose (a mailing
    /// list's unsubscribed or forgotten member): its answer, not a failure.
    /// Never retried nor redriven, never a FAILED alarm; keeps the code
    /// (`refusal`) and no personal data, and expires as a delivered one.
    Refused,
    /// The same form, address and answers as another submission within
    /// the form's `duplicate_window` (`crate::duplicates`): a double
    /// submit. Never delivered nor redriven; names the other receipt
    /// (`duplicateOf`), keeps no personal data, and expires as a
    /// delivered one.
    Duplicate,
}

impl ReceiptStatus {
    /// The status as stored (`status`), the same text serde writes.
    pub fn as_str(self) -> &'static str {
        match self {
            ReceiptStatus::Received => "RECEIVED",
            ReceiptStatus::Completed => "COMPLETED",
            ReceiptStatus::Failed => "FAILED",
            ReceiptStatus::Erased => "ERASED",
            ReceiptStatus::Quarantined => "QUARANTINED",
            ReceiptStatus::Refused => "REFUSED",
            ReceiptStatus::Duplicate => "DUPLICATE",
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
    /// `None` once the lead is delivered (the payload is personal data and
    /// nothing needs it then) or the person was forgotten.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
    /// Absent only on receipts written before fingerprints existed.
    #[serde(default)]
    pub payload_fingerprint: String,
    pub status: ReceiptStatus,
    /// RFC 3339 in UTC with milliseconds, so text order is time order.
    pub received_at: String,
    /// `attr::RECEIVED_DAY`: set with `received_at` on a new receipt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_day: Option<String>,
    /// Epoch seconds after which TTL may delete the receipt: set at
    /// delivery. Receipts written by earlier versions carry one from
    /// arrival until their next defer, failure or redrive removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The queue it waits in: [`PENDING`] while RECEIVED, [`FAILED`] while
    /// FAILED, absent once delivered. Absent too on receipts written before
    /// the index existed: `receipts redrive` puts those back in the queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<String>,
    /// When the next attempt is due (same format as `received_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<String>,
    /// Delivery attempts made so far, by the stream and the reconciler.
    #[serde(default)]
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempt_at: Option<String>,
    /// A short code of the last failed attempt (`http-503`, `timeout`...),
    /// never lead data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_http_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_http_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redriven_at: Option<String>,
    /// Claims taken since an outcome was last recorded (see
    /// `attr::UNRECORDED_CLAIMS`); absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unrecorded_claims: u32,
    /// Of those, claims to deliver it alone (`attr::SOLO_CLAIMS`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub solo_claims: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erased_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quarantine_rule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released_at: Option<String>,
    /// `attr::FORM_REF`: the worker delivers by the route of this form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form_ref: Option<String>,
    /// `attr::CLAIMED_UNTIL`: set by a claim, removed by every outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_until: Option<String>,
    /// `attr::SOURCE`: [`IMPORTED`], or absent for a webhook's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// `attr::DELIVERED_TO`: set with COMPLETED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_to: Option<String>,
    /// `attr::RECORD_ID`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_id: Option<String>,
    /// `attr::RECORD_URL`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_url: Option<String>,
    /// `attr::REFUSAL`: set with REFUSED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// `attr::DUPLICATE_OF`: set with DUPLICATE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<String>,
    /// `attr::NOTICE`, and the notice's claim, attempts and time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice_claimed_until: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub notice_attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noticed_at: Option<String>,
    /// `attr::NOTICE_FIELDS`: personal, while the notice waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice_fields: Option<String>,
    /// `attr::DESTINATIONS`: each destination's lane, when it has several.
    #[serde(default, skip_serializing_if = "crate::lanes::Lanes::is_empty")]
    pub destinations: crate::lanes::Lanes,
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}

impl Receipt {
    /// A new receipt: RECEIVED, due at once, with no expiry (TTL must never
    /// delete a lead that has not been delivered).
    pub fn new(submission: &FormSubmission, received_at: SystemTime) -> Self {
        let key = IdempotencyKey::for_submission(submission.sender, &submission.submission_id);
        let received = format_timestamp(received_at);
        Receipt {
            pk: key.as_str().to_owned(),
            event: submission.sender.event_name().to_owned(),
            submission_id: submission.submission_id.as_str().to_owned(),
            payload: Some(submission.payload.to_string()),
            payload_fingerprint: PayloadFingerprint::of(submission.data())
                .as_str()
                .to_owned(),
            status: ReceiptStatus::Received,
            // Due at once: the stream delivers it first, and the reconciler
            // only looks at receipts older than its grace time.
            pending: Some(PENDING.to_owned()),
            next_attempt_at: Some(received.clone()),
            received_day: received_day(&received).map(str::to_owned),
            received_at: received,
            expires_at: None,
            attempts: 0,
            last_attempt_at: None,
            last_error: None,
            last_http_status: None,
            completed_at: None,
            failed_at: None,
            failure_reason: None,
            failure_http_status: None,
            redriven_at: None,
            unrecorded_claims: 0,
            solo_claims: 0,
            erased_at: None,
            quarantine_rule: None,
            released_at: None,
            form_ref: submission.form_id().map(crate::keys::form_ref),
            claimed_until: None,
            source: None,
            delivered_to: None,
            record_id: None,
            record_url: None,
            refusal: None,
            duplicate_of: None,
            notice: None,
            notice_claimed_until: None,
            notice_attempts: 0,
            noticed_at: None,
            notice_fields: None,
            destinations: Default::default(),
        }
    }

    /// A new receipt for a submission the sender lists but never delivered
    /// here (`receipts import`): as its webhook's, marked [`IMPORTED`].
    pub fn imported(submission: &FormSubmission, received_at: SystemTime) -> Self {
        Receipt {
            source: Some(IMPORTED.to_owned()),
            ..Receipt::new(submission, received_at)
        }
    }

    /// An imported submission that breaks a spam rule: held back as its
    /// webhook would have been, and marked [`IMPORTED`].
    pub fn imported_quarantined(
        submission: &FormSubmission,
        received_at: SystemTime,
        rule: &crate::spam::SpamRule,
        retention: Retention,
    ) -> Self {
        Receipt {
            source: Some(IMPORTED.to_owned()),
            ..Receipt::quarantined(submission, received_at, rule, retention)
        }
    }

    pub fn is_imported(&self) -> bool {
        self.source.as_deref() == Some(IMPORTED)
    }

    /// A new receipt held back by `rule`: QUARANTINED, in no queue (the
    /// stream and the pass never deliver it), expiring the retention after
    /// its arrival, since it holds personal data that nobody may ask for.
    pub fn quarantined(
        submission: &FormSubmission,
        received_at: SystemTime,
        rule: &crate::spam::SpamRule,
        retention: Retention,
    ) -> Self {
        Receipt {
            status: ReceiptStatus::Quarantined,
            pending: None,
            next_attempt_at: None,
            expires_at: Some(retention.expiry_after(received_at)),
            quarantine_rule: Some(rule.to_string()),
            ..Receipt::new(submission, received_at)
        }
    }

    /// The key this receipt is stored under, as the type that rules use.
    pub fn key(&self) -> IdempotencyKey {
        IdempotencyKey::from_stored(self.pk.clone())
    }

    /// Removes every personal attribute ([`PERSONAL_ATTRIBUTES`]), as the
    /// stores do when a lead is delivered or a person forgotten.
    pub fn remove_personal_data(&mut self) {
        self.payload = None;
        self.notice_fields = None;
    }

    /// When it was received; `None` if the stored text is not a timestamp.
    pub fn received_time(&self) -> Option<SystemTime> {
        parse_timestamp(&self.received_at)
    }

    /// Where the delivery age limit counts from: the receipt's arrival, or
    /// the operator's last redrive, whichever is later.
    pub fn delivery_started(&self) -> Option<SystemTime> {
        let received = self.received_time()?;
        let redriven = self.redriven_at.as_deref().and_then(parse_timestamp);
        Some(redriven.map_or(received, |redriven| redriven.max(received)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn gates_and_configuration_are_no_receipts() {
        for key in [
            "staticforms:form.submitted:sub_1",
            "tally:FORM_RESPONSE:2wgx4n",
            "staticforms:form.submitted:gate#1",
            "webflow:form_submission:config#routes",
        ] {
            assert!(is_receipt_key(key), "{key}");
        }
        for key in ["gate#hmac:00", "gate#email:00", crate::routes::ROUTES_KEY] {
            assert!(!is_receipt_key(key), "{key}");
        }
    }

    #[test]
    fn a_status_as_text_is_the_stored_text() {
        for status in [
            ReceiptStatus::Received,
            ReceiptStatus::Completed,
            ReceiptStatus::Failed,
            ReceiptStatus::Erased,
            ReceiptStatus::Quarantined,
        ] {
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                serde_json::Value::String(status.as_str().to_owned())
            );
        }
    }
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
    fn a_quarantined_receipt_waits_in_no_queue_and_expires_from_arrival() {
        let at = UNIX_EPOCH + Duration::from_millis(1_764_403_128_123);
        let rule = crate::spam::SpamRule::Honeypot("website_url".into());
        let receipt = Receipt::quarantined(&submission(), at, &rule, Retention::default());
        assert_eq!(receipt.status, ReceiptStatus::Quarantined);
        assert_eq!(
            receipt.quarantine_rule.as_deref(),
            Some("honeypot:website_url")
        );
        assert_eq!(receipt.pending, None, "never in the reconciler's queue");
        assert_eq!(receipt.next_attempt_at, None);
        assert_eq!(receipt.expires_at, Some(1_764_403_128 + 30 * 86_400));
        let new = Receipt::new(&submission(), at);
        assert_eq!(receipt.pk, new.pk);
        assert_eq!(receipt.payload, new.payload, "held, not dropped");
        assert_eq!(receipt.payload_fingerprint, new.payload_fingerprint);
        let item = serde_json::to_value(&receipt).unwrap();
        assert_eq!(item["status"], "QUARANTINED");
        assert_eq!(item["quarantineRule"], "honeypot:website_url");
    }

    #[test]
    fn receipt_fields() {
        let at = UNIX_EPOCH + Duration::from_millis(1_764_403_128_123);
        let receipt = Receipt::new(&submission(), at);
        assert_eq!(receipt.pk, "staticforms:form.submitted:sub_123");
        assert_eq!(receipt.event, "form.submitted");
        assert_eq!(receipt.submission_id, "sub_123");
        assert_eq!(receipt.status, ReceiptStatus::Received);
        assert_eq!(receipt.received_at, "2025-11-29T07:58:48.123Z");
        assert_eq!(receipt.expires_at, None, "no expiry before delivery");
        assert_eq!(
            Retention::default().expiry_after(at),
            1_764_403_128 + 30 * 86_400
        );
        assert_eq!(receipt.pending.as_deref(), Some(PENDING));
        assert_eq!(
            receipt.next_attempt_at.as_deref(),
            Some("2025-11-29T07:58:48.123Z"),
            "a new receipt is due at once"
        );
        assert_eq!(receipt.attempts, 0);
        assert_eq!(receipt.received_time(), Some(at));
        let text = receipt.payload.as_deref().unwrap();
        assert!(!text.contains("sf_live_secret"));
        let payload: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(payload["data"]["formData"]["name"], "Ada");
        assert_eq!(payload["timestamp"], 1_764_403_128);
        // Static Forms' form id is its apiKey: the receipt names the form
        // by a hash of it, never by it.
        assert_eq!(
            receipt.form_ref.as_deref(),
            Some(crate::routes::form_ref("sf_live_secret").as_str())
        );
        let item = serde_json::to_string(&receipt).unwrap();
        assert!(!item.contains("sf_live_secret"), "{item}");
    }

    #[test]
    fn fingerprint_ignores_envelope_fields_that_vary_per_attempt() {
        let first = submission();
        let mut retry = first.clone();
        retry.payload["timestamp"] = json!(1_764_409_999);
        let at = SystemTime::now();
        assert_eq!(
            Receipt::new(&first, at).payload_fingerprint,
            Receipt::new(&retry, at).payload_fingerprint
        );
    }

    #[test]
    fn serialised_names_match_the_attribute_constants() {
        let receipt = Receipt::new(&submission(), SystemTime::now());
        let value = serde_json::to_value(&receipt).unwrap();
        for name in [
            attr::PK,
            attr::STATUS,
            attr::PAYLOAD_FINGERPRINT,
            attr::RECEIVED_AT,
            attr::QUEUE,
            attr::NEXT_ATTEMPT_AT,
            attr::ATTEMPTS,
        ] {
            assert!(value.get(name).is_some(), "{name}");
        }
        assert_eq!(value[attr::STATUS], "RECEIVED");
    }

    /// A receipt with every optional field set, so every attribute is
    /// written.
    #[test]
    fn the_day_index_keeps_a_receipt_under_its_utc_day() {
        for (received_at, day) in [
            ("2026-12-05T16:22:15.123Z", Some("2026-12-05")),
            ("2026-12-31T23:59:59.999Z", Some("2026-12-31")),
            ("2026-12-5T1:00:00Z", None),
            ("20261205", None),
            ("", None),
            ("2026-12-05", Some("2026-12-05")),
            ("€€€€€€€€€€", None),
        ] {
            assert_eq!(received_day(received_at), day, "{received_at:?}");
        }
        let receipt = Receipt::new(&submission(), SystemTime::UNIX_EPOCH);
        assert_eq!(receipt.received_day.as_deref(), Some("1970-01-01"));
        for attribute in DAY_INDEX_ATTRIBUTES {
            assert!(
                OPERATOR_ATTRIBUTES.contains(attribute),
                "{attribute}: the day index holds no personal data"
            );
        }
    }

    fn with_every_field() -> Receipt {
        let mut receipt = Receipt::new(&submission(), SystemTime::now());
        receipt.expires_at = Some(1);
        receipt.last_attempt_at = Some("t".into());
        receipt.last_error = Some("http-503".into());
        receipt.last_http_status = Some(503);
        receipt.completed_at = Some("t".into());
        receipt.failed_at = Some("t".into());
        receipt.failure_reason = Some("gave-up".into());
        receipt.failure_http_status = Some(503);
        receipt.redriven_at = Some("2026-11-30T00:00:00.000Z".into());
        receipt.unrecorded_claims = 1;
        receipt.solo_claims = 1;
        receipt.erased_at = Some("t".into());
        receipt.quarantine_rule = Some("links".into());
        receipt.released_at = Some("t".into());
        receipt.form_ref = Some("0123456789abcdef".into());
        receipt.claimed_until = Some("t".into());
        receipt.source = Some(IMPORTED.into());
        receipt.delivered_to = Some("salesforce".into());
        receipt.record_id = Some("00Q1".into());
        receipt.record_url =
            Some("https://acme.my.salesforce.com/lightning/r/Lead/00Q1/view".into());
        receipt.refusal = Some("Member In Compliance State".into());
        receipt.duplicate_of = Some("staticforms:form.submitted:sub_1".into());
        receipt.notice = Some("SENT".into());
        receipt.notice_claimed_until = Some("2026-12-04T10:00:00.000Z".into());
        receipt.notice_attempts = 2;
        receipt.noticed_at = Some("2026-12-04T10:00:01.000Z".into());
        receipt.notice_fields = Some(r#"{"plan":"Pro"}"#.into());
        receipt
            .destinations
            .insert("mailchimp".into(), crate::lanes::Lane::pending());
        receipt
    }

    #[test]
    fn attempt_fields_use_the_attribute_constants_and_old_receipts_still_read() {
        let value = serde_json::to_value(with_every_field()).unwrap();
        for name in [
            attr::LAST_ATTEMPT_AT,
            attr::LAST_ERROR,
            attr::LAST_HTTP_STATUS,
            attr::COMPLETED_AT,
            attr::FAILED_AT,
            attr::FAILURE_REASON,
            attr::FAILURE_HTTP_STATUS,
            attr::REDRIVEN_AT,
            attr::DELIVERED_TO,
            attr::RECORD_ID,
            attr::RECORD_URL,
            attr::DESTINATIONS,
        ] {
            assert!(value.get(name).is_some(), "{name}");
        }

        // A receipt stored before attempts existed.
        let mut old = serde_json::to_value(Receipt::new(&submission(), SystemTime::now())).unwrap();
        for name in [attr::QUEUE, attr::NEXT_ATTEMPT_AT, attr::ATTEMPTS] {
            old.as_object_mut().unwrap().remove(name);
        }
        let old: Receipt = serde_json::from_value(old).unwrap();
        assert_eq!(
            (old.pending, old.next_attempt_at, old.attempts),
            (None, None, 0)
        );
    }

    #[test]
    fn the_age_limit_counts_from_the_later_of_arrival_and_redrive() {
        let at = |text: &str| parse_timestamp(text).unwrap();
        let mut receipt = Receipt::new(&submission(), at("2026-11-01T00:00:00Z"));
        assert_eq!(receipt.delivery_started(), Some(at("2026-11-01T00:00:00Z")));
        receipt.redriven_at = Some("2026-11-20T00:00:00.000Z".into());
        assert_eq!(receipt.delivery_started(), Some(at("2026-11-20T00:00:00Z")));
        receipt.redriven_at = Some("2026-10-01T00:00:00.000Z".into());
        assert_eq!(receipt.delivery_started(), Some(at("2026-11-01T00:00:00Z")));
        receipt.redriven_at = Some("garbage".into());
        assert_eq!(receipt.delivery_started(), Some(at("2026-11-01T00:00:00Z")));
        receipt.received_at = "garbage".into();
        assert_eq!(receipt.delivery_started(), None);
    }

    #[test]
    fn personal_and_operator_attributes_cover_a_receipt_exactly_once() {
        let mut receipt = with_every_field();
        let value = serde_json::to_value(&receipt).unwrap();
        let mut written: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        written.sort_unstable();
        let mut listed: Vec<&str> = OPERATOR_ATTRIBUTES
            .iter()
            .chain(PERSONAL_ATTRIBUTES)
            .chain([&attr::PAYLOAD_FINGERPRINT])
            .copied()
            .collect();
        listed.sort_unstable();
        assert_eq!(
            written, listed,
            "every attribute is either personal or an operator's"
        );

        receipt.remove_personal_data();
        let value = serde_json::to_value(&receipt).unwrap();
        for name in PERSONAL_ATTRIBUTES {
            assert!(value.get(name).is_none(), "{name}");
        }
        assert!(!value.to_string().contains("Ada"), "{value}");
        let back: Receipt = serde_json::from_value(value).unwrap();
        assert_eq!(
            back.payload, None,
            "a receipt without its payload still reads"
        );
    }
}
