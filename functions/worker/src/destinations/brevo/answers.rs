//! What Brevo's answers mean, pure and table-tested. Built from Brevo's
//! pages:
//! - errors: a JSON body with `code` (a fixed token such as
//!   `invalid_parameter`, `duplicate_parameter`, `document_not_found`) and
//!   `message` (which may quote the request); HTTP 400, 401, 402 ("Not
//!   enough credit, plan upgrade needed"), 403, 404:
//!   <https://developers.brevo.com/reference/create-contact> and the error
//!   model of Brevo's OpenAPI (as generated in the `sendinblue-v3` crate's
//!   `ErrorModel`). The code is kept; the message never is;
//! - throttling: 429 with `x-sib-ratelimit-limit`, `-remaining` and
//!   `-reset` (the seconds until the window resets), no `Retry-After`:
//!   <https://developers.brevo.com/docs/api-limits>.

use std::time::Duration;

use serde_json::Value;

use crate::destinations::client::by_status;
pub use crate::destinations::client::Called;
use crate::destinations::port::DestinationError;

/// A 429 without its reset header waits this long.
pub const RATE_WAIT: Duration = Duration::from_secs(10);

/// The longest reset honoured: Brevo's hourly windows reset within an hour.
pub const MAX_RESET: Duration = Duration::from_secs(3600);

/// The header that says when the rate limit resets, in seconds.
pub const RESET_HEADER: &str = "x-sib-ratelimit-reset";

/// The wait an `x-sib-ratelimit-reset` value asks for: whole seconds, at
/// most [`MAX_RESET`].
pub fn reset_wait(value: &str) -> Option<Duration> {
    let seconds: u64 = value.trim().parse().ok()?;
    Some(Duration::from_secs(seconds).min(MAX_RESET))
}

/// The meaning of an answer: `status`, when the rate limit resets (its
/// header), its `Retry-After`, and its body.
pub fn answer_for(
    status: u16,
    reset: Option<Duration>,
    retry_after: Option<Duration>,
    body: Value,
) -> Called {
    match status {
        200..=299 => Called::Done(body),
        404 => Called::NotFound,
        429 => Called::Failed(DestinationError::Retryable {
            status: Some(429),
            retry_after: Some(reset.or(retry_after).unwrap_or(RATE_WAIT)),
            reason: "rate-limited".to_owned(),
        }),
        // The account's credits or plan: ours to fix, the lead waits.
        402 => Called::Failed(DestinationError::Misconfigured {
            status: Some(402),
            reason: "Brevo asks for more credit or a plan upgrade".to_owned(),
        }),
        400 => Called::Failed(DestinationError::Permanent {
            status: Some(400),
            reason: code_of(&body).map_or_else(|| "refused (HTTP 400)".to_owned(), str::to_owned),
        }),
        _ => Called::Failed(by_status(status, retry_after)),
    }
}

/// An error's `code`, when it is one of Brevo's tokens (lower-case words
/// joined by `_`), which cannot carry an address or a name.
fn code_of(body: &Value) -> Option<&str> {
    body.get("code").and_then(Value::as_str).filter(|code| {
        (1..=40).contains(&code.len()) && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
    })
}

/// A contact's id in an answer (`id`, a whole number): the create's 201,
/// or a contact read back.
pub fn contact_id(body: &Value) -> Option<u64> {
    body.get("id")?.as_u64()
}

/// The id of the note among `notes` (a page of `GET /v3/crm/notes`, an
/// array) whose text holds `marker`.
pub fn note_with(notes: &Value, marker: &str) -> Option<String> {
    notes
        .as_array()?
        .iter()
        .find(|note| {
            note.get("text")
                .and_then(Value::as_str)
                .is_some_and(|text| text.contains(marker))
        })
        .and_then(note_id)
}

/// A note's id, as text (Brevo's note ids are strings).
pub fn note_id(note: &Value) -> Option<String> {
    match note.get("id")? {
        Value::String(id) if !id.is_empty() => Some(id.clone()),
        Value::Number(id) => Some(id.to_string()),
        _ => None,
    }
}

/// How many notes a page of the listing holds.
pub fn listed(notes: &Value) -> usize {
    notes.as_array().map_or(0, Vec::len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What Brevo gives no meaning of its own follows the one rule.
    #[test]
    fn an_answer_of_no_meaning_of_its_own_follows_the_one_rule() {
        for status in crate::destinations::client::UNSPECIFIC {
            assert_eq!(
                answer_for(*status, None, None, Value::Null),
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
                json!({"code": "duplicate_parameter", "message": "SMS of ada@example.com is already associated with another Contact"}),
                Called::Failed(DestinationError::Permanent {
                    status: Some(400),
                    reason: "duplicate_parameter".into(),
                }),
            ),
            (
                400,
                None,
                json!({"code": "ada@example.com", "message": "x"}),
                Called::Failed(DestinationError::Permanent {
                    status: Some(400),
                    reason: "refused (HTTP 400)".into(),
                }),
            ),
            (
                401,
                None,
                json!({"code": "unauthorized", "message": "Key not found"}),
                Called::Failed(DestinationError::Unauthorized { status: 401 }),
            ),
            (
                402,
                None,
                json!({"code": "not_enough_credits", "message": "Not enough credit, plan upgrade needed"}),
                Called::Failed(DestinationError::Misconfigured {
                    status: Some(402),
                    reason: "Brevo asks for more credit or a plan upgrade".into(),
                }),
            ),
            (
                404,
                None,
                json!({"code": "document_not_found", "message": "Contact does not exist"}),
                Called::NotFound,
            ),
            (
                429,
                Some(Duration::from_secs(42)),
                json!({"code": "too_many_requests"}),
                Called::Failed(DestinationError::Retryable {
                    status: Some(429),
                    retry_after: Some(Duration::from_secs(42)),
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
        for (status, reset, body, expected) in rows {
            let called = answer_for(status, reset, None, body.clone());
            assert_eq!(called, expected, "HTTP {status} {body}");
            assert!(!format!("{called:?}").contains("ada@"), "{called:?}");
        }
        assert_eq!(
            answer_for(201, None, None, json!({"id": 21})),
            Called::Done(json!({"id": 21}))
        );
    }

    #[test]
    fn the_reset_header_is_whole_seconds_capped_at_an_hour() {
        let rows = [
            ("42", Some(42)),
            (" 7 ", Some(7)),
            ("86400", Some(3600)),
            ("1.5", None),
            ("soon", None),
            ("-1", None),
        ];
        for (value, seconds) in rows {
            assert_eq!(
                reset_wait(value),
                seconds.map(Duration::from_secs),
                "{value}"
            );
        }
    }

    #[test]
    fn ids_are_read_from_contacts_and_notes() {
        assert_eq!(contact_id(&json!({"id": 21})), Some(21));
        assert_eq!(contact_id(&json!({"id": "21"})), None);
        assert_eq!(contact_id(&Value::Null), None);
        let notes = json!([
            {"id": "61a5ce5a2e0b1c02b1b8c3d4", "text": "Hello (ref 0000000000000000)", "contactIds": [21]},
            {"id": "61a5ce5a2e0b1c02b1b8c3d5", "text": "Again (ref 1111111111111111)", "contactIds": [21]}
        ]);
        assert_eq!(
            note_with(&notes, "(ref 1111111111111111)").as_deref(),
            Some("61a5ce5a2e0b1c02b1b8c3d5")
        );
        assert_eq!(note_with(&notes, "(ref 2222222222222222)"), None);
        assert_eq!(listed(&notes), 2);
        assert_eq!(listed(&json!({"error": 1})), 0);
    }
}
