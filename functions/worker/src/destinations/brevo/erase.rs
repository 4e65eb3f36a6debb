//! A person erased at Brevo (`receipts forget --everywhere`): the notes on
//! their contact deleted, then the contact:
//! `DELETE /v3/crm/notes/{id}` (<https://developers.brevo.com/reference/delete-a-note>)
//! and `DELETE /v3/contacts/{identifier}?identifierType=contact_id`
//! (204 when deleted, 404 when there is no such contact:
//! <https://developers.brevo.com/reference/delete-contact>). Brevo does not
//! say that a contact's notes go with it, so they go first. The contact is
//! found by the address.

use reqwest::Method;

use super::answers::{listed, note_id, Called};
use super::calls::MAX_NOTE_PAGES;
use super::Brevo;
use crate::destinations::memory::PersonMemory;
use crate::destinations::port::{CallDeadline, DestinationError, Forgotten, Person};

const ERASE_TIME: std::time::Duration = std::time::Duration::from_secs(60);

impl<M: PersonMemory> Brevo<M> {
    pub(super) async fn erase_person(
        &self,
        person: Person<'_>,
    ) -> Result<Forgotten, DestinationError> {
        let deadline = CallDeadline::after(ERASE_TIME);
        let Some(contact) = self.contact_of(person.email, deadline).await? else {
            return Ok(Forgotten::NotFound);
        };
        let contact = contact.to_string();
        let mut deleted = 0u32;
        // Each page deleted is gone from the listing: always the first.
        for _ in 0..MAX_NOTE_PAGES {
            let notes = self.notes_of(&contact, 0, deadline).await?;
            if listed(&notes) == 0 {
                break;
            }
            for id in notes.as_array().into_iter().flatten().filter_map(note_id) {
                match self
                    .call(
                        Method::DELETE,
                        &["v3", "crm", "notes", &id],
                        &[],
                        None,
                        deadline,
                    )
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
                &["v3", "contacts", &contact],
                &[("identifierType", "contact_id")],
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
