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

/// A Static Forms receipt whose answers are `fields`, of the form whose
/// key (`data.apiKey`) is `form` if given, sent at `timestamp` (Unix
/// seconds) if given, received now.
pub fn static_forms_receipt(
    submission_id: &str,
    form: Option<&str>,
    fields: serde_json::Value,
    timestamp: Option<u64>,
) -> Receipt {
    let mut data = serde_json::json!({"submissionId": submission_id, "formData": fields});
    if let Some(form) = form {
        data["apiKey"] = serde_json::json!(form);
    }
    let mut body = serde_json::json!({"event": "form.submitted", "data": data});
    if let Some(timestamp) = timestamp {
        body["timestamp"] = serde_json::json!(timestamp);
    }
    let submission = shared::FormSubmission::parse(body.to_string().as_bytes()).unwrap();
    Receipt::new(&submission, std::time::SystemTime::now())
}
