//! In-memory doubles of the ledger ports, for logic tests: `MemoryLedger`
//! enforces the same conditions as the receipts table on a map, and
//! `WatchedLedger` (in `watched`, re-exported here) counts (or breaks) the
//! completions of any ledger.

use std::collections::HashMap;
use std::sync::Mutex;

use shared::duplicates::{First, FirstSubmission, Judgement};
use shared::receipt::Timestamp;
use shared::receipt::{FAILED, NOTICE, PENDING};
use shared::{IdempotencyKey, Receipt, ReceiptStatus};

use super::{
    AttemptRecord, Census, Claim, Completion, Cursor, DuePage, DueQuery, DueReceipt, Ending,
    GatePass, LedgerError, Marked, NoticeClaim, NoticeSent, PendingQueue, ReceiptLedger,
};
use crate::decide::AttemptError;
pub use crate::ledger::watched::WatchedLedger;

/// Receipts in a map, with the same conditions, for logic tests.
#[derive(Debug, Default)]
pub struct MemoryLedger {
    receipts: Mutex<HashMap<String, Receipt>>,
    /// Newest-wins gates: the last stamp let through, by gate key.
    gates: Mutex<HashMap<String, String>>,
    /// The firsts of identical submissions, by item.
    firsts: Mutex<HashMap<String, Vec<First>>>,
    /// Erasure markers: when each person was erased, by marker key.
    erasures: Mutex<HashMap<String, String>>,
}

