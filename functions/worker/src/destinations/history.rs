//! Every submission on its person's record, exactly once, at a CRM whose
//! creates have no idempotency key (Pipedrive's and HubSpot's notes,
//! Pipedrive's leads): what was done or may have been done is recorded on
//! the person's gate item (`memory`) before the next attempt needs it. An
//! item recorded written is done; one started whose answer was lost is
//! looked for on the person by its reference, and none is created again
//! until `lag` after the start (the CRM's listing may not show it yet);
//! otherwise the start is recorded, conditionally, then the item created
//! and its id recorded.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::destinations::memory::{Begun, ItemMark, MemoryError, PersonMemory, Recalled};
use crate::destinations::port::DestinationError;

/// Why a lead waits for an earlier create of its note to show.
pub const NOTE_IN_FLIGHT: &str = "note-create-in-flight";
/// Why a lead waits for an earlier create of its CRM lead to show.
pub const LEAD_IN_FLIGHT: &str = "lead-create-in-flight";

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
            Some(ItemMark::Written(_)) => return Ok(()),
            Some(ItemMark::Started(at)) => {
                if let Some(id) = api.find(person).await? {
                    return self
                        .memory
                        .remember_item(self.gate, item, &id)
                        .await
                        .map_err(memory_error);
                }
                if let Some(wait) = in_flight_wait(Some(*at), now, lag) {
                    return Err(waiting(in_flight, wait));
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
                self.memory
                    .remember_item(self.gate, item, &id)
                    .await
                    .map_err(memory_error)
            }
            Begun::Refused => Err(waiting(in_flight, self.lag)),
        }
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
