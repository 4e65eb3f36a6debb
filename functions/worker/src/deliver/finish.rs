//! The end of one receipt's delivery to one destination: its attempts
//! measured, its last answer settled, and the outcome written to the
//! receipt (or to its lane, where it goes to several).

use std::sync::Arc;
use std::time::Instant;

use shared::metrics::{catalog, Values, DESTINATION, FUNCTION};
use shared::IdempotencyKey;
use tracing::Level;

use super::lanes::LaneBook;
use super::{attempts, Worker};
use crate::decide::{settle, Delivery};
use crate::destinations::port::{Destination, DestinationError};
use crate::ledger::ReceiptLedger;
use crate::outcome::{OutcomeLine, RecordOutcome, Via};

impl<D: Destination, L: ReceiptLedger> Worker<D, L> {
    /// Measures one receipt's attempts at `destination`, settles the last
    /// answer and writes the outcome to the receipt, or to its lane in
    /// `book`.
    pub(super) async fn finish(
        &self,
        destination: &D,
        delivery: Delivery,
        key: IdempotencyKey,
        attempts: attempts::Attempts,
        book: Option<Arc<LaneBook>>,
        (via, started): (Via, Instant),
    ) -> RecordOutcome {
        let attempts::Attempts {
            result,
            made,
            latencies_ms,
            rate_limited,
        } = attempts;
        if made > 0 {
            let auth_errors = matches!(
                result,
                Err(DestinationError::Unauthorized { .. }
                    | DestinationError::CredentialsUnavailable(_)
                    | DestinationError::Misconfigured { .. })
            );
            self.metrics.emit(
                &[(FUNCTION, "worker"), (DESTINATION, destination.name())],
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
            let mut line = OutcomeLine::new(
                Some(delivery.receipt.submission_id.as_str()),
                destination.name(),
                via,
                0,
                started,
            );
            line.reason = Some("no time left in this invocation");
            line.log(Level::WARN, "deferred", "receipt delivery handled");
            return self
                .unrecorded_for(
                    destination,
                    book.as_deref(),
                    RecordOutcome::Deferred,
                    (via, started),
                )
                .await;
        }
        // Backoff counts this destination's attempts: its lane's where the
        // receipt has several.
        let before = match &book {
            Some(book) => book.attempts_before(destination.name()),
            None => delivery.receipt.attempts,
        };
        let settlement = settle(
            &result,
            delivery.started,
            (self.clock)(),
            before.saturating_add(made),
            &self.rules,
            fastrand::f64(),
        );
        debug_assert_eq!(key, delivery.receipt.key());
        let notice = self.notice_for(&delivery);
        self.record_for(
            destination,
            &delivery,
            book.as_deref(),
            settlement,
            made,
            notice,
            (via, started),
        )
        .await
    }
}
