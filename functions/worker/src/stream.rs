//! One stream batch: its records grouped by receipt, each receipt claimed
//! before any CRM call, sent to the delivery core in waves (a receipt's
//! records in stream order, one wave after the other), and the batch
//! response. A record whose receipt is settled, deferred or taken by the
//! pass is skipped: a record delivered twice writes the CRM once. A record
//! is reported in `batchItemFailures` only when its claim or its outcome
//! could not be written to the receipt.

use std::collections::HashMap;
use std::time::Instant;

use aws_lambda_events::event::dynamodb::{Event, EventRecord};
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use futures_util::stream::{self, StreamExt};
use serde_dynamo::AttributeValue;
use shared::receipt::{attr, Timestamp};

use crate::decide::{decode_stream_record, Decoded};
use crate::deliver::{Claimed, Worker};
use crate::destinations::port::Destination;
use crate::ledger::ReceiptLedger;
use crate::outcome::{RecordOutcome, Via};

#[derive(Debug, Clone, PartialEq, Eq)]
struct RecordReport {
    index: usize,
    sequence_number: Option<String>,
    outcome: RecordOutcome,
}

impl<D: Destination, L: ReceiptLedger> Worker<D, L> {
    /// Handles one stream batch; `deadline` is when the invocation times out.
    /// Records of one receipt are handled in stream order, one wave after
    /// the other; each wave goes to the destination together.
    pub async fn handle(&self, event: Event, deadline: Instant) -> DynamoDbEventResponse {
        let started = Instant::now();
        let time_given_ms = deadline.saturating_duration_since(started).as_millis() as u64;
        let mut reports: Vec<RecordReport> = Vec::new();
        let claim_until = self.claim_until(deadline);
        for wave in waves(group_by_receipt(event.records)) {
            let (slots, decoded): (Vec<_>, Vec<_>) = wave
                .into_iter()
                .map(|(index, record)| {
                    let decoded = decode_stream_record(&record);
                    ((index, record.change.sequence_number), decoded)
                })
                .unzip();
            let claiming: Vec<_> = decoded
                .into_iter()
                .map(|decoded| self.claim_decoded(decoded, &claim_until))
                .collect();
            let claimed: Vec<Claimed> = stream::iter(claiming)
                .buffered(self.concurrency())
                .collect()
                .await;
            let outcomes = self.act_all(claimed, Via::Stream, deadline).await;
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
            refused = count(RecordOutcome::Refused),
            duplicates = count(RecordOutcome::Duplicate),
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
}

impl<D: Destination, L: ReceiptLedger> Worker<D, L> {
    /// A record to deliver is claimed, as the image saw it, and delivered
    /// from the receipt as stored; anything else is acted on as decoded.
    async fn claim_decoded(&self, decoded: Decoded, until: &Timestamp) -> Claimed {
        match decoded {
            Decoded::Deliver(delivery) => {
                let receipt = &delivery.receipt;
                let seen = receipt.next_attempt_at.clone().map(Timestamp::from_stored);
                self.claim(&receipt.key(), seen.as_ref(), until).await
            }
            other => Claimed::Act(other),
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
}
