//! What Zoho's answers mean, pure and table-tested. Built from Zoho's pages:
//! - the token endpoint: `{"access_token", "expires_in", "api_domain",
//!   "token_type"}`; a refused grant answers `{"error": "invalid_code"}`
//!   (a revoked or wrong refresh token) or `invalid_client`, with HTTP 200;
//!   too many token requests, `{"error": "Access Denied"}`:
//!   <https://www.zoho.com/crm/developer/docs/api/v8/refresh.html>;
//! - upsert, per record of `data[]`: `{"code": "SUCCESS", "action":
//!   "insert"|"update", "duplicate_field", "details": {"id"}, "status":
//!   "success"}`, or `{"code": "MANDATORY_NOT_FOUND"|"INVALID_DATA"|...,
//!   "details": {"api_name"}, "status": "error"}`; a whole request refused:
//!   `{"code", "details", "message", "status": "error"}`; `INVALID_TOKEN`
//!   (401) for an expired access token:
//!   <https://www.zoho.com/crm/developer/docs/api/v8/upsert-records.html>,
//!   <https://www.zoho.com/crm/developer/docs/api/v8/status-codes.html>;
//! - notes: `data[]` of `{"id", "Note_Title", "Note_Content"}`, 204 when
//!   there are none: <https://www.zoho.com/crm/developer/docs/api/v8/get-notes.html>.
//!
//! Messages are free text that may quote a value: only codes and field API
//! names are kept.

use std::time::Duration;

use serde_json::Value;

use crate::destinations::client::Called;
use crate::destinations::port::DestinationError;
use crate::destinations::shared_token::Refreshed;

/// Without `expires_in`, a token is taken to last Zoho's documented hour.
pub const DEFAULT_TOKEN_LIFE: Duration = Duration::from_secs(3600);

/// A 429 with no `Retry-After` waits this long (Zoho counts concurrent
/// calls per org and credits per rolling day).
pub const BUSY_WAIT: Duration = Duration::from_secs(10);

/// The token endpoint's answer: a token, a refusal of our credentials
/// (`destination-auth`), or a failure worth retrying.
pub fn token_answer(status: u16, body: &Value) -> Result<Refreshed, DestinationError> {
    if let Some(error) = body.get("error").and_then(Value::as_str) {
        return Err(match error {
            "invalid_code"
            | "invalid_client"
            | "invalid_client_secret"
            | "unauthorized_client"
            | "invalid_grant" => DestinationError::Unauthorized { status: 401 },
            _ => DestinationError::Retryable {
                status: Some(status),
                retry_after: Some(BUSY_WAIT),
                reason: "token-endpoint-refused".to_owned(),
            },
        });
    }
    match (status, body.get("access_token").and_then(Value::as_str)) {
        (200..=299, Some(token)) if !token.trim().is_empty() => Ok(Refreshed {
            token: token.to_owned(),
            expires_in: body
                .get("expires_in")
                .and_then(Value::as_u64)
                .map_or(DEFAULT_TOKEN_LIFE, Duration::from_secs),
        }),
        (400..=499, _) => Err(DestinationError::Unauthorized { status }),
        _ => Err(DestinationError::Retryable {
            status: Some(status),
            retry_after: None,
            reason: format!("token endpoint HTTP {status}"),
        }),
    }
}

/// Whether an answer says the access token is no longer valid: get
/// another (once per refused token across every instance).
pub fn token_refused(status: u16, body: &Value) -> bool {
    status == 401 && code(body) == Some("INVALID_TOKEN")
}

/// The meaning of an API answer as a whole.
pub fn answer_for(status: u16, retry_after: Option<Duration>, body: Value) -> Called {
    match status {
        204 => Called::Done(Value::Null),
        200..=299 => Called::Done(body),
        404 => Called::NotFound,
        429 => Called::Failed(DestinationError::Retryable {
            status: Some(429),
            retry_after: Some(retry_after.unwrap_or(BUSY_WAIT)),
            reason: "rate-limited".to_owned(),
        }),
        // A whole request refused (a module or field this org lacks, a
        // malformed request): ours to fix.
        400 | 422 => Called::Failed(DestinationError::Misconfigured {
            status: Some(status),
            reason: code(&body).unwrap_or("refused").to_owned(),
        }),
        _ => Called::Failed(crate::destinations::client::by_status(status, retry_after)),
    }
}

