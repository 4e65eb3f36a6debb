//! Pipedrive's calls, one method each (the pages are in the module's
//! documentation): the person searched, created or updated, a person's
//! notes listed, and the one call path with its token, its deadline and
//! the meaning of its answer.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Map, Value};
use shared::Lead;

use super::answers::{answer_for, created_id, found_person, Called};
use super::{person_path, Pipedrive};
use crate::destinations::client::{self, TokenPlace};
use crate::destinations::memory::PersonMemory;
use crate::destinations::port::{CallDeadline, DestinationError};

impl<M: PersonMemory> Pipedrive<M> {
    /// The person search finds for `email`, if any.
    pub(super) async fn search(
        &self,
        email: &str,
        deadline: CallDeadline,
    ) -> Result<Option<String>, DestinationError> {
        let query = [
            ("term", email),
            ("fields", "email"),
            ("exact_match", "true"),
        ];
        match self
            .call(
                Method::GET,
                "/api/v2/persons/search",
                &query,
                None,
                &[],
                deadline,
            )
            .await
        {
            Called::Done(body) => Ok(found_person(&body)),
            Called::NotFound => Ok(None),
            Called::Failed(error) => Err(error),
        }
    }

    /// Creates the person; its id.
    pub(super) async fn create(
        &self,
        email: &str,
        lead: &Lead,
        deadline: CallDeadline,
    ) -> Result<String, DestinationError> {
        let (mut body, keys) = self.person_fields(lead);
        body.entry("name")
            .or_insert_with(|| Value::String(email.to_owned()));
        body.insert(
            "emails".to_owned(),
            json!([{"value": email, "primary": true, "label": "work"}]),
        );
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        match self
            .call(
                Method::POST,
                "/api/v2/persons",
                &[],
                Some(&Value::Object(body)),
                &keys,
                deadline,
            )
            .await
        {
            Called::Done(answer) => created_id(&answer)
                .ok_or_else(|| DestinationError::retryable("person-created-without-id")),
            Called::NotFound => Err(DestinationError::retryable("HTTP 404")),
            Called::Failed(error) => Err(error),
        }
    }

    /// Updates the person's fields; `None` when the person is gone.
    pub(super) async fn update(
        &self,
        id: &str,
        lead: &Lead,
        deadline: CallDeadline,
    ) -> Result<Option<()>, DestinationError> {
        let (body, keys) = self.person_fields(lead);
        if body.is_empty() {
            return Ok(Some(()));
        }
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let path = person_path(id)?;
        match self
            .call(
                Method::PATCH,
                &path,
                &[],
                Some(&Value::Object(body)),
                &keys,
                deadline,
            )
            .await
        {
            Called::Done(_) => Ok(Some(())),
            Called::NotFound => Ok(None),
            Called::Failed(error) => Err(error),
        }
    }

    /// Whether the person `id` is still in Pipedrive (`GET
    /// /api/v2/persons/{id}`; 404 when deleted or merged away):
    /// <https://developers.pipedrive.com/docs/api/v1/Persons#getPerson>.
    pub(super) async fn exists(
        &self,
        id: &str,
        deadline: CallDeadline,
    ) -> Result<bool, DestinationError> {
        let path = person_path(id)?;
        match self
            .call(Method::GET, &path, &[], None, &[], deadline)
            .await
        {
            Called::Done(_) => Ok(true),
            Called::NotFound => Ok(false),
            Called::Failed(error) => Err(error),
        }
    }

    /// The person's fields from `lead` (never its e-mail, which keys it):
    /// `name`, `phones`, and `custom_fields` by key; and the custom keys
    /// sent.
    pub(super) fn person_fields(&self, lead: &Lead) -> (Map<String, Value>, Vec<String>) {
        let mut body = Map::new();
        let mut custom = Map::new();
        for (key, value) in self.field_map.apply(lead) {
            match key.as_str() {
                "name" => {
                    body.insert(key, value);
                }
                "phone" => {
                    body.insert(
                        "phones".to_owned(),
                        json!([{"value": value, "primary": true, "label": "work"}]),
                    );
                }
                "email" => {}
                _ => {
                    custom.insert(key, value);
                }
            }
        }
        let keys = custom.keys().cloned().collect();
        if !custom.is_empty() {
            body.insert("custom_fields".to_owned(), Value::Object(custom));
        }
        (body, keys)
    }

    /// One call, within `deadline`; once more with a renewed token after a
    /// 401.
    pub(super) async fn call(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
        sent_keys: &[&str],
        deadline: CallDeadline,
    ) -> Called {
        client::renewing_within(&self.token, deadline, || {
            self.call_once(method.clone(), path, query, body, sent_keys)
        })
        .await
    }

    pub(super) async fn call_once(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
        sent_keys: &[&str],
    ) -> Called {
        let url = match reqwest::Url::parse_with_params(&format!("{}{path}", self.base_url), query)
        {
            Ok(url) => url,
            Err(_) => {
                return Called::Failed(DestinationError::Permanent {
                    status: None,
                    reason: "request could not be built".to_owned(),
                })
            }
        };
        let request = self.client.request(method, url);
        match client::send_json(
            request,
            body,
            &self.token,
            TokenPlace::Header("x-api-token"),
        )
        .await
        {
            Ok(answered) => answer_for(
                answered.status,
                answered.retry_after,
                answered
                    .seconds_in("x-ratelimit-reset")
                    .map(Duration::from_secs),
                answered.body,
                sent_keys,
            ),
            Err(error) => Called::Failed(error),
        }
    }
}
