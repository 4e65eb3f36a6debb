//! The delivery core: a receipt's lead, by its form's route (`routing`),
//! to each of its destinations (`lanes`: one receipt, several
//! destinations, each delivered on its own), attempts within the
//! invocation, and the settlement written to the receipt with one log line
//! per outcome. The stream (`stream`) and the reconciliation pass
//! (`reconcile`) are its two callers, through `act_all`.
//!
//! A destination that is down, or asks to wait longer than the invocation
//! has, defers the receipt to the reconciler: one failing CRM never holds a
//! shard for long. Only an outcome that cannot be written to the receipt is
//! `FailedRetryable`, which the stream delivers again.

use std::time::{Duration, Instant, SystemTime};

use futures_util::stream::{self, StreamExt};
use shared::delivery::RetryPolicy;
use shared::metrics::{catalog, FUNCTION, OUTCOME};
use shared::IdempotencyKey;

use crate::decide::{AttemptError, Decoded, Delivery, DeliveryRules, Settlement};
use crate::destinations::port::Destination;
use crate::ledger::{LedgerError, ReceiptLedger};
use crate::outcome::{OutcomeLine, RecordOutcome, Via};
use aws_edge::routes::RoutesInForce;

pub mod announce;
mod attempts;
pub mod claim;
mod double;
mod erased;
mod finish;
mod lanes;
mod newest;
mod pipeline;
mod routing;
mod settlement;
use tracing::Level;

pub use shared::clock::Clock;

/// The receipts a pass leaves to the stream: those received in the last
/// ten minutes (`RECONCILE_AFTER_SECONDS`).
pub const DEFAULT_RECONCILE_AFTER: Duration = Duration::from_secs(600);

/// What a claim gave the delivery core to act on.
#[derive(Debug)]
pub(crate) enum Claimed {
    /// Deliver it, skip it, or mark it unreadable.
    Act(Decoded),
    /// The ledger could not be asked: nothing was done, try again later.
    Unavailable(LedgerError),
}

impl Claimed {
    /// The form data it holds, in bytes.
    pub(crate) fn payload_bytes(&self) -> usize {
        match self {
            Claimed::Act(Decoded::Deliver(delivery)) => {
                delivery.receipt.payload.as_ref().map_or(0, String::len)
            }
            _ => 0,
        }
    }
}

/// What a delivery writes: its lead, or (a newer submission of its person
/// already written, where the destination keeps every submission's
/// history) only its place in that history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    Lead,
    HistoryOnly,
}

/// The worker: the stack's destinations, the ledger of receipts, and the
/// rules for delivering to them from it. The stream (`stream`) and the
/// pass (`reconcile`) both deliver through it.
pub struct Worker<D, L> {
    /// One or more, in the order `DESTINATION` names them; never empty.
    destinations: Vec<D>,
    /// Their names, as `DESTINATION` gives them: what a log line of the
    /// receipt as a whole names.
    name: &'static str,
    ledger: L,
    concurrency: usize,
    retry: RetryPolicy,
    rules: DeliveryRules,
    reconcile_after: Duration,
    clock: Clock,
    metrics: shared::metrics::Metrics,
    routes: RoutesInForce,
    auditor: Option<crate::audit::Auditor>,
    /// The stack's gate key, which keys the items of double submits and
    /// the erasure markers `receipts forget` leaves; without it no two
    /// submissions are compared and no marker is looked for.
    stack_key: Option<shared::newest::GateSecret>,
    /// Where new-lead notices go (`NOTIFY_URL`); none, no notice.
    notifier: Option<crate::notice::Notifier>,
}

impl<D: Destination, L: ReceiptLedger> Worker<D, L> {
    pub fn new(destination: D, ledger: L, concurrency: usize) -> Self {
        Worker {
            name: destination.name(),
            destinations: vec![destination],
            ledger,
            concurrency: concurrency.max(1),
            retry: RetryPolicy::default(),
            rules: DeliveryRules::default(),
            reconcile_after: DEFAULT_RECONCILE_AFTER,
            clock: shared::clock::system(),
            metrics: shared::metrics::Metrics::default(),
            routes: RoutesInForce::fixed(Default::default()),
            auditor: None,
            stack_key: None,
            notifier: None,
        }
    }

