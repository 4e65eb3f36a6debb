//! Helpers shared by the worker's tests: stream events, quick retries, and
//! what the in-memory ledger says about a receipt.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use aws_lambda_events::event::dynamodb::Event;
use devtools::stream_event;
use shared::delivery::RetryPolicy;
use shared::{Receipt, ReceiptStatus};
use worker::destinations::Destination;
use worker::ledger::memory::MemoryLedger;
use worker::Worker;

/// Quick retries so the tests take milliseconds, not seconds.
pub fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        safety_margin: Duration::from_millis(200),
        max_attempts: 3,
    }
}

pub fn in_seconds(seconds: u64) -> Instant {
    Instant::now() + Duration::from_secs(seconds)
}

/// One stream event with the INSERT of each receipt, in order.
pub fn inserts(receipts: &[&Receipt]) -> Event {
    let records = receipts
        .iter()
        .enumerate()
        .map(|(n, r)| stream_event::record("INSERT", r, &(100 + n).to_string()))
        .collect();
    serde_json::from_value(stream_event::event(records)).expect("a Lambda DynamoDB event")
}

/// A ledger holding these receipts RECEIVED.
pub fn ledger_of(receipts: &[&Receipt]) -> MemoryLedger {
    MemoryLedger::holding(receipts.iter().copied())
}

/// The receipt's status, and its failure reason or last error.
pub fn status_of<D: Destination>(
    worker: &Worker<D, MemoryLedger>,
    receipt: &Receipt,
) -> (ReceiptStatus, Option<String>) {
    let stored = worker
        .ledger()
        .get(&receipt.pk)
        .expect("the receipt exists");
    (stored.status, stored.failure_reason.or(stored.last_error))
}
