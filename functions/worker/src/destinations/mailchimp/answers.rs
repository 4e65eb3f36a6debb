//! What Mailchimp's answers mean, pure and table-tested. Built from
//! Mailchimp's pages:
//! - errors: `application/problem+json` with `type`, `title`, `status`,
//!   `detail`, `instance`, and for a refused merge field `errors[]` with
//!   `field` and `message`:
//!   <https://mailchimp.com/developer/marketing/docs/errors/>. The `title`
//!   is one of Mailchimp's fixed phrases and is kept as the code; `detail`
//!   quotes the address and is never stored or logged;
//! - the refusals that are answers: a member "in a compliance state"
//!   (unsubscribed, cleaned, under compliance review) cannot be
//!   re-subscribed through the API, and a "Forgotten Email Not Subscribed"
//!   was deleted for good at the person's request (issue threads quoting
//!   them: ibericode/mailchimp-for-wordpress#798, tbar0970/jethro-pmm#656);
//! - throttling: at most 10 connections at once per account, 429 "Too Many
//!   Requests" past them, with no rate-limit headers:
//!   <https://mailchimp.com/developer/marketing/docs/fundamentals/#api-limits>.

use std::time::Duration;

use serde_json::Value;

use crate::destinations::port::DestinationError;

/// A member Mailchimp keeps from the API for good, by its error's title:
/// the person unsubscribed, bounced, was reviewed, or asked to be
/// forgotten. Only the person can subscribe again.
pub const REFUSALS: [&str; 2] = [
    "Member In Compliance State",
    "Forgotten Email Not Subscribed",
];

/// A 429 with no `Retry-After` waits this long: connections are freed as
/// calls end, within seconds.
pub const BUSY_WAIT: Duration = Duration::from_secs(5);

pub use crate::destinations::client::Called;

/// The meaning of an answer: `status`, its `Retry-After`, its body, and
/// the merge tags the request sent (a refusal naming one is ours to fix).
pub fn answer_for(
    status: u16,
    retry_after: Option<Duration>,
    body: Value,
    sent_tags: &[&str],
) -> Called {
    match status {
        200..=299 => Called::Done(body),
        404 => Called::NotFound,
        429 => Called::Failed(DestinationError::Retryable {
            status: Some(429),
            retry_after: Some(retry_after.unwrap_or(BUSY_WAIT)),
            reason: "rate-limited".to_owned(),
        }),
        400 | 422 => Called::Failed(refusal(status, &body, sent_tags)),
        _ => Called::Failed(crate::destinations::client::by_status(status, retry_after)),
    }
}

