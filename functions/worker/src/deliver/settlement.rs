//! A settlement written to its receipt (or, for a receipt of several
//! destinations, to its lane: `lanes`), and the one log line of its
//! outcome.

use std::time::Instant;

use shared::receipt::{format_timestamp, Timestamp};
use shared::IdempotencyKey;
use tracing::Level;

use super::lanes::{Landed, LaneBook};
use super::routing::Slotted;
use super::Worker;
use crate::decide::{Delivery, Settlement};
use crate::destinations::port::{DeliveredRecord, Destination, Upserted};
use crate::ledger::{
    AttemptRecord, Completion, Ending, LedgerError, Marked, ReceiptLedger, WaitingNotice,
};
use crate::outcome::{OutcomeLine, RecordOutcome, Via};

impl<D: Destination, L: ReceiptLedger> Worker<D, L> {
    /// Writes a settlement to the receipt and logs the outcome (one line).
    pub(super) async fn record(
        &self,
        key: &IdempotencyKey,
        submission_id: Option<&str>,
        settlement: Settlement,
        made: u32,
        via: Via,
        started: Instant,
    ) -> RecordOutcome {
        self.record_announcing(
            self.name,
            key,
            submission_id,
            settlement,
            made,
            (via, started),
            None,
        )
        .await
    }

