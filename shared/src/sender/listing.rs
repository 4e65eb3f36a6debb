//! What a sender itself keeps: its API's list of a form's submissions,
//! read to find the ones whose webhook never reached us (`receipts audit`)
//! and to store them under the key their webhook would have had
//! (`receipts import`).
//!
//! Each sender with such an API declares it once in its module
//! (`Profile::api`): where it is, how fast it may be asked, how to ask for
//! a page of a form's submissions in a time window, and how to read a page
//! back. Reading a page turns each listed submission into the body its
//! webhook carries, so the sender's own parser gives it the same key and
//! the worker the same lead. Only rules live here: the HTTP calls are the
//! CLI's.

use std::time::{Duration, SystemTime};

use serde_json::Value;
use thiserror::Error;

use super::{FormSubmission, Sender};
use crate::envelope::EnvelopeError;

/// A sender's submissions API, declared in its module.
pub struct SenderApi {
    /// Where the API is unless `SENDER_API_BASE_URL` names another (a
    /// region's, a test server).
    pub base_url: &'static str,
    /// The least time between two requests, from its published limit.
    pub pace: Duration,
    /// Where its token is made and what it needs, for docs and errors.
    pub token_help: &'static str,
    /// How the token is presented.
    pub auth: ApiAuth,
    /// A request made once per form before its pages or its deletions
    /// (Typeform's form definition, which names its questions; the site
    /// Webflow's token reads); its answer is in each `PageAsk::definition`
    /// and `DeleteAsk::definition`.
    pub definition: Option<fn(&str) -> ApiRequest>,
    /// The request for a page (`ask.cursor` `None`: the first).
    pub page: fn(&PageAsk) -> ApiRequest,
    /// A page's body read back.
    pub read_page: ReadPage,
    /// How it deletes submissions, when it can (`receipts forget
    /// --everywhere`); `None`: the operator does it by hand, as the
    /// sender's `Profile::erasure` says.
    pub delete: Option<Deletion>,
}

/// A sender API's deletion of submissions.
#[derive(Debug, Clone, Copy)]
pub struct Deletion {
    /// How many ids one request may name.
    pub per_request: usize,
    /// The `DELETE` request for `ask.ids`; an error when the definition
    /// does not say where (a 404 there would read as "already gone").
    pub request: fn(&DeleteAsk) -> Result<ApiRequest, ListingError>,
    /// What the token needs to delete, said when the API refuses it.
    pub token_help: &'static str,
}

/// What a deletion is asked for.
#[derive(Debug, Clone, Copy)]
pub struct DeleteAsk<'a> {
    pub form: &'a str,
    /// At most `Deletion::per_request`, each as the listing gave it.
    pub ids: &'a [String],
    /// The answer to `SenderApi::definition`, when the API has one.
    pub definition: Option<&'a Value>,
}

/// How a sender's API takes its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiAuth {
    /// `Authorization: Bearer <token>`.
    Bearer,
    /// HTTP Basic with an empty user and the token as the password
    /// (`curl -u :API_KEY`, Formspree's).
    BasicPassword,
    /// The token alone in a header of the vendor's own (Jotform's
    /// `APIKEY`).
    Header(&'static str),
}

/// Reads a page's body, given what was asked.
pub type ReadPage = fn(&[u8], &PageAsk) -> Result<Page, ListingError>;

/// `SENDER_API_BASE_URL`: another base URL for the sender's API.
pub const SENDER_API_BASE_URL: &str = "SENDER_API_BASE_URL";

/// What a page is asked for.
#[derive(Debug, Clone, Copy)]
pub struct PageAsk<'a> {
    pub form: &'a str,
    pub since: SystemTime,
    pub until: SystemTime,
    /// Where the previous page said the next one starts.
    pub cursor: Option<&'a str>,
    /// The answer to `SenderApi::definition`, when the API has one.
    pub definition: Option<&'a Value>,
}

/// A request (a GET, or a deletion's DELETE), relative to the API's base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiRequest {
    pub path: String,
    pub query: Vec<(&'static str, String)>,
}

/// One page: the completed submissions it lists, and where the next page
/// starts (`None`: this was the last).
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub submissions: Vec<Listed>,
    /// Listed, but not complete: never a lead (a partial response).
    pub partial: usize,
    pub next: Option<String>,
}

/// One submission the sender lists, as its webhook would carry it.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub submission_id: String,
    pub submitted_at: Option<SystemTime>,
    /// The body of the webhook it would have sent.
    pub webhook_body: Value,
}

impl Listed {
    /// The submission its webhook would be, read by the sender's own
    /// parser: the same key and, for the worker, the same lead.
    pub fn submission(&self, sender: Sender) -> Result<FormSubmission, EnvelopeError> {
        sender.parse_submission(self.webhook_body.to_string().as_bytes())
    }

    /// Whether it was submitted in `[since, until)`; one that names no
    /// time is kept (the API was asked for the window already).
    pub fn is_within(&self, since: SystemTime, until: SystemTime) -> bool {
        self.submitted_at.is_none_or(|at| at >= since && at < until)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ListingError {
    #[error("the answer is not JSON")]
    NotJson,
    #[error("the answer has no {0}")]
    Missing(&'static str),
    #[error("the answer names no single {0}")]
    NoSingle(&'static str),
}

/// A form id as the senders' APIs take it in a path: letters, digits, `-`
/// and `_`, at most 64.
pub fn is_form_id(form: &str) -> bool {
    !form.is_empty()
        && form.len() <= 64
        && form
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The JSON of a page's body.
pub(crate) fn json_of(body: &[u8]) -> Result<Value, ListingError> {
    serde_json::from_slice(body).map_err(|_| ListingError::NotJson)
}

/// `at` as the APIs take a time: RFC 3339 in UTC, to the second.
pub(crate) fn api_time(at: SystemTime) -> String {
    let text = crate::time::format_timestamp(at);
    // 2026-12-01T10:00:00.000Z -> 2026-12-01T10:00:00Z
    match text.split_once('.') {
        Some((seconds, _)) => format!("{seconds}Z"),
        None => text,
    }
}

/// The time in a listed submission's text field.
pub(crate) fn time_at(item: &Value, field: &str) -> Option<SystemTime> {
    item.get(field)
        .and_then(Value::as_str)
        .and_then(crate::time::parse_timestamp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_window_is_closed_at_its_start_and_open_at_its_end() {
        let at = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        let listed = |when: Option<u64>| Listed {
            submission_id: "a".to_owned(),
            submitted_at: when.map(at),
            webhook_body: json!({}),
        };
        let rows = [
            (Some(99), false),
            (Some(100), true),
            (Some(199), true),
            (Some(200), false),
            (None, true),
        ];
        for (when, within) in rows {
            assert_eq!(listed(when).is_within(at(100), at(200)), within, "{when:?}");
        }
    }

    #[test]
    fn form_ids_fit_in_a_path() {
        let long = "x".repeat(65);
        for (form, ok) in [
            ("mexJoq", true),
            ("lT4Z3j-x_1", true),
            ("", false),
            ("a/b", false),
            ("..", false),
            ("a?b", false),
            (long.as_str(), false),
        ] {
            assert_eq!(is_form_id(form), ok, "{form}");
        }
    }

    #[test]
    fn api_times_are_utc_seconds() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_941_528_250);
        assert_eq!(api_time(at), "2026-11-29T08:38:48Z");
    }
}