    /// Delivers to these destinations too (`DESTINATION=hubspot,mailchimp`):
    /// each receipt to those its route chooses, each exactly once and on
    /// its own (`lanes`).
    pub fn also_to(mut self, others: impl IntoIterator<Item = D>) -> Self {
        self.destinations.extend(others);
        if self.destinations.len() > 1 {
            let names: Vec<&str> = self.destinations.iter().map(|d| d.name()).collect();
            // Once per worker, at init: a log line names the stack's
            // destinations without a copy per line.
            self.name = Box::leak(names.join(",").into_boxed_str());
        }
        self
    }

    /// The scheduled audit this worker runs when its schedule asks.
    pub fn with_auditor(mut self, auditor: Option<crate::audit::Auditor>) -> Self {
        self.auditor = auditor;
        self
    }

    /// The stack's gate key: double submits (`duplicate_window`) are
    /// compared, and erasure markers found, with it.
    pub fn with_stack_key(mut self, key: Option<shared::newest::GateSecret>) -> Self {
        self.stack_key = key;
        self
    }

    /// Announces each lead written to the CRM at this URL.
    pub fn with_notifier(mut self, notifier: Option<crate::notice::Notifier>) -> Self {
        self.notifier = notifier;
        self
    }

    pub fn auditor(&self) -> Option<&crate::audit::Auditor> {
        self.auditor.as_ref()
    }

