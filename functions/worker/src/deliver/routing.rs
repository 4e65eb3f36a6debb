//! Each lead by its form's route (`routes.toml`, `shared::routes`): the
//! receipt names its form by `formRef`, and the lead takes that route's
//! `fields` and `set` before any newest-wins gate or CRM call. A receipt
//! that names a form while no routes could be read yet is not delivered by
//! a guess: nothing is sent and it is delivered again later, as when its
//! gate cannot be read.

use std::sync::Arc;
use std::time::Instant;

use tracing::Level;

use super::Worker;
use crate::decide::Delivery;
use crate::destinations::port::Destination;
use crate::ledger::ReceiptLedger;
use crate::outcome::{OutcomeLine, RecordOutcome, Via};

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
        let names_a_form = deliveries.iter().any(|d| d.receipt.form_ref.is_some());
        let routes = match names_a_form {
            true => Some(self.routes.now().await),
            false => None,
        };
        let mut routed = Vec::with_capacity(deliveries.len());
        let mut waiting = Vec::new();
        for (slot, mut delivery) in deliveries.into_iter().enumerate() {
            let (Some(reference), Some(routes)) = (&delivery.receipt.form_ref, &routes) else {
                routed.push((slot, delivery));
                continue;
            };
            match routes {
                Ok(routes) => {
                    if let Some(route) = routes.route_by_ref(reference) {
                        delivery.lead.follow(Arc::new(route.clone()));
                    }
                    routed.push((slot, delivery));
                }
                Err(unavailable) => {
                    let reason = unavailable.to_string();
                    let mut line = OutcomeLine::new(
                        Some(&delivery.receipt.submission_id),
                        self.destination.name(),
                        via,
                        0,
                        started,
                    );
                    line.reason = Some(&reason);
                    line.detail = Some("routes");
                    line.log(
                        Level::WARN,
                        RecordOutcome::FailedRetryable.code(),
                        "receipt delivery handled; the routes could not be read, so nothing was sent",
                    );
                    waiting.push((slot, RecordOutcome::FailedRetryable));
                }
            }
        }
        (routed, waiting)
    }
}
