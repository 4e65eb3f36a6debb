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
use shared::{IdempotencyKey, Lead};

use crate::decide::{
    decode_stream_record, settle, AttemptError, Decoded, Delivery, DeliveryRules, Settlement,
    GAVE_UP,
};
use crate::destination::{Destination, DestinationError, Upserted};
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
    pub async fn handle(&self, event: Event, deadline: Instant) -> DynamoDbEventResponse {
        let started = Instant::now();
        let time_given_ms = deadline.saturating_duration_since(started).as_millis() as u64;
        let groups = group_by_receipt(event.records);
        let mut reports: Vec<RecordReport> = stream::iter(groups)
            .map(|group| self.process_group(group, deadline))
            .buffer_unordered(self.concurrency)
            .flat_map(stream::iter)
            .collect()
            .await;
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

    async fn process_group(
        &self,
        group: Vec<(usize, EventRecord)>,
        deadline: Instant,
    ) -> Vec<RecordReport> {
        let mut reports = Vec::with_capacity(group.len());
        for (index, record) in group {
            let outcome = self
                .act(decode_stream_record(&record), Via::Stream, deadline)
                .await;
            reports.push(RecordReport {
                index,
                sequence_number: record.change.sequence_number,
                outcome,
            });
        }
        reports
    }

    /// Acts on what a record or stored receipt was decoded into, and counts
    /// the outcome (`Records`).
    pub(crate) async fn act(&self, decoded: Decoded, via: Via, deadline: Instant) -> RecordOutcome {
        let outcome = self.act_on(decoded, via, deadline).await;
        shared::metrics::emit(
            &self.metrics_namespace,
            &[(FUNCTION, "worker"), (OUTCOME, outcome.code())],
            &[(catalog::RECORDS, 1.0.into())],
            &[],
        );
        outcome
    }

    async fn act_on(&self, decoded: Decoded, via: Via, deadline: Instant) -> RecordOutcome {
        let destination = self.destination.name();
        match decoded {
            Decoded::Deliver(delivery) => self.deliver(*delivery, via, deadline).await,
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

    /// Delivers one receipt: attempts within the invocation, settles the
    /// answer, and writes the outcome to the receipt.
    async fn deliver(&self, delivery: Delivery, via: Via, deadline: Instant) -> RecordOutcome {
        let started = Instant::now();
        let key = delivery.receipt.key();
        let Attempts {
            result,
            made,
            latencies_ms,
            rate_limited,
        } = self
            .upsert_with_retries(&delivery.lead, &key, deadline)
            .await;
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

    /// Attempts the upsert until it succeeds, fails for good, runs out of
    /// attempts for this invocation, or the next wait would not leave the
    /// safety margin before the deadline.
    async fn upsert_with_retries(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
        deadline: Instant,
    ) -> Attempts {
        let mut attempts = Attempts {
            result: Err(DestinationError::retryable(
                "no time left in this invocation",
            )),
            made: 0,
            latencies_ms: Vec::new(),
            rate_limited: 0,
        };
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let Some(budget) = remaining
                .checked_sub(self.retry.safety_margin)
                .filter(|b| !b.is_zero())
            else {
                return attempts;
            };
            attempts.made += 1;
            let called = Instant::now();
            attempts.result =
                match tokio::time::timeout(budget, self.destination.upsert(lead, key)).await {
                    Ok(result) => result,
                    Err(_) => Err(DestinationError::retryable(
                        "attempt ran out of invocation time",
                    )),
                };
            attempts
                .latencies_ms
                .push(called.elapsed().as_secs_f64() * 1000.0);
            let retry_after = match &attempts.result {
                Err(DestinationError::Retryable {
                    retry_after,
                    status,
                    ..
                }) => {
                    if *status == Some(429) {
                        attempts.rate_limited += 1;
                    }
                    *retry_after
                }
                _ => return attempts,
            };
            let remaining = deadline.saturating_duration_since(Instant::now());
            match self.retry.wait_before_retry(
                attempts.made,
                retry_after,
                remaining,
                fastrand::f64(),
            ) {
                Some(wait) => tokio::time::sleep(wait).await,
                None => return attempts,
            }
        }
    }
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
