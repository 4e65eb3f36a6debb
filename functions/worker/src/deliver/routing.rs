//! Each lead by its form's route (`routes.toml`, `shared::routes`): the
//! receipt names its form by `formRef`, and the lead takes that route's
//! `fields` and `set` before any newest-wins gate or CRM call; in a stack
//! of several destinations, the routes also choose where it goes. A
//! receipt that names a form (or, in a stack of several, any receipt)
//! while no routes could be read yet is not delivered by a guess: nothing
//! is sent, and it is deferred (`routes-unreadable`, no attempt counted)
//! for a later pass, so its claim is recorded and it never becomes a
//! suspect for a fault that is not its own.

use std::sync::Arc;
use std::time::Instant;

use shared::refresh::Unavailable;

use super::Worker;
use crate::decide::{settle, Delivery};
use crate::destinations::port::{Destination, DestinationError};
use crate::ledger::ReceiptLedger;
use crate::outcome::{RecordOutcome, Via};

/// Why a receipt waits while the routes cannot be read: its `lastError`.
pub const ROUTES_UNREADABLE: &str = "routes-unreadable";

/// Deliveries by their slot in the batch.
pub(super) type Slotted<T> = Vec<(usize, T)>;

impl<D: Destination, L: ReceiptLedger> Worker<D, L> {
    /// Each delivery whose route is known, with its route followed; and
    /// the outcome of each that must wait for the routes to be read.
    pub(super) async fn follow_routes(
        &self,
        deliveries: Vec<Delivery>,
        via: Via,
        started: Instant,
    ) -> (Slotted<Delivery>, Slotted<RecordOutcome>) {
        // In a stack of several destinations, the routes choose for every
        // lead, a form's or not.
        let several = self.destinations.len() > 1;
        let names_a_form = deliveries.iter().any(|d| d.receipt.form_ref.is_some());
        let routes = match names_a_form || several {
            true => Some(self.routes.now().await),
            false => None,
        };
        let mut routed = Vec::with_capacity(deliveries.len());
        let mut waiting = Vec::new();
        for (slot, mut delivery) in deliveries.into_iter().enumerate() {
            let reference = delivery.receipt.form_ref.as_deref();
            let (Some(routes), true) = (&routes, reference.is_some() || several) else {
                routed.push((slot, delivery));
                continue;
            };
            match routes {
                Ok(routes) => {
                    if let Some(route) = reference.and_then(|r| routes.route_by_ref(r)) {
                        delivery.lead.follow(Arc::new(route.clone()));
                    }
                    routed.push((slot, delivery));
                }
                Err(unavailable) => {
                    waiting.push((
                        slot,
                        self.wait_for_routes(delivery, unavailable, via, started)
                            .await,
                    ));
                }
            }
        }
        (routed, waiting)
    }

    /// Defers a delivery whose form's route cannot be known yet, as a
    /// retryable answer with no attempt made: due again after the base
    /// backoff, and FAILED `gave-up` only past the delivery age limit.
    async fn wait_for_routes(
        &self,
        delivery: Delivery,
        unavailable: &Unavailable,
        via: Via,
        started: Instant,
    ) -> RecordOutcome {
        tracing::warn!(
            submission_id = %delivery.receipt.submission_id,
            error = %unavailable,
            "the routes could not be read; the receipt waits, nothing sent"
        );
        let settlement = settle(
            &Err(DestinationError::retryable(ROUTES_UNREADABLE)),
            delivery.started,
            self.now(),
            delivery.receipt.attempts,
            &self.rules,
            fastrand::f64(),
        );
        self.record(
            &delivery.receipt.key(),
            Some(&delivery.receipt.submission_id),
            settlement,
            0,
            via,
            started,
        )
        .await
    }
}
