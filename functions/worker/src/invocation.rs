//! What invoked the worker: a batch from the receipts stream, or the
//! schedule that starts a reconciliation pass. Decided from the event's own
//! shape, so one function serves both triggers; and the invocation's
//! deadline, from Lambda's.

use std::time::{Duration, Instant, SystemTime};

use aws_lambda_events::event::dynamodb::Event;
use serde_json::Value;

use crate::destinations::port::Destination;
use crate::ledger::{PendingQueue, ReceiptLedger};
use crate::Worker;

/// The `detail-type` of an EventBridge scheduled event.
pub const SCHEDULED_EVENT: &str = "Scheduled Event";

#[derive(Debug)]
pub enum Invocation {
    Stream(Event),
    Reconcile,
    /// The audit's schedule: `{"audit": true}` (`crate::audit`).
    Audit,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvocationError {
    #[error("the event has Records but is not a DynamoDB stream batch")]
    UnreadableStreamEvent,
    #[error("the event is neither a DynamoDB stream batch nor a scheduled event")]
    Unrecognised,
    #[error("an audit was asked for, but none is configured (SENDER_API_TOKEN_SECRET_ARN)")]
    NoAudit,
    /// The audit failed: one line, no secret, no id.
    #[error("the audit failed: {0}")]
    AuditFailed(String),
}

impl TryFrom<Value> for Invocation {
    type Error = InvocationError;

    fn try_from(event: Value) -> Result<Self, Self::Error> {
        if event.get("Records").is_some() {
            return serde_json::from_value(event)
                .map(Invocation::Stream)
                .map_err(|_| InvocationError::UnreadableStreamEvent);
        }
        if event.get(crate::audit::AUDIT_EVENT_FIELD) == Some(&Value::Bool(true)) {
            return Ok(Invocation::Audit);
        }
        if event.get("detail-type").and_then(Value::as_str) == Some(SCHEDULED_EVENT) {
            return Ok(Invocation::Reconcile);
        }
        Err(InvocationError::Unrecognised)
    }
}

impl<D: Destination, L: ReceiptLedger + PendingQueue> Worker<D, L> {
    /// Handles one invocation of either kind; the answer is the batch
    /// response or the pass report, as JSON.
    pub async fn invoke(&self, event: Value, deadline: Instant) -> Result<Value, InvocationError> {
        let response = match Invocation::try_from(event)? {
            Invocation::Stream(batch) => serde_json::to_value(self.handle(batch, deadline).await),
            Invocation::Reconcile => serde_json::to_value(self.reconcile(deadline).await),
            Invocation::Audit => {
                let auditor = self.auditor().ok_or(InvocationError::NoAudit)?;
                let report = auditor
                    .run(std::time::SystemTime::now(), deadline)
                    .await
                    .map_err(|failed| {
                        tracing::error!(error = %failed, "the audit failed; its window is read again next time");
                        InvocationError::AuditFailed(failed.to_string())
                    })?;
                serde_json::to_value(report)
            }
        };
        // Both are plain structs of strings and numbers.
        Ok(response.unwrap_or(Value::Null))
    }
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
    use serde_json::json;

    #[test]
    fn invocations() {
        let stream = json!({"Records": []});
        let scheduled = json!({
            "version": "0",
            "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "time": "2026-11-30T06:00:00Z",
            "detail": {}
        });
        assert!(matches!(
            Invocation::try_from(stream),
            Ok(Invocation::Stream(event)) if event.records.is_empty()
        ));
        assert!(matches!(
            Invocation::try_from(scheduled),
            Ok(Invocation::Reconcile)
        ));
        let rows = [
            (json!({}), InvocationError::Unrecognised),
            (json!(null), InvocationError::Unrecognised),
            (json!([1, 2]), InvocationError::Unrecognised),
            (
                json!({"detail-type": "Other"}),
                InvocationError::Unrecognised,
            ),
            (
                json!({"Records": "x"}),
                InvocationError::UnreadableStreamEvent,
            ),
        ];
        for (event, expected) in rows {
            assert_eq!(
                Invocation::try_from(event.clone()).unwrap_err(),
                expected,
                "{event}"
            );
        }
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
