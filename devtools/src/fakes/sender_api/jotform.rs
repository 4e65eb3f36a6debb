//! Jotform's submissions API (the parent module cites its pages): the
//! listing, `GET /v1/form/{id}/submissions` with `offset`, `limit` and a
//! `filter` on `created_at`, each submission's `answers` by question id;
//! and the deletion, `DELETE /v1/submission/{id}` (its own client's
//! `delete_submission`), 200 with `responseCode` 200, 404 for one it does
//! not hold (an assumption: the pages say nothing). Both take the key in
//! an `APIKEY` header, and only there.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete as delete_route, get};
use axum::{Json, Router};
use serde_json::{json, Value};
use shared::receipt::{format_timestamp, parse_timestamp};

use super::{deletions, listing, number, FakeState, Kept, Vendor};
use crate::server::lock;

/// Jotform's part of the fake: its listing and deletion, and its webhook.
pub(super) const VENDOR: Vendor = Vendor {
    webhook,
    signer: None,
    api: Some(routes),
};

fn routes(app: Router<Arc<FakeState>>) -> Router<Arc<FakeState>> {
    app.route("/v1/form/{form}/submissions", get(submissions))
        .route("/v1/submission/{id}", delete_route(delete))
}

/// The webhook Jotform sends for `kept` of `form`: its parts (the answers
/// a JSON string keyed `q<N>_<name>`), as a JSON object; the stack reads
/// them from a form post (`Sender::sent_request` sends them as one).
fn webhook(form: &str, kept: &Kept) -> Value {
    let (first, last) = kept.name.rsplit_once(' ').unwrap_or((&kept.name, ""));
    json!({"formID": form, "submissionID": kept.id, "type": "WEB",
        "rawRequest": json!({"slug": format!("submit/{form}"),
            "q3_name": {"first": first, "last": last},
            "q4_email": kept.email, "q5_message": kept.message,
            "q6_utm_campaign": kept.campaign}).to_string()})
}

/// Jotform's endpoints take the key in `APIKEY` only: a request without
/// that header is refused whatever else it carries.
fn refusal_without_key(headers: &HeaderMap) -> Option<Response> {
    headers.get("apikey").is_none().then(|| {
        (
            StatusCode::UNAUTHORIZED,
            Json(json!({"responseCode": 401, "message": "You're not authorized to use (/v1/...)"})),
        )
            .into_response()
    })
}

/// Jotform's `created_at`: `YYYY-MM-DD HH:MM:SS` in the account's time
/// zone (the fake's account keeps UTC).
fn jotform_time(at: std::time::SystemTime) -> String {
    let text = format_timestamp(at);
    text.split('.').next().unwrap_or(&text).replace('T', " ")
}

async fn submissions(
    State(state): State<Arc<FakeState>>,
    Path(form): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refusal_without_key(&headers) {
        return refused;
    }
    let path = format!("/v1/form/{form}/submissions");
    let (params, mut kept) = match listing(&state, &headers, &form, path, query) {
        Ok(listed) => listed,
        Err(response) => return *response,
    };
    kept.reverse();
    let after = params
        .get("filter")
        .and_then(|filter| serde_json::from_str::<Value>(filter).ok())
        .and_then(|filter| filter["created_at:gt"].as_str().map(str::to_owned))
        .and_then(|t| parse_timestamp(&format!("{}Z", t.replace(' ', "T"))));
    let limit = number(&params, "limit", 20)
        .min(*lock(&state.page_size))
        .max(1);
    let offset = number(&params, "offset", 0);
    let listed: Vec<Value> = kept
        .iter()
        .filter(|k| !k.partial && after.is_none_or(|a| k.submitted_at > a))
        .skip(offset)
        .take(limit)
        .map(|k| {
            let (first, last) = k.name.rsplit_once(' ').unwrap_or((&k.name, ""));
            json!({"id": k.id, "form_id": form, "ip": "192.0.2.1",
                "created_at": jotform_time(k.submitted_at), "status": "ACTIVE", "new": "1",
                "answers": {
                    "1": {"name": "heading", "order": "1", "text": "Contact", "type": "control_head"},
                    "3": {"name": "name", "order": "2", "text": "Name", "type": "control_fullname",
                          "answer": {"first": first, "last": last}},
                    "4": {"name": "email", "order": "3", "text": "E-mail", "type": "control_email",
                          "answer": k.email},
                    "5": {"name": "message", "order": "4", "text": "Message", "type": "control_textarea",
                          "answer": k.message}}})
        })
        .collect();
    Json(
        json!({"responseCode": 200, "message": "success", "content": listed,
                "resultSet": {"offset": offset, "limit": limit, "count": listed.len()}}),
    )
    .into_response()
}

async fn delete(
    State(state): State<Arc<FakeState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refusal_without_key(&headers)
        .or_else(|| deletions::refusal(&state, &headers, format!("/v1/submission/{id}")))
    {
        return refused;
    }
    match deletions::remove(&state, None, &[&id]) {
        0 => (
            StatusCode::NOT_FOUND,
            Json(json!({"responseCode": 404, "message": "Submission not found"})),
        )
            .into_response(),
        _ => Json(json!({"responseCode": 200, "message": "success",
                         "content": format!("Submission #{id} deleted successfully.")}))
        .into_response(),
    }
}
