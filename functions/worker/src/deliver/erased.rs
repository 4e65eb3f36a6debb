//! No path brings an erased person back (`shared::erasure`): after its
//! route is known and before any double-submit check or destination call,
//! each lead with an address is looked up by its person's erasure marker.
//! One made before `receipts forget` erased its person (a webhook that
//! arrives after the erasure, a retry of one) is settled ERASED, its form
//! data removed, no destination called. A ledger that cannot answer leaves
//! it for a later delivery, nothing sent.

use std::time::Instant;

use futures_util::stream::{self, StreamExt};
use shared::erasure::{covers, marker_key};
use shared::time::parse_timestamp;

use super::routing::Slotted;
use super::Worker;
use crate::decide::{Delivery, Settlement};
use crate::destinations::port::Destination;
use crate::ledger::{LedgerError, ReceiptLedger};
use crate::outcome::{RecordOutcome, Via};

impl<D: Destination, L: ReceiptLedger> Worker<D, L> {
    /// The deliveries whose person stands (to go on), and the outcome of
    /// each erased one or one whose marker could not be read.
    pub(super) async fn set_aside_erased(
        &self,
        deliveries: Slotted<Delivery>,
        via: Via,
        started: Instant,
    ) -> (Slotted<Delivery>, Slotted<RecordOutcome>) {
        let Some(secret) = &self.stack_key else {
            return (deliveries, Vec::new());
        };
        let looks: Vec<_> = deliveries
            .iter()
            .map(|(_, delivery)| async move {
                let Some(email) = delivery.lead.normalised_email() else {
                    return Ok(false);
                };
                self.erased_after(&marker_key(secret, &email), delivery.lead.newest_by())
                    .await
            })
            .collect();
        let looks: Vec<Result<bool, LedgerError>> = stream::iter(looks)
            .buffered(self.concurrency)
            .collect()
            .await;
        let looks = looks
            .into_iter()
            .map(|look| look.map(|erased| erased.then_some(Settlement::Erased)))
            .collect();
        self.set_aside(
            deliveries,
            looks,
            (via, started),
            (
                "erasure check",
                "receipt delivery handled; its erasure check could not be made",
            ),
        )
        .await
    }

    /// Whether the person of the erasure marker `marker` was erased after
    /// `made` (RFC 3339): a marker with an unreadable time covers all.
    async fn erased_after(&self, marker: &str, made: &str) -> Result<bool, LedgerError> {
        let erased_at = self.ledger.erased_at(marker).await?;
        Ok(erased_at.is_some_and(|erased_at| {
            match (parse_timestamp(&erased_at), parse_timestamp(made)) {
                (Some(erased), Some(made)) => covers(erased, made),
                _ => true,
            }
        }))
    }

    /// For a waiting notice: whether its person (`person`, their marker's
    /// key) was erased since the receipt arrived `received_at`. A marker
    /// that cannot be read counts as erased: a notice then goes without
    /// the answers rather than with an erased person's.
    pub(super) async fn erased_since(&self, person: Option<&str>, received_at: &str) -> bool {
        let Some(marker) = person else {
            return false;
        };
        self.erased_after(marker, received_at).await.unwrap_or(true)
    }
}
