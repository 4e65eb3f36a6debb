//! One stream batch: each receipt's lead is upserted, then its receipt is
//! completed. Records of different receipts run concurrently (bounded);
//! records of one receipt run in stream order. Only records that should be
//! delivered again are reported in `batchItemFailures`.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

use aws_lambda_events::event::dynamodb::{Event, EventRecord};
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use futures_util::stream::{self, StreamExt};
use serde_dynamo::AttributeValue;
use shared::delivery::RetryPolicy;
use shared::receipt::{attr, format_timestamp};
use shared::{IdempotencyKey, Lead, Receipt, ReceiptStatus};

use crate::destination::{Destination, DestinationError, Upserted};
use crate::ledger::{Failure, Marked, ReceiptLedger};

/// What became of one stream record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordOutcome {
    Upserted,
    Skipped,
    /// A newer submission already holds the lead; this one was dropped.
    Stale,
    /// Not done yet: the stream must deliver it again.
    FailedRetryable,
    /// Cannot be done: the receipt is marked FAILED for an operator.
    FailedPermanent,
}

impl RecordOutcome {
    pub fn code(self) -> &'static str {
        match self {
            RecordOutcome::Upserted => "upserted",
            RecordOutcome::Skipped => "skipped",
            RecordOutcome::Stale => "stale",
            RecordOutcome::FailedRetryable => "failed-retryable",
            RecordOutcome::FailedPermanent => "failed-permanent",
        }
    }
}

/// Why a record needs no work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    NotAnInsert,
    NoNewImage,
    NotReceived,
}

impl SkipReason {
    fn code(self) -> &'static str {
        match self {
            SkipReason::NotAnInsert => "not-an-insert",
            SkipReason::NoNewImage => "no-new-image",
            SkipReason::NotReceived => "not-received",
        }
    }
}

