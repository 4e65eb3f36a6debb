//! The reconciliation pass: run on a schedule, it delivers every receipt
//! still RECEIVED whose next attempt is due and that the stream has had its
//! chance at (older than `RECONCILE_AFTER_SECONDS`), through the same
//! decide-and-act path as the stream, within the invocation's time and
//! `WORKER_CONCURRENCY`.
//!
//! It reads the sparse pending index, never the table: its cost follows the
//! receipts that wait, not the completed ones kept for the retention window.
//! Each receipt is claimed before delivery, so two passes never deliver it
//! at once.

use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};
use serde::Serialize;
use shared::metrics::catalog;
use shared::receipt::{format_timestamp, Timestamp};

use crate::decide::{decode_receipt, Decoded};
use crate::deliver::Worker;
use crate::destinations::Destination;
use crate::ledger::{Cursor, DueQuery, PendingQueue, ReceiptLedger, UnreadableItem};
use crate::outcome::{RecordOutcome, Via};

/// Receipts read per query page.
pub const PAGE_SIZE: u32 = 100;

/// Added to the invocation's remaining time for a claim: a receipt whose
/// pass died is due again this long after the invocation's end.
const CLAIM_MARGIN: Duration = Duration::from_secs(60);

/// What one pass did; also the invocation's response.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PassReport {
    /// Due receipts found.
    pub due: usize,
    pub delivered: usize,
    pub deferred: usize,
    pub failed: usize,
    /// Of `failed`: receipts that ran out of time (`gave-up`).
    pub gave_up: usize,
    /// Taken by another pass or delivery first, or no longer RECEIVED.
    pub skipped: usize,
    /// Outcomes that could not be recorded; due again at their claim's end.
    pub unrecorded: usize,
    /// Items the store read to find them: the pass's cost.
    pub items_read: usize,
    /// `false` when time ran out or the store failed before the last page.
    pub finished: bool,
    /// Receipts still waiting after the pass, and the oldest one's age;
    /// `None` when they could not be counted.
    pub pending: Option<usize>,
    pub oldest_pending_age_seconds: Option<u64>,
}

impl<D: Destination, L: ReceiptLedger + PendingQueue> Worker<D, L> {
    /// One pass; `deadline` is when the invocation times out.
    pub async fn reconcile(&self, deadline: Instant) -> PassReport {
        let started = Instant::now();
        let now = self.now();
        let received_before = now.checked_sub(self.reconcile_after()).unwrap_or(now);
        let query = DueQuery {
            now: format_timestamp(now),
            received_before: format_timestamp(received_before),
            page_size: PAGE_SIZE,
        };
        let left = deadline.saturating_duration_since(started);
        let claim_until = Timestamp::at(now + left + CLAIM_MARGIN);

        let mut report = PassReport::default();
        let mut from: Option<Cursor> = None;
        loop {
            // A delivery needs its attempts plus the ledger write.
            if deadline.saturating_duration_since(Instant::now()) <= self.safety_margin() * 2 {
                break;
            }
            let page = match self.ledger().due(&query, from.as_ref()).await {
                Ok(page) => page,
                Err(error) => {
                    tracing::error!(error = %error, "pending receipts could not be read");
                    break;
                }
            };
            report.items_read += page.read;
            report.due += page.receipts.len();
            let claiming: Vec<_> = page
                .receipts
                .into_iter()
                .map(|item| self.claim(item, &claim_until))
                .collect();
            let claimed: Vec<Option<Decoded>> = stream::iter(claiming)
                .buffer_unordered(self.concurrency())
                .collect()
                .await;
            // Taken by another pass or delivery first.
            report.skipped += claimed.iter().filter(|c| c.is_none()).count();
            let decoded: Vec<Decoded> = claimed.into_iter().flatten().collect();
            for outcome in self.act_all(decoded, Via::Reconcile, deadline).await {
                match outcome {
                    RecordOutcome::Upserted | RecordOutcome::Stale => report.delivered += 1,
                    RecordOutcome::Deferred => report.deferred += 1,
                    RecordOutcome::FailedPermanent => report.failed += 1,
                    RecordOutcome::GaveUp => {
                        report.failed += 1;
                        report.gave_up += 1;
                    }
                    RecordOutcome::FailedRetryable => report.unrecorded += 1,
                    RecordOutcome::Skipped => report.skipped += 1,
                }
            }
            match page.next {
                Some(next) => from = Some(next),
                None => {
                    report.finished = true;
                    break;
                }
            }
        }
        // Counting what waits reads the pending index; skip it rather than
        // run past the invocation (the metric then simply has a gap).
        let census = if deadline.saturating_duration_since(Instant::now()) > self.safety_margin() {
            self.ledger().census().await
        } else {
            Err(crate::ledger::LedgerError(
                "no time left to count".to_owned(),
            ))
        };
        match census {
            Ok(census) => {
                report.pending = Some(census.pending);
                report.oldest_pending_age_seconds = census
                    .oldest_received_at
                    .as_deref()
                    .and_then(shared::receipt::parse_timestamp)
                    .map(|oldest| now.duration_since(oldest).map_or(0, |age| age.as_secs()));
            }
            Err(error) => tracing::error!(error = %error, "pending receipts could not be counted"),
        }
        self.measure_pass(&report);
        tracing::info!(
            due = report.due,
            delivered = report.delivered,
            deferred = report.deferred,
            failed = report.failed,
            skipped = report.skipped,
            unrecorded = report.unrecorded,
            items_read = report.items_read,
            finished = report.finished,
            gave_up = report.gave_up,
            pending = report.pending,
            oldest_pending_age_seconds = report.oldest_pending_age_seconds,
            duration_ms = started.elapsed().as_millis() as u64,
            "reconciliation pass handled"
        );
        report
    }

    /// One EMF line per pass: what waits, for how long, and what the pass
    /// delivered or gave up on.
    fn measure_pass(&self, report: &PassReport) {
        let mut measured = vec![
            (catalog::REDELIVERED, (report.delivered as f64).into()),
            (catalog::GAVE_UP, (report.gave_up as f64).into()),
        ];
        if let Some(pending) = report.pending {
            measured.push((catalog::PENDING_RECEIPTS, (pending as f64).into()));
            // No pending receipt is an age of zero, so the alarm clears.
            let age = report.oldest_pending_age_seconds.unwrap_or(0);
            measured.push((catalog::OLDEST_PENDING_AGE, (age as f64).into()));
        }
        shared::metrics::emit(
            self.metrics_namespace(),
            &[(shared::metrics::FUNCTION, "worker")],
            &measured,
            &[],
        );
    }

    /// Claims one due receipt: what to act on, or `None` when another pass
    /// or delivery claimed or settled it first.
    async fn claim(
        &self,
        item: Result<shared::Receipt, UnreadableItem>,
        claim_until: &Timestamp,
    ) -> Option<Decoded> {
        match item {
            Ok(receipt) => {
                let seen = Timestamp::from_stored(receipt.next_attempt_at.clone()?);
                match self
                    .ledger()
                    .claim(&receipt.key(), &seen, claim_until)
                    .await
                {
                    Ok(true) => Some(decode_receipt(receipt)),
                    Ok(false) => None,
                    Err(error) => {
                        tracing::warn!(submission_id = %receipt.submission_id, error = %error, "receipt could not be claimed; the next pass tries again");
                        None
                    }
                }
            }
            Err(UnreadableItem { key }) => Some(Decoded::Unreadable {
                key,
                reason: "receipt unreadable",
            }),
        }
    }
}
