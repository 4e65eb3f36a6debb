//! What each submission adds to its person's record, exactly once
//! (`destinations::history`): its note, and, where its form's route asks
//! (`lead = true`), a Pipedrive lead titled with the route's name and the
//! person's. Each carries the submission's reference (`shared::history`),
//! by which a create whose answer was lost is found again.
//! - leads: `POST /api/v1/leads` (`title`, `person_id`), answer `data.id`
//!   (a UUID); `GET /api/v1/leads?person_id=`, answer `data[]` with `id`,
//!   `title`: <https://developers.pipedrive.com/docs/api/v1/Leads>.

use reqwest::Method;
use serde_json::json;
use shared::history::SubmissionNote;

use super::answers::{created_id, item_with, next_start, Called};
use super::{numeric, Pipedrive};
use crate::destinations::history::{
    lead_item, note_item, CreateOnce, Keeping, LEAD_IN_FLIGHT, NOTE_IN_FLIGHT,
};
use crate::destinations::memory::{PersonMemory, Recalled};
use crate::destinations::port::{CallDeadline, DestinationError, Write};

impl<M: PersonMemory> Pipedrive<M> {
    /// The note of `write` on `person`, then its lead where its route asks
    /// for one; each exactly once.
    pub(super) async fn keep_items(
        &self,
        gate: &str,
        person: &str,
        write: Write<'_>,
        recalled: &Recalled,
        deadline: CallDeadline,
    ) -> Result<(), DestinationError> {
        let note = SubmissionNote::of(write.lead, write.key, &self.field_map);
        let keeping = Keeping {
            memory: &self.memory,
            gate,
            recalled,
            lag: self.search_lag,
            retried: write.retried,
        };
        let receipt = write.key.as_str();
        let items = Items {
            pipedrive: self,
            deadline,
            note: &note,
            title: String::new(),
        };
        keeping
            .once(&items, person, &note_item(receipt), NOTE_IN_FLIGHT)
            .await?;
        let Some(route) = write.lead.route.as_deref().filter(|route| route.lead) else {
            return Ok(());
        };
        let who = [write.lead.name.trim(), write.lead.email.trim()]
            .into_iter()
            .find(|text| !text.is_empty())
            .unwrap_or("a submission");
        let lead = Leads(Items {
            title: format!(
                "{}: {who} {}",
                route.name.as_deref().unwrap_or("Form"),
                note.reference
            ),
            ..items
        });
        keeping
            .once(&lead, person, &lead_item(receipt), LEAD_IN_FLIGHT)
            .await
    }
}

/// Pipedrive's calls for one submission's items, within its delivery's
/// deadline.
struct Items<'a, M> {
    pipedrive: &'a Pipedrive<M>,
    deadline: CallDeadline,
    note: &'a SubmissionNote,
    /// The lead's title (its reference at the end).
    title: String,
}

impl<M: PersonMemory> Items<'_, M> {
    async fn post(&self, path: &str, body: serde_json::Value) -> Result<String, DestinationError> {
        match self
            .pipedrive
            .call(Method::POST, path, &[], Some(&body), &[], self.deadline)
            .await
        {
            Called::Done(answer) => {
                created_id(&answer).ok_or_else(|| DestinationError::retryable("created-without-id"))
            }
            Called::NotFound => Err(DestinationError::retryable(super::PERSON_GONE)),
            Called::Failed(error) => Err(error),
        }
    }

    /// The id of the person's item at `path` whose `field` holds the
    /// submission's reference: newest first, page after page until it is
    /// found or the list ends (a busy person has hundreds of notes).
    async fn find_in(
        &self,
        path: &str,
        person: &str,
        field: &str,
    ) -> Result<Option<String>, DestinationError> {
        let person = numeric(person).to_string();
        let mut start = 0u64;
        for _ in 0..MAX_LIST_PAGES {
            let from = start.to_string();
            let query = [
                ("person_id", person.as_str()),
                ("start", from.as_str()),
                ("limit", LIST_PAGE),
                ("sort", "add_time DESC"),
            ];
            let body = match self
                .pipedrive
                .call(Method::GET, path, &query, None, &[], self.deadline)
                .await
            {
                Called::Done(body) => body,
                Called::NotFound => return Ok(None),
                Called::Failed(error) => return Err(error),
            };
            if let Some(found) = item_with(&body, field, &self.note.reference) {
                return Ok(Some(found));
            }
            match next_start(&body, start) {
                Some(next) => start = next,
                None => return Ok(None),
            }
        }
        Err(DestinationError::retryable("item-lookup-too-many-items"))
    }
}

/// Items one list page holds (Pipedrive's most).
const LIST_PAGE: &str = "500";

/// Pages read before a lookup gives up (100,000 items of one person).
const MAX_LIST_PAGES: usize = 200;

impl<M: PersonMemory> CreateOnce for Items<'_, M> {
    async fn create(&self, person: &str) -> Result<String, DestinationError> {
        let body = json!({"content": self.note.html(), "person_id": numeric(person)});
        self.post("/api/v1/notes", body).await
    }

    async fn find(&self, person: &str) -> Result<Option<String>, DestinationError> {
        self.find_in("/api/v1/notes", person, "content").await
    }
}

/// The lead's calls.
struct Leads<'a, M>(Items<'a, M>);

impl<M: PersonMemory> CreateOnce for Leads<'_, M> {
    async fn create(&self, person: &str) -> Result<String, DestinationError> {
        let body = json!({"title": self.0.title, "person_id": numeric(person)});
        self.0.post("/api/v1/leads", body).await
    }

    async fn find(&self, person: &str) -> Result<Option<String>, DestinationError> {
        self.0.find_in("/api/v1/leads", person, "title").await
    }
}