/// A refused request: the person, for good, when its title says so; ours
/// to fix when a merge field we sent is named; the lead's otherwise,
/// coded by the title (a fixed phrase), never by the detail.
fn refusal(status: u16, body: &Value, sent_tags: &[&str]) -> DestinationError {
    let title = body.get("title").and_then(Value::as_str).unwrap_or("");
    if let Some(code) = REFUSALS.iter().find(|refusal| title == **refusal) {
        return DestinationError::Refused {
            status: Some(status),
            code: (*code).to_owned(),
        };
    }
    let named = body
        .get("errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|error| error.get("field")?.as_str())
        .find_map(|field| sent_tags.iter().find(|tag| tag.eq_ignore_ascii_case(field)));
    if let Some(tag) = named {
        return DestinationError::Misconfigured {
            status: Some(status),
            reason: format!("FIELD_REFUSED: {tag}"),
        };
    }
    let code = if is_phrase(title) {
        title.to_owned()
    } else {
        format!("refused (HTTP {status})")
    };
    DestinationError::Permanent {
        status: Some(status),
        reason: code,
    }
}

/// A title that is one of Mailchimp's fixed phrases (words of letters),
/// and so cannot carry an address or a name from the request.
fn is_phrase(title: &str) -> bool {
    !title.is_empty()
        && title.len() <= 60
        && title.bytes().all(|b| b.is_ascii_alphabetic() || b == b' ')
}

/// A member's answer: its `web_id` (the number of its page in Mailchimp),
/// as text.
pub fn web_id(body: &Value) -> Option<String> {
    match body.get("web_id")? {
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// The id of the note among a member's notes whose text holds `marker`.
/// Where the next page of a member's notes starts, after the page at
/// `offset`: `None` once `total_items` are read (or a page was empty).
/// <https://mailchimp.com/developer/marketing/api/list-member-notes/list-recent-member-notes/>.
pub fn next_offset(body: &Value, offset: u64) -> Option<u64> {
    let listed = body["notes"].as_array().map_or(0, Vec::len) as u64;
    let next = offset + listed;
    let total = body["total_items"].as_u64().unwrap_or(0);
    (listed > 0 && next < total).then_some(next)
}

pub fn note_with(body: &Value, marker: &str) -> Option<String> {
    body.get("notes")?
        .as_array()?
        .iter()
        .find(|note| {
            note.get("note")
                .and_then(Value::as_str)
                .is_some_and(|text| text.contains(marker))
        })
        .and_then(|note| match note.get("id")? {
            Value::Number(number) => Some(number.to_string()),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Mailchimp gives no meaning of its own follows the one rule.
    #[test]
    fn an_answer_of_no_meaning_of_its_own_follows_the_one_rule() {
        for status in crate::destinations::client::UNSPECIFIC {
            assert_eq!(
                answer_for(*status, None, Value::Null, &[]),
                Called::Failed(crate::destinations::client::by_status(*status, None)),
                "{status}"
            );
        }
    }

    #[test]
    fn the_next_page_of_notes_starts_after_the_ones_read() {
        let page = |listed: usize, total: u64| serde_json::json!({"notes": vec![serde_json::json!({}); listed], "total_items": total});
        let rows = [
            (page(100, 250), 0, Some(100)),
            (page(100, 250), 100, Some(200)),
            (page(50, 250), 200, None),
            (page(0, 250), 200, None),
            (page(10, 10), 0, None),
            (serde_json::json!({"notes": []}), 0, None),
        ];
        for (body, offset, next) in rows {
            assert_eq!(next_offset(&body, offset), next, "{body} at {offset}");
        }
    }
    use serde_json::json;

    fn problem(title: &str, detail: &str) -> Value {
        json!({
            "type": "https://mailchimp.com/developer/marketing/docs/errors/",
            "title": title,
            "status": 400,
            "detail": detail,
            "instance": "995c5cb0-3280-4a6e-808b-3b096d0bb219"
        })
    }

    #[test]
    fn each_answer_means_one_thing_and_no_detail_is_kept() {
        let refused = |code: &str| {
            Called::Failed(DestinationError::Refused {
                status: Some(400),
                code: code.into(),
            })
        };
        let rows = [
            (200, None, json!({"web_id": 7}), refused("unused")),
            (
                400,
                None,
                problem(
                    "Forgotten Email Not Subscribed",
                    "ada@example.com was permanently deleted",
                ),
                refused("Forgotten Email Not Subscribed"),
            ),
            (
                400,
                None,
                problem(
                    "Member In Compliance State",
                    "ada@example.com is in a compliance state",
                ),
                refused("Member In Compliance State"),
            ),
            (
                400,
                None,
                problem("Invalid Resource", "ada@example.com looks fake or invalid"),
                Called::Failed(DestinationError::Permanent {
                    status: Some(400),
                    reason: "Invalid Resource".into(),
                }),
            ),
            (
                400,
                None,
                json!({"title": "Invalid Resource", "detail": "Your merge fields were invalid.",
                       "errors": [{"field": "COMPANY", "message": "Please enter a value"}]}),
                Called::Failed(DestinationError::Misconfigured {
                    status: Some(400),
                    reason: "FIELD_REFUSED: COMPANY".into(),
                }),
            ),
            (
                400,
                None,
                problem("ada@example.com is odd", ""),
                Called::Failed(DestinationError::Permanent {
                    status: Some(400),
                    reason: "refused (HTTP 400)".into(),
                }),
            ),
            (
                401,
                None,
                problem("API Key Invalid", "Your API key may be invalid"),
                Called::Failed(DestinationError::Unauthorized { status: 401 }),
            ),
            (
                404,
                None,
                problem("Resource Not Found", ""),
                Called::NotFound,
            ),
            (
                429,
                None,
                problem(
                    "Too Many Requests",
                    "You have exceeded the limit of 10 simultaneous connections.",
                ),
                Called::Failed(DestinationError::Retryable {
                    status: Some(429),
                    retry_after: Some(BUSY_WAIT),
                    reason: "rate-limited".into(),
                }),
            ),
            (
                503,
                Some(Duration::from_secs(3)),
                json!({}),
                Called::Failed(DestinationError::Retryable {
                    status: Some(503),
                    retry_after: Some(Duration::from_secs(3)),
                    reason: "HTTP 503".into(),
                }),
            ),
        ];
        for (status, retry_after, body, expected) in rows {
            let called = answer_for(status, retry_after, body.clone(), &["FNAME", "COMPANY"]);
            match (&called, &expected) {
                (Called::Done(done), _) => assert_eq!(done, &body),
                _ => assert_eq!(called, expected, "HTTP {status} {body}"),
            }
            assert!(!format!("{called:?}").contains("ada@"), "{called:?}");
        }
    }

    #[test]
    fn ids_are_read_from_members_and_notes() {
        assert_eq!(
            web_id(&json!({"id": "62eeb2", "web_id": 123})),
            Some("123".into())
        );
        assert_eq!(web_id(&json!({"id": "62eeb2"})), None);
        let notes = json!({"notes": [
            {"id": 1, "note": "Hello (ref 0000000000000000)"},
            {"id": 2, "note": "Again (ref 1111111111111111)"}
        ], "total_items": 2});
        assert_eq!(
            note_with(&notes, "(ref 1111111111111111)"),
            Some("2".into())
        );
        assert_eq!(note_with(&notes, "(ref 2222222222222222)"), None);
    }
}
