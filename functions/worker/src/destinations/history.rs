//! Every submission on its person's record, exactly once, at a CRM whose
//! creates have no idempotency key (Pipedrive's and HubSpot's notes,
//! Pipedrive's leads): what was done or may have been done is recorded on
//! the person's gate item (`memory`) before the next attempt needs it. An
//! item recorded written is done; one started whose answer was lost is
//! looked for on the person by its reference, and none is created again
//! until `lag` after the start (the CRM's listing may not show it yet);
//! otherwise the start is recorded, conditionally, then the item created
//! and its id recorded.
//!
//! The person's item stays small: recording one item written removes the
//! written ones exactly-once no longer needs (`prunable`): those beyond the
//! person's newest [`KEPT_WRITTEN`]. A start is kept until its outcome is
//! known (a lost answer is rare, and its retry resolves it). A submission
//! attempted before, delivered again while the person's item is full (its
//! settle lost, then many newer ones of the person), may have had its item
//! removed: it is looked for on the person by its reference before any
//! create.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::destinations::memory::{
    Begun, ItemMark, MemoryError, PersonMemory, Recalled, WrittenItem,
};
use crate::destinations::port::DestinationError;

/// Why a lead waits for an earlier create of its note to show.
pub const NOTE_IN_FLIGHT: &str = "note-create-in-flight";
/// Why a lead waits for an earlier create of its CRM lead to show.
pub const LEAD_IN_FLIGHT: &str = "lead-create-in-flight";

/// How many written items of a person are kept: a submission is settled
/// moments after its item is written, so only a lost settle, followed by
/// this many newer submissions of the person before its retry, finds its
/// item gone (and then looks for it on the person first).
pub const KEPT_WRITTEN: usize = 8;

/// The items of `recalled` that exactly-once no longer needs once `item`
/// is written: the written ones beyond the newest [`KEPT_WRITTEN`] (with
/// `item` among them). Pure.
pub fn prunable(recalled: &Recalled, item: &str) -> Vec<String> {
    let mut written: Vec<(&String, u64)> = recalled
        .items
        .iter()
        .filter(|(key, _)| key.as_str() != item)
        .filter_map(|(key, mark)| match mark {
            ItemMark::Written { at, .. } => Some((key, *at)),
            ItemMark::Started(_) => None,
        })
        .collect();
    // Newest first; the oldest go.
    written.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| b.0.cmp(a.0)));
    let mut pruned: Vec<String> = written
        .into_iter()
        .skip(KEPT_WRITTEN.saturating_sub(1))
        .map(|(key, _)| key.clone())
        .collect();
    pruned.sort();
    pruned
}

/// Whether `recalled` is full: a written item of the person's may have
/// been removed to keep it small.
fn may_have_pruned(recalled: &Recalled) -> bool {
    let written = recalled
        .items
        .values()
        .filter(|mark| matches!(mark, ItemMark::Written { .. }))
        .count();
    written >= KEPT_WRITTEN.saturating_sub(1)
}

/// The memory's key of a submission's note.
pub fn note_item(receipt: &str) -> String {
    format!("note:{receipt}")
}

/// The memory's key of a submission's CRM lead.
pub fn lead_item(receipt: &str) -> String {
    format!("lead:{receipt}")
}

/// A CRM's two calls for one thing a submission adds to its person's
/// record (its note, its lead), which carries the submission's reference.
pub trait CreateOnce: Send + Sync {
    /// Creates it on the record `person`: its id.
    fn create(&self, person: &str)
        -> impl Future<Output = Result<String, DestinationError>> + Send;

    /// Its id on `person`'s record, if an earlier create made it (found by
    /// its reference).
    fn find(
        &self,
        person: &str,
    ) -> impl Future<Output = Result<Option<String>, DestinationError>> + Send;
}

/// One person's items, as the person memory and the CRM stand.
pub struct Keeping<'a, M> {
    pub memory: &'a M,
    /// The person's gate item.
    pub gate: &'a str,
    /// What the memory held when the delivery began.
    pub recalled: &'a Recalled,
    /// How long the CRM may take to list a thing it created.
    pub lag: Duration,
    /// Whether the submission was attempted before (`Write::retried`): an
    /// item the memory no longer holds may then exist, and is looked for
    /// before it is created.
    pub retried: bool,
}