/// One record's result in an upsert's `data[]`: its id, or why not.
pub fn record_result(result: &Value) -> Result<String, DestinationError> {
    let id = result
        .get("details")
        .and_then(|details| details.get("id"))
        .and_then(|id| match id {
            Value::String(text) => shared::record::record_id(text),
            Value::Number(number) => Some(number.to_string()),
            _ => None,
        });
    let field = result
        .get("details")
        .and_then(|details| details.get("api_name"))
        .and_then(Value::as_str)
        .filter(|name| super::settings::is_api_name(name));
    match (result.get("status").and_then(Value::as_str), code(result)) {
        (Some("success"), _) => id.ok_or_else(|| DestinationError::retryable("record-without-id")),
        // A field the layout requires and the map does not send: ours.
        (_, Some("MANDATORY_NOT_FOUND")) => Err(DestinationError::Misconfigured {
            status: None,
            reason: format!("MANDATORY_NOT_FOUND: {}", field.unwrap_or("a field")),
        }),
        (_, Some(code @ ("INVALID_DATA" | "DUPLICATE_DATA" | "MULTIPLE_OR_MULTI_ERRORS"))) => {
            Err(DestinationError::Permanent {
                status: None,
                reason: match field {
                    Some(field) => format!("{code}: {field}"),
                    None => code.to_owned(),
                },
            })
        }
        (_, Some(code)) if is_code(code) => Err(DestinationError::Permanent {
            status: None,
            reason: code.to_owned(),
        }),
        _ => Err(DestinationError::retryable("unreadable-record-result")),
    }
}

/// The id of the note among `body`'s whose content holds `marker`.
/// Whether a list has another page: its `info.more_records`.
/// <https://www.zoho.com/crm/developer/docs/api/v8/get-related-records.html>.
pub fn more_records(body: &Value) -> bool {
    body["info"]["more_records"].as_bool() == Some(true)
}

pub fn note_with(body: &Value, marker: &str) -> Option<String> {
    body.get("data")?
        .as_array()?
        .iter()
        .find(|note| {
            note.get("Note_Content")
                .and_then(Value::as_str)
                .is_some_and(|text| text.contains(marker))
        })
        .and_then(|note| match note.get("id")? {
            Value::String(text) => shared::record::record_id(text),
            Value::Number(number) => Some(number.to_string()),
            _ => None,
        })
}

fn code(body: &Value) -> Option<&str> {
    body.get("code")
        .and_then(Value::as_str)
        .filter(|c| is_code(c))
}

