//! Mailchimp's calls, one method each (the pages are in the module's
//! documentation): the member added or updated, a route's tags on it, a
//! member's notes; and the one call path with its key, its deadline and
//! the meaning of its answer.

use reqwest::Method;
use serde_json::{json, Map, Value};
use shared::Lead;

use super::answers::{answer_for, next_offset, note_with, web_id, Called};
use super::{marketing_permission, status_if_new, Mailchimp, MEMBER_NOT_FOUND, WITHOUT_CONSENT};
use crate::destinations::client;
use crate::destinations::history::CreateOnce;
use crate::destinations::memory::PersonMemory;
use crate::destinations::port::{CallDeadline, DeliveredRecord, DestinationError};

/// How many of a member's notes one page holds.
const NOTES_PAGE: u64 = 100;

/// Pages read before a lookup gives up (100,000 notes of one member).
const MAX_NOTE_PAGES: u64 = 1_000;

impl<M: PersonMemory> Mailchimp<M> {
    /// Adds or updates the member: its record, by its `web_id` (its page's
    /// link carries the id in a query, which a receipt never keeps). A
    /// checked consent box sets the new member's status and the marketing
    /// permission only where the write grants consent.
    pub(super) async fn put_member(
        &self,
        member: &str,
        email: &str,
        (lead, grants_consent): (&Lead, bool),
        deadline: CallDeadline,
    ) -> Result<DeliveredRecord, DestinationError> {
        let merge_fields: Map<String, Value> = self.field_map.apply(lead);
        let tags: Vec<&str> = merge_fields.keys().map(String::as_str).collect();
        let mut body = json!({
            "email_address": email,
            "status_if_new": if grants_consent { status_if_new(lead) } else { WITHOUT_CONSENT },
            "merge_fields": merge_fields,
        });
        if let Some(permission) = marketing_permission(lead).filter(|_| grants_consent) {
            body["marketing_permissions"] =
                json!([{"marketing_permission_id": permission, "enabled": true}]);
        }
        let path = format!("/3.0/lists/{}/members/{member}", self.list_id);
        match self
            .call(Method::PUT, &path, &[], Some(&body), &tags, deadline)
            .await
        {
            Called::Done(answer) => {
                self.tag(member, lead, deadline).await?;
                Ok(web_id(&answer)
                    .map_or_else(DeliveredRecord::unknown, |id| DeliveredRecord::with_id(&id)))
            }
            // A member PUT creates the member: only the audience can be
            // missing, which is ours to fix.
            Called::NotFound => Err(DestinationError::Misconfigured {
                status: Some(404),
                reason: "MAILCHIMP_LIST_ID: no such audience".to_owned(),
            }),
            Called::Failed(error) => Err(error),
        }
    }

    /// The route's tags on the member: active, which they stay however
    /// often they are set (one call, none without tags).
    async fn tag(
        &self,
        member: &str,
        lead: &Lead,
        deadline: CallDeadline,
    ) -> Result<(), DestinationError> {
        let Some(route) = lead.route.as_deref().filter(|route| !route.tags.is_empty()) else {
            return Ok(());
        };
        let tags: Vec<Value> = route
            .tags
            .iter()
            .map(|name| json!({"name": name, "status": "active"}))
            .collect();
        let path = format!("/3.0/lists/{}/members/{member}/tags", self.list_id);
        match self
            .call(
                Method::POST,
                &path,
                &[],
                Some(&json!({ "tags": tags })),
                &[],
                deadline,
            )
            .await
        {
            Called::Done(_) => Ok(()),
            Called::NotFound => Err(DestinationError::retryable(MEMBER_NOT_FOUND)),
            Called::Failed(error) => Err(error),
        }
    }

    /// One call, within `deadline`; once more with a renewed key after a
    /// 401.
    pub(super) async fn call(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
        sent_tags: &[&str],
        deadline: CallDeadline,
    ) -> Called {
        client::renewing_within(&self.key, deadline, || {
            self.call_once(method.clone(), path, query, body, sent_tags)
        })
        .await
    }

    async fn call_once(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&Value>,
        sent_tags: &[&str],
    ) -> Called {
        let Ok(url) = reqwest::Url::parse_with_params(&format!("{}{path}", self.base_url), query)
        else {
            return Called::Failed(DestinationError::Permanent {
                status: None,
                reason: "request could not be built".to_owned(),
            });
        };
        let mut request = self.client.request(method, url);
        if let Some(body) = body {
            request = request.json(body);
        }
        match self.key.current() {
            Ok(Some(key)) => request = request.basic_auth("staticforms-to-crm", Some(key.expose())),
            Ok(None) => {}
            Err(unavailable) => {
                return Called::Failed(DestinationError::CredentialsUnavailable(unavailable))
            }
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => return Called::Failed(client::transport_error(&error)),
        };
        let status = response.status().as_u16();
        let retry_after = client::retry_after(&response);
        let body = client::json_capped(response).await;
        answer_for(status, retry_after, body, sent_tags)
    }
}

/// Mailchimp's calls for one submission's note, within its delivery's
/// deadline.
pub(super) struct Notes<'a, M> {
    pub(super) mailchimp: &'a Mailchimp<M>,
    pub(super) deadline: CallDeadline,
    /// The note's text, capped, its reference at the end.
    pub(super) text: String,
    pub(super) reference: String,
}

impl<M: PersonMemory> CreateOnce for Notes<'_, M> {
    async fn create(&self, member: &str) -> Result<String, DestinationError> {
        let path = format!(
            "/3.0/lists/{}/members/{member}/notes",
            self.mailchimp.list_id
        );
        let body = json!({ "note": self.text });
        match self
            .mailchimp
            .call(Method::POST, &path, &[], Some(&body), &[], self.deadline)
            .await
        {
            Called::Done(answer) => match answer.get("id") {
                Some(Value::Number(id)) => Ok(id.to_string()),
                _ => Err(DestinationError::retryable("note-created-without-id")),
            },
            Called::NotFound => Err(DestinationError::retryable(MEMBER_NOT_FOUND)),
            Called::Failed(error) => Err(error),
        }
    }

    /// The member's note with this submission's reference: newest first,
    /// page after page (`offset`, `total_items`) until found or done.
    async fn find(&self, member: &str) -> Result<Option<String>, DestinationError> {
        let path = format!(
            "/3.0/lists/{}/members/{member}/notes",
            self.mailchimp.list_id
        );
        let count = NOTES_PAGE.to_string();
        let mut offset = 0;
        for _ in 0..MAX_NOTE_PAGES {
            let from = offset.to_string();
            let query = [
                ("count", count.as_str()),
                ("offset", from.as_str()),
                ("sort_field", "created_at"),
                ("sort_dir", "DESC"),
            ];
            let answer = match self
                .mailchimp
                .call(Method::GET, &path, &query, None, &[], self.deadline)
                .await
            {
                Called::Done(answer) => answer,
                Called::NotFound => return Ok(None),
                Called::Failed(error) => return Err(error),
            };
            if let Some(found) = note_with(&answer, &self.reference) {
                return Ok(Some(found));
            }
            match next_offset(&answer, offset) {
                Some(next) => offset = next,
                None => return Ok(None),
            }
        }
        Err(DestinationError::retryable("note-lookup-too-many-notes"))
    }
}
