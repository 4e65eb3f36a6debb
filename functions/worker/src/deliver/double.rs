//! Double submits (`shared::duplicates`): after its route is known and
//! before any newest-wins gate or CRM call, each lead with an address is
//! compared with the person's submissions to its form. One whose nearest
//! neighbour within the form's `duplicate_window` has the same answers is
//! settled DUPLICATE of it, with no CRM call; a ledger that cannot answer
//! leaves it for the stream to deliver again, nothing sent.

use std::collections::HashMap;
use std::time::Instant;

use futures_util::stream::{self, StreamExt};
use shared::duplicates::{answers_digest, item_key, window_of, FirstSubmission};

use super::routing::Slotted;
use super::Worker;
use crate::decide::{Delivery, Settlement};
use crate::destinations::port::Destination;
use crate::ledger::{LedgerError, ReceiptLedger};
use crate::outcome::{RecordOutcome, Via};

/// What a person's item said of one submission: `None`, it is delivered;
/// the receipt it repeats; or the ledger's failure.
type Look = Result<Option<String>, LedgerError>;

impl<D: Destination, L: ReceiptLedger> Worker<D, L> {
    /// The deliveries that stand first (to deliver), and the outcome of
    /// each that repeats another or could not be compared.
    pub(super) async fn set_aside_double_submits(
        &self,
        deliveries: Slotted<Delivery>,
        via: Via,
        started: Instant,
    ) -> (Slotted<Delivery>, Slotted<RecordOutcome>) {
        let Some(secret) = &self.stack_key else {
            return (deliveries, Vec::new());
        };
        let routes = self.routes.now().await.ok();
        let routes = routes.as_deref();
        // Each lead's item and its submission as compared there; none
        // where the window is off, the lead has no address or no time.
        let compared: Vec<Option<(String, FirstSubmission)>> = deliveries
            .iter()
            .map(|(_, delivery)| {
                let window = routes
                    .map(|routes| window_of(routes, &delivery.lead))
                    .unwrap_or_default();
                let receipt = &delivery.receipt;
                let item = item_key(secret, receipt.form_ref.as_deref(), &delivery.lead)?;
                let answers = answers_digest(secret, &delivery.lead);
                let first = FirstSubmission::new(
                    &receipt.pk,
                    (delivery.lead.newest_by(), &answers),
                    window,
                    self.rules.retention.as_duration(),
                    self.now(),
                )?;
                (!window.is_off()).then_some((item, first))
            })
            .collect();
        // One person's submissions of a batch are judged one after the
        // other, oldest first, as they were made: judged at once, a repeat
        // could be compared before the other answers between them.
        let mut people: HashMap<String, Vec<usize>> = HashMap::new();
        for (index, compared) in compared.iter().enumerate() {
            if let Some((item, _)) = compared {
                people.entry(item.clone()).or_default().push(index);
            }
        }
        let compared = &compared;
        let people: Vec<_> = people
            .into_iter()
            .map(|(item, mut indexes)| async move {
                let at = |index: &usize| compared[*index].as_ref().map(|(_, s)| s.at.clone());
                indexes.sort_by_key(at);
                let mut looks = Vec::with_capacity(indexes.len());
                for index in indexes {
                    if let Some((_, submission)) = &compared[index] {
                        looks.push((
                            index,
                            self.ledger.first_of_identical(&item, submission).await,
                        ));
                    }
                }
                looks
            })
            .collect();
        let judged: Vec<Vec<(usize, Look)>> = stream::iter(people)
            .buffer_unordered(self.concurrency)
            .collect()
            .await;
        let mut looks: Vec<Look> = (0..deliveries.len()).map(|_| Ok(None)).collect();
        for (index, look) in judged.into_iter().flatten() {
            looks[index] = look;
        }
        let looks = looks
            .into_iter()
            .map(|look| look.map(|repeated| repeated.map(Settlement::Duplicate)))
            .collect();
        self.set_aside(
            deliveries,
            looks,
            (via, started),
            (
                "double-submit check",
                "receipt delivery handled; its double-submit check could not be made",
            ),
        )
        .await
    }
}
