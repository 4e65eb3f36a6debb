//! What Attio's answers mean, pure and table-tested. Built from Attio's
//! pages:
//! - errors: a JSON body with `status_code`, `type`, `code` (a fixed token
//!   such as `value_not_found`, `filter_error`, `not_found`) and `message`
//!   (which may quote the request); the code is kept, the message never
//!   is: <https://docs.attio.com/rest-api/endpoint-reference/records/list-records>;
//! - throttling: 429 with `Retry-After` as an HTTP date, "a rate limited
//!   response means that we have not processed the request, so it can be
//!   safely retried"; limits per second (100 reads, 25 writes):
//!   <https://docs.attio.com/rest-api/guides/rate-limiting>;
//! - 409 `concurrent_write_conflict`, "please try again": the one rule's
//!   retryable 409.
//! - records: `{"data": {"id": {"record_id": …}, "web_url": …}}` for one,
//!   `{"data": [ … ]}` for a query; notes: `{"data": {"id": {"note_id":
//!   …}, "content_plaintext": …}}`, and `{"data": [ … ]}` listed:
//!   <https://docs.attio.com/rest-api/endpoint-reference/people/upsert-a-person-record>,
//!   <https://docs.attio.com/rest-api/endpoint-reference/notes/list-notes>.

use std::time::Duration;

use serde_json::Value;

use crate::destinations::client::by_status;
pub use crate::destinations::client::Called;
use crate::destinations::port::DestinationError;

/// The least a 429 waits (Attio's windows are a second long; its
/// `Retry-After` date has whole seconds, so it may read as less).
pub const RATE_WAIT: Duration = Duration::from_secs(1);

/// The meaning of an answer: `status`, its `Retry-After`, and its body.
pub fn answer_for(status: u16, retry_after: Option<Duration>, body: Value) -> Called {
    match status {
        200..=299 => Called::Done(body),
        404 => Called::NotFound,
        429 => Called::Failed(DestinationError::Retryable {
            status: Some(429),
            retry_after: Some(retry_after.unwrap_or(RATE_WAIT).max(RATE_WAIT)),
            reason: "rate-limited".to_owned(),
        }),
        400 => Called::Failed(DestinationError::Permanent {
            status: Some(400),
            reason: code_of(&body).map_or_else(|| "refused (HTTP 400)".to_owned(), str::to_owned),
        }),
        _ => Called::Failed(by_status(status, retry_after)),
    }
}

/// An error's `code`, when it is one of Attio's tokens (lower-case words
/// joined by `_`), which cannot carry an address or a name.
fn code_of(body: &Value) -> Option<&str> {
    body.get("code").and_then(Value::as_str).filter(|code| {
        (1..=40).contains(&code.len()) && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
    })
}

/// A person record as the worker keeps it: its id, and its link when
/// Attio gave one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonRecord {
    pub id: String,
    pub web_url: Option<String>,
}

