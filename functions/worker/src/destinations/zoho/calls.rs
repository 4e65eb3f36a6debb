//! Zoho's calls, one method each (the pages are in the module's
//! documentation): the shared access token and its refresh, the records'
//! upsert, a record found by e-mail, a record's notes; and the one call
//! path with its token, its deadline and the meaning of its answer.

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use reqwest::header::CONTENT_TYPE;
use reqwest::Method;
use serde_json::{json, Map, Value};
use shared::history::SubmissionNote;
use shared::Lead;

use super::answers::{
    answer_for, more_records, note_with, record_result, token_answer, token_refused,
};
use super::Zoho;
use crate::destinations::client::{self, Called};
use crate::destinations::history::CreateOnce;
use crate::destinations::memory::PersonMemory;
use crate::destinations::port::{CallDeadline, DestinationError};
use crate::destinations::shared_token::{Refreshed, StoredToken};
use crate::destinations::token::TOKEN_REFRESH_INTERVAL;

/// Every note's title: the submission's reference is in its content.
const NOTE_TITLE: &str = "Form submission";

/// How many of a record's notes one page holds (Zoho's most, 200).
const NOTES_PAGE: &str = "200";

/// Pages read before a lookup gives up (200,000 notes of one record).
const MAX_NOTE_PAGES: u32 = 1_000;

impl<M: PersonMemory> Zoho<M> {
    /// A fresh access token, shared by every instance (`refused`: the
    /// generation an answer said `INVALID_TOKEN` of).
    async fn access_token(&self, refused: Option<u64>) -> Result<StoredToken, DestinationError> {
        // Boxed: the refresh's future nests inside every call's, and the
        // whole would be too deep a type for the compiler to lay out.
        Box::pin(self.token.token(refused, || self.refresh())).await
    }

    /// A new access token from the accounts server; the credentials read
    /// again once if it refuses them (a rotated secret).
    async fn refresh(&self) -> Result<Refreshed, DestinationError> {
        let credentials = self
            .credentials
            .current()
            .map_err(DestinationError::CredentialsUnavailable)?;
        match self.token_request(&credentials).await {
            Err(DestinationError::Unauthorized { status }) => {
                match self
                    .credentials
                    .renew_if_older(TOKEN_REFRESH_INTERVAL, "token endpoint refused them")
                    .await
                {
                    Some(renewed) => self.token_request(&renewed).await,
                    None => Err(DestinationError::Unauthorized { status }),
                }
            }
            answer => answer,
        }
    }

    async fn token_request(
        &self,
        credentials: &super::ZohoCredentials,
    ) -> Result<Refreshed, DestinationError> {
        let encode = |text: &str| utf8_percent_encode(text, NON_ALPHANUMERIC).to_string();
        let form = format!(
            "refresh_token={}&client_id={}&client_secret={}&grant_type=refresh_token",
            encode(credentials.refresh_token.expose()),
            encode(&credentials.client_id),
            encode(credentials.client_secret.expose()),
        );
        let response = self
            .client
            .post(format!("{}/oauth/v2/token", self.accounts_url))
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .map_err(|error| client::transport_error(&error))?;
        let status = response.status().as_u16();
        let body = client::json_capped(response).await;
        token_answer(status, &body)
    }

    /// Upserts `leads` in one call: each one's record id, or why not, in
    /// order.
    pub(super) async fn upsert_records(
        &self,
        leads: &[&Lead],
        deadline: CallDeadline,
    ) -> Vec<Result<String, DestinationError>> {
        let data: Vec<Value> = leads
            .iter()
            .map(|lead| Value::Object(self.record(lead)))
            .collect();
        let body = json!({
            "data": data,
            "duplicate_check_fields": [self.duplicate_check_field],
            "trigger": self.trigger,
        });
        let path = format!("/crm/v8/{}/upsert", self.module);
        match self
            .call(Method::POST, &path, &[], Some(&body), deadline)
            .await
        {
            Called::Done(answer) => {
                let results = answer.get("data").and_then(Value::as_array);
                match results {
                    Some(results) if results.len() == leads.len() => {
                        results.iter().map(record_result).collect()
                    }
                    _ => vec![
                        Err(DestinationError::retryable("unreadable-upsert-answer"));
                        leads.len()
                    ],
                }
            }
            Called::NotFound => vec![
                Err(DestinationError::Misconfigured {
                    status: Some(404),
                    reason: "ZOHO_MODULE: no such module".to_owned(),
                });
                leads.len()
            ],
            Called::Failed(error) => vec![Err(error); leads.len()],
        }
    }

    /// A lead's record: the map's fields, and what keys it (the address,
    /// or the submission id in the duplicate check field).
    fn record(&self, lead: &Lead) -> Map<String, Value> {
        let mut record = self.field_map.apply(lead);
        if self.by_email() {
            if let Some(email) = lead.normalised_email() {
                record.insert("Email".to_owned(), Value::String(email));
            }
        } else {
            record.insert(
                self.duplicate_check_field.clone(),
                Value::String(lead.external_id.clone()),
            );
        }
        record
    }

