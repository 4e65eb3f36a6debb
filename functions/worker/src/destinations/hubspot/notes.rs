//! With contacts by email, every submission a note on its contact, exactly
//! once (`destinations::history`): the contact's own `message` holds the
//! newest submission's, and a repeat submitter's earlier messages stay on
//! the record as notes. A stale submission (a newer one of its person was
//! written) and one held back by a newer one in the same call still get
//! theirs.
//!
//! HubSpot's note create has no idempotency key (its batch upsert of notes
//! by a unique property would need the operator to create a unique note
//! property first), so the person memory records each note started and
//! written, and a note whose answer was lost is looked for among the
//! contact's notes by its reference. Built from HubSpot's pages:
//! - create a note with its association (note to contact: `HUBSPOT_DEFINED`
//!   type 202), `hs_timestamp` and `hs_note_body`:
//!   <https://developers.hubspot.com/docs/api-reference/2026-03/crm/activities/notes/basic/create-note>,
//!   <https://developers.hubspot.com/docs/guides/api/crm/engagements/notes>;
//! - a contact's associated notes (v4):
//!   <https://developers.hubspot.com/docs/api-reference/crm-associations-v4/basic/get-crm-v4-objects-objectType-objectId-associations-toObjectType>;
//! - notes read by id in a batch:
//!   <https://developers.hubspot.com/docs/api-reference/2026-03/crm/activities/notes/batch/read-notes>;
//! - a contact read by its email (`idProperty=email`):
//!   <https://developers.hubspot.com/docs/api-reference/2026-03/crm/objects/contacts/basic/get-contact>.

use std::collections::HashMap;
use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};
use shared::history::SubmissionNote;
use shared::newest::GateSecret;

use super::calls::{fail_where_failed, unbuildable, Calls};
use super::HubSpot;
use crate::destinations::history::{memory_error, note_item, CreateOnce, Keeping, NOTE_IN_FLIGHT};
use crate::destinations::memory::{AnyMemory, PersonMemory};
use crate::destinations::port::{Answer, CallDeadline, DestinationError, Upserted, Write};

/// Where HubSpot's notes are kept track of: what was done, recorded on
/// each person's gate item, and how long HubSpot may take to list a note
/// it created.
pub struct NoteKeeping {
    memory: AnyMemory,
    lag: Duration,
}

/// How long HubSpot may take to list a note it created among its contact's
/// associations: no second create of one note starts within it.
pub const NOTE_LAG: Duration = Duration::from_secs(60);

/// Why a note waits for its contact to appear.
const CONTACT_GONE: &str = "contact-not-found-for-note";

/// How many notes one batch read takes (HubSpot's most).
const NOTES_READ_AT_ONCE: usize = 100;

/// How many associations one listing page holds (HubSpot's most).
const ASSOCIATIONS_PAGE: &str = "500";

/// Pages of associations read before a lookup gives up (100,000 notes).
const MAX_ASSOCIATION_PAGES: usize = 200;

/// HubSpot's association type of a note to a contact.
const NOTE_TO_CONTACT: u32 = 202;

impl HubSpot {
    /// Keeps every submission as a note on its contact, recording what was
    /// done in `memory`; only with contacts by email (a contact per
    /// submission holds its own message).
    pub fn keeping_notes(mut self, memory: AnyMemory, lag: Duration) -> Self {
        if self.gate_secret.is_some() {
            self.notes = Some(NoteKeeping { memory, lag });
        }
        self
    }

    /// Each written or stale write's note, at most `concurrency` at once;
    /// a note that fails makes its write's answer that failure (the next
    /// attempt upserts the same contact again, then writes the note).
    pub(super) async fn keep_history(
        &self,
        notes: &NoteKeeping,
        writes: &[Write<'_>],
        answers: &mut [Answer],
        concurrency: usize,
        deadline: CallDeadline,
    ) {
        let Some(gate_secret) = &self.gate_secret else {
            return;
        };
        // The contacts this call wrote, by e-mail: a held-back or stale
        // submission of the same person goes on the same contact.
        let mut contacts: HashMap<String, String> = HashMap::new();
        for (write, answer) in writes.iter().zip(answers.iter()) {
            if let (Ok(Upserted::Written(record)), Some(email)) =
                (&answer.result, write.lead.normalised_email())
            {
                if let Some(id) = record.id() {
                    contacts.insert(email, id.to_owned());
                }
            }
        }
        let jobs: Vec<_> = writes
            .iter()
            .enumerate()
            .filter(|(slot, _)| answers[*slot].result.is_ok())
            .filter_map(|(slot, write)| Some((slot, *write, write.lead.normalised_email()?)))
            .map(|(slot, write, email)| {
                let known = contacts.get(&email).cloned();
                async move {
                    let result = self
                        .note_for(notes, gate_secret, write, &email, known, deadline)
                        .await;
                    (slot, result)
                }
            })
            .collect();
        fail_where_failed(answers, jobs, concurrency).await;
    }

    async fn note_for(
        &self,
        notes: &NoteKeeping,
        gate_secret: &GateSecret,
        write: Write<'_>,
        email: &str,
        known: Option<String>,
        deadline: CallDeadline,
    ) -> Result<(), DestinationError> {
        let gate = gate_secret.gate_key(email);
        let recalled = notes.memory.recall(&gate).await.map_err(memory_error)?;
        let note = SubmissionNote::of(write.lead, write.key, &self.field_map);
        let api = Notes {
            calls: Calls {
                hubspot: self,
                deadline,
                refused: "NOTE_REFUSED",
            },
            note: &note,
        };
        let contact = match known {
            Some(id) => id,
            None => match api.contact_by_email(email).await? {
                Some(id) => id,
                // An older submission whose contact is still missing when
                // it is tried again (the newer one's contact deleted, or
                // never written): nowhere to keep its note; it settles
                // stale rather than retrying until the age limit.
                None if write.history_only && write.retried => {
                    tracing::warn!(
                        destination = "hubspot",
                        reason = CONTACT_GONE,
                        "an older submission's contact is not in HubSpot: settled stale without its note"
                    );
                    return Ok(());
                }
                // The newer submission's contact may be written any moment.
                None => return Err(DestinationError::retryable(CONTACT_GONE)),
            },
        };
        let keeping = Keeping {
            memory: &notes.memory,
            gate: &gate,
            recalled: &recalled,
            lag: notes.lag,
            retried: write.retried,
        };
        keeping
            .once(
                &api,
                &contact,
                &note_item(write.key.as_str()),
                NOTE_IN_FLIGHT,
            )
            .await
    }
}

/// HubSpot's note calls, within one delivery's deadline.
struct Notes<'a> {
    calls: Calls<'a>,
    note: &'a SubmissionNote,
}