/// The record in `record` (one element of `data`).
fn person_in(record: &Value) -> Option<PersonRecord> {
    let id = record.get("id")?.get("record_id")?.as_str()?;
    (!id.is_empty()).then(|| PersonRecord {
        id: id.to_owned(),
        web_url: record
            .get("web_url")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

/// The record an assert or an update answered.
pub fn person_of(answer: &Value) -> Option<PersonRecord> {
    person_in(answer.get("data")?)
}

/// The first record a query answered, if any.
pub fn first_person(answer: &Value) -> Option<PersonRecord> {
    answer.get("data")?.as_array()?.iter().find_map(person_in)
}

/// A note's id (`id.note_id`) in one note.
pub fn note_id(note: &Value) -> Option<String> {
    let id = note.get("id")?.get("note_id")?.as_str()?;
    (!id.is_empty()).then(|| id.to_owned())
}

/// The listed notes of a page (`data`).
pub fn notes_in(page: &Value) -> &[Value] {
    page.get("data")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The id of the note of a page whose text holds `marker`.
pub fn note_with(page: &Value, marker: &str) -> Option<String> {
    notes_in(page)
        .iter()
        .find(|note| {
            note.get("content_plaintext")
                .and_then(Value::as_str)
                .is_some_and(|text| text.contains(marker))
        })
        .and_then(note_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What Attio gives no meaning of its own follows the one rule.
    #[test]
    fn an_answer_of_no_meaning_of_its_own_follows_the_one_rule() {
        for status in crate::destinations::client::UNSPECIFIC {
            assert_eq!(
                answer_for(*status, None, Value::Null),
                Called::Failed(by_status(*status, None)),
                "{status}"
            );
        }
    }

    #[test]
    fn each_answer_means_one_thing_and_no_message_is_kept() {
        let rows = [
            (
                400,
                None,
                json!({"status_code": 400, "type": "invalid_request_error", "code": "value_not_found",
                       "message": "No attribute was found for matching_attribute ada@example.com"}),
                Called::Failed(DestinationError::Permanent {
                    status: Some(400),
                    reason: "value_not_found".into(),
                }),
            ),
            (
                400,
                None,
                json!({"code": "ada@example.com"}),
                Called::Failed(DestinationError::Permanent {
                    status: Some(400),
                    reason: "refused (HTTP 400)".into(),
                }),
            ),
            (
                404,
                None,
                json!({"status_code": 404, "code": "not_found", "message": "Record not found"}),
                Called::NotFound,
            ),
            (
                429,
                Some(Duration::from_secs(3)),
                json!({"status_code": 429, "type": "rate_limit_error", "code": "rate_limit_exceeded"}),
                Called::Failed(DestinationError::Retryable {
                    status: Some(429),
                    retry_after: Some(Duration::from_secs(3)),
                    reason: "rate-limited".into(),
                }),
            ),
            // A date already past, or none: a second.
            (
                429,
                Some(Duration::ZERO),
                json!({}),
                Called::Failed(DestinationError::Retryable {
                    status: Some(429),
                    retry_after: Some(RATE_WAIT),
                    reason: "rate-limited".into(),
                }),
            ),
            (
                429,
                None,
                json!({}),
                Called::Failed(DestinationError::Retryable {
                    status: Some(429),
                    retry_after: Some(RATE_WAIT),
                    reason: "rate-limited".into(),
                }),
            ),
        ];
        for (status, retry_after, body, expected) in rows {
            let called = answer_for(status, retry_after, body.clone());
            assert_eq!(called, expected, "HTTP {status} {body}");
            assert!(!format!("{called:?}").contains("ada@"), "{called:?}");
        }
    }

    #[test]
    fn records_and_notes_are_read_from_their_answers() {
        let record = json!({"data": {
            "id": {"workspace_id": "w", "object_id": "o", "record_id": "bf071e1f-6035-429d-b874-d83ea64ea13b"},
            "web_url": "https://app.attio.com/acme/person/bf071e1f-6035-429d-b874-d83ea64ea13b",
            "values": {}
        }});
        assert_eq!(
            person_of(&record),
            Some(PersonRecord {
                id: "bf071e1f-6035-429d-b874-d83ea64ea13b".into(),
                web_url: Some(
                    "https://app.attio.com/acme/person/bf071e1f-6035-429d-b874-d83ea64ea13b".into()
                ),
            })
        );
        assert_eq!(person_of(&json!({"data": {"id": {}}})), None);
        assert_eq!(
            first_person(&json!({"data": [record["data"].clone()]})).map(|p| p.id),
            Some("bf071e1f-6035-429d-b874-d83ea64ea13b".into())
        );
        assert_eq!(first_person(&json!({"data": []})), None);
        let page = json!({"data": [
            {"id": {"note_id": "n-1"}, "content_plaintext": "Hello (ref 0000000000000000)"},
            {"id": {"note_id": "n-2"}, "content_plaintext": "Again (ref 1111111111111111)"}
        ]});
        assert_eq!(
            note_with(&page, "(ref 1111111111111111)").as_deref(),
            Some("n-2")
        );
        assert_eq!(note_with(&page, "(ref 2222222222222222)"), None);
        assert_eq!(notes_in(&page).len(), 2);
        assert_eq!(notes_in(&json!({"error": 1})).len(), 0);
    }
}
