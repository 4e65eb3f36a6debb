//! The receipt ledger ports: record what became of a receipt, and find the
//! receipts whose next attempt is due.
//!
//! Every update is conditional on the receipt still being RECEIVED: a
//! receipt TTL already deleted is never re-created. Every delivery starts
//! with a claim, conditional on RECEIVED and on the next attempt it saw, so
//! the stream and the reconciler never deliver one receipt at once, and a
//! settled receipt is never written to the CRM again.
//!
//! The ports are here; their adapters beside them: `dynamodb` (the receipts
//! table) for production, `memory` (the same conditions on a map, and a
//! watching decorator) for tests.

pub mod dynamodb;
pub mod memory;
pub mod watched;

use std::future::Future;

use shared::duplicates::FirstSubmission;
use shared::lanes::Lanes;
use shared::receipt::Timestamp;
use shared::record::DeliveredRecord;
use shared::{IdempotencyKey, Receipt};

use crate::decide::AttemptError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marked {
    Updated,
    /// The receipt is gone, or another delivery already settled it; nothing
    /// was written. Counts as done.
    NotPending,
}

/// How a settled receipt is kept, written with its completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// TTL may delete the receipt from then on (epoch seconds).
    pub expires_at: u64,
    /// Keep the payload of a delivered receipt
    /// (`KEEP_PAYLOAD_AFTER_DELIVERY`); otherwise the same update removes
    /// every personal attribute (`shared::receipt::PERSONAL_ATTRIBUTES`),
    /// as it always does for a refused one.
    pub keep_payload: bool,
    /// The destination's catalog name, kept as `deliveredTo`; for a
    /// receipt of several, the names of those that have the lead,
    /// comma-separated.
    pub destination: String,
    pub ending: Ending,
    /// A new-lead notice waits to be sent (`shared::notice`): the receipt
    /// stays in the queue index's NOTICE partition, due now.
    pub notice: Option<WaitingNotice>,
}

/// A delivered lead's notice, waiting to be sent.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WaitingNotice {
    /// The answers its route names (`notify_fields`), as JSON object text:
    /// personal data, kept (`noticeFields`) only until the notice is sent.
    pub fields: Option<String>,
}

/// How a receipt's delivery ended for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// COMPLETED: the record the destination wrote, as far as its answer
    /// told (`recordId`, `recordUrl`); unknown for a stale delivery.
    Delivered(DeliveredRecord),
    /// REFUSED: the destination refused the person for good, with this
    /// code (`refusal`); the personal data goes whatever `keep_payload`.
    Refused(String),
    /// DUPLICATE: a double submit of the receipt with this key
    /// (`duplicateOf`), never delivered; no personal data is kept.
    Duplicate(String),
    /// ERASED: made before `receipts forget` erased its person, and
    /// arrived after (a late webhook): never delivered, no personal data.
    Erased,
}

impl Completion {
    /// The personal attributes this completion keeps.
    pub fn keeps_payload(&self) -> bool {
        self.keep_payload && matches!(self.ending, Ending::Delivered(_))
    }
}

/// What a claim of a delivered receipt's notice found.
#[derive(Debug, Clone, PartialEq)]
pub enum NoticeClaim {
    /// This send holds it until the claim's end: the receipt as stored.
    Taken(Box<Receipt>),
    /// An earlier claim ended with nothing recorded (its send may have
    /// reached the endpoint): settled UNCONFIRMED here, never sent again.
    Unconfirmed,
    /// Sent, held by another send, or never waiting: nothing to do.
    Lost,
}

/// How a notice's send ended, written to its receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoticeSent {
    /// The endpoint accepted it: SENT, out of the queue.
    Accepted { at: Timestamp },
    /// Refused, or not reached: due again at `at`.
    Again { at: Timestamp },
    /// No answer after the request went: UNCONFIRMED, never sent again.
    Unconfirmed,
}

/// What this delivery did, written together with its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    /// Attempts made by this delivery (added to the receipt's count).
    pub attempts: u32,
    /// When.
    pub at: Timestamp,
    /// Each destination's lane, where the receipt goes to several
    /// (`shared::lanes`): written whole by the same update. `None` for a
    /// receipt with one destination, whose lane is the receipt itself.
    pub lanes: Option<Lanes>,
}

