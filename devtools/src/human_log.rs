//! `make run`'s view of the functions' logs: one human line per event
//! (a delivery received, a lead delivered, deferred or failed) instead of
//! the JSON lines and metric lines Lambda would get. `LOGS=json make run`
//! shows the lines as they are. Reads only the fields the functions log
//! (`shared::logging`'s flattened JSON), none of which holds form data.

use serde_json::Value;

/// The line to print for one line a function wrote, or `None` to leave it
/// out (metric lines, routine INFO lines). A line that is not JSON (a
/// panic, a start-up message) is kept as it is.
pub fn human(line: &str) -> Option<String> {
    human_and_held(line).0
}

/// Whether a log line is ingest's account of a submission a spam rule held
/// back (`outcome: quarantined`): the sender got the same `202` as for any
/// new submission, so only the log tells.
pub fn held_back(line: &str) -> bool {
    human_and_held(line).1
}

fn human_and_held(line: &str) -> (Option<String>, bool) {
    let held = serde_json::from_str::<Value>(line).is_ok_and(|fields| {
        fields["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("webhook delivery"))
            && fields["outcome"] == "quarantined"
    });
    (said(line), held)
}

fn said(line: &str) -> Option<String> {
    let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(line) else {
        return Some(line.to_owned());
    };
    if fields.contains_key("_aws") {
        return None;
    }
    let text = |name: &str| match fields.get(name) {
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Number(number)) => Some(number.to_string()),
        Some(Value::Bool(flag)) => Some(flag.to_string()),
        _ => None,
    };
    let submission = text("submission_id").unwrap_or_else(|| "-".to_owned());
    let level = text("level").unwrap_or_default();
    let message = text("message").unwrap_or_default();
    if message.starts_with("webhook delivery") {
        let outcome = text("outcome").unwrap_or_default();
        let status = text("status").unwrap_or_default();
        let why = text("error").map(|e| format!(": {e}")).unwrap_or_default();
        return Some(format!(
            "received   {submission}: {outcome} ({status}){why}"
        ));
    }
    if message == "new-lead notice handled" {
        let status = text("http_status")
            .map(|s| format!(" (HTTP {s})"))
            .unwrap_or_default();
        return Some(match text("notice").as_deref() {
            Some("sent") => format!("notice     {submission}: sent"),
            Some("due again") => format!("notice     {submission}: refused{status}, will retry"),
            _ => format!("notice     {submission}: not confirmed{status}; not sent again (receipts show {submission})"),
        });
    }
    if let Some(outcome) = text("outcome").filter(|_| text("destination").is_some()) {
        let destination = text("destination").unwrap_or_default();
        let reason = text("reason")
            .or_else(|| text("auth_error").map(|_| "destination-auth".to_owned()))
            .unwrap_or_default();
        // The status, unless the reason already says it ("HTTP 503").
        let status = text("http_status")
            .filter(|s| reason != format!("HTTP {s}"))
            .map(|s| format!(" (HTTP {s})"))
            .unwrap_or_default();
        return match outcome.as_str() {
            // Nothing was done: the receipt was settled already (a stream
            // record of its own update, a pass that came second). Routine.
            "skipped" => None,
            "upserted" => Some(format!("delivered  {submission} to {destination}")),
            "stale" => Some(format!(
                "stale      {submission}: a newer lead of that person was written"
            )),
            "deferred" => Some(format!(
                "deferred   {submission}: {reason}{status}, next attempt {}",
                text("next_attempt_at").unwrap_or_else(|| "-".to_owned())
            )),
            "failed-permanent" | "gave-up" => Some(format!(
                "FAILED     {submission}: {reason}{status} (receipts show {submission})"
            )),
            other => Some(format!("{other:<10} {submission}: {reason}{status}")),
        };
    }
    match level.as_str() {
        "WARN" | "ERROR" => Some(format!("{level:<10} {message}")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_is_one_human_line_and_routine_lines_are_left_out() {
        let rows = [
            (
                r#"{"level":"INFO","message":"webhook delivery handled","submission_id":"sub_1","outcome":"accepted","status":202}"#,
                Some("received   sub_1: accepted (202)"),
            ),
            (
                r#"{"level":"WARN","message":"webhook delivery refused","outcome":"unauthorized","status":401,"error":"the webhook secret is missing or wrong"}"#,
                Some("received   -: unauthorized (401): the webhook secret is missing or wrong"),
            ),
            (
                r#"{"level":"INFO","message":"receipt delivery handled","submission_id":"sub_1","destination":"http","via":"stream","outcome":"upserted","attempts":1}"#,
                Some("delivered  sub_1 to http"),
            ),
            (
                r#"{"level":"WARN","message":"receipt delivery handled","submission_id":"sub_2","destination":"http","outcome":"deferred","reason":"crm-unavailable","http_status":503,"next_attempt_at":"2026-12-02T10:00:00.000Z"}"#,
                Some("deferred   sub_2: crm-unavailable (HTTP 503), next attempt 2026-12-02T10:00:00.000Z"),
            ),
            (
                r#"{"level":"ERROR","message":"destination refused our credentials; the receipt waits","submission_id":"sub_3","destination":"hubspot","outcome":"deferred","auth_error":true,"http_status":401}"#,
                Some("deferred   sub_3: destination-auth (HTTP 401), next attempt -"),
            ),
            (
                r#"{"level":"ERROR","message":"receipt delivery handled","submission_id":"sub_4","destination":"http","outcome":"failed-permanent","reason":"no-email"}"#,
                Some("FAILED     sub_4: no-email (receipts show sub_4)"),
            ),
            (
                r#"{"level":"WARN","message":"receipt delivery handled","submission_id":"sub_5","destination":"http","outcome":"deferred","reason":"HTTP 503","http_status":503,"next_attempt_at":"-"}"#,
                Some("deferred   sub_5: HTTP 503, next attempt -"),
            ),
            (
                r#"{"level":"INFO","message":"receipt delivery handled","destination":"http","outcome":"skipped"}"#,
                None,
            ),
            (r#"{"_aws":{"Timestamp":1},"Deliveries":1}"#, None),
            (r#"{"level":"INFO","message":"stream batch handled","records":1}"#, None),
            (
                r#"{"level":"WARN","message":"a sender's time was replaced"}"#,
                Some("WARN       a sender's time was replaced"),
            ),
            (
                r#"{"level":"INFO","message":"new-lead notice handled","submission_id":"sub_6","notice":"sent"}"#,
                Some("notice     sub_6: sent"),
            ),
            (
                r#"{"level":"WARN","message":"new-lead notice handled","submission_id":"sub_7","notice":"due again","http_status":500,"attempts":1}"#,
                Some("notice     sub_7: refused (HTTP 500), will retry"),
            ),
            (
                r#"{"level":"WARN","message":"new-lead notice handled","submission_id":"sub_8","notice":"UNCONFIRMED","attempts":1}"#,
                Some("notice     sub_8: not confirmed; not sent again (receipts show sub_8)"),
            ),
            ("thread 'main' panicked at x", Some("thread 'main' panicked at x")),
        ];
        for (line, expected) in rows {
            assert_eq!(human(line).as_deref(), expected, "{line}");
        }
    }

    #[test]
    fn only_ingests_account_of_a_held_back_submission_is_held_back() {
        let rows = [
            (
                r#"{"level":"INFO","message":"webhook delivery handled","submission_id":"s","outcome":"quarantined","status":202}"#,
                true,
            ),
            (
                r#"{"level":"INFO","message":"webhook delivery handled","submission_id":"s","outcome":"accepted","status":202}"#,
                false,
            ),
            (
                r#"{"level":"INFO","message":"receipt delivery handled","outcome":"quarantined"}"#,
                false,
            ),
            ("not json quarantined", false),
        ];
        for (line, held) in rows {
            assert_eq!(held_back(line), held, "{line}");
        }
    }
}
