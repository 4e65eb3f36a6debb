//! What Pipedrive's answers mean, pure and table-tested. Built from
//! Pipedrive's pages:
//! - errors: a JSON body with `success: false` and `error` (free text, never
//!   stored or logged: it may quote a value), 401 for a bad token, 403 for a
//!   user without the permission, 404 for a person gone:
//!   <https://pipedrive.readme.io/docs/core-api-concepts-http-status-codes>;
//! - rate limits: 429 with `Retry-After` (seconds), `x-ratelimit-reset`
//!   (seconds until the burst window resets) on every answer; a daily token
//!   budget per company, exhausted until the day's end:
//!   <https://pipedrive.readme.io/docs/core-api-concepts-rate-limiting>.

use std::time::Duration;

use serde_json::Value;

use crate::destinations::port::DestinationError;

/// Without `Retry-After` or `x-ratelimit-reset`, a 429 waits one burst
/// window (Pipedrive's windows are 2 seconds).
pub const BURST_WAIT: Duration = Duration::from_secs(2);

/// The longest a 429 is taken at its word: a daily budget spent says
/// "until midnight"; a pass then tries again rather than a lead waiting
/// in one invocation.
pub const MAX_RATE_WAIT: Duration = Duration::from_secs(3600);

pub use crate::destinations::client::Called;

/// The meaning of an answer: `status`, its wait headers, its body, and the
/// custom field keys the request sent (a 400 naming one is ours to fix).
pub fn answer_for(
    status: u16,
    retry_after: Option<Duration>,
    reset_after: Option<Duration>,
    body: Value,
    sent_keys: &[&str],
) -> Called {
    match status {
        200..=299 => Called::Done(body),
        404 => Called::NotFound,
        429 => Called::Failed(DestinationError::Retryable {
            status: Some(429),
            retry_after: Some(
                retry_after
                    .or(reset_after)
                    .unwrap_or(BURST_WAIT)
                    .min(MAX_RATE_WAIT),
            ),
            reason: "rate-limited".to_owned(),
        }),
        400 | 422 => Called::Failed(refusal(status, &body, sent_keys)),
        _ => Called::Failed(crate::destinations::client::by_status(status, retry_after)),
    }
}

/// A refused request: ours to fix when Pipedrive's error names a custom
/// field key we sent (the reason names that key, never the error's text);
/// the lead's otherwise.
fn refusal(status: u16, body: &Value, sent_keys: &[&str]) -> DestinationError {
    let said = [body.get("error"), body.get("error_info")]
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase();
    match sent_keys
        .iter()
        .find(|key| said.contains(&key.to_ascii_lowercase()))
    {
        Some(key) => DestinationError::Misconfigured {
            status: Some(status),
            reason: format!("FIELD_REFUSED: {key}"),
        },
        None => DestinationError::Permanent {
            status: Some(status),
            reason: format!("refused (HTTP {status})"),
        },
    }
}

/// The id in `data.id` of a create's answer, as text.
pub fn created_id(body: &Value) -> Option<String> {
    id_text(body.get("data")?.get("id")?)
}

/// The person's id a search found: of several persons with this address,
/// the oldest (lowest id), so every attempt picks the same one.
pub fn found_person(body: &Value) -> Option<String> {
    body.get("data")?
        .get("items")?
        .as_array()?
        .iter()
        .filter_map(|found| found.get("item")?.get("id")?.as_u64())
        .min()
        .map(|id| id.to_string())
}

/// The id of the item among `body`'s (a listing of notes or leads) whose
/// `field` (`content`, `title`) holds `marker`.
pub fn item_with(body: &Value, field: &str, marker: &str) -> Option<String> {
    body.get("data")?
        .as_array()?
        .iter()
        .find(|item| {
            item.get(field)
                .and_then(Value::as_str)
                .is_some_and(|text| text.contains(marker))
        })
        .and_then(|item| id_text(item.get("id")?))
}

/// Where a v1 list's next page starts, when there is one: its
/// `additional_data.pagination` (notes: `more_items_in_collection`,
/// `next_start`) or `additional_data` itself (leads: `start`, `limit`,
/// `more_items_in_collection`). `None` at the last page.
/// <https://developers.pipedrive.com/docs/api/v1/Notes#getNotes>,
/// <https://developers.pipedrive.com/docs/api/v1/Leads#getLeads>.
pub fn next_start(body: &Value, start: u64) -> Option<u64> {
    let additional = &body["additional_data"];
    let pagination = if additional["pagination"].is_object() {
        &additional["pagination"]
    } else {
        additional
    };
    if pagination["more_items_in_collection"].as_bool() != Some(true) {
        return None;
    }
    let listed = body["data"].as_array().map_or(0, Vec::len) as u64;
    let next = pagination["next_start"]
        .as_u64()
        .or_else(|| Some(pagination["start"].as_u64()? + pagination["limit"].as_u64()?))
        .unwrap_or(start + listed);
    // A page that moves nothing forward ends the walk.
    (next > start).then_some(next)
}