impl AttemptRecord {
    /// `attempts` made by this delivery at `at`, of a receipt with one
    /// destination.
    pub fn new(attempts: u32, at: Timestamp) -> Self {
        AttemptRecord {
            attempts,
            at,
            lanes: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("receipt ledger unavailable ({0})")]
pub struct LedgerError(pub String);

/// What a claim found.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// This delivery holds the receipt until the claim's end: the receipt
    /// as stored (the payload comes from here, never from an index).
    Taken(Box<Result<Receipt, UnreadableItem>>),
    /// Settled, deferred, or claimed by another delivery first: nothing to
    /// do, and no CRM call.
    Lost,
}

pub trait ReceiptLedger: Send + Sync {
    /// Takes a receipt for one delivery until `until` (`claimedUntil`) if
    /// it is still RECEIVED, its next attempt is still `seen` (absent on
    /// receipts older than attempts), and no other claim holds it at `now`.
    /// The stream and the pass both claim before any CRM call, so they
    /// never write one receipt at the same time, and a record delivered
    /// again after its receipt was settled writes nothing. If this
    /// container dies, the receipt may be claimed again after `until`. The
    /// claim leaves the next attempt, and so the queue index, untouched: it
    /// costs the table's write alone.
    fn claim(
        &self,
        key: &IdempotencyKey,
        seen: Option<&Timestamp>,
        until: &Timestamp,
        now: &Timestamp,
    ) -> impl Future<Output = Result<Claim, LedgerError>> + Send;

    /// Takes a receipt this delivery already holds (its claim still ends
    /// at `held`) to deliver it alone, counting the claim against it
    /// (`solo_claims`): a suspect, whose earlier claims went unrecorded.
    /// `Lost` when it was settled or taken meanwhile.
    fn claim_alone(
        &self,
        key: &IdempotencyKey,
        held: &Timestamp,
    ) -> impl Future<Output = Result<Claim, LedgerError>> + Send;

    /// RECEIVED → COMPLETED (or REFUSED, as `completion.ending` says);
    /// leaves the queue; loses its personal data unless `completion` keeps
    /// it; TTL may delete it from `completion.expires_at` on, and not
    /// before: the only write that sets an expiry.
    fn mark_completed(
        &self,
        key: &IdempotencyKey,
        attempt: &AttemptRecord,
        completion: &Completion,
    ) -> impl Future<Output = Result<Marked, LedgerError>> + Send;

    /// RECEIVED → FAILED with the reason; moves to the FAILED queue, with
    /// no expiry.
    fn mark_failed(
        &self,
        key: &IdempotencyKey,
        failure: &AttemptError,
        attempt: &AttemptRecord,
    ) -> impl Future<Output = Result<Marked, LedgerError>> + Send;

    /// The newest-wins gate of one person (`shared::newest::GateSecret::gate_key`):
    /// records `pass.stamp` and answers `true` if the gate holds no stamp
    /// newer than `pass.over` and `pass.receipt` is still RECEIVED; `false`
    /// when a newer submission already wrote that person, or the receipt
    /// was settled or erased meanwhile (then no gate is written: `receipts
    /// forget` deleted it, and it stays deleted). The gate expires at
    /// `expires_at` (epoch seconds).
    fn admit_newest(
        &self,
        gate: &str,
        pass: &GatePass<'_>,
        expires_at: u64,
    ) -> impl Future<Output = Result<bool, LedgerError>> + Send;

    /// Double submits (`shared::duplicates`): adds `first.receipt` to the
    /// person's submissions in `item` unless its nearest one within its
    /// window has the same answers. `None`: it is delivered (added, or
    /// held already); `Some(key)`: it repeats the receipt with that key.
    /// The item expires at `first.expires_at`.
    fn first_of_identical(
        &self,
        item: &str,
        first: &FirstSubmission,
    ) -> impl Future<Output = Result<Option<String>, LedgerError>> + Send;

    /// When `receipts forget` erased the person behind the erasure marker
    /// `marker` (`shared::erasure::marker_key`), RFC 3339; `None` when no
    /// marker stands. Read consistently: a marker written a moment ago
    /// counts.
    fn erased_at(
        &self,
        marker: &str,
    ) -> impl Future<Output = Result<Option<String>, LedgerError>> + Send;

    /// Takes a delivered receipt's waiting notice for one send until
    /// `until`, if no other send holds it; one whose earlier claim ended
    /// unrecorded at `now` is settled UNCONFIRMED instead.
    fn claim_notice(
        &self,
        key: &IdempotencyKey,
        until: &Timestamp,
        now: &Timestamp,
    ) -> impl Future<Output = Result<NoticeClaim, LedgerError>> + Send;

