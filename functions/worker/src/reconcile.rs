//! The reconciliation pass: run on a schedule, it delivers every receipt
//! still RECEIVED whose next attempt is due and that the stream has had its
//! chance at (older than `RECONCILE_AFTER_SECONDS`), through the same
//! decide-and-act path as the stream, within the invocation's time and
//! `WORKER_CONCURRENCY`.
//!
//! It first counts what waits (`PendingReceipts`, `OldestPendingAgeSeconds`,
//! `FailedReceipts`) from the keys-only queue index, so the metrics come
//! even when the deliveries then hang. It finds the due receipts in the same
//! index, never the table: its cost follows the receipts that wait, not the
//! completed ones kept for the retention window, and never a payload. Each
//! receipt is claimed before delivery, which reads it whole, so two passes
//! (or a pass and the stream) never deliver it at once.

use std::time::Instant;

use futures_util::stream::{self, StreamExt};
use serde::Serialize;
use shared::metrics::catalog;
use shared::receipt::{format_timestamp, Timestamp};

use crate::deliver::announce::Announced;
use crate::deliver::{Claimed, Worker};
use crate::destinations::port::Destination;
use crate::ledger::{Census, Cursor, DueQuery, DueReceipt, PendingQueue, ReceiptLedger};
use crate::outcome::{RecordOutcome, Via};

/// Receipts read per query page.
pub const PAGE_SIZE: u32 = 100;

/// Form data a pass holds at once, at most (plus one claim round): a page
/// of large receipts is cut where this is reached, and the rest is the next
/// page's. A 128 MB function holds a page of 100 receipts of 256 KB each
/// (25 MB of text, more as parsed leads) only barely; a lead that kills
/// the worker should take as few page-mates with it as can be.
pub const PAGE_PAYLOAD_BYTES: usize = 4 * 1024 * 1024;

/// The share of the invocation the census may take before deliveries
/// start: counting never starves delivering.
const CENSUS_SHARE: u32 = 4;

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
    /// Refused for good by the destination (REFUSED): not failures.
    pub refused: usize,
    /// Double submits of other receipts (DUPLICATE): never delivered.
    pub duplicates: usize,
    /// Made before their person was erased (ERASED): never delivered.
    pub erased: usize,
    /// New-lead notices sent by this pass (waiting ones, and those of the
    /// leads it wrote), and those still due again after it.
    pub notices_sent: usize,
    pub notices_again: usize,
    /// Taken by another pass or delivery first, or no longer RECEIVED.
    pub skipped: usize,
    /// Outcomes that could not be recorded; due again at their claim's end.
    pub unrecorded: usize,
    /// Index entries the store read (census and due receipts), and their
    /// size in bytes as DynamoDB charges it: the pass's read cost. Claims
    /// are writes and read nothing.
    pub items_read: usize,
    pub bytes_read: usize,
    /// `false` when time ran out or the store failed before the last page.
    pub finished: bool,
    /// Receipts waiting when the pass began, the oldest one's age, and the
    /// FAILED receipts waiting for a person; `None` when they could not be
    /// counted (lower bounds when `census_complete` is false).
    pub pending: Option<usize>,
    pub oldest_pending_age_seconds: Option<u64>,
    pub failed_receipts: Option<usize>,
    /// Delivered receipts whose notice was not sent yet when it began
    /// (`None` for a worker that sends no notices).
    pub notices_waiting: Option<usize>,
    pub census_complete: bool,
}