impl Notes<'_> {
    async fn contact_by_email(&self, email: &str) -> Result<Option<String>, DestinationError> {
        let mut url = self
            .calls
            .url(&self.calls.hubspot.api_version.objects_path("contacts"))?;
        url.path_segments_mut()
            .map_err(|_| unbuildable())?
            .push(email);
        url.query_pairs_mut().append_pair("idProperty", "email");
        Ok(self
            .calls
            .call(Method::GET, url, None)
            .await?
            .and_then(|body| id_of(&body["id"])))
    }
}

impl CreateOnce for Notes<'_> {
    async fn create(&self, contact: &str) -> Result<String, DestinationError> {
        let note = self.note;
        let body = json!({
            "properties": {"hs_timestamp": note.submitted_at, "hs_note_body": note.html()},
            "associations": [{
                "to": {"id": contact},
                "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": NOTE_TO_CONTACT}],
            }],
        });
        let url = self
            .calls
            .url(&self.calls.hubspot.api_version.objects_path("notes"))?;
        self.calls
            .call(Method::POST, url, Some(&body))
            .await?
            .and_then(|answer| id_of(&answer["id"]))
            .ok_or_else(|| DestinationError::retryable("note-created-without-id"))
    }

    async fn find(&self, contact: &str) -> Result<Option<String>, DestinationError> {
        if !is_numeric(contact) {
            return Err(DestinationError::retryable("contact-id-not-numeric"));
        }
        let mut ids = self.associated_notes(contact).await?;
        // Newest first (ids grow with time): a lost note is most likely
        // among the latest; every one is read until it is found.
        ids.sort_by_key(|id| std::cmp::Reverse(id.parse::<u64>().unwrap_or(0)));
        for chunk in ids.chunks(NOTES_READ_AT_ONCE) {
            if let Some(found) = self.with_reference(chunk).await? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }
}

impl Notes<'_> {
    /// The ids of every note associated with `contact`, page after page
    /// (HubSpot lists at most 500 a page, with a cursor to the next).
    async fn associated_notes(&self, contact: &str) -> Result<Vec<String>, DestinationError> {
        let mut ids = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..MAX_ASSOCIATION_PAGES {
            let mut listing = self.calls.url(&format!(
                "/crm/v4/objects/contacts/{contact}/associations/notes"
            ))?;
            listing
                .query_pairs_mut()
                .append_pair("limit", ASSOCIATIONS_PAGE);
            if let Some(cursor) = &after {
                listing.query_pairs_mut().append_pair("after", cursor);
            }
            let Some(page) = self.calls.call(Method::GET, listing, None).await? else {
                return Ok(ids);
            };
            ids.extend(
                page["results"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|result| id_of(&result["toObjectId"])),
            );
            match page["paging"]["next"]["after"].as_str() {
                Some(next) if !next.is_empty() => after = Some(next.to_owned()),
                _ => return Ok(ids),
            }
        }
        // More notes than any person has: say so rather than guess.
        Err(DestinationError::retryable("note-lookup-too-many-notes"))
    }

    /// The id of the note among `ids` whose body holds this submission's
    /// reference.
    async fn with_reference(&self, ids: &[String]) -> Result<Option<String>, DestinationError> {
        let reference = self.note.reference.as_str();
        let read = json!({
            "properties": ["hs_note_body"],
            "inputs": ids.iter().map(|id| json!({"id": id})).collect::<Vec<_>>(),
        });
        let url = self.calls.url(&format!(
            "{}/batch/read",
            self.calls.hubspot.api_version.objects_path("notes")
        ))?;
        let Some(notes) = self.calls.call(Method::POST, url, Some(&read)).await? else {
            return Ok(None);
        };
        Ok(notes["results"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|note| {
                note["properties"]["hs_note_body"]
                    .as_str()
                    .is_some_and(|body| body.contains(reference))
            })
            .and_then(|note| id_of(&note["id"])))
    }
}

fn id_of(value: &Value) -> Option<String> {
    match value {
        Value::Number(number) => Some(number.to_string()),
        Value::String(text) if is_numeric(text) => Some(text.clone()),
        _ => None,
    }
}

fn is_numeric(text: &str) -> bool {
    !text.is_empty() && text.len() <= 20 && text.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        assert_eq!(id_of(&json!(17)).as_deref(), Some("17"));
        assert_eq!(id_of(&json!("17")).as_deref(), Some("17"));
        assert_eq!(id_of(&json!("ada@example.com")), None);
    }
}