    pub fn with_retry_policy(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    pub fn with_delivery_rules(mut self, rules: DeliveryRules) -> Self {
        self.rules = rules;
        self
    }

    pub fn with_reconcile_after(mut self, after: Duration) -> Self {
        self.reconcile_after = after;
        self
    }

    /// Where the metrics go and which are emitted (`OBSERVABILITY`).
    pub fn with_metrics(mut self, metrics: shared::metrics::Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// The routes each lead is delivered by (its form's `fields` and
    /// `set`): read at init, then again every `ROUTES_REREAD_SECONDS`.
    pub fn with_routes(mut self, routes: RoutesInForce) -> Self {
        self.routes = routes;
        self
    }

    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The first destination: the stack's only one, in a stack of one.
    pub fn destination(&self) -> &D {
        &self.destinations[0]
    }

    /// Every destination, in the order named.
    pub fn destinations(&self) -> &[D] {
        &self.destinations
    }

    pub fn ledger(&self) -> &L {
        &self.ledger
    }

    /// Receipts at most a delivery's share of the invocation at once.
    pub(crate) fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// The time kept free before the invocation's deadline.
    pub(crate) fn safety_margin(&self) -> Duration {
        self.retry.safety_margin
    }

    /// How old a receipt must be before a pass takes it from the stream.
    pub(crate) fn reconcile_after(&self) -> Duration {
        self.reconcile_after
    }

    pub(crate) fn now(&self) -> SystemTime {
        (self.clock)()
    }

    pub(crate) fn metrics(&self) -> &shared::metrics::Metrics {
        &self.metrics
    }

    /// Acts on what records or stored receipts were decoded into, no two of
    /// the same receipt, and counts each outcome (`Records`). Those to
    /// deliver go to the destination together; outcomes come back in order.
    pub(crate) async fn act_all(
        &self,
        claimed: Vec<Claimed>,
        via: Via,
        deadline: Instant,
    ) -> Vec<RecordOutcome> {
        let mut outcomes = vec![RecordOutcome::Skipped; claimed.len()];
        // Each delivery's receipt, by slot: a lead written is announced.
        let keys: Vec<Option<IdempotencyKey>> = claimed
            .iter()
            .map(|claimed| match claimed {
                Claimed::Act(Decoded::Deliver(delivery)) => Some(delivery.receipt.key()),
                _ => None,
            })
            .collect();
        let mut deliveries = Vec::new();
        let mut delivery_slots = Vec::new();
        let mut undeliverable = Vec::new();
        let mut suspects = Vec::new();
        for (slot, claimed) in claimed.into_iter().enumerate() {
            match claimed {
                Claimed::Act(Decoded::Deliver(delivery)) if claim::is_suspect(&delivery) => {
                    suspects.push((slot, delivery));
                }
                Claimed::Act(Decoded::Deliver(delivery)) => {
                    delivery_slots.push(slot);
                    deliveries.push(*delivery);
                }
                Claimed::Act(other) => undeliverable.push((slot, other)),
                Claimed::Unavailable(error) => {
                    let mut line = OutcomeLine::new(None, self.name, via, 0, Instant::now());
                    line.reason = Some(&error.0);
                    line.detail = Some("claim");
                    line.log(
                        Level::WARN,
                        RecordOutcome::FailedRetryable.code(),
                        "receipt could not be claimed; nothing was sent",
                    );
                    outcomes[slot] = RecordOutcome::FailedRetryable;
                }
            }
        }
        let settling: Vec<_> =
            undeliverable
                .into_iter()
                .map(|(slot, decoded)| async move {
                    (slot, self.act_on_undeliverable(decoded, via).await)
                })
                .collect();
        let settled: Vec<(usize, RecordOutcome)> = stream::iter(settling)
            .buffer_unordered(self.concurrency)
            .collect()
            .await;
        for (slot, outcome) in settled {
            outcomes[slot] = outcome;
        }
        let delivered = self.deliver_all(deliveries, via, deadline).await;
        for (slot, outcome) in delivery_slots.into_iter().zip(delivered) {
            outcomes[slot] = outcome;
        }
        for (slot, suspect) in suspects {
            outcomes[slot] = self.deliver_alone(*suspect, via, deadline).await;
        }
        let written: Vec<IdempotencyKey> = keys
            .into_iter()
            .zip(&outcomes)
            .filter(|(_, outcome)| **outcome == RecordOutcome::Upserted)
            .filter_map(|(key, _)| key)
            .collect();
        self.announce_all(written, deadline).await;
        for outcome in &outcomes {
            self.metrics.emit(
                &[(FUNCTION, "worker"), (OUTCOME, outcome.code())],
                &[(catalog::RECORDS, 1.0.into())],
                &[],
            );
        }
        outcomes
    }

    /// A record or receipt with nothing to deliver: skipped, or unreadable.
    async fn act_on_undeliverable(&self, decoded: Decoded, via: Via) -> RecordOutcome {
        let mut line = OutcomeLine::new(None, self.name, via, 0, Instant::now());
        match decoded {
            Decoded::Deliver(_) => unreachable!("deliveries go to deliver_all"),
            Decoded::Skip(reason) => {
                line.reason = Some(reason.code());
                line.log(Level::INFO, "skipped", "receipt delivery handled");
                RecordOutcome::Skipped
            }
            Decoded::Unreadable { key: None, reason } => {
                line.reason = Some(reason);
                line.detail = Some("receipt-without-key");
                line.log(Level::ERROR, "skipped", "receipt delivery handled");
                RecordOutcome::Skipped
            }
            Decoded::Unreadable {
                key: Some(key),
                reason,
            } => {
                let failure = AttemptError {
                    code: reason.to_owned(),
                    status: None,
                };
                let settlement = Settlement::Fail(failure);
                self.record(
                    &IdempotencyKey::from_stored(key),
                    None,
                    settlement,
                    0,
                    via,
                    Instant::now(),
                )
                .await
            }
        }
    }

    /// Delivers receipts together: attempts within the invocation, then
    /// each answer settled and written to its receipt. Outcomes in order.
    async fn deliver_all(
        &self,
        deliveries: Vec<Delivery>,
        via: Via,
        deadline: Instant,
    ) -> Vec<RecordOutcome> {
        if deliveries.is_empty() {
            return Vec::new();
        }
        let started = Instant::now();
        let mut outcomes = vec![RecordOutcome::Skipped; deliveries.len()];
        let (routed, waiting) = self.follow_routes(deliveries, via, started).await;
        let (routed, erased) = self.set_aside_erased(routed, via, started).await;
        let (routed, set_aside) = self.set_aside_double_submits(routed, via, started).await;
        for (slot, outcome) in waiting.into_iter().chain(erased).chain(set_aside) {
            outcomes[slot] = outcome;
        }
        let (slots, routed): (Vec<usize>, Vec<Delivery>) = routed.into_iter().unzip();
        let delivered = self.deliver_to_each(routed, via, deadline, started).await;
        for (slot, outcome) in slots.into_iter().zip(delivered) {
            outcomes[slot] = outcome;
        }
        outcomes
    }
}
