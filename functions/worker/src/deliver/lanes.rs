//! One receipt, several destinations (`shared::lanes`). In a stack of one
//! destination, every receipt goes through its pipeline and is settled as
//! it always was. In a stack of several, each receipt has a lane for each
//! destination its route chooses (one, or more), and is delivered to each
//! due one at once, every destination through the same pipeline (gates,
//! attempts, settlement) as a lone one, under the one claim this delivery
//! holds.
//!
//! Each destination's settlement lands in the receipt's [`LaneBook`] as it
//! comes. While other destinations are still under way, the lanes are
//! saved at once (`save_lanes`), so a crash never calls a settled
//! destination again; the last to land writes the receipt's status from
//! every lane (`Aggregate::of`) in the same update as the lanes. The
//! writes of one receipt are made one at a time, in the order they land.
//! No adapter learns that another exists: a slow or refusing destination
//! holds back none of the others' writes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use shared::lanes::aggregate::Aggregate;
use shared::lanes::{Lane, LaneState, Lanes, DESTINATION_NOT_IN_STACK};
use shared::receipt::Timestamp;
use shared::record::DeliveredRecord;
use shared::routes::Routes;
use shared::{IdempotencyKey, ReceiptStatus};
use tracing::Level;

use super::Worker;
use crate::decide::{lane_after, AttemptError, Delivery, Settlement};
use crate::destinations::port::Destination;
use crate::ledger::{
    AttemptRecord, Completion, Ending, LedgerError, Marked, ReceiptLedger, WaitingNotice,
};
use crate::outcome::{OutcomeLine, RecordOutcome, Via};

/// How one destination's delivery of a receipt ended.
#[derive(Debug)]
pub(crate) enum Landed {
    /// Settled after `made` calls.
    Settled(Settlement, u32),
    /// Nothing to record (no time for a call, a gate that could not be
    /// read): its lane stays as it was, with this outcome.
    Unrecorded(RecordOutcome),
}

/// A receipt of several destinations while one delivery holds it.
pub(crate) struct LaneBook {
    key: IdempotencyKey,
    submission_id: String,
    /// The end of the claim this delivery holds: lanes saved under it only.
    held: Option<Timestamp>,
    /// Attempts each destination had before this delivery.
    before: BTreeMap<String, u32>,
    /// The notice the receipt gets once a destination wrote it and every
    /// lane settled.
    notice: Option<WaitingNotice>,
    book: Mutex<Book>,
    /// One write of this receipt at a time, in the order lanes land.
    writing: tokio::sync::Mutex<()>,
}

struct Book {
    lanes: Lanes,
    /// Destinations of this delivery still under way.
    open: usize,
    /// Calls made by this delivery, every destination's.
    made: u32,
    /// Whether a lane changed: the receipt has something to record.
    changed: bool,
    /// The receipt's outcome, once its last destination landed.
    outcome: Option<RecordOutcome>,
}

