//! The claim every delivery takes before any CRM call (conditional on
//! RECEIVED and the next attempt the caller saw), and how long it holds.

use std::time::{Duration, Instant};

use shared::receipt::Timestamp;
use shared::IdempotencyKey;

use super::{Claimed, Worker};
use crate::decide::{decode_receipt, Decoded, SkipReason};
use crate::destinations::Destination;
use crate::ledger::{Claim, ReceiptLedger, UnreadableItem};

/// Added to the invocation's remaining time for a claim: a receipt whose
/// delivery died with its container is due again this long after the
/// invocation's end.
const CLAIM_MARGIN: Duration = Duration::from_secs(60);

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
        match self.ledger.claim(key, seen, until).await {
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
}
