//! Double submits (`shared::duplicates`): after its route is known and
//! before any newest-wins gate or CRM call, each lead with an address
//! claims the first place among identical submissions of its form. One
//! that finds another within the form's `duplicate_window` is settled
//! DUPLICATE of it, with no CRM call; a ledger that cannot answer leaves
//! it for the stream to deliver again, nothing sent.

use std::time::Instant;

use futures_util::stream::{self, StreamExt};
use shared::duplicates::{item_key, window_of, FirstSubmission};

use super::routing::Slotted;
use super::Worker;
use crate::decide::{Delivery, Settlement};
use crate::destinations::port::Destination;
use crate::ledger::{LedgerError, ReceiptLedger};
use crate::outcome::{RecordOutcome, Via};

impl<D: Destination, L: ReceiptLedger> Worker<D, L> {
    /// The deliveries that stand first (to deliver), and the outcome of
    /// each that repeats another or could not be compared.
    pub(super) async fn set_aside_double_submits(
        &self,
        deliveries: Slotted<Delivery>,
        via: Via,
        started: Instant,
    ) -> (Slotted<Delivery>, Slotted<RecordOutcome>) {
        let Some(secret) = &self.double_submit_key else {
            return (deliveries, Vec::new());
        };
        let routes = self.routes.now().await.ok();
        let routes = routes.as_deref();
        let looks: Vec<_> = deliveries
            .iter()
            .map(|(_, delivery)| async move {
                let window = routes
                    .map(|routes| window_of(routes, &delivery.lead))
                    .unwrap_or_default();
                let receipt = &delivery.receipt;
                let item = item_key(secret, receipt.form_ref.as_deref(), &delivery.lead);
                let first = FirstSubmission::new(
                    &receipt.pk,
                    delivery.lead.newest_by(),
                    window,
                    self.now(),
                );
                match (item, first) {
                    (Some(item), Some(first)) if !window.is_off() => {
                        self.ledger.first_of_identical(&item, &first).await
                    }
                    _ => Ok(None),
                }
            })
            .collect();
        let looks: Vec<Result<Option<String>, LedgerError>> = stream::iter(looks)
            .buffered(self.concurrency)
            .collect()
            .await;
        let mut first = Vec::with_capacity(deliveries.len());
        let mut set_aside = Vec::new();
        for ((slot, delivery), look) in deliveries.into_iter().zip(looks) {
            let submission_id = delivery.receipt.submission_id.clone();
            match look {
                Ok(None) => first.push((slot, delivery)),
                Ok(Some(original)) => {
                    let outcome = self
                        .record(
                            &delivery.receipt.key(),
                            Some(&submission_id),
                            Settlement::Duplicate(original),
                            0,
                            via,
                            started,
                        )
                        .await;
                    set_aside.push((slot, outcome));
                }
                Err(error) => {
                    let outcome = self.unanswered(
                        &submission_id,
                        &error,
                        (via, started),
                        "double-submit check",
                        "receipt delivery handled; its double-submit check could not be made",
                    );
                    set_aside.push((slot, outcome));
                }
            }
        }
        (first, set_aside)
    }
}