    /// Records a send under the claim that ends at `held`; `NotPending`
    /// when that claim is no longer the receipt's.
    fn settle_notice(
        &self,
        key: &IdempotencyKey,
        held: &Timestamp,
        sent: &NoticeSent,
    ) -> impl Future<Output = Result<Marked, LedgerError>> + Send;

    /// Records the lanes of a receipt with several destinations while the
    /// delivery that holds its claim (ending at `held`) still waits for
    /// another destination: what one destination settled is kept before
    /// the next answers, so a crash between them never calls it again.
    /// Leaves the status, the queue and the claim as they are; `NotPending`
    /// when the receipt was settled meanwhile or the claim is no longer
    /// this delivery's.
    fn save_lanes(
        &self,
        key: &IdempotencyKey,
        held: &Timestamp,
        lanes: &Lanes,
    ) -> impl Future<Output = Result<Marked, LedgerError>> + Send;

    /// Stays RECEIVED, due again at `next_attempt_at`, with no expiry.
    fn defer(
        &self,
        key: &IdempotencyKey,
        next_attempt_at: &Timestamp,
        error: &AttemptError,
        attempt: &AttemptRecord,
    ) -> impl Future<Output = Result<Marked, LedgerError>> + Send;
}

/// A lead's passage through its person's newest-wins gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatePass<'a> {
    /// The lead's receipt, which must still be RECEIVED.
    pub receipt: &'a IdempotencyKey,
    /// The lead's stamp (`Lead::newest_by`): what the gate holds after.
    pub stamp: &'a str,
    /// The newest stamp the gate may hold for the lead to pass: its own,
    /// or a newer one of this same batch whose lead was refused for good
    /// (so never written), which held this lead back.
    pub over: &'a str,
}

impl<'a> GatePass<'a> {
    /// Passes when nothing newer than `stamp` was let through.
    pub fn own(receipt: &'a IdempotencyKey, stamp: &'a str) -> Self {
        GatePass {
            receipt,
            stamp,
            over: stamp,
        }
    }
}

/// Which pending receipts a reconciliation pass asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueQuery {
    /// The queue index's partition: `PENDING` (receipts to deliver) or
    /// `NOTICE` (delivered receipts whose notice waits).
    pub queue: &'static str,
    /// Next attempt due at or before this time.
    pub now: String,
    /// Received at or before this time: younger ones are the stream's.
    pub received_before: String,
    pub page_size: u32,
}

/// Where the next page starts: the last receipt of this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub key: String,
    pub next_attempt_at: String,
}

/// An item that does not read as a receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableItem {
    pub key: Option<String>,
}

/// A due receipt as the queue index knows it: enough to claim it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueReceipt {
    pub key: IdempotencyKey,
    pub next_attempt_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DuePage {
    pub due: Vec<DueReceipt>,
    /// Index entries the store read to answer, those filtered out included.
    pub read: usize,
    /// Their size in bytes, as DynamoDB counts an item's size: what the
    /// pass pays for.
    pub bytes_read: usize,
    pub next: Option<Cursor>,
}

/// What waits: receipts for an attempt (and since when the oldest), and
/// FAILED receipts for a person.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Census {
    pub pending: usize,
    pub oldest_received_at: Option<String>,
    pub failed: usize,
    /// Delivered receipts whose new-lead notice is not sent yet.
    pub notices: usize,
    /// `false` when the deadline came before the last page: the counts are
    /// then lower bounds.
    pub complete: bool,
    /// Index entries read, and their size in bytes.
    pub read: usize,
    pub bytes_read: usize,
}

pub trait PendingQueue: Send + Sync {
    /// Counts the waiting receipts from the queue index's keys (never a
    /// payload), page by page until done or until `deadline`.
    fn census(
        &self,
        deadline: std::time::Instant,
    ) -> impl Future<Output = Result<Census, LedgerError>> + Send;

    /// The receipts whose next attempt is due, from the queue index: keys
    /// and times only. The pass claims each to read it whole.
    fn due(
        &self,
        query: &DueQuery,
        from: Option<&Cursor>,
    ) -> impl Future<Output = Result<DuePage, LedgerError>> + Send;
}
