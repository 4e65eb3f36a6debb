//! What became of one stream record or stored receipt, and the one log line
//! that says so. Every delivery path logs through `OutcomeLine`, so every
//! outcome is one line with the same fields, and no field can carry lead
//! data: reasons are short codes.

use std::time::Instant;

use tracing::Level;

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
    /// The destination refused the person for good: REFUSED, no alarm.
    Refused,
    /// A double submit of another receipt: DUPLICATE, never delivered.
    Duplicate,
    /// Made before `receipts forget` erased its person, arrived after:
    /// ERASED, never delivered.
    Erased,
}

impl RecordOutcome {
    /// Every outcome, for the metrics contract and the dashboard.
    pub const ALL: [RecordOutcome; 10] = [
        RecordOutcome::Upserted,
        RecordOutcome::Skipped,
        RecordOutcome::Stale,
        RecordOutcome::Deferred,
        RecordOutcome::FailedRetryable,
        RecordOutcome::FailedPermanent,
        RecordOutcome::GaveUp,
        RecordOutcome::Refused,
        RecordOutcome::Duplicate,
        RecordOutcome::Erased,
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
            RecordOutcome::Refused => "refused",
            RecordOutcome::Duplicate => "duplicate",
            RecordOutcome::Erased => "erased",
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
    pub(crate) fn code(self) -> &'static str {
        match self {
            Via::Stream => "stream",
            Via::Reconcile => "reconcile",
        }
    }
}

/// The log line of one receipt's outcome, built in one place.
#[derive(Debug, Clone)]
pub(crate) struct OutcomeLine<'a> {
    pub submission_id: Option<&'a str>,
    pub destination: &'static str,
    pub via: Via,
    pub attempts: u32,
    pub started: Instant,
    pub reason: Option<&'a str>,
    pub http_status: Option<u16>,
    pub next_attempt_at: Option<&'a str>,
    pub settled_elsewhere: Option<bool>,
    pub auth_error: Option<bool>,
    pub detail: Option<&'a str>,
}

impl<'a> OutcomeLine<'a> {
    pub fn new(
        submission_id: Option<&'a str>,
        destination: &'static str,
        via: Via,
        attempts: u32,
        started: Instant,
    ) -> Self {
        OutcomeLine {
            submission_id,
            destination,
            via,
            attempts,
            started,
            reason: None,
            http_status: None,
            next_attempt_at: None,
            settled_elsewhere: None,
            auth_error: None,
            detail: None,
        }
    }

    /// Writes the line: `outcome` at `level`, with `message`.
    pub fn log(&self, level: Level, outcome: &str, message: &str) {
        let duration_ms = self.started.elapsed().as_millis() as u64;
        macro_rules! line {
            ($level:expr) => {
                tracing::event!(
                    $level,
                    submission_id = self.submission_id,
                    destination = self.destination,
                    via = self.via.code(),
                    outcome,
                    reason = self.reason,
                    detail = self.detail,
                    auth_error = self.auth_error,
                    attempts = self.attempts,
                    duration_ms,
                    http_status = self.http_status,
                    next_attempt_at = self.next_attempt_at,
                    settled_elsewhere = self.settled_elsewhere,
                    "{message}"
                )
            };
        }
        match level {
            Level::ERROR => line!(Level::ERROR),
            Level::WARN => line!(Level::WARN),
            _ => line!(Level::INFO),
        }
    }
}
