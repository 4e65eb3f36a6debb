//! Brevo's calls, one method each (the pages are in the module's
//! documentation): the contact created or updated, a contact's id read
//! by its address, a contact's notes; and the one call path with its key,
//! its deadline and the meaning of its answer.

use reqwest::Method;
use serde_json::{json, Map, Value};
use shared::Lead;

use super::answers::{
    answer_for, contact_id, listed, note_id, note_with, reset_wait, Called, RESET_HEADER,
};
use super::{lists_to_join, Brevo, CONTACT_NOT_FOUND};
use crate::destinations::client::{self, url_of, TokenPlace};
use crate::destinations::history::CreateOnce;
use crate::destinations::memory::PersonMemory;
use crate::destinations::port::{CallDeadline, DestinationError};

/// How many notes one page of the listing holds (Brevo's default).
pub(super) const NOTES_PAGE: usize = 50;

/// Pages read before a lookup gives up (10,000 notes of one contact).
pub(super) const MAX_NOTE_PAGES: usize = 200;

impl<M: PersonMemory> Brevo<M> {
    /// Creates the contact, or updates the one with this address
    /// (`updateEnabled`): its attributes from the field map, and the
    /// lists the write joins. Its id: in a create's answer (201), read
    /// back by the address after an update (204, no body).
    pub(super) async fn upsert_contact(
        &self,
        email: &str,
        (lead, grants_consent): (&Lead, bool),
        deadline: CallDeadline,
    ) -> Result<u64, DestinationError> {
        let attributes: Map<String, Value> = self.field_map.apply(lead);
        let mut body = json!({
            "email": email,
            "attributes": attributes,
            "updateEnabled": true,
        });
        let lists = lists_to_join(lead, grants_consent);
        if !lists.is_empty() {
            body["listIds"] = json!(lists);
        }
        match self
            .call(
                Method::POST,
                &["v3", "contacts"],
                &[],
                Some(&body),
                deadline,
            )
            .await
        {
            Called::Done(answer) => match contact_id(&answer) {
                Some(id) => Ok(id),
                None => self
                    .contact_of(email, deadline)
                    .await?
                    .ok_or_else(|| DestinationError::retryable(CONTACT_NOT_FOUND)),
            },
            // The contacts path always exists: a 404 is a wrong base URL.
            Called::NotFound => Err(DestinationError::Misconfigured {
                status: Some(404),
                reason: "BREVO_BASE_URL: no contacts API there".to_owned(),
            }),
            Called::Failed(error) => Err(error),
        }
    }

    /// The id of the contact with this address, if there is one.
    pub(super) async fn contact_of(
        &self,
        email: &str,
        deadline: CallDeadline,
    ) -> Result<Option<u64>, DestinationError> {
        match self
            .call(
                Method::GET,
                &["v3", "contacts", email],
                &[("identifierType", "email_id")],
                None,
                deadline,
            )
            .await
        {
            Called::Done(answer) => contact_id(&answer)
                .map(Some)
                .ok_or_else(|| DestinationError::retryable("contact-read-without-id")),
            Called::NotFound => Ok(None),
            Called::Failed(error) => Err(error),
        }
    }

    /// A page of the contact's notes, newest first, from `offset`.
    pub(super) async fn notes_of(
        &self,
        contact: &str,
        offset: usize,
        deadline: CallDeadline,
    ) -> Result<Value, DestinationError> {
        let limit = NOTES_PAGE.to_string();
        let from = offset.to_string();
        let query = [
            ("entity", "contacts"),
            ("entityIds", contact),
            ("limit", limit.as_str()),
            ("offset", from.as_str()),
            ("sort", "desc"),
        ];
        match self
            .call(Method::GET, &["v3", "crm", "notes"], &query, None, deadline)
            .await
        {
            Called::Done(answer) => Ok(answer),
            Called::NotFound => Ok(Value::Array(Vec::new())),
            Called::Failed(error) => Err(error),
        }
    }

    /// One call, within `deadline`; once more with a renewed key after a
    /// 401.
    pub(super) async fn call(
        &self,
        method: Method,
        segments: &[&str],
        query: &[(&str, &str)],
        body: Option<&Value>,
        deadline: CallDeadline,
    ) -> Called {
        client::renewing_within(&self.key, deadline, || {
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
        match client::send_json(request, body, &self.key, TokenPlace::Header("api-key")).await {
            Ok(answered) => answer_for(
                answered.status,
                answered
                    .headers
                    .get(RESET_HEADER)
                    .and_then(|value| value.to_str().ok())
                    .and_then(reset_wait),
                answered.retry_after,
                answered.body,
            ),
            Err(error) => Called::Failed(error),
        }
    }
}

/// Brevo's calls for one submission's note, within its delivery's
/// deadline.
pub(super) struct Notes<'a, M> {
    pub(super) brevo: &'a Brevo<M>,
    pub(super) deadline: CallDeadline,
    /// The note's text as Brevo shows it (HTML), its reference at the end.
    pub(super) text: String,
    pub(super) reference: String,
}

impl<M: PersonMemory> CreateOnce for Notes<'_, M> {
    async fn create(&self, contact: &str) -> Result<String, DestinationError> {
        let Ok(id) = contact.parse::<u64>() else {
            return Err(DestinationError::retryable("contact-id-not-numeric"));
        };
        let body = json!({ "text": self.text, "contactIds": [id] });
        match self
            .brevo
            .call(
                Method::POST,
                &["v3", "crm", "notes"],
                &[],
                Some(&body),
                self.deadline,
            )
            .await
        {
            Called::Done(answer) => note_id(&answer)
                .ok_or_else(|| DestinationError::retryable("note-created-without-id")),
            Called::NotFound => Err(DestinationError::retryable(CONTACT_NOT_FOUND)),
            Called::Failed(error) => Err(error),
        }
    }

    /// The contact's note with this submission's reference: newest first,
    /// page after page until found or a page is short.
    async fn find(&self, contact: &str) -> Result<Option<String>, DestinationError> {
        for page in 0..MAX_NOTE_PAGES {
            let notes = self
                .brevo
                .notes_of(contact, page * NOTES_PAGE, self.deadline)
                .await?;
            if let Some(found) = note_with(&notes, &self.reference) {
                return Ok(Some(found));
            }
            if listed(&notes) < NOTES_PAGE {
                return Ok(None);
            }
        }
        Err(DestinationError::retryable("note-lookup-too-many-notes"))
    }
}
