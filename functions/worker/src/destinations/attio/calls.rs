//! Attio's calls, one method each (the pages are in the module's
//! documentation): a person found by address, asserted, updated; a
//! record's notes; and the one call path with its token, its deadline and
//! the meaning of its answer.

use reqwest::Method;
use serde_json::{json, Map, Value};

use super::answers::{answer_for, first_person, note_id, note_with, notes_in, person_of, Called};
use super::{Attio, PersonRecord, RECORD_NOT_FOUND};
use crate::destinations::client::{self, url_of, TokenPlace};
use crate::destinations::history::CreateOnce;
use crate::destinations::memory::PersonMemory;
use crate::destinations::port::{CallDeadline, DestinationError};

/// The people object's path.
const PEOPLE: [&str; 4] = ["v2", "objects", "people", "records"];

/// How many notes one page of the listing holds (Attio's most).
pub(super) const NOTES_PAGE: usize = 50;

/// Pages read before a lookup gives up (10,000 notes of one person).
pub(super) const MAX_NOTE_PAGES: usize = 200;

impl<M: PersonMemory> Attio<M> {
    /// The person record with this address, if there is one
    /// (`POST …/records/query` with the shorthand filter).
    pub(super) async fn find_person(
        &self,
        email: &str,
        deadline: CallDeadline,
    ) -> Result<Option<PersonRecord>, DestinationError> {
        let body = json!({"filter": {"email_addresses": email}, "limit": 1});
        let path = [&PEOPLE[..], &["query"]].concat();
        match self
            .call(Method::POST, &path, &[], Some(&body), deadline)
            .await
        {
            Called::Done(answer) => Ok(first_person(&answer)),
            Called::NotFound => Err(no_people_api()),
            Called::Failed(error) => Err(error),
        }
    }

    /// Creates the person with this address, or updates the one Attio
    /// matches on it (assert): used only when none had it a moment ago,
    /// because an assert replaces a multiselect's values, and a known
    /// person's other addresses are theirs to keep.
    pub(super) async fn assert_person(
        &self,
        email: &str,
        values: &Map<String, Value>,
        deadline: CallDeadline,
    ) -> Result<PersonRecord, DestinationError> {
        let mut values = values.clone();
        values.insert("email_addresses".to_owned(), json!([email]));
        let body = json!({"data": {"values": values}});
        match self
            .call(
                Method::PUT,
                &PEOPLE,
                &[("matching_attribute", "email_addresses")],
                Some(&body),
                deadline,
            )
            .await
        {
            Called::Done(answer) => {
                person_of(&answer).ok_or_else(|| DestinationError::retryable("record-without-id"))
            }
            Called::NotFound => Err(no_people_api()),
            Called::Failed(error) => Err(error),
        }
    }

    /// Writes `values` on the record `id` (a multiselect's values are
    /// added, none removed); `None` when the record is gone.
    pub(super) async fn update_person(
        &self,
        id: &str,
        values: &Map<String, Value>,
        deadline: CallDeadline,
    ) -> Result<Option<PersonRecord>, DestinationError> {
        let body = json!({"data": {"values": values}});
        let path = [&PEOPLE[..], &[id]].concat();
        match self
            .call(Method::PATCH, &path, &[], Some(&body), deadline)
            .await
        {
            Called::Done(answer) => person_of(&answer)
                .map(Some)
                .ok_or_else(|| DestinationError::retryable("record-without-id")),
            Called::NotFound => Ok(None),
            Called::Failed(error) => Err(error),
        }
    }

    /// A page of the record's notes, from `offset`.
    pub(super) async fn notes_of(
        &self,
        record: &str,
        offset: usize,
        deadline: CallDeadline,
    ) -> Result<Value, DestinationError> {
        let limit = NOTES_PAGE.to_string();
        let from = offset.to_string();
        let query = [
            ("parent_object", "people"),
            ("parent_record_id", record),
            ("limit", limit.as_str()),
            ("offset", from.as_str()),
        ];
        match self
            .call(Method::GET, &["v2", "notes"], &query, None, deadline)
            .await
        {
            Called::Done(answer) => Ok(answer),
            Called::NotFound => Ok(json!({"data": []})),
            Called::Failed(error) => Err(error),
        }
    }

    /// One call, within `deadline`; once more with a renewed token after a
    /// 401.
    pub(super) async fn call(
        &self,
        method: Method,
        segments: &[&str],
        query: &[(&str, &str)],
        body: Option<&Value>,
        deadline: CallDeadline,
    ) -> Called {
        client::renewing_within(&self.token, deadline, || {
            self.call_once(method.clone(), segments, query, body)
        })
        .await
    }

    async fn call_once(
        &self,
        method: Method,
        segments: &[&str],
        query: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Called {
        let Some(url) = url_of(&self.base_url, segments, query) else {
            return Called::Failed(DestinationError::Permanent {
                status: None,
                reason: "request could not be built".to_owned(),
            });
        };
        let request = self.client.request(method, url);
        match client::send_json(request, body, &self.token, TokenPlace::Bearer).await {
            Ok(answered) => answer_for(answered.status, answered.retry_after, answered.body),
            Err(error) => Called::Failed(error),
        }
    }
}

/// The people path always exists: a 404 there is a wrong base URL.
fn no_people_api() -> DestinationError {
    DestinationError::Misconfigured {
        status: Some(404),
        reason: "ATTIO_BASE_URL: no people records API there".to_owned(),
    }
}

/// Attio's calls for one submission's note, within its delivery's
/// deadline.
pub(super) struct Notes<'a, M> {
    pub(super) attio: &'a Attio<M>,
    pub(super) deadline: CallDeadline,
    /// The note's plain text, its reference at the end.
    pub(super) text: String,
    pub(super) reference: String,
}

impl<M: PersonMemory> CreateOnce for Notes<'_, M> {
    async fn create(&self, record: &str) -> Result<String, DestinationError> {
        let body = json!({"data": {
            "parent_object": "people",
            "parent_record_id": record,
            "title": super::NOTE_TITLE,
            "format": "plaintext",
            "content": self.text,
        }});
        match self
            .attio
            .call(
                Method::POST,
                &["v2", "notes"],
                &[],
                Some(&body),
                self.deadline,
            )
            .await
        {
            Called::Done(answer) => answer
                .get("data")
                .and_then(note_id)
                .ok_or_else(|| DestinationError::retryable("note-created-without-id")),
            Called::NotFound => Err(DestinationError::retryable(RECORD_NOT_FOUND)),
            Called::Failed(error) => Err(error),
        }
    }

    /// The record's note with this submission's reference, page after page
    /// until found or a page is short.
    async fn find(&self, record: &str) -> Result<Option<String>, DestinationError> {
        for page in 0..MAX_NOTE_PAGES {
            let notes = self
                .attio
                .notes_of(record, page * NOTES_PAGE, self.deadline)
                .await?;
            if let Some(found) = note_with(&notes, &self.reference) {
                return Ok(Some(found));
            }
            if notes_in(&notes).len() < NOTES_PAGE {
                return Ok(None);
            }
        }
        Err(DestinationError::retryable("note-lookup-too-many-notes"))
    }
}
