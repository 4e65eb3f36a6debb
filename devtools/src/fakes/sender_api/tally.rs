//! Tally's listing, `GET /forms/{formId}/submissions`, paged by page
//! number with `hasMore` as its end marker (the parent module cites its
//! pages).

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use shared::receipt::format_timestamp;

use super::{listing, within, FakeState};
use crate::server::lock;

pub(super) async fn submissions(
    State(state): State<Arc<FakeState>>,
    Path(form): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let path = format!("/forms/{form}/submissions");
    let (params, kept) = match listing(&state, &headers, &form, path, query) {
        Ok(listed) => listed,
        Err(response) => return *response,
    };
    let completed_only = params.get("filter").map(String::as_str) == Some("completed");
    let selected = within(&kept, &params, ["startDate", "endDate"], completed_only);
    let limit = *lock(&state.page_size);
    let page: usize = params
        .get("page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(1)
        .max(1);
    let listed: Vec<Value> = selected
        .iter()
        .skip((page - 1) * limit)
        .take(limit)
        .map(|k| json!({
            "id": k.id, "formId": form, "respondentId": format!("r_{}", k.id), "isCompleted": !k.partial,
            "submittedAt": format_timestamp(k.submitted_at), "responses": [
                {"id": format!("{}_1", k.id), "questionId": "qName", "answer": k.name},
                {"id": format!("{}_2", k.id), "questionId": "qEmail", "answer": k.email},
                {"id": format!("{}_3", k.id), "questionId": "qMessage", "answer": k.message}]}))
        .collect();
    let partial = kept.iter().filter(|k| k.partial).count();
    let mut answer = json!({
        "page": page, "limit": limit, "hasMore": page * limit < selected.len(),
        "totalNumberOfSubmissionsPerFilter": {"all": kept.len(), "completed": kept.len() - partial, "partial": partial},
        "questions": [
            {"id": "qName", "type": "INPUT_TEXT", "title": "Name", "fields": []},
            {"id": "qEmail", "type": "INPUT_EMAIL", "title": "Email", "fields": []},
            {"id": "qMessage", "type": "TEXTAREA", "title": "Message", "fields": []}],
        "submissions": listed
    });
    if *lock(&state.no_end_marker) {
        if let Some(page) = answer.as_object_mut() {
            page.remove("hasMore");
        }
    }
    Json(answer).into_response()
}
