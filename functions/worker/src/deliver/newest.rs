//! Newest wins across calls (`shared::newest`): for a destination keyed by
//! e-mail, each delivery passes its person's gate before any CRM call.

use futures_util::stream::{self, StreamExt};

use super::Worker;
use crate::decide::Delivery;
use crate::destinations::port::Destination;
use crate::ledger::{GatePass, LedgerError, ReceiptLedger};

impl<D: Destination, L: ReceiptLedger> Worker<D, L> {
    /// For a destination keyed by e-mail, each delivery's newest-wins gate
    /// (`true`: at least as new as the last lead written to that person);
    /// `true` for every delivery otherwise, and for a lead without e-mail
    /// (the destination settles it).
    pub(super) async fn newest_gates(
        &self,
        destination: &D,
        deliveries: &[&Delivery],
    ) -> Vec<Result<bool, LedgerError>> {
        let keys: Vec<_> = deliveries.iter().map(|d| d.receipt.key()).collect();
        let passes: Vec<_> = deliveries
            .iter()
            .zip(&keys)
            .map(|(delivery, key)| GatePass::own(key, delivery.lead.newest_by()))
            .collect();
        self.pass_gates(destination, deliveries, &passes).await
    }

    /// Each delivery through its gate as `passes` says (one per delivery).
    pub(super) async fn pass_gates(
        &self,
        destination: &D,
        deliveries: &[&Delivery],
        passes: &[GatePass<'_>],
    ) -> Vec<Result<bool, LedgerError>> {
        let Some(gate_secret) = destination.newest_gates() else {
            return vec![Ok(true); deliveries.len()];
        };
        let expires_at = self.rules.retention.expiry_after((self.clock)());
        let gates: Vec<_> = deliveries
            .iter()
            .zip(passes)
            .map(|(delivery, pass)| async move {
                match delivery.lead.normalised_email() {
                    Some(email) => {
                        self.ledger
                            .admit_newest(&gate_secret.gate_key(&email), pass, expires_at)
                            .await
                    }
                    None => Ok(true),
                }
            })
            .collect();
        stream::iter(gates)
            .buffered(self.concurrency)
            .collect()
            .await
    }
}