    /// A settlement of one delivery at `destination`: written to the
    /// receipt, or where the receipt goes to several destinations, landed
    /// in its lane (`book`). `notice`: as for `record_announcing`.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn record_for(
        &self,
        destination: &D,
        delivery: &Delivery,
        book: Option<&LaneBook>,
        settlement: Settlement,
        made: u32,
        notice: Option<WaitingNotice>,
        (via, started): (Via, Instant),
    ) -> RecordOutcome {
        match book {
            None => {
                self.record_announcing(
                    destination.name(),
                    &delivery.receipt.key(),
                    Some(&delivery.receipt.submission_id),
                    settlement,
                    made,
                    (via, started),
                    notice,
                )
                .await
            }
            Some(book) => {
                self.land(
                    destination.name(),
                    book,
                    Landed::Settled(settlement, made),
                    (via, started),
                )
                .await
            }
        }
    }

    /// A delivery at `destination` that ended with nothing to record
    /// (`outcome`: no time for a call, or a gate that could not be read):
    /// its lane, where the receipt has several, stays as it was.
    pub(super) async fn unrecorded_for(
        &self,
        destination: &D,
        book: Option<&LaneBook>,
        outcome: RecordOutcome,
        (via, started): (Via, Instant),
    ) -> RecordOutcome {
        match book {
            None => outcome,
            Some(book) => {
                self.land(
                    destination.name(),
                    book,
                    Landed::Unrecorded(outcome),
                    (via, started),
                )
                .await
            }
        }
    }

    /// The same, and where the lead is written and `notice` says its form
    /// is announced, its new-lead notice waits to be sent. `name`: the
    /// destination whose answer this is.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn record_announcing(
        &self,
        name: &'static str,
        key: &IdempotencyKey,
        submission_id: Option<&str>,
        settlement: Settlement,
        made: u32,
        (via, started): (Via, Instant),
        notice: Option<WaitingNotice>,
    ) -> RecordOutcome {
        let written = self
            .write_settlement(name, key, &settlement, made, notice)
            .await;
        self.log_settlement(
            name,
            submission_id,
            &settlement,
            made,
            (via, started),
            written,
        )
    }

    /// The one log line of a settlement `written` (or not) to its receipt,
    /// and its outcome.
    pub(super) fn log_settlement(
        &self,
        name: &'static str,
        submission_id: Option<&str>,
        settlement: &Settlement,
        made: u32,
        (via, started): (Via, Instant),
        written: Result<Marked, LedgerError>,
    ) -> RecordOutcome {
        let mut line = OutcomeLine::new(submission_id, name, via, made, started);
        let marked = match written {
            Ok(marked) => marked,
            Err(error) => {
                // Nothing recorded: the stream delivers the record again
                // (the reconciler, for its own pass). A lead already written
                // is written again, to the same key.
                line.reason = Some(&error.0);
                line.log(
                    Level::WARN,
                    RecordOutcome::FailedRetryable.code(),
                    "receipt delivery handled; its outcome could not be recorded",
                );
                return RecordOutcome::FailedRetryable;
            }
        };
        if marked == Marked::NotPending {
            // Another delivery settled it (or TTL removed it) first: its
            // outcome is that one's, counted there. Counting this one too
            // would count a lead twice, or raise a false FAILED alarm.
            line.settled_elsewhere = Some(true);
            line.reason = Some("settled-elsewhere");
            line.log(
                Level::INFO,
                RecordOutcome::Skipped.code(),
                "receipt delivery handled",
            );
            return RecordOutcome::Skipped;
        }
        line.settled_elsewhere = Some(false);
        let next_attempt_at;
        let (outcome, level, message) = match settlement {
            Settlement::Complete(Upserted::Written(_)) => (
                RecordOutcome::Upserted,
                Level::INFO,
                "receipt delivery handled",
            ),
            Settlement::Complete(Upserted::Stale) => (
                RecordOutcome::Stale,
                Level::INFO,
                "receipt delivery handled",
            ),
            Settlement::Refuse(refusal) => {
                // The destination's answer for this person: visible in the
                // log and `receipts list`, never an alarm.
                line.reason = Some(&refusal.code);
                line.http_status = refusal.status;
                (
                    RecordOutcome::Refused,
                    Level::INFO,
                    "receipt delivery handled; the destination refuses this person",
                )
            }
            Settlement::Duplicate(_) => (
                RecordOutcome::Duplicate,
                Level::INFO,
                "receipt delivery handled; a double submit of another receipt, not delivered",
            ),
            Settlement::Erased => (
                RecordOutcome::Erased,
                Level::INFO,
                "receipt delivery handled; its person was erased after it was made, not delivered",
            ),
            Settlement::Fail(failure) | Settlement::GiveUp(failure) => {
                line.reason = Some(&failure.code);
                line.http_status = failure.status;
                let outcome = match settlement {
                    Settlement::GiveUp(_) => RecordOutcome::GaveUp,
                    _ => RecordOutcome::FailedPermanent,
                };
                (outcome, Level::ERROR, "receipt delivery handled")
            }
            Settlement::Later { at, error, auth } => {
                next_attempt_at = format_timestamp(*at);
                line.next_attempt_at = Some(&next_attempt_at);
                line.http_status = error.status;
                if *auth {
                    // Counted by an alarm: every lead waits until the
                    // destination's credentials are fixed.
                    line.auth_error = Some(true);
                    (
                        RecordOutcome::Deferred,
                        Level::ERROR,
                        "destination refused our credentials; the receipt waits",
                    )
                } else {
                    line.reason = Some(&error.code);
                    (
                        RecordOutcome::Deferred,
                        Level::WARN,
                        "receipt delivery handled",
                    )
                }
            }
        };
        line.log(level, outcome.code(), message);
        outcome
    }

    /// Splits `deliveries` by what a check before any CRM call said of
    /// each (`looks`, one per delivery): `Ok(None)` goes on; `Ok(Some(_))`
    /// is settled so now, with no call; a ledger that could not answer
    /// leaves it for a later delivery (`unanswered`, named `check`).
    pub(super) async fn set_aside(
        &self,
        deliveries: Slotted<Delivery>,
        looks: Vec<Result<Option<Settlement>, LedgerError>>,
        (via, started): (Via, Instant),
        (check, message): (&'static str, &'static str),
    ) -> (Slotted<Delivery>, Slotted<RecordOutcome>) {
        let mut going_on = Vec::with_capacity(deliveries.len());
        let mut set_aside = Vec::new();
        for ((slot, delivery), look) in deliveries.into_iter().zip(looks) {
            let submission_id = delivery.receipt.submission_id.clone();
            match look {
                Ok(None) => going_on.push((slot, delivery)),
                Ok(Some(settlement)) => {
                    let outcome = self
                        .record(
                            &delivery.receipt.key(),
                            Some(&submission_id),
                            settlement,
                            0,
                            via,
                            started,
                        )
                        .await;
                    set_aside.push((slot, outcome));
                }
                Err(error) => {
                    let outcome =
                        self.unanswered(&submission_id, &error, (via, started), check, message);
                    set_aside.push((slot, outcome));
                }
            }
        }
        (going_on, set_aside)
    }

    /// A delivery the ledger could not answer a question for (`detail`:
    /// its gate, its double-submit check) before any CRM call: nothing was
    /// sent or recorded, and the stream delivers it again (a pass, at its
    /// claim's end).
    pub(super) fn unanswered(
        &self,
        submission_id: &str,
        error: &LedgerError,
        (via, started): (Via, Instant),
        detail: &'static str,
        message: &'static str,
    ) -> RecordOutcome {
        let mut line = OutcomeLine::new(Some(submission_id), self.name, via, 0, started);
        line.reason = Some(&error.0);
        line.detail = Some(detail);
        line.log(Level::WARN, RecordOutcome::FailedRetryable.code(), message);
        RecordOutcome::FailedRetryable
    }

    /// Writes a settlement to the receipt, conditional on RECEIVED.
    async fn write_settlement(
        &self,
        name: &'static str,
        key: &IdempotencyKey,
        settlement: &Settlement,
        made: u32,
        notice: Option<WaitingNotice>,
    ) -> Result<Marked, LedgerError> {
        let attempt = AttemptRecord::new(made, Timestamp::at((self.clock)()));
        match settlement {
            Settlement::Complete(upserted) => {
                let completion = Completion {
                    expires_at: self.rules.retention.expiry_after((self.clock)()),
                    keep_payload: self.rules.keep_payload,
                    destination: name.to_owned(),
                    ending: Ending::Delivered(match upserted {
                        Upserted::Written(record) => record.clone(),
                        Upserted::Stale => DeliveredRecord::unknown(),
                    }),
                    notice: notice.filter(|_| matches!(upserted, Upserted::Written(_))),
                };
                self.ledger.mark_completed(key, &attempt, &completion).await
            }
            Settlement::Refuse(refusal) => {
                let completion = Completion {
                    expires_at: self.rules.retention.expiry_after((self.clock)()),
                    keep_payload: false,
                    destination: name.to_owned(),
                    ending: Ending::Refused(refusal.code.clone()),
                    notice: None,
                };
                self.ledger.mark_completed(key, &attempt, &completion).await
            }
            Settlement::Duplicate(of) => {
                let completion = Completion {
                    expires_at: self.rules.retention.expiry_after((self.clock)()),
                    keep_payload: false,
                    destination: name.to_owned(),
                    ending: Ending::Duplicate(of.clone()),
                    notice: None,
                };
                self.ledger.mark_completed(key, &attempt, &completion).await
            }
            Settlement::Erased => {
                let completion = Completion {
                    expires_at: self.rules.retention.expiry_after((self.clock)()),
                    keep_payload: false,
                    destination: name.to_owned(),
                    ending: Ending::Erased,
                    notice: None,
                };
                self.ledger.mark_completed(key, &attempt, &completion).await
            }
            Settlement::Fail(failure) | Settlement::GiveUp(failure) => {
                self.ledger.mark_failed(key, failure, &attempt).await
            }
            Settlement::Later { at, error, .. } => {
                self.ledger
                    .defer(key, &Timestamp::at(*at), error, &attempt)
                    .await
            }
        }
    }
}
