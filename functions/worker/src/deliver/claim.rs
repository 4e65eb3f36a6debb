//! The claim every delivery takes before any CRM call (conditional on
//! RECEIVED and the next attempt the caller saw), how long it holds, and
//! the delivery of a suspect alone under its own claim.

use std::time::{Duration, Instant};

use shared::receipt::Timestamp;
use shared::IdempotencyKey;

use super::{Claimed, Worker};
use crate::decide::{decode_receipt, Decoded, Delivery, SkipReason};
use crate::destinations::port::Destination;
use crate::ledger::{Claim, LedgerError, ReceiptLedger, UnreadableItem};
use crate::outcome::{OutcomeLine, RecordOutcome, Via};
use tracing::Level;

/// Added to the invocation's remaining time for a claim: a receipt whose
/// delivery died with its container is due again this long after the
/// invocation's end.
const CLAIM_MARGIN: Duration = Duration::from_secs(60);

/// Claims in a row to deliver a receipt alone whose delivery recorded no
/// outcome (it died, or its write failed) before the receipt is FAILED
/// instead of delivered again: a lead that crashes the worker, or whose
/// receipt cannot take an outcome, must not be written to the CRM at every
/// pass forever. Only claims alone count: a delivery of a whole page that
/// dies is charged to no one (its receipts become suspects, each then
/// delivered alone, so the next death has exactly one cause).
pub const MAX_UNRECORDED_CLAIMS: u32 = 5;

/// The reason such a receipt is FAILED with.
pub const OUTCOME_NOT_RECORDED: &str = "outcome-not-recorded";

impl<D: Destination, L: ReceiptLedger> Worker<D, L> {
    /// Until when a claim taken now holds: past the invocation's end, so a
    /// claim never lapses while its delivery runs.
    pub(crate) fn claim_until(&self, deadline: Instant) -> Timestamp {
        let left = deadline.saturating_duration_since(Instant::now());
        Timestamp::at(self.now() + left + CLAIM_MARGIN)
    }

    /// Claims a receipt before any CRM call: what to act on, from the
    /// receipt as stored. `seen` is the next attempt the caller saw (the
    /// stream's image, or the queue index).
    pub(crate) async fn claim(
        &self,
        key: &IdempotencyKey,
        seen: Option<&Timestamp>,
        until: &Timestamp,
    ) -> Claimed {
        let now = Timestamp::at(self.now());
        claimed(self.ledger.claim(key, seen, until, &now).await)
    }

    /// Claims a suspect this delivery holds (`held`: its claim's end) to
    /// deliver it alone, counting the claim against it: past
    /// [`MAX_UNRECORDED_CLAIMS`] it is FAILED, with no more CRM writes.
    pub(crate) async fn claim_alone(&self, key: &IdempotencyKey, held: &Timestamp) -> Claimed {
        match claimed(self.ledger.claim_alone(key, held).await) {
            // Deliveries of it alone keep dying, or keep failing to record
            // their outcome: no more CRM writes; a person looks at it.
            Claimed::Act(Decoded::Deliver(delivery))
                if delivery.receipt.solo_claims > MAX_UNRECORDED_CLAIMS =>
            {
                Claimed::Act(Decoded::Unreadable {
                    key: Some(delivery.receipt.pk),
                    reason: OUTCOME_NOT_RECORDED,
                })
            }
            other => other,
        }
    }

    /// A suspect (an earlier claim of it recorded nothing: its delivery
    /// died or could not write) on its own: its own claim, call and record,
    /// one at a time after its page, so that a death now has one cause and
    /// is charged to it alone.
    pub(super) async fn deliver_alone(
        &self,
        suspect: Delivery,
        via: Via,
        deadline: Instant,
    ) -> RecordOutcome {
        let submission_id = suspect.receipt.submission_id.clone();
        let held = suspect
            .receipt
            .claimed_until
            .clone()
            .map(Timestamp::from_stored);
        let enough = deadline.saturating_duration_since(Instant::now()) > self.safety_margin() * 2;
        let (Some(held), true) = (held, enough) else {
            // It stays claimed until the claim's end, then the next pass
            // takes it; nothing was sent and nothing is charged.
            let mut line =
                OutcomeLine::new(Some(&submission_id), self.name, via, 0, Instant::now());
            line.reason = Some("no time left in this invocation");
            line.detail = Some("suspect");
            line.log(Level::WARN, "deferred", "receipt delivery handled");
            return RecordOutcome::Deferred;
        };
        match self.claim_alone(&suspect.receipt.key(), &held).await {
            Claimed::Act(Decoded::Deliver(delivery)) => self
                .deliver_all(vec![*delivery], via, deadline)
                .await
                .pop()
                .unwrap_or(RecordOutcome::Skipped),
            Claimed::Act(other) => self.act_on_undeliverable(other, via).await,
            Claimed::Unavailable(error) => {
                let mut line =
                    OutcomeLine::new(Some(&submission_id), self.name, via, 0, Instant::now());
                line.reason = Some(&error.0);
                line.detail = Some("claim alone");
                line.log(
                    Level::WARN,
                    RecordOutcome::FailedRetryable.code(),
                    "receipt could not be claimed; nothing was sent",
                );
                RecordOutcome::FailedRetryable
            }
        }
    }
}

/// What a claim's answer gives the delivery core to act on.
fn claimed(answer: Result<Claim, LedgerError>) -> Claimed {
    match answer {
        Ok(Claim::Taken(taken)) => match *taken {
            Ok(receipt) => Claimed::Act(decode_receipt(receipt)),
            Err(UnreadableItem { key }) => Claimed::Act(Decoded::Unreadable {
                key,
                reason: "receipt unreadable",
            }),
        },
        Ok(Claim::Lost) => Claimed::Act(Decoded::Skip(SkipReason::SettledOrTaken)),
        Err(error) => Claimed::Unavailable(error),
    }
}

/// A receipt an earlier claim of which recorded no outcome (its delivery
/// died, or could not write): it is delivered alone, after its page.
pub(crate) fn is_suspect(delivery: &crate::decide::Delivery) -> bool {
    delivery.receipt.unrecorded_claims > 1
}
