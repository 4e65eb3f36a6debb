//! A decorator of any ledger, for tests: it counts the receipts it moved
//! to COMPLETED, or breaks the first completions as if the worker crashed
//! just before the write.

use shared::duplicates::FirstSubmission;
use shared::receipt::Timestamp;
use shared::IdempotencyKey;

use super::{
    AttemptRecord, Census, Claim, Completion, Cursor, DuePage, DueQuery, GatePass, LedgerError,
    Marked, NoticeClaim, NoticeSent, PendingQueue, ReceiptLedger,
};
use crate::decide::AttemptError;

/// Any ledger, watched or broken at its completions, for tests: the first
/// `fail_first` completions fail as if the worker crashed just before the
/// write, and `completed` counts the receipts it moved to COMPLETED.
pub struct WatchedLedger<L> {
    pub inner: L,
    fail_first: std::sync::atomic::AtomicUsize,
    completed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl<L> WatchedLedger<L> {
    pub fn new(inner: L) -> Self {
        WatchedLedger {
            inner,
            fail_first: Default::default(),
            completed: Default::default(),
        }
    }

    /// The next `count` completions fail without writing.
    pub fn failing_first(self, count: usize) -> Self {
        self.fail_first
            .store(count, std::sync::atomic::Ordering::SeqCst);
        self
    }

    /// Counts into `counter`, which several ledgers may share.
    pub fn counting_into(
        mut self,
        counter: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ) -> Self {
        self.completed = counter;
        self
    }

    pub fn completed(&self) -> usize {
        self.completed.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl<L: ReceiptLedger> ReceiptLedger for WatchedLedger<L> {
    async fn admit_newest(
        &self,
        gate: &str,
        pass: &GatePass<'_>,
        expires_at: u64,
    ) -> Result<bool, LedgerError> {
        self.inner.admit_newest(gate, pass, expires_at).await
    }

    async fn first_of_identical(
        &self,
        item: &str,
        first: &FirstSubmission,
    ) -> Result<Option<String>, LedgerError> {
        self.inner.first_of_identical(item, first).await
    }

    async fn erased_at(&self, marker: &str) -> Result<Option<String>, LedgerError> {
        self.inner.erased_at(marker).await
    }

    async fn claim_notice(
        &self,
        key: &IdempotencyKey,
        until: &Timestamp,
        now: &Timestamp,
    ) -> Result<NoticeClaim, LedgerError> {
        self.inner.claim_notice(key, until, now).await
    }

    async fn settle_notice(
        &self,
        key: &IdempotencyKey,
        held: &Timestamp,
        sent: &NoticeSent,
    ) -> Result<Marked, LedgerError> {
        self.inner.settle_notice(key, held, sent).await
    }

    async fn claim(
        &self,
        key: &IdempotencyKey,
        seen: Option<&Timestamp>,
        until: &Timestamp,
        now: &Timestamp,
    ) -> Result<Claim, LedgerError> {
        self.inner.claim(key, seen, until, now).await
    }

    async fn claim_alone(
        &self,
        key: &IdempotencyKey,
        held: &Timestamp,
    ) -> Result<Claim, LedgerError> {
        self.inner.claim_alone(key, held).await
    }

    async fn mark_completed(
        &self,
        key: &IdempotencyKey,
        attempt: &AttemptRecord,
        completion: &Completion,
    ) -> Result<Marked, LedgerError> {
        use std::sync::atomic::Ordering::SeqCst;
        let crash = self
            .fail_first
            .fetch_update(SeqCst, SeqCst, |left| left.checked_sub(1))
            .is_ok();
        if crash {
            return Err(LedgerError("crashed before the receipt update".into()));
        }
        let marked = self.inner.mark_completed(key, attempt, completion).await;
        if marked == Ok(Marked::Updated) {
            self.completed.fetch_add(1, SeqCst);
        }
        marked
    }

    async fn mark_failed(
        &self,
        key: &IdempotencyKey,
        failure: &AttemptError,
        attempt: &AttemptRecord,
    ) -> Result<Marked, LedgerError> {
        self.inner.mark_failed(key, failure, attempt).await
    }

    async fn save_lanes(
        &self,
        key: &IdempotencyKey,
        held: &Timestamp,
        lanes: &shared::lanes::Lanes,
    ) -> Result<Marked, LedgerError> {
        self.inner.save_lanes(key, held, lanes).await
    }

    async fn defer(
        &self,
        key: &IdempotencyKey,
        next_attempt_at: &Timestamp,
        error: &AttemptError,
        attempt: &AttemptRecord,
    ) -> Result<Marked, LedgerError> {
        self.inner.defer(key, next_attempt_at, error, attempt).await
    }
}

impl<L: PendingQueue> PendingQueue for WatchedLedger<L> {
    async fn census(&self, deadline: std::time::Instant) -> Result<Census, LedgerError> {
        self.inner.census(deadline).await
    }

    async fn due(&self, query: &DueQuery, from: Option<&Cursor>) -> Result<DuePage, LedgerError> {
        self.inner.due(query, from).await
    }
}
