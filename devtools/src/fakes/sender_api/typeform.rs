//! Typeform's form definition and responses listing, paged by the last
//! token (`before`), newest first (the parent module cites its pages).

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use shared::receipt::format_timestamp;

use super::{admit, listing, within, FakeState};
use crate::server::lock;

pub(super) async fn form(
    State(state): State<Arc<FakeState>>,
    Path(form): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Err(response) = admit(&state, &headers, &form, format!("/forms/{form}")) {
        return *response;
    }
    Json(json!({"id": form, "title": "Contact", "fields": [
        {"id": "fName", "title": "Name", "type": "short_text", "ref": "name"},
        {"id": "fEmail", "title": "Email", "type": "email", "ref": "email"},
        {"id": "fMessage", "title": "Message", "type": "long_text", "ref": "message"}]}))
    .into_response()
}

pub(super) async fn responses(
    State(state): State<Arc<FakeState>>,
    Path(form): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let path = format!("/forms/{form}/responses");
    let (params, kept) = match listing(&state, &headers, &form, path, query) {
        Ok(listed) => listed,
        Err(response) => return *response,
    };
    let completed_only = params.get("response_type").map(String::as_str) == Some("completed");
    let mut selected = within(&kept, &params, ["since", "until"], completed_only);
    if let Some(before) = params.get("before") {
        if let Some(at) = selected.iter().position(|k| &k.id == before) {
            selected.drain(..=at);
        }
    }
    let asked: usize = params
        .get("page_size")
        .and_then(|p| p.parse().ok())
        .unwrap_or(25);
    let size = asked.min(*lock(&state.page_size)).max(1);
    let items: Vec<Value> = selected
        .iter()
        .take(size)
        .map(|k| {
            let field = |id: &str, kind: &str, reference: &str| json!({"id": id, "type": kind, "ref": reference});
            json!({
                "landing_id": k.id, "token": k.id, "response_id": k.id,
                "response_type": if k.partial { "partial" } else { "completed" },
                "landed_at": format_timestamp(k.submitted_at),
                "submitted_at": if k.partial { String::new() } else { format_timestamp(k.submitted_at) },
                "hidden": {}, "answers": [
                    {"type": "text", "text": k.name, "field": field("fName", "short_text", "name")},
                    {"type": "email", "email": k.email, "field": field("fEmail", "email", "email")},
                    {"type": "text", "text": k.message, "field": field("fMessage", "long_text", "message")}]})
        })
        .collect();
    Json(json!({"total_items": selected.len(), "page_count": selected.len().div_ceil(size), "items": items}))
        .into_response()
}