impl MemoryLedger {
    /// A ledger holding these receipts as stored (a stream record's image
    /// is the receipt as ingest stored it, and the stream claims what its
    /// image saw).
    pub fn holding<'a>(receipts: impl IntoIterator<Item = &'a Receipt>) -> Self {
        let ledger = MemoryLedger::default();
        for receipt in receipts {
            ledger.insert(receipt.clone());
        }
        ledger
    }

    /// The marker `receipts forget` leaves for a person erased `at`.
    pub fn mark_erased(&self, marker: &str, at: &str) {
        self.erasures
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(marker.to_owned(), at.to_owned());
    }

    pub fn insert(&self, receipt: Receipt) {
        self.lock().insert(receipt.pk.clone(), receipt);
    }

    pub fn remove(&self, key: &str) {
        self.lock().remove(key);
    }

    pub fn get(&self, key: &str) -> Option<Receipt> {
        self.lock().get(key).cloned()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Receipt>> {
        self.receipts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Applies `change` to a RECEIVED receipt, counting the attempts.
    fn settle(
        &self,
        key: &str,
        attempt: &AttemptRecord,
        change: impl FnOnce(&mut Receipt),
    ) -> Marked {
        match self.lock().get_mut(key) {
            Some(receipt) if receipt.status == ReceiptStatus::Received => {
                receipt.attempts += attempt.attempts;
                receipt.last_attempt_at = Some(attempt.at.as_str().to_owned());
                receipt.claimed_until = None;
                receipt.unrecorded_claims = 0;
                receipt.solo_claims = 0;
                if let Some(lanes) = &attempt.lanes {
                    receipt.destinations = lanes.clone();
                }
                change(receipt);
                Marked::Updated
            }
            _ => Marked::NotPending,
        }
    }
}

impl ReceiptLedger for MemoryLedger {
    async fn admit_newest(
        &self,
        gate: &str,
        pass: &GatePass<'_>,
        _expires_at: u64,
    ) -> Result<bool, LedgerError> {
        let received = self
            .lock()
            .get(pass.receipt.as_str())
            .is_some_and(|receipt| receipt.status == ReceiptStatus::Received);
        let mut gates = self
            .gates
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let admitted = received
            && shared::newest::may_overwrite(pass.over, gates.get(gate).map(String::as_str));
        if admitted {
            gates.insert(gate.to_owned(), pass.stamp.to_owned());
        }
        Ok(admitted)
    }

    async fn claim_notice(
        &self,
        key: &IdempotencyKey,
        until: &Timestamp,
        now: &Timestamp,
    ) -> Result<NoticeClaim, LedgerError> {
        let mut receipts = self.lock();
        let Some(receipt) = receipts.get_mut(key.as_str()) else {
            return Ok(NoticeClaim::Lost);
        };
        if receipt.notice.as_deref() != Some(shared::notice::PENDING) {
            return Ok(NoticeClaim::Lost);
        }
        match receipt.notice_claimed_until.as_deref() {
            None => {
                receipt.notice_claimed_until = Some(until.as_str().to_owned());
                Ok(NoticeClaim::Taken(Box::new(receipt.clone())))
            }
            Some(held) if held < now.as_str() => {
                receipt.notice_fields = None;
                receipt.notice = Some(shared::notice::UNCONFIRMED.to_owned());
                receipt.pending = None;
                receipt.next_attempt_at = None;
                receipt.notice_claimed_until = None;
                Ok(NoticeClaim::Unconfirmed)
            }
            Some(_) => Ok(NoticeClaim::Lost),
        }
    }

    async fn settle_notice(
        &self,
        key: &IdempotencyKey,
        held: &Timestamp,
        sent: &NoticeSent,
    ) -> Result<Marked, LedgerError> {
        let mut receipts = self.lock();
        let Some(receipt) = receipts.get_mut(key.as_str()).filter(|receipt| {
            receipt.notice.as_deref() == Some(shared::notice::PENDING)
                && receipt.notice_claimed_until.as_deref() == Some(held.as_str())
        }) else {
            return Ok(Marked::NotPending);
        };
        receipt.notice_claimed_until = None;
        match sent {
            NoticeSent::Accepted { at } => {
                receipt.notice_fields = None;
                receipt.notice = Some(shared::notice::SENT.to_owned());
                receipt.noticed_at = Some(at.as_str().to_owned());
                receipt.pending = None;
                receipt.next_attempt_at = None;
            }
            NoticeSent::Again { at } => {
                receipt.notice_attempts += 1;
                receipt.next_attempt_at = Some(at.as_str().to_owned());
            }
            NoticeSent::Unconfirmed => {
                receipt.notice_fields = None;
                receipt.notice = Some(shared::notice::UNCONFIRMED.to_owned());
                receipt.pending = None;
                receipt.next_attempt_at = None;
            }
        }
        Ok(Marked::Updated)
    }

    async fn erased_at(&self, marker: &str) -> Result<Option<String>, LedgerError> {
        Ok(self
            .erasures
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(marker)
            .cloned())
    }

    async fn first_of_identical(
        &self,
        item: &str,
        submission: &FirstSubmission,
    ) -> Result<Option<String>, LedgerError> {
        let mut items = self
            .firsts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let held = items.get(item).map(Vec::as_slice).unwrap_or_default();
        match submission.judge(held) {
            Judgement::Repeats(first) => Ok(Some(first)),
            Judgement::StandsFirst(None) => Ok(None),
            Judgement::StandsFirst(Some(kept)) => {
                items.insert(item.to_owned(), kept);
                Ok(None)
            }
        }
    }

    async fn claim(
        &self,
        key: &IdempotencyKey,
        seen: Option<&Timestamp>,
        until: &Timestamp,
        now: &Timestamp,
    ) -> Result<Claim, LedgerError> {
        match self.lock().get_mut(key.as_str()) {
            Some(receipt)
                if receipt.status == ReceiptStatus::Received
                    && receipt.next_attempt_at.as_deref() == seen.map(Timestamp::as_str)
                    && receipt
                        .claimed_until
                        .as_deref()
                        .is_none_or(|held| held < now.as_str()) =>
            {
                receipt.claimed_until = Some(until.as_str().to_owned());
                receipt.unrecorded_claims += 1;
                Ok(Claim::Taken(Box::new(Ok(receipt.clone()))))
            }
            _ => Ok(Claim::Lost),
        }
    }

    async fn claim_alone(
        &self,
        key: &IdempotencyKey,
        held: &Timestamp,
    ) -> Result<Claim, LedgerError> {
        match self.lock().get_mut(key.as_str()) {
            Some(receipt)
                if receipt.status == ReceiptStatus::Received
                    && receipt.claimed_until.as_deref() == Some(held.as_str()) =>
            {
                receipt.solo_claims += 1;
                Ok(Claim::Taken(Box::new(Ok(receipt.clone()))))
            }
            _ => Ok(Claim::Lost),
        }
    }

    async fn mark_completed(
        &self,
        key: &IdempotencyKey,
        attempt: &AttemptRecord,
        completion: &Completion,
    ) -> Result<Marked, LedgerError> {
        let key = key.as_str();
        Ok(self.settle(key, attempt, |receipt| {
            receipt.completed_at = Some(attempt.at.as_str().to_owned());
            receipt.expires_at = Some(completion.expires_at);
            if !completion.keeps_payload() {
                receipt.remove_personal_data();
            }
            if let Some(notice) = &completion.notice {
                receipt.pending = Some(NOTICE.to_owned());
                receipt.next_attempt_at = Some(attempt.at.as_str().to_owned());
                receipt.notice = Some(shared::notice::PENDING.to_owned());
                receipt.notice_fields = notice.fields.clone();
            } else {
                receipt.pending = None;
                receipt.next_attempt_at = None;
            }
            receipt.last_error = None;
            receipt.last_http_status = None;
            receipt.failed_at = None;
            receipt.failure_reason = None;
            receipt.failure_http_status = None;
            receipt.delivered_to = Some(completion.destination.clone());
            let (status, record, refusal, duplicate_of) = match &completion.ending {
                Ending::Delivered(record) => (ReceiptStatus::Completed, Some(record), None, None),
                Ending::Refused(code) => (ReceiptStatus::Refused, None, Some(code.clone()), None),
                Ending::Duplicate(of) => (ReceiptStatus::Duplicate, None, None, Some(of.clone())),
                Ending::Erased => (ReceiptStatus::Erased, None, None, None),
            };
            receipt.duplicate_of = duplicate_of;
            receipt.status = status;
            receipt.record_id = record.and_then(|r| r.id()).map(str::to_owned);
            receipt.record_url = record.and_then(|r| r.url()).map(str::to_owned);
            receipt.refusal = refusal;
        }))
    }

    async fn mark_failed(
        &self,
        key: &IdempotencyKey,
        failure: &AttemptError,
        attempt: &AttemptRecord,
    ) -> Result<Marked, LedgerError> {
        let key = key.as_str();
        Ok(self.settle(key, attempt, |receipt| {
            receipt.status = ReceiptStatus::Failed;
            receipt.failed_at = Some(attempt.at.as_str().to_owned());
            receipt.failure_reason = Some(failure.code.clone());
            receipt.failure_http_status = failure.status;
            receipt.pending = Some(FAILED.to_owned());
            receipt.expires_at = None;
        }))
    }

    async fn save_lanes(
        &self,
        key: &IdempotencyKey,
        held: &Timestamp,
        lanes: &shared::lanes::Lanes,
    ) -> Result<Marked, LedgerError> {
        match self.lock().get_mut(key.as_str()) {
            Some(receipt)
                if receipt.status == ReceiptStatus::Received
                    && receipt.claimed_until.as_deref() == Some(held.as_str()) =>
            {
                receipt.destinations = lanes.clone();
                Ok(Marked::Updated)
            }
            _ => Ok(Marked::NotPending),
        }
    }

    async fn defer(
        &self,
        key: &IdempotencyKey,
        next_attempt_at: &Timestamp,
        error: &AttemptError,
        attempt: &AttemptRecord,
    ) -> Result<Marked, LedgerError> {
        let key = key.as_str();
        let next_attempt_at = next_attempt_at.as_str();
        Ok(self.settle(key, attempt, |receipt| {
            receipt.next_attempt_at = Some(next_attempt_at.to_owned());
            receipt.pending = Some(PENDING.to_owned());
            receipt.expires_at = None;
            receipt.last_error = Some(error.code.clone());
            receipt.last_http_status = error.status;
        }))
    }
}

impl PendingQueue for MemoryLedger {
    async fn census(&self, _deadline: std::time::Instant) -> Result<Census, LedgerError> {
        let receipts = self.lock();
        let in_queue = |queue: &str| {
            receipts
                .values()
                .filter(|r| r.pending.as_deref() == Some(queue))
                .collect::<Vec<_>>()
        };
        let (pending, failed, notices) = (in_queue(PENDING), in_queue(FAILED), in_queue(NOTICE));
        Ok(Census {
            pending: pending.len(),
            oldest_received_at: pending.iter().map(|r| r.received_at.clone()).min(),
            failed: failed.len(),
            notices: notices.len(),
            complete: true,
            read: pending.len() + failed.len() + notices.len(),
            bytes_read: 0,
        })
    }

    async fn due(&self, query: &DueQuery, from: Option<&Cursor>) -> Result<DuePage, LedgerError> {
        let receipts = self.lock();
        let mut pending: Vec<&Receipt> = receipts
            .values()
            .filter(|r| r.pending.as_deref() == Some(query.queue))
            .filter(|r| {
                r.next_attempt_at
                    .as_deref()
                    .is_some_and(|at| at <= query.now.as_str())
            })
            .filter(|r| {
                from.is_none_or(|c| {
                    (r.next_attempt_at.as_deref(), r.pk.as_str())
                        > (Some(c.next_attempt_at.as_str()), c.key.as_str())
                })
            })
            .collect();
        pending.sort_by(|a, b| (&a.next_attempt_at, &a.pk).cmp(&(&b.next_attempt_at, &b.pk)));
        let page: Vec<&Receipt> = pending.into_iter().take(query.page_size as usize).collect();
        let next = (page.len() == query.page_size as usize)
            .then(|| page.last())
            .flatten()
            .map(|last| Cursor {
                key: last.pk.clone(),
                next_attempt_at: last.next_attempt_at.clone().unwrap_or_default(),
            });
        Ok(DuePage {
            read: page.len(),
            bytes_read: 0,
            due: page
                .into_iter()
                .filter(|r| r.received_at.as_str() <= query.received_before.as_str())
                .map(|r| DueReceipt {
                    key: r.key(),
                    next_attempt_at: Timestamp::from_stored(
                        r.next_attempt_at.clone().unwrap_or_default(),
                    ),
                })
                .collect(),
            next,
        })
    }
}