impl<M: PersonMemory> Keeping<'_, M> {
    /// Creates `item` on `person` through `api`, exactly once; a lead that
    /// must wait for an earlier create waits with reason `in_flight`.
    pub async fn once(
        &self,
        api: &impl CreateOnce,
        person: &str,
        item: &str,
        in_flight: &str,
    ) -> Result<(), DestinationError> {
        let now = epoch_seconds();
        let lag = self.lag.as_secs();
        match self.recalled.items.get(item) {
            Some(ItemMark::Written { .. }) => return Ok(()),
            Some(ItemMark::Started(at)) => {
                if let Some(id) = api.find(person).await? {
                    return self.remember(item, &id, now).await;
                }
                if let Some(wait) = in_flight_wait(Some(*at), now, lag) {
                    return Err(waiting(in_flight, wait));
                }
            }
            // Attempted before, and its record may have been removed: look.
            None if self.retried && may_have_pruned(self.recalled) => {
                if let Some(id) = api.find(person).await? {
                    return self.remember(item, &id, now).await;
                }
            }
            None => {}
        }
        match self
            .memory
            .begin_item(self.gate, item, now, now.saturating_sub(lag))
            .await
            .map_err(memory_error)?
        {
            Begun::Begun => {
                // From here a lost answer leaves the start recorded: the
                // next attempt looks for it before another create.
                let id = api.create(person).await?;
                self.remember(item, &id, now).await
            }
            Begun::Refused => Err(waiting(in_flight, self.lag)),
        }
    }

    /// `item` written as `id`, the items no longer needed removed.
    async fn remember(&self, item: &str, id: &str, now: u64) -> Result<(), DestinationError> {
        let pruned = prunable(self.recalled, item);
        let written = WrittenItem {
            id,
            at: now,
            pruned: &pruned,
        };
        self.memory
            .remember_item(self.gate, item, written)
            .await
            .map_err(memory_error)
    }
}

/// How long to wait for a create started at `started` (epoch seconds) to
/// show, `lag` seconds after it; `None` once it should.
pub fn in_flight_wait(started: Option<u64>, now: u64, lag: u64) -> Option<Duration> {
    let visible_at = started?.saturating_add(lag);
    (visible_at > now).then(|| Duration::from_secs(visible_at - now))
}

/// A retryable answer that asks to wait `wait` for the reason given.
pub fn waiting(reason: &str, wait: Duration) -> DestinationError {
    DestinationError::Retryable {
        status: None,
        retry_after: Some(wait),
        reason: reason.to_owned(),
    }
}

/// The memory's failure as the delivery's: retried, with a reason code.
pub fn memory_error(error: MemoryError) -> DestinationError {
    match error {
        MemoryError::Erased => DestinationError::retryable("person-erased-meanwhile"),
        MemoryError::Unavailable(code) => {
            DestinationError::retryable(format!("receipts table unavailable ({code})"))
        }
    }
}

pub fn epoch_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_newest_written_items_and_every_start_are_kept() {
        let mut recalled = Recalled::default();
        for n in 0..12u64 {
            recalled.items.insert(
                format!("note:r{n:02}"),
                ItemMark::Written {
                    id: format!("{n}"),
                    at: 1_000 + n,
                },
            );
        }
        recalled.items.insert(
            "note:legacy".into(),
            ItemMark::Written {
                id: "9".into(),
                at: 0,
            },
        );
        recalled
            .items
            .insert("note:start".into(), ItemMark::Started(60));
        let pruned = prunable(&recalled, "note:new");
        let mut expected: Vec<String> = (0..5).map(|n| format!("note:r{n:02}")).collect();
        expected.push("note:legacy".to_owned());
        expected.sort();
        assert_eq!(
            pruned,
            expected,
            "the newest {} and the new one stay, and every start",
            KEPT_WRITTEN - 1
        );
        assert!(may_have_pruned(&recalled));
        // The item being written is never among them.
        assert!(!prunable(&recalled, "note:r00").contains(&"note:r00".to_owned()));
        assert_eq!(
            prunable(&Recalled::default(), "note:new"),
            Vec::<String>::new()
        );
        assert!(!may_have_pruned(&Recalled::default()));
    }

    #[test]
    fn a_create_in_flight_waits_out_the_lag() {
        let rows = [
            (None, 1_000, 60, None),
            (Some(1_000), 1_000, 60, Some(60)),
            (Some(1_000), 1_059, 60, Some(1)),
            (Some(1_000), 1_060, 60, None),
            (Some(1_000), 5_000, 60, None),
        ];
        for (started, now, lag, wait) in rows {
            assert_eq!(
                in_flight_wait(started, now, lag),
                wait.map(Duration::from_secs),
                "{started:?} {now}"
            );
        }
    }
}
