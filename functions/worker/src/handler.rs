//! Acting on the decisions of `decide`: one stream batch (grouping,
//! concurrency, the batch response), and the delivery of one receipt
//! (destination call, ledger update, log line), which the reconciliation
//! pass (`reconcile`) shares.
//!
//! A record is reported in `batchItemFailures` only when its outcome could
//! not be written to the receipt. A destination that is down, or asks to
//! wait longer than the invocation has, defers the receipt to the
//! reconciler instead: one failing CRM never holds a shard for long.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use aws_lambda_events::event::dynamodb::{Event, EventRecord};
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use futures_util::stream::{self, StreamExt};
use serde_dynamo::AttributeValue;
use shared::delivery::RetryPolicy;
use shared::metrics::{catalog, Values, DESTINATION, FUNCTION, OUTCOME};
use shared::receipt::{attr, format_timestamp};
use shared::IdempotencyKey;

use crate::decide::{
    decode_stream_record, settle, AttemptError, Decoded, Delivery, DeliveryRules, Settlement,
    GAVE_UP,
};
use crate::destination::{Answer, Destination, DestinationError, Upserted, Write};
use crate::ledger::{AttemptRecord, Marked, ReceiptLedger};

/// What became of one record or receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordOutcome {
    Upserted,
    Skipped,
    /// A newer submission already holds the lead; this one was dropped.
    Stale,
    /// Not delivered yet: the receipt says when the reconciler tries again.
    Deferred,
    /// Its outcome could not be recorded: the stream must deliver it again.
    FailedRetryable,
    /// Cannot be done: the receipt is marked FAILED for an operator.
    FailedPermanent,
    /// Retried until `DELIVERY_MAX_AGE_SECONDS`: FAILED with `gave-up`.
    GaveUp,
}

impl RecordOutcome {
    /// Every outcome, for the metrics contract and the dashboard.
    pub const ALL: [RecordOutcome; 7] = [
        RecordOutcome::Upserted,
        RecordOutcome::Skipped,
        RecordOutcome::Stale,
        RecordOutcome::Deferred,
        RecordOutcome::FailedRetryable,
        RecordOutcome::FailedPermanent,
        RecordOutcome::GaveUp,
    ];

    pub fn code(self) -> &'static str {
        match self {
            RecordOutcome::Upserted => "upserted",
            RecordOutcome::Skipped => "skipped",
            RecordOutcome::Stale => "stale",
            RecordOutcome::Deferred => "deferred",
            RecordOutcome::FailedRetryable => "failed-retryable",
            RecordOutcome::FailedPermanent => "failed-permanent",
            RecordOutcome::GaveUp => "gave-up",
        }
    }
}

/// Which path delivered a receipt, for the log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Stream,
    Reconcile,
}

