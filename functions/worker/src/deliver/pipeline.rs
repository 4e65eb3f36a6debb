//! One destination's share of a batch: each lead through its person's
//! newest-wins gate, the attempts, and each settlement written to its
//! receipt, or to its lane where the receipt goes to several
//! (`lanes`). A stale lead is settled with no call, or (where the
//! destination keeps every submission) kept on its person's history only.

use std::sync::Arc;
use std::time::Instant;

use futures_util::stream::{self, StreamExt};
use shared::IdempotencyKey;

use super::lanes::LaneBook;
use super::{Scope, Worker};
use crate::decide::{Delivery, Settlement};
use crate::destinations::port::{Destination, Upserted};
use crate::ledger::ReceiptLedger;
use crate::outcome::{RecordOutcome, Via};

impl<D: Destination, L: ReceiptLedger> Worker<D, L> {
    /// Delivers receipts whose leads follow their routes to `destination`
    /// (see `deliver_all`): each to the receipt itself, or to its lane in
    /// `books` (one per delivery) where it goes to several.
    pub(super) async fn deliver_routed(
        &self,
        destination: &D,
        deliveries: Vec<Delivery>,
        books: Vec<Option<Arc<LaneBook>>>,
        via: Via,
        deadline: Instant,
        started: Instant,
    ) -> Vec<RecordOutcome> {
        if deliveries.is_empty() {
            return Vec::new();
        }
        for delivery in deliveries.iter().filter(|d| d.lead.sender_time_replaced) {
            tracing::warn!(
                submission_id = %delivery.receipt.submission_id,
                skew_seconds = shared::newest::SENDER_CLOCK_SKEW.as_secs(),
                "the sender's submission time is later than the receipt's arrival plus the skew; \
                 the arrival orders this submission instead"
            );
        }
        // Newest wins across calls: a lead older than the last one written
        // to the same person is settled as stale, with no CRM call; where
        // the destination keeps every submission's history, after it kept
        // this one's.
        let verdicts = self
            .newest_gates(destination, &deliveries.iter().collect::<Vec<_>>())
            .await;
        let keeps_history = destination.keeps_history();
        let mut outcomes = vec![RecordOutcome::Skipped; deliveries.len()];
        let mut admitted = Vec::new();
        let mut admitted_slots = Vec::new();
        for (slot, ((delivery, verdict), book)) in
            deliveries.into_iter().zip(verdicts).zip(books).enumerate()
        {
            match verdict {
                Ok(true) => {
                    admitted_slots.push(slot);
                    admitted.push((delivery, Scope::Lead, book));
                }
                Ok(false) if keeps_history => {
                    admitted_slots.push(slot);
                    admitted.push((delivery, Scope::HistoryOnly, book));
                }
                Ok(false) => {
                    let stale = Settlement::Complete(Upserted::Stale);
                    outcomes[slot] = self
                        .record_for(
                            destination,
                            &delivery,
                            book.as_deref(),
                            stale,
                            0,
                            None,
                            (via, started),
                        )
                        .await;
                }
                Err(error) => {
                    let outcome = self.unanswered(
                        &delivery.receipt.submission_id,
                        &error,
                        (via, started),
                        "newest-wins gate",
                        "receipt delivery handled; its newest-wins gate could not be read",
                    );
                    outcomes[slot] = self
                        .unrecorded_for(destination, book.as_deref(), outcome, (via, started))
                        .await;
                }
            }
        }
        for (slot, outcome) in admitted_slots.into_iter().zip(
            self.deliver_admitted(destination, admitted, via, deadline, started)
                .await,
        ) {
            outcomes[slot] = outcome;
        }
        outcomes
    }

    /// Delivers the admitted receipts together (see `deliver_all`), each
    /// in its scope.
    async fn deliver_admitted(
        &self,
        destination: &D,
        admitted: Vec<(Delivery, Scope, Option<Arc<LaneBook>>)>,
        via: Via,
        deadline: Instant,
        started: Instant,
    ) -> Vec<RecordOutcome> {
        if admitted.is_empty() {
            return Vec::new();
        }
        let mut deliveries = Vec::with_capacity(admitted.len());
        let mut scopes = Vec::with_capacity(admitted.len());
        let mut books = Vec::with_capacity(admitted.len());
        for (delivery, scope, book) in admitted {
            deliveries.push(delivery);
            scopes.push(scope);
            books.push(book);
        }
        let keys: Vec<IdempotencyKey> = deliveries.iter().map(|d| d.receipt.key()).collect();
        let attempts = self
            .upsert_with_retries(destination, &deliveries, &keys, &scopes, deadline)
            .await;
        let finishing: Vec<_> = deliveries
            .into_iter()
            .zip(keys)
            .zip(attempts)
            .zip(books)
            .map(|(((delivery, key), attempts), book)| {
                self.finish(destination, delivery, key, attempts, book, (via, started))
            })
            .collect();
        stream::iter(finishing)
            .buffered(self.concurrency)
            .collect()
            .await
    }
}
