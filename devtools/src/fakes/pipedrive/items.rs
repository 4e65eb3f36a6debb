//! The fake's notes and leads (v1), as Pipedrive validates and answers
//! them (sources in the module's documentation); their lists page with
//! `start` and `limit` (at most 500), and say `more_items_in_collection`
//! (notes under `additional_data.pagination`, with `next_start`; leads in
//! `additional_data`).

use std::sync::Arc;

use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::api::{failure, loses, lost_answer, next_id, ok, params_of};
use super::{FakeState, Lead, Lost, Note};
use crate::server::lock;

pub(super) async fn create_note(
    State(state): State<Arc<FakeState>>,
    Json(body): Json<Value>,
) -> Response {
    let content = body.get("content").and_then(Value::as_str).unwrap_or("");
    let person_id = body.get("person_id").and_then(Value::as_u64);
    if content.trim().is_empty() {
        return failure(StatusCode::BAD_REQUEST, "content is required");
    }
    let Some(person_id) = person_id.filter(|id| lock(&state.persons).iter().any(|p| p.id == *id))
    else {
        return failure(
            StatusCode::BAD_REQUEST,
            "person_id is required and must exist",
        );
    };
    let note = Note {
        id: next_id(&state),
        person_id,
        content: content.to_owned(),
    };
    let data = json!({"id": note.id, "person_id": person_id, "content": note.content});
    lock(&state.notes).push(note);
    if loses(&state, Lost::NoteCreate) {
        let others = std::mem::take(&mut *lock(&state.buried_under));
        for _ in 0..others {
            let id = next_id(&state);
            lock(&state.notes).push(Note {
                id,
                person_id,
                content: "<p>Called back, left a message.</p>".to_owned(),
            });
        }
        lost_answer()
    } else {
        ok(StatusCode::OK, data)
    }
}

pub(super) async fn list_notes(State(state): State<Arc<FakeState>>, uri: Uri) -> Response {
    let params = params_of(&uri);
    let person_id = params
        .get("person_id")
        .and_then(|id| id.parse::<u64>().ok());
    let limit = params
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(100)
        .min(500);
    let start = start_of(&params);
    let newest_first = params.get("sort").is_some_and(|s| s.ends_with("DESC"));
    let mut notes: Vec<Note> = lock(&state.notes)
        .iter()
        .filter(|n| person_id.is_none_or(|id| n.person_id == id))
        .cloned()
        .collect();
    if newest_first {
        notes.reverse();
    }
    let more = notes.len() > start + limit;
    let data: Vec<Value> = notes
        .iter()
        .skip(start)
        .take(limit)
        .map(|n| json!({"id": n.id, "person_id": n.person_id, "content": n.content}))
        .collect();
    let mut pagination = json!({"start": start, "limit": limit, "more_items_in_collection": more});
    if more {
        pagination["next_start"] = json!(start + limit);
    }
    (
        StatusCode::OK,
        Json(json!({"success": true, "data": data, "additional_data": {"pagination": pagination}})),
    )
        .into_response()
}

/// A v1 list's `start` (0 unless given).
fn start_of(params: &std::collections::HashMap<String, String>) -> usize {
    params
        .get("start")
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(0)
}

pub(super) async fn create_lead(
    State(state): State<Arc<FakeState>>,
    Json(body): Json<Value>,
) -> Response {
    let title = body.get("title").and_then(Value::as_str).unwrap_or("");
    let person_id = body.get("person_id").and_then(Value::as_u64);
    if title.trim().is_empty() {
        return failure(StatusCode::BAD_REQUEST, "title is required");
    }
    let Some(person_id) = person_id.filter(|id| lock(&state.persons).iter().any(|p| p.id == *id))
    else {
        return failure(
            StatusCode::BAD_REQUEST,
            "person_id or organization_id is required",
        );
    };
    let lead = Lead {
        id: format!("adf21080-0e10-11eb-879b-{:012x}", next_id(&state)),
        person_id,
        title: title.to_owned(),
    };
    let data = json!({"id": lead.id, "title": lead.title, "person_id": person_id});
    lock(&state.leads).push(lead);
    if loses(&state, Lost::LeadCreate) {
        lost_answer()
    } else {
        ok(StatusCode::CREATED, data)
    }
}

pub(super) async fn list_leads(State(state): State<Arc<FakeState>>, uri: Uri) -> Response {
    let params = params_of(&uri);
    let person_id = params
        .get("person_id")
        .and_then(|id| id.parse::<u64>().ok());
    let start = start_of(&params);
    let limit = params
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(100)
        .min(500);
    let leads: Vec<Value> = lock(&state.leads)
        .iter()
        .filter(|l| person_id.is_none_or(|id| l.person_id == id))
        .map(|l| json!({"id": l.id, "title": l.title, "person_id": l.person_id}))
        .collect();
    let more = leads.len() > start + limit;
    let data: Vec<Value> = leads.into_iter().skip(start).take(limit).collect();
    (
        StatusCode::OK,
        Json(json!({"success": true, "data": data,
                    "additional_data": {"start": start, "limit": limit, "more_items_in_collection": more}})),
    )
        .into_response()
}

/// `DELETE /api/v1/notes/{id}`: 200 `{"success": true, "data": {"id"}}`,
/// 404 for a note it does not hold
/// (<https://developers.pipedrive.com/docs/api/v1/Notes#deleteNote>).
pub(super) async fn delete_note(
    State(state): State<Arc<FakeState>>,
    axum::extract::Path(id): axum::extract::Path<u64>,
) -> Response {
    let mut notes = lock(&state.notes);
    let before = notes.len();
    notes.retain(|note| note.id != id);
    if notes.len() < before {
        ok(StatusCode::OK, json!({ "id": id }))
    } else {
        failure(StatusCode::NOT_FOUND, "Note not found")
    }
}

/// `DELETE /api/v1/leads/{id}`: 200 with `data.id`, 404 for a lead it does
/// not hold (<https://developers.pipedrive.com/docs/api/v1/Leads#deleteLead>).
pub(super) async fn delete_lead(
    State(state): State<Arc<FakeState>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    let mut leads = lock(&state.leads);
    let before = leads.len();
    leads.retain(|lead| lead.id != id);
    if leads.len() < before {
        ok(StatusCode::OK, json!({ "id": id }))
    } else {
        failure(StatusCode::NOT_FOUND, "Lead not found")
    }
}