/// A Zoho code: capitals, digits and `_` (never a message).
fn is_code(code: &str) -> bool {
    (1..=60).contains(&code.len())
        && code
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Zoho CRM gives no meaning of its own follows the one rule.
    #[test]
    fn an_answer_of_no_meaning_of_its_own_follows_the_one_rule() {
        for status in crate::destinations::client::UNSPECIFIC {
            assert_eq!(
                answer_for(*status, None, Value::Null),
                Called::Failed(crate::destinations::client::by_status(*status, None)),
                "{status}"
            );
        }
    }

    #[test]
    fn a_list_says_when_it_has_more_records() {
        let rows = [
            (serde_json::json!({"info": {"more_records": true}}), true),
            (serde_json::json!({"info": {"more_records": false}}), false),
            (serde_json::json!({"data": []}), false),
        ];
        for (body, more) in rows {
            assert_eq!(more_records(&body), more, "{body}");
        }
    }
    use serde_json::json;

    #[test]
    fn the_token_endpoints_answers() {
        let token = token_answer(200, &json!({"access_token": "1000.abc", "expires_in": 3600, "api_domain": "https://www.zohoapis.eu", "token_type": "Bearer"})).unwrap();
        assert_eq!(
            (token.token.as_str(), token.expires_in),
            ("1000.abc", Duration::from_secs(3600))
        );
        let short = token_answer(200, &json!({"access_token": "t", "expires_in": 90})).unwrap();
        assert_eq!(short.expires_in, Duration::from_secs(90));
        let rows = [
            (
                200,
                json!({"error": "invalid_code"}),
                DestinationError::Unauthorized { status: 401 },
            ),
            (
                200,
                json!({"error": "invalid_client"}),
                DestinationError::Unauthorized { status: 401 },
            ),
            (
                400,
                json!({"error": "Access Denied", "error_description": "You have made too many requests continuously."}),
                DestinationError::Retryable {
                    status: Some(400),
                    retry_after: Some(BUSY_WAIT),
                    reason: "token-endpoint-refused".into(),
                },
            ),
            (
                503,
                json!({}),
                DestinationError::Retryable {
                    status: Some(503),
                    retry_after: None,
                    reason: "token endpoint HTTP 503".into(),
                },
            ),
        ];
        for (status, body, expected) in rows {
            assert_eq!(token_answer(status, &body).err(), Some(expected), "{body}");
        }
    }

    #[test]
    fn each_records_result_means_one_thing_and_no_message_is_kept() {
        let rows = [
            (
                json!({"code": "SUCCESS", "action": "insert", "duplicate_field": null, "details": {"id": "4150868000002763016"}, "message": "record added", "status": "success"}),
                Ok("4150868000002763016".to_owned()),
            ),
            (
                json!({"code": "MANDATORY_NOT_FOUND", "details": {"api_name": "Company"}, "message": "required field not found", "status": "error"}),
                Err(DestinationError::Misconfigured {
                    status: None,
                    reason: "MANDATORY_NOT_FOUND: Company".into(),
                }),
            ),
            (
                json!({"code": "INVALID_DATA", "details": {"api_name": "Email"}, "message": "invalid data: ada@", "status": "error"}),
                Err(DestinationError::Permanent {
                    status: None,
                    reason: "INVALID_DATA: Email".into(),
                }),
            ),
            (
                json!({"code": "DUPLICATE_DATA", "details": {}, "message": "duplicate data", "status": "error"}),
                Err(DestinationError::Permanent {
                    status: None,
                    reason: "DUPLICATE_DATA".into(),
                }),
            ),
            (
                json!({"code": "ada@example.com", "status": "error"}),
                Err(DestinationError::retryable("unreadable-record-result")),
            ),
        ];
        for (result, expected) in rows {
            assert_eq!(record_result(&result), expected, "{result}");
        }
        assert!(token_refused(
            401,
            &json!({"code": "INVALID_TOKEN", "details": {}, "message": "invalid oauth token", "status": "error"})
        ));
        assert!(!token_refused(
            401,
            &json!({"code": "OAUTH_SCOPE_MISMATCH"})
        ));
        assert_eq!(
            answer_for(
                400,
                None,
                json!({"code": "INVALID_MODULE", "message": "the module name given seems to be invalid"})
            ),
            Called::Failed(DestinationError::Misconfigured {
                status: Some(400),
                reason: "INVALID_MODULE".into()
            })
        );
        assert_eq!(
            answer_for(204, None, Value::Null),
            Called::Done(Value::Null)
        );
    }

    #[test]
    fn a_lost_note_is_found_by_its_reference() {
        let notes = json!({"data": [
            {"id": "111", "Note_Title": "Form submission", "Note_Content": "Hello (ref 0000000000000000)"},
            {"id": "222", "Note_Title": "Form submission", "Note_Content": "Again (ref 1111111111111111)"}
        ], "info": {"more_records": false}});
        assert_eq!(
            note_with(&notes, "(ref 1111111111111111)"),
            Some("222".into())
        );
        assert_eq!(note_with(&Value::Null, "(ref 1111111111111111)"), None);
    }
}