/// Only the INSERT of a RECEIVED receipt is work; the worker's own updates
/// and TTL deletions arrive on the stream too and are skipped.
pub fn skip_reason(
    event_name: &str,
    has_new_image: bool,
    status: Option<ReceiptStatus>,
) -> Option<SkipReason> {
    if event_name != "INSERT" {
        Some(SkipReason::NotAnInsert)
    } else if !has_new_image {
        Some(SkipReason::NoNewImage)
    } else if status != Some(ReceiptStatus::Received) {
        Some(SkipReason::NotReceived)
    } else {
        None
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct RecordReport {
    index: usize,
    sequence_number: Option<String>,
    outcome: RecordOutcome,
}

pub struct Worker<D, L> {
    destination: D,
    ledger: L,
    concurrency: usize,
    retry: RetryPolicy,
}

impl<D: Destination, L: ReceiptLedger> Worker<D, L> {
    pub fn new(destination: D, ledger: L, concurrency: usize) -> Self {
        Worker {
            destination,
            ledger,
            concurrency: concurrency.max(1),
            retry: RetryPolicy::default(),
        }
    }

    pub fn with_retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    pub fn destination(&self) -> &D {
        &self.destination
    }

    pub fn ledger(&self) -> &L {
        &self.ledger
    }

    /// Handles one batch; `deadline` is when the invocation times out.
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
            failed_retryable = count(RecordOutcome::FailedRetryable),
            failed_permanent = count(RecordOutcome::FailedPermanent),
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
            let sequence_number = record.change.sequence_number.clone();
            let outcome = self.process_record(record, deadline).await;
            reports.push(RecordReport {
                index,
                sequence_number,
                outcome,
            });
        }
        reports
    }

    async fn process_record(&self, record: EventRecord, deadline: Instant) -> RecordOutcome {
        let started = Instant::now();
        let destination = self.destination.name();
        let image = &record.change.new_image;
        let status = match image.get(attr::STATUS) {
            Some(AttributeValue::S(status)) => {
                serde_json::from_value(serde_json::Value::String(status.clone())).ok()
            }
            _ => None,
        };
        if let Some(reason) = skip_reason(&record.event_name, !image.is_empty(), status) {
            tracing::info!(
                destination,
                outcome = "skipped",
                reason = reason.code(),
                attempts = 0,
                "stream record handled"
            );
            return RecordOutcome::Skipped;
        }

        let receipt: Receipt = match serde_dynamo::from_item(record.change.new_image.clone()) {
            Ok(receipt) => receipt,
            Err(_) => {
                let key = match image.get(attr::PK) {
                    Some(AttributeValue::S(key)) => key.clone(),
                    _ => {
                        tracing::error!(
                            destination,
                            outcome = "skipped",
                            reason = "receipt-without-key",
                            attempts = 0,
                            "stream record handled"
                        );
                        return RecordOutcome::Skipped;
                    }
                };
                let failure = Failure {
                    reason: "receipt unreadable".to_owned(),
                    status: None,
                };
                return self
                    .fail_permanently(&key, None, &failure, 0, started)
                    .await;
            }
        };

        let submission_id = receipt.submission_id.as_str();
        let lead = match Lead::from_receipt(&receipt) {
            Ok(lead) => lead,
            Err(error) => {
                let failure = Failure {
                    reason: error.to_string(),
                    status: None,
                };
                return self
                    .fail_permanently(&receipt.pk, Some(submission_id), &failure, 0, started)
                    .await;
            }
        };

        let key = IdempotencyKey::from_stored(receipt.pk.clone());
        let (result, attempts) = self.upsert_with_retries(&lead, &key, deadline).await;
        let outcome = match result {
            Ok(Upserted::Written) => RecordOutcome::Upserted,
            Ok(Upserted::Stale) => RecordOutcome::Stale,
            Err(DestinationError::Permanent { status, reason }) => {
                let failure = Failure { reason, status };
                return self
                    .fail_permanently(
                        &receipt.pk,
                        Some(submission_id),
                        &failure,
                        attempts,
                        started,
                    )
                    .await;
            }
            Err(error @ DestinationError::Retryable { .. }) => {
                tracing::warn!(submission_id, destination, outcome = "failed-retryable", attempts, duration_ms = started.elapsed().as_millis() as u64, error = %error, "stream record handled");
                return RecordOutcome::FailedRetryable;
            }
        };

        match self
            .ledger
            .mark_completed(&receipt.pk, &format_timestamp(SystemTime::now()))
            .await
        {
            Ok(marked) => {
                tracing::info!(
                    submission_id,
                    destination,
                    outcome = outcome.code(),
                    attempts,
                    duration_ms = started.elapsed().as_millis() as u64,
                    receipt_gone = marked == Marked::ReceiptGone,
                    "stream record handled"
                );
                outcome
            }
            Err(error) => {
                // The lead is written; the next delivery upserts the same
                // lead again and completes the receipt.
                tracing::warn!(submission_id, destination, outcome = "failed-retryable", attempts, duration_ms = started.elapsed().as_millis() as u64, error = %error, "lead written, receipt not completed");
                RecordOutcome::FailedRetryable
            }
        }
    }

    /// Attempts the upsert until it succeeds, fails permanently, or the next
    /// wait would not leave the safety margin before the deadline.
    async fn upsert_with_retries(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
        deadline: Instant,
    ) -> (Result<Upserted, DestinationError>, u32) {
        let mut attempt = 0;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let Some(budget) = remaining
                .checked_sub(self.retry.safety_margin)
                .filter(|b| !b.is_zero())
            else {
                return (
                    Err(DestinationError::retryable(
                        "no time left in this invocation",
                    )),
                    attempt,
                );
            };
            attempt += 1;
            let result =
                match tokio::time::timeout(budget, self.destination.upsert(lead, key)).await {
                    Ok(result) => result,
                    Err(_) => Err(DestinationError::retryable(
                        "attempt ran out of invocation time",
                    )),
                };
            let retry_after = match &result {
                Err(DestinationError::Retryable { retry_after, .. }) => *retry_after,
                _ => return (result, attempt),
            };
            let remaining = deadline.saturating_duration_since(Instant::now());
            match self
                .retry
                .wait_before_retry(attempt, retry_after, remaining, fastrand::f64())
            {
                Some(wait) => tokio::time::sleep(wait).await,
                None => return (result, attempt),
            }
        }
    }

    /// Marks the receipt FAILED so the shard moves on and an operator can see
    /// it. If even that cannot be written, the stream must try again.
    async fn fail_permanently(
        &self,
        key: &str,
        submission_id: Option<&str>,
        failure: &Failure,
        attempts: u32,
        started: Instant,
    ) -> RecordOutcome {
        let destination = self.destination.name();
        let duration_ms = started.elapsed().as_millis() as u64;
        match self
            .ledger
            .mark_failed(key, failure, &format_timestamp(SystemTime::now()))
            .await
        {
            Ok(_) => {
                tracing::error!(submission_id, destination, outcome = "failed-permanent", attempts, duration_ms, reason = %failure.reason, http_status = failure.status, "stream record handled");
                RecordOutcome::FailedPermanent
            }
            Err(error) => {
                tracing::warn!(submission_id, destination, outcome = "failed-retryable", attempts, duration_ms, reason = %failure.reason, error = %error, "receipt could not be marked FAILED");
                RecordOutcome::FailedRetryable
            }
        }
    }
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

    #[test]
    fn skip_rules() {
        let received = Some(ReceiptStatus::Received);
        let rows = [
            ("INSERT", true, received, None),
            ("MODIFY", true, received, Some(SkipReason::NotAnInsert)),
            ("REMOVE", false, None, Some(SkipReason::NotAnInsert)),
            ("INSERT", false, None, Some(SkipReason::NoNewImage)),
            (
                "INSERT",
                true,
                Some(ReceiptStatus::Completed),
                Some(SkipReason::NotReceived),
            ),
            (
                "INSERT",
                true,
                Some(ReceiptStatus::Failed),
                Some(SkipReason::NotReceived),
            ),
            ("INSERT", true, None, Some(SkipReason::NotReceived)),
        ];
        for (event_name, has_image, status, expected) in rows {
            assert_eq!(
                skip_reason(event_name, has_image, status),
                expected,
                "{event_name} {has_image} {status:?}"
            );
        }
    }
}