impl Via {
    fn code(self) -> &'static str {
        match self {
            Via::Stream => "stream",
            Via::Reconcile => "reconcile",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct RecordReport {
    index: usize,
    sequence_number: Option<String>,
    outcome: RecordOutcome,
}

/// The wall clock; tests move it forward instead of waiting.
pub type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

pub struct Worker<D, L> {
    pub(crate) destination: D,
    pub(crate) ledger: L,
    pub(crate) concurrency: usize,
    pub(crate) retry: RetryPolicy,
    pub(crate) rules: DeliveryRules,
    pub(crate) reconcile_after: Duration,
    pub(crate) clock: Clock,
    pub(crate) metrics_namespace: String,
}

impl<D: Destination, L: ReceiptLedger> Worker<D, L> {
    pub fn new(destination: D, ledger: L, concurrency: usize) -> Self {
        Worker {
            destination,
            ledger,
            concurrency: concurrency.max(1),
            retry: RetryPolicy::default(),
            rules: DeliveryRules::default(),
            reconcile_after: crate::reconcile::DEFAULT_RECONCILE_AFTER,
            clock: Arc::new(SystemTime::now),
            metrics_namespace: shared::metrics::DEFAULT_NAMESPACE.to_owned(),
        }
    }

    pub fn with_retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    pub fn with_delivery_rules(mut self, rules: DeliveryRules) -> Self {
        self.rules = rules;
        self
    }

    pub fn with_reconcile_after(mut self, after: Duration) -> Self {
        self.reconcile_after = after;
        self
    }

    pub fn with_metrics_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.metrics_namespace = namespace.into();
        self
    }

    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    pub fn destination(&self) -> &D {
        &self.destination
    }

    pub fn ledger(&self) -> &L {
        &self.ledger
    }

    /// Handles one stream batch; `deadline` is when the invocation times out.
    /// Records of one receipt are handled in stream order, one wave after
    /// the other; each wave goes to the destination together.
    pub async fn handle(&self, event: Event, deadline: Instant) -> DynamoDbEventResponse {
        let started = Instant::now();
        let time_given_ms = deadline.saturating_duration_since(started).as_millis() as u64;
        let mut reports: Vec<RecordReport> = Vec::new();
        for wave in waves(group_by_receipt(event.records)) {
            let (slots, decoded): (Vec<_>, Vec<_>) = wave
                .into_iter()
                .map(|(index, record)| {
                    let decoded = decode_stream_record(&record);
                    ((index, record.change.sequence_number), decoded)
                })
                .unzip();
            let outcomes = self.act_all(decoded, Via::Stream, deadline).await;
            reports.extend(slots.into_iter().zip(outcomes).map(
                |((index, sequence_number), outcome)| RecordReport {
                    index,
                    sequence_number,
                    outcome,
                },
            ));
        }
        reports.sort_by_key(|report| report.index);

        let count = |outcome| reports.iter().filter(|r| r.outcome == outcome).count();
        tracing::info!(
            records = reports.len(),
            upserted = count(RecordOutcome::Upserted),
            skipped = count(RecordOutcome::Skipped),
            stale = count(RecordOutcome::Stale),
            deferred = count(RecordOutcome::Deferred),
            failed_retryable = count(RecordOutcome::FailedRetryable),
            failed_permanent = count(RecordOutcome::FailedPermanent),
            gave_up = count(RecordOutcome::GaveUp),
            duration_ms = started.elapsed().as_millis() as u64,
            time_given_ms,
            "stream batch handled"
        );

        let mut response = DynamoDbEventResponse::default();
        response.batch_item_failures = reports
            .into_iter()
            .filter(|report| report.outcome == RecordOutcome::FailedRetryable)
            .map(|report| {
                // A failure without a sequence number is reported as null,
                // which Lambda treats as a failure of the whole batch: safe.
                let mut failure = DynamoDbBatchItemFailure::default();
                failure.item_identifier = report.sequence_number;
                failure
            })
            .collect();
        response
    }

    /// Acts on what records or stored receipts were decoded into, no two of
    /// the same receipt, and counts each outcome (`Records`). Those to
    /// deliver go to the destination together; outcomes come back in order.
    pub(crate) async fn act_all(
        &self,
        decoded: Vec<Decoded>,
        via: Via,
        deadline: Instant,
    ) -> Vec<RecordOutcome> {
        let mut outcomes = vec![RecordOutcome::Skipped; decoded.len()];
        let mut deliveries = Vec::new();
        let mut delivery_slots = Vec::new();
        let mut undeliverable = Vec::new();
        for (slot, decoded) in decoded.into_iter().enumerate() {
            match decoded {
                Decoded::Deliver(delivery) => {
                    delivery_slots.push(slot);
                    deliveries.push(*delivery);
                }
                other => undeliverable.push((slot, other)),
            }
        }
        let settling: Vec<_> =
            undeliverable
                .into_iter()
                .map(|(slot, decoded)| async move {
                    (slot, self.act_on_undeliverable(decoded, via).await)
                })
                .collect();
        let settled: Vec<(usize, RecordOutcome)> = stream::iter(settling)
            .buffer_unordered(self.concurrency)
            .collect()
            .await;
        for (slot, outcome) in settled {
            outcomes[slot] = outcome;
        }
        let delivered = self.deliver_all(deliveries, via, deadline).await;
        for (slot, outcome) in delivery_slots.into_iter().zip(delivered) {
            outcomes[slot] = outcome;
        }
        for outcome in &outcomes {
            shared::metrics::emit(
                &self.metrics_namespace,
                &[(FUNCTION, "worker"), (OUTCOME, outcome.code())],
                &[(catalog::RECORDS, 1.0.into())],
                &[],
            );
        }
        outcomes
    }

    /// A record or receipt with nothing to deliver: skipped, or unreadable.
    async fn act_on_undeliverable(&self, decoded: Decoded, via: Via) -> RecordOutcome {
        let destination = self.destination.name();
        match decoded {
            Decoded::Deliver(_) => unreachable!("deliveries go to deliver_all"),
            Decoded::Skip(reason) => {
                tracing::info!(
                    destination,
                    via = via.code(),
                    outcome = "skipped",
                    reason = reason.code(),
                    attempts = 0,
                    "receipt delivery handled"
                );
                RecordOutcome::Skipped
            }
            Decoded::Unreadable { key: None, reason } => {
                tracing::error!(
                    destination,
                    via = via.code(),
                    outcome = "skipped",
                    reason,
                    detail = "receipt-without-key",
                    attempts = 0,
                    "receipt delivery handled"
                );
                RecordOutcome::Skipped
            }
            Decoded::Unreadable {
                key: Some(key),
                reason,
            } => {
                let failure = AttemptError {
                    code: reason.to_owned(),
                    status: None,
                };
                let settlement = Settlement::Fail(failure);
                self.record(&key, None, settlement, 0, via, Instant::now())
                    .await
            }
        }
    }

    /// Delivers receipts together: attempts within the invocation, then
    /// each answer settled and written to its receipt. Outcomes in order.
    async fn deliver_all(
        &self,
        deliveries: Vec<Delivery>,
        via: Via,
        deadline: Instant,
    ) -> Vec<RecordOutcome> {
        if deliveries.is_empty() {
            return Vec::new();
        }
        let started = Instant::now();
        let keys: Vec<IdempotencyKey> = deliveries.iter().map(|d| d.receipt.key()).collect();
        let attempts = self.upsert_with_retries(&deliveries, &keys, deadline).await;
        let finishing: Vec<_> = deliveries
            .into_iter()
            .zip(keys)
            .zip(attempts)
            .map(|((delivery, key), attempts)| self.finish(delivery, key, attempts, via, started))
            .collect();
        stream::iter(finishing)
            .buffered(self.concurrency)
            .collect()
            .await
    }

    /// Measures one receipt's attempts, settles the last answer and writes
    /// the outcome to the receipt.
    async fn finish(
        &self,
        delivery: Delivery,
        key: IdempotencyKey,
        attempts: Attempts,
        via: Via,
        started: Instant,
    ) -> RecordOutcome {
        let Attempts {
            result,
            made,
            latencies_ms,
            rate_limited,
        } = attempts;
        if made > 0 {
            let auth_errors = matches!(result, Err(DestinationError::Unauthorized { .. }));
            shared::metrics::emit(
                &self.metrics_namespace,
                &[(FUNCTION, "worker"), (DESTINATION, self.destination.name())],
                &[
                    (catalog::DESTINATION_LATENCY, Values::Many(latencies_ms)),
                    (catalog::DESTINATION_ATTEMPTS, f64::from(made).into()),
                    (
                        catalog::DESTINATION_AUTH_ERRORS,
                        f64::from(u8::from(auth_errors)).into(),
                    ),
                    (
                        catalog::DESTINATION_RATE_LIMITED,
                        f64::from(rate_limited).into(),
                    ),
                ],
                &[],
            );
        }
        if made == 0 {
            // No time was left for even one attempt, so nothing happened to
            // record: the receipt stays due (the stream's case) or claimed
            // until shortly after this invocation (a pass's), and the next
            // pass takes it. Backing off here would punish it for our clock.
            tracing::warn!(
                submission_id = %delivery.receipt.submission_id,
                destination = self.destination.name(),
                via = via.code(),
                outcome = "deferred",
                reason = "no time left in this invocation",
                attempts = 0,
                "receipt delivery handled"
            );
            return RecordOutcome::Deferred;
        }
        let settlement = settle(
            &result,
            delivery.started,
            (self.clock)(),
            delivery.receipt.attempts.saturating_add(made),
            &self.rules,
            fastrand::f64(),
        );
        let submission_id = Some(delivery.receipt.submission_id.as_str());
        self.record(key.as_str(), submission_id, settlement, made, via, started)
            .await
    }

    /// Writes a settlement to the receipt and logs the outcome (one line).
    async fn record(
        &self,
        key: &str,
        submission_id: Option<&str>,
        settlement: Settlement,
        made: u32,
        via: Via,
        started: Instant,
    ) -> RecordOutcome {
        let destination = self.destination.name();
        let via = via.code();
        let attempt = AttemptRecord {
            attempts: made,
            at: format_timestamp((self.clock)()),
        };
        let duration_ms = || started.elapsed().as_millis() as u64;
        let written = match &settlement {
            Settlement::Complete { .. } => self.ledger.mark_completed(key, &attempt).await,
            Settlement::Fail(failure) => self.ledger.mark_failed(key, failure, &attempt).await,
            Settlement::Later { at, error, .. } => {
                self.ledger
                    .defer(key, &format_timestamp(*at), error, &attempt)
                    .await
            }
        };
        let marked = match written {
            Ok(marked) => marked,
            Err(error) => {
                // Nothing recorded: the stream delivers the record again
                // (the reconciler, for its own pass). A lead already written
                // is written again, to the same key.
                tracing::warn!(submission_id, destination, via, outcome = "failed-retryable", attempts = made, duration_ms = duration_ms(), error = %error, "receipt delivery handled; its outcome could not be recorded");
                return RecordOutcome::FailedRetryable;
            }
        };
        let settled_elsewhere = marked == Marked::NotPending;
        match settlement {
            Settlement::Complete { stale } => {
                let outcome = if stale {
                    RecordOutcome::Stale
                } else {
                    RecordOutcome::Upserted
                };
                tracing::info!(
                    submission_id,
                    destination,
                    via,
                    outcome = outcome.code(),
                    attempts = made,
                    duration_ms = duration_ms(),
                    settled_elsewhere,
                    "receipt delivery handled"
                );
                outcome
            }
            Settlement::Fail(failure) => {
                let outcome = if failure.code == GAVE_UP {
                    RecordOutcome::GaveUp
                } else {
                    RecordOutcome::FailedPermanent
                };
                tracing::error!(submission_id, destination, via, outcome = outcome.code(), attempts = made, duration_ms = duration_ms(), reason = %failure.code, http_status = failure.status, settled_elsewhere, "receipt delivery handled");
                outcome
            }
            Settlement::Later { at, error, auth } => {
                let next_attempt_at = format_timestamp(at);
                if auth {
                    // Counted by an alarm: every lead waits until the
                    // destination's credentials are fixed.
                    tracing::error!(
                        submission_id,
                        destination,
                        via,
                        outcome = "deferred",
                        auth_error = true,
                        attempts = made,
                        duration_ms = duration_ms(),
                        http_status = error.status,
                        next_attempt_at,
                        settled_elsewhere,
                        "destination refused our credentials; the receipt waits"
                    );
                } else {
                    tracing::warn!(submission_id, destination, via, outcome = "deferred", attempts = made, duration_ms = duration_ms(), reason = %error.code, http_status = error.status, next_attempt_at, settled_elsewhere, "receipt delivery handled");
                }
                RecordOutcome::Deferred
            }
        }
    }

    /// Attempts every delivery until each succeeds, fails for good, runs out
    /// of attempts for this invocation, or its next wait would not leave the
    /// safety margin before the deadline. Each round sends the deliveries
    /// still open together, after the longest wait any of them needs.
    async fn upsert_with_retries(
        &self,
        deliveries: &[Delivery],
        keys: &[IdempotencyKey],
        deadline: Instant,
    ) -> Vec<Attempts> {
        let mut attempts: Vec<Attempts> = deliveries.iter().map(|_| Attempts::none()).collect();
        let mut open: Vec<usize> = (0..deliveries.len()).collect();
        while !open.is_empty() {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let Some(budget) = remaining
                .checked_sub(self.retry.safety_margin)
                .filter(|b| !b.is_zero())
            else {
                break;
            };
            let writes: Vec<Write<'_>> = open
                .iter()
                .map(|&i| Write {
                    lead: &deliveries[i].lead,
                    key: &keys[i],
                })
                .collect();
            let called = Instant::now();
            let answers = match tokio::time::timeout(
                budget,
                self.destination.upsert_batch(&writes, self.concurrency),
            )
            .await
            {
                Ok(answers) if answers.len() == writes.len() => answers,
                Ok(_) => unanswered(
                    writes.len(),
                    "the destination answered for other leads",
                    called,
                ),
                Err(_) => unanswered(writes.len(), "attempt ran out of invocation time", called),
            };
            let mut waits = Vec::new();
            let mut again = Vec::new();
            for (&i, answer) in open.iter().zip(answers) {
                let attempt = &mut attempts[i];
                attempt.made += 1;
                attempt
                    .latencies_ms
                    .push(answer.latency.as_secs_f64() * 1000.0);
                attempt.result = answer.result;
                let Err(DestinationError::Retryable {
                    retry_after,
                    status,
                    ..
                }) = &attempt.result
                else {
                    continue;
                };
                if *status == Some(429) {
                    attempt.rate_limited += 1;
                }
                let remaining = deadline.saturating_duration_since(Instant::now());
                if let Some(wait) = self.retry.wait_before_retry(
                    attempt.made,
                    *retry_after,
                    remaining,
                    fastrand::f64(),
                ) {
                    waits.push(wait);
                    again.push(i);
                }
            }
            // Each waited at least its own wait, and the longest still
            // leaves its margin: it was computed against the same deadline.
            let Some(wait) = waits.into_iter().max() else {
                break;
            };
            tokio::time::sleep(wait).await;
            open = again;
        }
        attempts
    }
}

/// The same retryable answer for every write of a call that gave none.
fn unanswered(count: usize, reason: &str, called: Instant) -> Vec<Answer> {
    let latency = called.elapsed();
    (0..count)
        .map(|_| Answer {
            result: Err(DestinationError::retryable(reason)),
            latency,
        })
        .collect()
}

/// What one delivery's attempts came to.
struct Attempts {
    /// The last answer.
    result: Result<Upserted, DestinationError>,
    made: u32,
    latencies_ms: Vec<f64>,
    /// Answers that were 429.
    rate_limited: u32,
}

impl Attempts {
    fn none() -> Self {
        Attempts {
            result: Err(DestinationError::retryable(
                "no time left in this invocation",
            )),
            made: 0,
            latencies_ms: Vec::new(),
            rate_limited: 0,
        }
    }
}

/// Wave `k` holds the `k`-th record of every group: a receipt's records
/// keep their order, and each wave has at most one record per receipt.
fn waves<T>(groups: Vec<Vec<T>>) -> Vec<Vec<T>> {
    let mut waves: Vec<Vec<T>> = Vec::new();
    for group in groups {
        for (k, item) in group.into_iter().enumerate() {
            if waves.len() <= k {
                waves.push(Vec::new());
            }
            waves[k].push(item);
        }
    }
    waves
}

/// Groups records by receipt key, keeping stream order inside each group
/// and each record's position in the batch.
fn group_by_receipt(records: Vec<EventRecord>) -> Vec<Vec<(usize, EventRecord)>> {
    let mut groups: Vec<Vec<(usize, EventRecord)>> = Vec::new();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    for (index, record) in records.into_iter().enumerate() {
        let key = match record
            .change
            .keys
            .get(attr::PK)
            .or_else(|| record.change.new_image.get(attr::PK))
        {
            Some(AttributeValue::S(key)) => Some(key.clone()),
            _ => None,
        };
        let existing = key.as_ref().and_then(|key| by_key.get(key).copied());
        match (existing, key) {
            (Some(group), _) => groups[group].push((index, record)),
            (None, key) => {
                // A record without a key gets a group of its own.
                if let Some(key) = key {
                    by_key.insert(key, groups.len());
                }
                groups.push(vec![(index, record)]);
            }
        }
    }
    groups
}

/// Time assumed when the runtime gives a deadline that has already passed.
/// AWS never does; some local emulators (`cargo lambda watch`) do.
pub const ASSUMED_TIME_WITHOUT_DEADLINE: Duration = Duration::from_secs(30);

/// The invocation's deadline as an `Instant`, from Lambda's deadline.
pub fn deadline_from(lambda_deadline: SystemTime) -> Instant {
    let remaining = match lambda_deadline.duration_since(SystemTime::now()) {
        Ok(remaining) if !remaining.is_zero() => remaining,
        _ => {
            tracing::warn!(
                assumed_ms = ASSUMED_TIME_WITHOUT_DEADLINE.as_millis() as u64,
                "the invocation deadline is not in the future (a local emulator?)"
            );
            ASSUMED_TIME_WITHOUT_DEADLINE
        }
    };
    Instant::now() + remaining
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waves_keep_each_receipts_order() {
        let groups = vec![vec!["a1", "a2", "a3"], vec!["b1"], vec!["c1", "c2"]];
        assert_eq!(
            waves(groups),
            vec![vec!["a1", "b1", "c1"], vec!["a2", "c2"], vec!["a3"]]
        );
        assert!(waves::<u8>(Vec::new()).is_empty());
    }

    #[test]
    fn deadlines() {
        let in_ten = deadline_from(SystemTime::now() + Duration::from_secs(10));
        let left = in_ten.saturating_duration_since(Instant::now());
        assert!(
            left > Duration::from_secs(9) && left <= Duration::from_secs(10),
            "{left:?}"
        );
        for past in [
            SystemTime::UNIX_EPOCH,
            SystemTime::now() - Duration::from_secs(1),
        ] {
            let assumed = deadline_from(past).saturating_duration_since(Instant::now());
            assert!(assumed > Duration::from_secs(29), "{assumed:?}");
        }
    }
}