impl<D: Destination, L: ReceiptLedger + PendingQueue> Worker<D, L> {
    /// One pass; `deadline` is when the invocation times out.
    pub async fn reconcile(&self, deadline: Instant) -> PassReport {
        let started = Instant::now();
        let now = self.now();
        let mut report = PassReport::default();

        // What waits, first: its metrics must come even if delivering hangs.
        let census_deadline = started + deadline.saturating_duration_since(started) / CENSUS_SHARE;
        match self.ledger().census(census_deadline).await {
            Ok(census) => self.take_census(&mut report, &census, now),
            Err(error) => tracing::error!(error = %error, "waiting receipts could not be counted"),
        }
        self.measure_census(&report);
        // The audit's progress too, at every pass: its alarm then sees an
        // audit that stopped, not only one that reports itself behind.
        if let Some(auditor) = self.auditor() {
            auditor.report_progress(std::time::SystemTime::now()).await;
        }

        let received_before = now.checked_sub(self.reconcile_after()).unwrap_or(now);
        let query = DueQuery {
            queue: shared::receipt::PENDING,
            now: format_timestamp(now),
            received_before: format_timestamp(received_before),
            page_size: PAGE_SIZE,
        };
        let claim_until = self.claim_until(deadline);
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
            report.bytes_read += page.bytes_read;
            let (claimed, cut) = self.claim_page(&page.due, &claim_until).await;
            report.due += claimed.len();
            for outcome in self.act_all(claimed, Via::Reconcile, deadline).await {
                match outcome {
                    RecordOutcome::Upserted | RecordOutcome::Stale => report.delivered += 1,
                    RecordOutcome::Deferred => report.deferred += 1,
                    RecordOutcome::FailedPermanent => report.failed += 1,
                    RecordOutcome::GaveUp => {
                        report.failed += 1;
                        report.gave_up += 1;
                    }
                    RecordOutcome::Refused => report.refused += 1,
                    RecordOutcome::Duplicate => report.duplicates += 1,
                    RecordOutcome::Erased => report.erased += 1,
                    RecordOutcome::FailedRetryable => report.unrecorded += 1,
                    RecordOutcome::Skipped => report.skipped += 1,
                }
            }
            match cut.or(page.next) {
                Some(next) => from = Some(next),
                None => {
                    report.finished = true;
                    break;
                }
            }
        }
        self.announce_waiting(&mut report, deadline).await;
        self.measure_pass(&report);
        tracing::info!(
            due = report.due,
            delivered = report.delivered,
            deferred = report.deferred,
            failed = report.failed,
            refused = report.refused,
            skipped = report.skipped,
            unrecorded = report.unrecorded,
            items_read = report.items_read,
            bytes_read = report.bytes_read,
            finished = report.finished,
            gave_up = report.gave_up,
            pending = report.pending,
            oldest_pending_age_seconds = report.oldest_pending_age_seconds,
            failed_receipts = report.failed_receipts,
            notices_sent = report.notices_sent,
            notices_again = report.notices_again,
            notices_waiting = report.notices_waiting,
            census_complete = report.census_complete,
            duration_ms = started.elapsed().as_millis() as u64,
            "reconciliation pass handled"
        );
        report
    }

    /// Sends the new-lead notices that wait (a refused or unsent one, due
    /// again), page by page while the invocation has time.
    async fn announce_waiting(&self, report: &mut PassReport, deadline: Instant) {
        let now = format_timestamp(self.now());
        let query = DueQuery {
            queue: shared::receipt::NOTICE,
            now: now.clone(),
            received_before: now,
            page_size: PAGE_SIZE,
        };
        let mut from: Option<Cursor> = None;
        while deadline.saturating_duration_since(Instant::now()) > self.safety_margin() * 2 {
            let page = match self.ledger().due(&query, from.as_ref()).await {
                Ok(page) => page,
                Err(error) => {
                    tracing::error!(error = %error, "waiting notices could not be read");
                    return;
                }
            };
            report.items_read += page.read;
            report.bytes_read += page.bytes_read;
            let keys = page.due.into_iter().map(|due| due.key).collect();
            for announced in self.announce_all(keys, deadline).await {
                match announced {
                    Announced::Sent => report.notices_sent += 1,
                    Announced::Again => report.notices_again += 1,
                    _ => {}
                }
            }
            match page.next {
                Some(next) => from = Some(next),
                None => return,
            }
        }
    }

    /// Claims a page's due receipts, a round of `concurrency` at a time,
    /// until their form data reaches [`PAGE_PAYLOAD_BYTES`]; where it was
    /// cut, the cursor the next page starts after.
    async fn claim_page(
        &self,
        due: &[DueReceipt],
        claim_until: &Timestamp,
    ) -> (Vec<Claimed>, Option<Cursor>) {
        let mut claimed = Vec::with_capacity(due.len());
        let mut bytes = 0;
        let mut taken = 0;
        for round in due.chunks(self.concurrency()) {
            if bytes >= PAGE_PAYLOAD_BYTES {
                break;
            }
            let claiming: Vec<_> = round
                .iter()
                .map(|due| self.claim(&due.key, Some(&due.next_attempt_at), claim_until))
                .collect();
            let round_claimed: Vec<Claimed> = stream::iter(claiming)
                .buffered(self.concurrency())
                .collect()
                .await;
            bytes += round_claimed
                .iter()
                .map(Claimed::payload_bytes)
                .sum::<usize>();
            taken += round.len();
            claimed.extend(round_claimed);
        }
        let cut = (taken < due.len()).then(|| {
            let last = &due[taken - 1];
            Cursor {
                key: last.key.as_str().to_owned(),
                next_attempt_at: last.next_attempt_at.as_str().to_owned(),
            }
        });
        (claimed, cut)
    }

    fn take_census(&self, report: &mut PassReport, census: &Census, now: std::time::SystemTime) {
        report.items_read += census.read;
        report.bytes_read += census.bytes_read;
        report.pending = Some(census.pending);
        report.failed_receipts = Some(census.failed);
        // Counted only where notices are sent, as its metric is.
        report.notices_waiting = self.sends_notices().then_some(census.notices);
        report.census_complete = census.complete;
        report.oldest_pending_age_seconds = census
            .oldest_received_at
            .as_deref()
            .and_then(shared::receipt::parse_timestamp)
            .map(|oldest| now.duration_since(oldest).map_or(0, |age| age.as_secs()));
    }

    /// The census's EMF line, before any delivery: what waits, for how
    /// long, and how many FAILED receipts wait for a person.
    fn measure_census(&self, report: &PassReport) {
        let Some(pending) = report.pending else {
            return;
        };
        // No pending receipt is an age of zero, so the alarm clears.
        let age = report.oldest_pending_age_seconds.unwrap_or(0);
        let mut figures = vec![
            (catalog::PENDING_RECEIPTS, (pending as f64).into()),
            (catalog::OLDEST_PENDING_AGE, (age as f64).into()),
            (
                catalog::FAILED_RECEIPTS,
                (report.failed_receipts.unwrap_or(0) as f64).into(),
            ),
        ];
        // Notices not yet sent: only a stack that sends them pays for the
        // series.
        if self.sends_notices() {
            figures.push((
                catalog::PENDING_NOTICES,
                (report.notices_waiting.unwrap_or(0) as f64).into(),
            ));
        }
        self.metrics()
            .emit(&[(shared::metrics::FUNCTION, "worker")], &figures, &[]);
    }

    /// One EMF line per pass: what it delivered or gave up on.
    fn measure_pass(&self, report: &PassReport) {
        self.metrics().emit(
            &[(shared::metrics::FUNCTION, "worker")],
            &[
                (catalog::REDELIVERED, (report.delivered as f64).into()),
                (catalog::GAVE_UP, (report.gave_up as f64).into()),
            ],
            &[],
        );
    }
}