    /// The id of the record whose e-mail is `email`, if any.
    pub(super) async fn find_by_email(
        &self,
        email: &str,
        deadline: CallDeadline,
    ) -> Result<Option<String>, DestinationError> {
        let path = format!("/crm/v8/{}/search", self.module);
        match self
            .call(Method::GET, &path, &[("email", email)], None, deadline)
            .await
        {
            Called::Done(answer) => Ok(answer
                .get("data")
                .and_then(Value::as_array)
                .and_then(|found| found.first())
                .and_then(|record| record.get("id"))
                .and_then(|id| match id {
                    Value::String(text) => shared::record::record_id(text),
                    Value::Number(number) => Some(number.to_string()),
                    _ => None,
                })),
            Called::NotFound => Ok(None),
            Called::Failed(error) => Err(error),
        }
    }

    /// One call within `deadline`, with the shared access token; once
    /// more with the next token when the answer says `INVALID_TOKEN`.
    pub(super) async fn call(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
        deadline: CallDeadline,
    ) -> Called {
        let mut refused = None;
        for _ in 0..2 {
            // The token too within the deadline: a slow accounts server, or
            // another instance's refresh waited for, never outlasts it.
            let token = match deadline.bound(self.access_token(refused)).await {
                Ok(token) => token,
                Err(error) => return Called::Failed(error),
            };
            let answer = deadline
                .bound(async {
                    Ok(self
                        .call_once(method.clone(), path, query, body, &token)
                        .await)
                })
                .await;
            match answer {
                Ok(Err((status, answer))) if token_refused(status, &answer) => {
                    refused = Some(token.generation);
                }
                Ok(Err((status, answer))) => return answer_for(status, None, answer),
                Ok(Ok(called)) => return called,
                Err(error) => return Called::Failed(error),
            }
        }
        Called::Failed(DestinationError::Unauthorized { status: 401 })
    }

    /// One call: its meaning, or a 401's status and body (which may ask
    /// for a new token).
    async fn call_once(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
        token: &StoredToken,
    ) -> Result<Called, (u16, Value)> {
        let Ok(url) = reqwest::Url::parse_with_params(&format!("{}{path}", self.api_url), query)
        else {
            return Ok(Called::Failed(DestinationError::Permanent {
                status: None,
                reason: "request could not be built".to_owned(),
            }));
        };
        let mut request = self
            .client
            .request(method, url)
            .header("Authorization", format!("Zoho-oauthtoken {}", token.token));
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => return Ok(Called::Failed(client::transport_error(&error))),
        };
        let status = response.status().as_u16();
        let retry_after = client::retry_after(&response);
        let answer = if status == 204 {
            Value::Null
        } else {
            client::json_capped(response).await
        };
        if status == 401 {
            return Err((status, answer));
        }
        Ok(answer_for(status, retry_after, answer))
    }
}

/// Zoho's calls for one submission's note on a record, within its
/// delivery's deadline.
pub(super) struct Notes<'a, M> {
    pub(super) zoho: &'a Zoho<M>,
    pub(super) record: &'a str,
    pub(super) note: &'a SubmissionNote,
    pub(super) deadline: CallDeadline,
}

impl<M: PersonMemory> Notes<'_, M> {
    fn path(&self) -> Result<String, DestinationError> {
        if self.record.bytes().all(|b| b.is_ascii_digit()) && !self.record.is_empty() {
            Ok(format!(
                "/crm/v8/{}/{}/Notes",
                self.zoho.module, self.record
            ))
        } else {
            Err(DestinationError::retryable(
                "recorded-record-id-not-numeric",
            ))
        }
    }
}

impl<M: PersonMemory> CreateOnce for Notes<'_, M> {
    async fn create(&self, _record: &str) -> Result<String, DestinationError> {
        let body = json!({"data": [{"Note_Title": NOTE_TITLE, "Note_Content": self.note.text}]});
        match self
            .zoho
            .call(Method::POST, &self.path()?, &[], Some(&body), self.deadline)
            .await
        {
            Called::Done(answer) => answer
                .get("data")
                .and_then(Value::as_array)
                .and_then(|results| results.first())
                .map_or(
                    Err(DestinationError::retryable("note-created-without-id")),
                    record_result,
                ),
            Called::NotFound => Err(DestinationError::retryable(super::RECORD_NOT_FOUND)),
            Called::Failed(error) => Err(error),
        }
    }

    /// The record's note with this submission's reference, page after
    /// page (`page`, `info.more_records`) until found or done.
    async fn find(&self, _record: &str) -> Result<Option<String>, DestinationError> {
        let path = self.path()?;
        for page in 1..=MAX_NOTE_PAGES {
            let number = page.to_string();
            let query = [
                ("fields", "Note_Title,Note_Content"),
                ("per_page", NOTES_PAGE),
                ("page", number.as_str()),
            ];
            let answer = match self
                .zoho
                .call(Method::GET, &path, &query, None, self.deadline)
                .await
            {
                Called::Done(answer) => answer,
                Called::NotFound => return Ok(None),
                Called::Failed(error) => return Err(error),
            };
            if let Some(found) = note_with(&answer, &self.note.reference) {
                return Ok(Some(found));
            }
            if !more_records(&answer) {
                return Ok(None);
            }
        }
        Err(DestinationError::retryable("note-lookup-too-many-notes"))
    }
}