impl LaneBook {
    /// The receipt's lanes: those it stored, and a pending one for each
    /// destination in `chosen` it has none for yet; `due` of them are
    /// delivered now.
    fn new(
        delivery: &Delivery,
        chosen: &[&'static str],
        due: usize,
        notice: Option<WaitingNotice>,
    ) -> Self {
        let mut lanes = delivery.receipt.destinations.clone();
        for name in chosen {
            lanes
                .entry((*name).to_owned())
                .or_insert_with(Lane::pending);
        }
        LaneBook {
            key: delivery.receipt.key(),
            submission_id: delivery.receipt.submission_id.clone(),
            held: delivery
                .receipt
                .claimed_until
                .clone()
                .map(Timestamp::from_stored),
            before: lanes
                .iter()
                .map(|(name, lane)| (name.clone(), lane.attempts))
                .collect(),
            notice,
            book: Mutex::new(Book {
                lanes,
                open: due,
                made: 0,
                changed: false,
                outcome: None,
            }),
            writing: tokio::sync::Mutex::new(()),
        }
    }

    /// Each lane of `gone` (destinations the stack no longer has) FAILED,
    /// as the receipt will be once nothing else is pending.
    fn fail_gone(&self, gone: &[String], now: &str) {
        if gone.is_empty() {
            return;
        }
        let mut state = self.lock();
        for name in gone {
            if let Some(lane) = state.lanes.get_mut(name) {
                lane.state = LaneState::Failed;
                lane.next_attempt_at = None;
                lane.last_error = Some(DESTINATION_NOT_IN_STACK.to_owned());
                lane.last_http_status = None;
                lane.settled_at = Some(now.to_owned());
            }
        }
        state.changed = true;
    }

    /// Attempts `destination` had before this delivery.
    pub(crate) fn attempts_before(&self, destination: &str) -> u32 {
        self.before.get(destination).copied().unwrap_or(0)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The receipt's outcome once every destination of it landed.
    fn outcome(&self) -> RecordOutcome {
        self.lock().outcome.unwrap_or(RecordOutcome::Deferred)
    }
}

/// Which destinations (by index) a routed receipt goes to now.
enum Plan {
    /// The stack's one destination, settled on the receipt as always.
    Alone(usize),
    /// In a stack of several, its lanes: these are due now; `gone` name
    /// destinations the stack no longer has (its lanes there cannot be
    /// delivered).
    Lanes {
        chosen: Vec<usize>,
        due: Vec<usize>,
        gone: Vec<String>,
    },
}

impl<D: Destination, L: ReceiptLedger> Worker<D, L> {
    /// Delivers the routed receipts, each to its destinations, every
    /// destination's share at once; outcomes in order, one per receipt.
    pub(super) async fn deliver_to_each(
        &self,
        routed: Vec<Delivery>,
        via: Via,
        deadline: Instant,
        started: Instant,
    ) -> Vec<RecordOutcome> {
        let now = Timestamp::at(self.now());
        let count = self.destinations.len();
        // Read before (`follow_routes`): in a stack of several, no receipt
        // got here without them.
        let routes = match count > 1 {
            true => self.routes.now().await.ok(),
            false => None,
        };
        let mut shares: Vec<Share> = (0..count).map(|_| Share::default()).collect();
        let mut books: Vec<Option<Arc<LaneBook>>> = Vec::with_capacity(routed.len());
        for (slot, delivery) in routed.into_iter().enumerate() {
            match self.plan(&delivery, routes.as_deref(), now.as_str()) {
                Plan::Alone(index) => {
                    shares[index].push(slot, delivery, None);
                    books.push(None);
                }
                Plan::Lanes { chosen, due, gone } => {
                    let names: Vec<&'static str> = chosen
                        .iter()
                        .map(|&i| self.destinations[i].name())
                        .collect();
                    let notice = self.notice_for(&delivery);
                    let book = Arc::new(LaneBook::new(&delivery, &names, due.len(), notice));
                    book.fail_gone(&gone, now.as_str());
                    if due.is_empty() {
                        // Nothing to call: what its lanes say now is all.
                        let outcome = self.close_without_calls(&book, &now).await;
                        book.lock().outcome = Some(outcome);
                    }
                    for &index in &due {
                        shares[index].push(slot, delivery.clone(), Some(Arc::clone(&book)));
                    }
                    books.push(Some(book));
                }
            }
        }
        let mut outcomes = vec![RecordOutcome::Deferred; books.len()];
        let runs: Vec<_> = shares
            .into_iter()
            .enumerate()
            .filter(|(_, share)| !share.deliveries.is_empty())
            .map(|(index, share)| async move {
                let Share {
                    slots,
                    deliveries,
                    books,
                } = share;
                let alone: Vec<bool> = books.iter().map(Option::is_none).collect();
                let destination = &self.destinations[index];
                let delivered = self
                    .deliver_routed(destination, deliveries, books, via, deadline, started)
                    .await;
                (slots, alone, delivered)
            })
            .collect();
        for (slots, alone, delivered) in futures_util::future::join_all(runs).await {
            for ((slot, alone), outcome) in slots.into_iter().zip(alone).zip(delivered) {
                if alone {
                    outcomes[slot] = outcome;
                }
            }
        }
        for (slot, book) in books.into_iter().enumerate() {
            if let Some(book) = book {
                outcomes[slot] = book.outcome();
            }
        }
        outcomes
    }

    /// The destinations a receipt goes to: in a stack of one, that one;
    /// in a stack of several, those its route (else the routes file)
    /// chooses, else every one; once it has lanes, those they name, and of
    /// them those due now. A lane settled FAILED on a receipt that is
    /// RECEIVED again was redriven: it is due.
    fn plan(&self, delivery: &Delivery, routes: Option<&Routes>, now: &str) -> Plan {
        if self.destinations.len() == 1 {
            return Plan::Alone(0);
        }
        let stored = &delivery.receipt.destinations;
        let index_of = |name: &str| self.destinations.iter().position(|d| d.name() == name);
        if stored.is_empty() {
            let route = delivery.lead.route.as_deref();
            let chosen: Vec<usize> = match routes.and_then(|routes| routes.destinations_of(route)) {
                // Names the stack lacks were refused with the routes.
                Some(names) => names.iter().filter_map(|name| index_of(name)).collect(),
                None => (0..self.destinations.len()).collect(),
            };
            return Plan::Lanes {
                due: chosen.clone(),
                chosen,
                gone: Vec::new(),
            };
        }
        let redriven = stored.values().all(|lane| lane.state.is_settled());
        let mut chosen = Vec::new();
        let mut due = Vec::new();
        let mut gone = Vec::new();
        for (name, lane) in stored {
            let Some(index) = index_of(name) else {
                if lane.is_due(now) || (redriven && lane.state == LaneState::Failed) {
                    tracing::error!(
                        receipt = delivery.receipt.pk.as_str(),
                        destination = name.as_str(),
                        "a receipt's destination is no longer one of the stack's; its lane is FAILED"
                    );
                    gone.push(name.clone());
                }
                continue;
            };
            chosen.push(index);
            if lane.is_due(now) || (redriven && lane.state == LaneState::Failed) {
                due.push(index);
            }
        }
        Plan::Lanes { chosen, due, gone }
    }

    /// A receipt of several destinations none of which is called now: its
    /// lanes written with the status they make when something changed
    /// (a destination the stack no longer has failed); else, nothing.
    async fn close_without_calls(&self, book: &LaneBook, now: &Timestamp) -> RecordOutcome {
        let (lanes, changed) = {
            let state = book.lock();
            (state.lanes.clone(), state.changed)
        };
        if !changed {
            return RecordOutcome::Deferred;
        }
        let written = self.write_lanes(book, &lanes, 0, now).await;
        receipt_outcome(&lanes, &written)
    }

    /// One destination's delivery of a receipt of several landed: its lane
    /// kept, and written (saved while others are under way; with the
    /// receipt's status when it is the last). The destination's outcome
    /// (or the receipt's, for the last) and its log line.
    pub(super) async fn land(
        &self,
        name: &'static str,
        book: &LaneBook,
        landed: Landed,
        (via, started): (Via, Instant),
    ) -> RecordOutcome {
        let _one_at_a_time = book.writing.lock().await;
        let now = Timestamp::at(self.now());
        let (lanes, last, made, changed) = {
            let mut state = book.lock();
            if let Landed::Settled(settlement, made) = &landed {
                let lane = state
                    .lanes
                    .entry(name.to_owned())
                    .or_insert_with(Lane::pending);
                *lane = lane_after(lane, settlement, *made, now.as_str());
                state.made = state.made.saturating_add(*made);
                state.changed = true;
            }
            state.open = state.open.saturating_sub(1);
            (
                state.lanes.clone(),
                state.open == 0,
                state.made,
                state.changed,
            )
        };
        let written = match (&landed, last, changed) {
            (_, true, true) => Some(self.write_lanes(book, &lanes, made, &now).await),
            (Landed::Settled(..), false, _) => Some(match &book.held {
                Some(held) => self.ledger.save_lanes(&book.key, held, &lanes).await,
                None => Ok(Marked::NotPending),
            }),
            _ => None,
        };
        if last {
            // Written: what the lanes made of it; else nothing changed, and
            // this destination's outcome is the receipt's.
            let outcome = match (&written, &landed) {
                (Some(written), _) => receipt_outcome(&lanes, written),
                (None, Landed::Unrecorded(outcome)) => *outcome,
                (None, Landed::Settled(..)) => RecordOutcome::Deferred,
            };
            book.lock().outcome = Some(outcome);
        }
        match landed {
            Landed::Settled(settlement, made) => self.log_settlement(
                name,
                Some(&book.submission_id),
                &settlement,
                made,
                (via, started),
                written.unwrap_or(Ok(Marked::Updated)),
            ),
            Landed::Unrecorded(outcome) => {
                if let (true, Some(Err(error))) = (last, &written) {
                    let mut line =
                        OutcomeLine::new(Some(&book.submission_id), name, via, 0, started);
                    line.reason = Some(&error.0);
                    line.log(
                        Level::WARN,
                        RecordOutcome::FailedRetryable.code(),
                        "receipt delivery handled; its destinations' outcome could not be recorded",
                    );
                }
                outcome
            }
        }
    }

    /// The receipt's lanes and the status they make, in one update.
    async fn write_lanes(
        &self,
        book: &LaneBook,
        lanes: &Lanes,
        made: u32,
        now: &Timestamp,
    ) -> Result<Marked, LedgerError> {
        let attempt = AttemptRecord {
            attempts: made,
            at: now.clone(),
            lanes: Some(lanes.clone()),
        };
        let key = &book.key;
        let first_error = |state: LaneState| {
            lanes
                .values()
                .find(|lane| lane.state == state)
                .map(|lane| AttemptError {
                    code: lane.last_error.clone().unwrap_or_default(),
                    status: lane.last_http_status,
                })
        };
        let status = match Aggregate::of(lanes.values()) {
            Aggregate::Open { next_attempt_at } => {
                let at = next_attempt_at.map_or_else(|| now.clone(), Timestamp::from_stored);
                let error = first_error(LaneState::Pending).unwrap_or(AttemptError {
                    code: "pending".to_owned(),
                    status: None,
                });
                return self.ledger.defer(key, &at, &error, &attempt).await;
            }
            Aggregate::Settled(ReceiptStatus::Failed) => {
                let failure = first_error(LaneState::Failed).unwrap_or(AttemptError {
                    code: "failed".to_owned(),
                    status: None,
                });
                return self.ledger.mark_failed(key, &failure, &attempt).await;
            }
            Aggregate::Settled(status) => status,
        };
        let with_lead: Vec<&str> = lanes
            .iter()
            .filter(|(_, lane)| lane.state.has_lead())
            .map(|(name, _)| name.as_str())
            .collect();
        let ending = match status {
            ReceiptStatus::Refused => Ending::Refused(
                first_error(LaneState::Refused)
                    .map(|refusal| refusal.code)
                    .unwrap_or_default(),
            ),
            ReceiptStatus::Duplicate => Ending::Duplicate(String::new()),
            _ => Ending::Delivered(DeliveredRecord::unknown()),
        };
        let written = lanes.values().any(|lane| lane.state == LaneState::Written);
        let completion = Completion {
            expires_at: self.rules.retention.expiry_after(self.now()),
            keep_payload: self.rules.keep_payload,
            destination: with_lead.join(","),
            ending,
            notice: book.notice.clone().filter(|_| written),
        };
        self.ledger.mark_completed(key, &attempt, &completion).await
    }
}

/// What a receipt of several destinations came to, once its lanes were
/// written (`written`).
fn receipt_outcome(lanes: &Lanes, written: &Result<Marked, LedgerError>) -> RecordOutcome {
    match written {
        Err(_) => return RecordOutcome::FailedRetryable,
        Ok(Marked::NotPending) => return RecordOutcome::Skipped,
        Ok(Marked::Updated) => {}
    }
    match Aggregate::of(lanes.values()) {
        Aggregate::Open { .. } => RecordOutcome::Deferred,
        Aggregate::Settled(ReceiptStatus::Failed) => RecordOutcome::FailedPermanent,
        Aggregate::Settled(ReceiptStatus::Refused) => RecordOutcome::Refused,
        Aggregate::Settled(ReceiptStatus::Duplicate) => RecordOutcome::Duplicate,
        Aggregate::Settled(_) if lanes.values().any(|lane| lane.state == LaneState::Written) => {
            RecordOutcome::Upserted
        }
        Aggregate::Settled(_) => RecordOutcome::Stale,
    }
}

/// One destination's share of the routed receipts: their slots, the
/// deliveries, and the book of each that goes to several.
#[derive(Default)]
struct Share {
    slots: Vec<usize>,
    deliveries: Vec<Delivery>,
    books: Vec<Option<Arc<LaneBook>>>,
}

impl Share {
    fn push(&mut self, slot: usize, delivery: Delivery, book: Option<Arc<LaneBook>>) {
        self.slots.push(slot);
        self.deliveries.push(delivery);
        self.books.push(book);
    }
}
