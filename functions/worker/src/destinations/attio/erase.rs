//! A person erased at Attio (`receipts forget --everywhere`): the notes on
//! their record deleted, then the record: `DELETE /v2/notes/{note_id}`
//! (<https://docs.attio.com/rest-api/endpoint-reference/notes/delete-a-note>)
//! and `DELETE /v2/objects/people/records/{record_id}`
//! (<https://docs.attio.com/rest-api/endpoint-reference/records/delete-a-record>).
//! Attio does not say that a record's notes go with it, so they go first.
//! The record is found by the address; a company Attio made from the
//! address's domain is not the person's and stays.

use reqwest::Method;

use super::answers::{note_id, notes_in, Called};
use super::calls::MAX_NOTE_PAGES;
use super::Attio;
use crate::destinations::memory::PersonMemory;
use crate::destinations::port::{CallDeadline, DestinationError, Forgotten, Person};

const ERASE_TIME: std::time::Duration = std::time::Duration::from_secs(60);

impl<M: PersonMemory> Attio<M> {
    pub(super) async fn erase_person(
        &self,
        person: Person<'_>,
    ) -> Result<Forgotten, DestinationError> {
        let deadline = CallDeadline::after(ERASE_TIME);
        let Some(record) = self.find_person(person.email, deadline).await? else {
            return Ok(Forgotten::NotFound);
        };
        let mut deleted = 0u32;
        // Each page deleted is gone from the listing: always the first.
        for _ in 0..MAX_NOTE_PAGES {
            let page = self.notes_of(&record.id, 0, deadline).await?;
            let ids: Vec<String> = notes_in(&page).iter().filter_map(note_id).collect();
            if ids.is_empty() {
                break;
            }
            for id in ids {
                match self
                    .call(Method::DELETE, &["v2", "notes", &id], &[], None, deadline)
                    .await
                {
                    Called::Done(_) => deleted += 1,
                    Called::NotFound => {}
                    Called::Failed(error) => return Err(error),
                }
            }
        }
        match self
            .call(
                Method::DELETE,
                &["v2", "objects", "people", "records", &record.id],
                &[],
                None,
                deadline,
            )
            .await
        {
            Called::Done(_) => Ok(Forgotten::Deleted(deleted + 1)),
            Called::NotFound if deleted > 0 => Ok(Forgotten::Deleted(deleted)),
            Called::NotFound => Ok(Forgotten::NotFound),
            Called::Failed(error) => Err(error),
        }
    }
}
