//! Every submission on its person's record, exactly once, at a CRM whose
//! note create has no idempotency key (Pipedrive, HubSpot): what was done
//! or may have been done is recorded on the person's gate item
//! (`memory`) before the next attempt needs it. A note recorded written is
//! done; a note started whose answer was lost is looked for on the person
//! by its reference, and none is created again until `lag` after the
//! start (the CRM's listing may not show it yet); otherwise the start is
//! recorded, conditionally, then the note created and its id recorded.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use shared::history::SubmissionNote;

use crate::destinations::memory::{Begun, MemoryError, NoteMark, PersonMemory, Recalled};
use crate::destinations::port::DestinationError;

/// Why a lead waits for an earlier create of its note to show.
pub const NOTE_IN_FLIGHT: &str = "note-create-in-flight";

/// A CRM's two note calls.
pub trait NoteApi: Send + Sync {
    /// Creates `note` on the record `person`: the note's id.
    fn create_note(
        &self,
        person: &str,
        note: &SubmissionNote,
    ) -> impl Future<Output = Result<String, DestinationError>> + Send;

    /// The id of `person`'s note whose content holds `reference`, if any.
    fn find_note(
        &self,
        person: &str,
        reference: &str,
    ) -> impl Future<Output = Result<Option<String>, DestinationError>> + Send;
}

/// One submission's note, as the person memory and the CRM stand.
pub struct Keeping<'a, M> {
    pub memory: &'a M,
    /// The person's gate item.
    pub gate: &'a str,
    /// What the memory held when the delivery began.
    pub recalled: &'a Recalled,
    /// How long the CRM may take to list a note it created.
    pub lag: Duration,
}

impl<M: PersonMemory> Keeping<'_, M> {
    /// Writes the note of the receipt `receipt` on `person`, exactly once.
    pub async fn note_once(
        &self,
        api: &impl NoteApi,
        person: &str,
        receipt: &str,
        note: &SubmissionNote,
    ) -> Result<(), DestinationError> {
        let now = epoch_seconds();
        let lag = self.lag.as_secs();
        match self.recalled.notes.get(receipt) {
            Some(NoteMark::Written(_)) => return Ok(()),
            Some(NoteMark::Started(at)) => {
                if let Some(id) = api.find_note(person, &note.reference).await? {
                    return self
                        .memory
                        .remember_note(self.gate, receipt, &id)
                        .await
                        .map_err(memory_error);
                }
                if let Some(wait) = in_flight_wait(Some(*at), now, lag) {
                    return Err(waiting(NOTE_IN_FLIGHT, wait));
                }
            }
            None => {}
        }
        match self
            .memory
            .begin_note(self.gate, receipt, now, now.saturating_sub(lag))
            .await
            .map_err(memory_error)?
        {
            Begun::Begun => {
                // From here a lost answer leaves the start recorded: the
                // next attempt looks for the note before another create.
                let id = api.create_note(person, note).await?;
                self.memory
                    .remember_note(self.gate, receipt, &id)
                    .await
                    .map_err(memory_error)
            }
            Begun::Refused => Err(waiting(NOTE_IN_FLIGHT, self.lag)),
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
