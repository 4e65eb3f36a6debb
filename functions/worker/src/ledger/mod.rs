//! The receipt ledger ports: record what became of a receipt, and find the
//! receipts whose next attempt is due.
//!
//! Every update is conditional on the receipt still being RECEIVED: a
//! receipt TTL already deleted is never re-created, and when the stream and
//! the reconciler deliver the same receipt at once, only one of them moves
//! it to COMPLETED.
//!
//! The ports are here; their adapters beside them: `dynamodb` (the receipts
//! table) for production, `memory` (the same conditions on a map, and a
//! watching decorator) for tests.

pub mod dynamodb;
pub mod memory;

use std::future::Future;

use shared::receipt::Timestamp;
use shared::{IdempotencyKey, Receipt};

use crate::decide::AttemptError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marked {
    Updated,
    /// The receipt is gone, or another delivery already settled it; nothing
    /// was written. Counts as done.
    NotPending,
}

/// What this delivery did, written together with its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    /// Attempts made by this delivery (added to the receipt's count).
    pub attempts: u32,
    /// When.
    pub at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("receipt ledger unavailable ({0})")]
pub struct LedgerError(pub String);

pub trait ReceiptLedger: Send + Sync {
    /// RECEIVED → COMPLETED; leaves the pending index.
    fn mark_completed(
        &self,
        key: &IdempotencyKey,
        attempt: &AttemptRecord,
    ) -> impl Future<Output = Result<Marked, LedgerError>> + Send;

    /// RECEIVED → FAILED with the reason; leaves the pending index.
    fn mark_failed(
        &self,
        key: &IdempotencyKey,
        failure: &AttemptError,
        attempt: &AttemptRecord,
    ) -> impl Future<Output = Result<Marked, LedgerError>> + Send;

    /// Stays RECEIVED, due again at `next_attempt_at`.
    fn defer(
        &self,
        key: &IdempotencyKey,
        next_attempt_at: &Timestamp,
        error: &AttemptError,
        attempt: &AttemptRecord,
    ) -> impl Future<Output = Result<Marked, LedgerError>> + Send;
}

/// Which pending receipts a reconciliation pass asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueQuery {
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

/// A pending item that does not read as a receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableItem {
    pub key: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DuePage {
    pub receipts: Vec<Result<Receipt, UnreadableItem>>,
    /// Items the store read to answer, those filtered out included: the
    /// pass's cost.
    pub read: usize,
    pub next: Option<Cursor>,
}

/// How many receipts wait, and since when the oldest one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Census {
    pub pending: usize,
    pub oldest_received_at: Option<String>,
}

pub trait PendingQueue: Send + Sync {
    /// Counts the pending receipts (all of them, due or not). Reads the
    /// pending index only: its cost follows what waits.
    fn census(&self) -> impl Future<Output = Result<Census, LedgerError>> + Send;

    fn due(
        &self,
        query: &DueQuery,
        from: Option<&Cursor>,
    ) -> impl Future<Output = Result<DuePage, LedgerError>> + Send;

    /// Takes a due receipt for this pass: moves its next attempt to `until`
    /// if it is still RECEIVED and still due at `seen`. `false` when another
    /// pass or delivery got there first. If this container dies mid-way, the
    /// receipt is due again at `until`.
    fn claim(
        &self,
        key: &IdempotencyKey,
        seen: &Timestamp,
        until: &Timestamp,
    ) -> impl Future<Output = Result<bool, LedgerError>> + Send;
}