fn id_text(id: &Value) -> Option<String> {
    match id {
        Value::Number(number) => Some(number.to_string()),
        Value::String(text) => shared::record::record_id(text),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Pipedrive gives no meaning of its own follows the one rule.
    #[test]
    fn an_answer_of_no_meaning_of_its_own_follows_the_one_rule() {
        for status in crate::destinations::client::UNSPECIFIC {
            assert_eq!(
                answer_for(*status, None, None, Value::Null, &[]),
                Called::Failed(crate::destinations::client::by_status(*status, None)),
                "{status}"
            );
        }
    }

    #[test]
    fn a_list_says_where_its_next_page_starts() {
        let rows = [
            (
                json!({"data": [1, 2], "additional_data": {"pagination": {"start": 0, "limit": 2, "more_items_in_collection": true, "next_start": 2}}}),
                0,
                Some(2),
            ),
            (
                json!({"data": [1], "additional_data": {"pagination": {"start": 2, "limit": 2, "more_items_in_collection": false}}}),
                2,
                None,
            ),
            (
                json!({"data": [1, 2], "additional_data": {"start": 0, "limit": 2, "more_items_in_collection": true}}),
                0,
                Some(2),
            ),
            (
                json!({"data": [1, 2], "additional_data": {"more_items_in_collection": true}}),
                4,
                Some(6),
            ),
            (
                json!({"data": [], "additional_data": {"more_items_in_collection": true}}),
                4,
                None,
            ),
            (json!({"data": [1]}), 0, None),
        ];
        for (body, start, next) in rows {
            assert_eq!(next_start(&body, start), next, "{body}");
        }
    }
    use serde_json::json;

    const KEY: &str = "dcf558aac1ae4e8c4f849ba5e668430d8df9be12";

    #[test]
    fn answers() {
        let five = Some(Duration::from_secs(5));
        let rate = |wait: Duration| {
            Called::Failed(DestinationError::Retryable {
                status: Some(429),
                retry_after: Some(wait),
                reason: "rate-limited".into(),
            })
        };
        #[rustfmt::skip]
        type Row = (u16, Option<Duration>, Option<Duration>, Value, Called);
        let rows: Vec<Row> = vec![
            (
                201,
                None,
                None,
                json!({"success": true}),
                Called::Done(json!({"success": true})),
            ),
            (404, None, None, json!({}), Called::NotFound),
            (
                401,
                None,
                None,
                json!({}),
                Called::Failed(DestinationError::Unauthorized { status: 401 }),
            ),
            (
                403,
                None,
                None,
                json!({}),
                Called::Failed(DestinationError::Unauthorized { status: 403 }),
            ),
            (
                429,
                five,
                Some(Duration::from_secs(1)),
                json!({}),
                rate(Duration::from_secs(5)),
            ),
            (
                429,
                None,
                Some(Duration::from_secs(1)),
                json!({}),
                rate(Duration::from_secs(1)),
            ),
            (429, None, None, json!({}), rate(BURST_WAIT)),
            (
                429,
                Some(Duration::from_secs(50_000)),
                None,
                json!({}),
                rate(MAX_RATE_WAIT),
            ),
            (
                503,
                five,
                None,
                json!({}),
                Called::Failed(DestinationError::Retryable {
                    status: Some(503),
                    retry_after: five,
                    reason: "HTTP 503".into(),
                }),
            ),
            (
                400,
                None,
                None,
                json!({"success": false, "error": format!("Field {KEY} does not exist")}),
                Called::Failed(DestinationError::Misconfigured {
                    status: Some(400),
                    reason: format!("FIELD_REFUSED: {KEY}"),
                }),
            ),
            (
                400,
                None,
                None,
                json!({"success": false, "error": "Ada Lovelace's email is invalid"}),
                Called::Failed(DestinationError::Permanent {
                    status: Some(400),
                    reason: "refused (HTTP 400)".into(),
                }),
            ),
        ];
        for (status, retry_after, reset, body, expected) in rows {
            assert_eq!(
                answer_for(status, retry_after, reset, body.clone(), &[KEY]),
                expected,
                "{status} {body}"
            );
        }
    }

    #[test]
    fn ids_found_and_created() {
        assert_eq!(
            created_id(&json!({"data": {"id": 17}})).as_deref(),
            Some("17")
        );
        assert_eq!(
            created_id(&json!({"data": {"id": "Ada Lovelace"}})),
            None,
            "never free text"
        );
        assert_eq!(created_id(&json!({"data": null})), None);
        let found = json!({"data": {"items": [
            {"result_score": 1.0, "item": {"id": 42, "type": "person"}},
            {"result_score": 0.9, "item": {"id": 7, "type": "person"}}
        ]}});
        assert_eq!(found_person(&found).as_deref(), Some("7"), "the oldest");
        assert_eq!(found_person(&json!({"data": {"items": []}})), None);
        let notes = json!({"data": [
            {"id": 3, "content": "<p>hello</p><p>Submission staticforms:sub_2</p>"},
            {"id": 4, "content": "<p>hi</p><p>Submission staticforms:sub_1</p>"}
        ]});
        assert_eq!(
            item_with(&notes, "content", "Submission staticforms:sub_1").as_deref(),
            Some("4")
        );
        assert_eq!(
            item_with(&notes, "content", "Submission staticforms:sub_9"),
            None
        );
        assert_eq!(item_with(&json!({"data": null}), "content", "x"), None);
    }
}
