//! The fake's notes: a note created with its association to a contact,
//! a contact's associated notes (v4), notes read in a batch, and a contact
//! read by its email, as HubSpot documents them:
//! - <https://developers.hubspot.com/docs/api-reference/2026-03/crm/activities/notes/basic/create-note>
//!   (`properties.hs_timestamp` and `hs_note_body`; `associations[]` of
//!   `{to: {id}, types: [{associationCategory, associationTypeId}]}`; 201
//!   with the note's `id`), and note to contact is `HUBSPOT_DEFINED` 202:
//!   <https://developers.hubspot.com/docs/guides/api/crm/associations/associations-v4>;
//! - <https://developers.hubspot.com/docs/api-reference/crm-associations-v4/basic/get-crm-v4-objects-objectType-objectId-associations-toObjectType>
//!   (`results[]` of `{toObjectId, associationTypes[]}`; at most `limit`,
//!   500 by default and at most, a page, with `paging.next.after` to ask
//!   for the next one);
//! - <https://developers.hubspot.com/docs/api-reference/2026-03/crm/activities/notes/batch/read-notes>
//!   (`inputs[]` of `{id}`, at most 100, `properties[]`; `results[]`);
//! - <https://developers.hubspot.com/docs/api-reference/2026-03/crm/objects/contacts/basic/get-contact>
//!   (`idProperty=email`; 404 `OBJECT_NOT_FOUND`).
//!
//! Its own assumption: a note is listed among its contact's associations at
//! once.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::{FakeState, Note};
use crate::server::lock;

/// The bearer token, then a queued fault: as every call of the fake.
pub(super) fn refused(state: &FakeState, headers: &HeaderMap) -> Option<Response> {
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if bearer.is_none() || bearer != lock(&state.token).as_deref() {
        return Some(error(
            StatusCode::UNAUTHORIZED,
            "INVALID_AUTHENTICATION",
            "Authentication credentials not found.",
        ));
    }
    let fault = state.faults.next()?;
    let status = StatusCode::from_u16(fault.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    Some(error(
        status,
        "INTERNAL_ERROR",
        "fault injected by the test",
    ))
}

pub(super) fn error(status: StatusCode, category: &str, message: &str) -> Response {
    (
        status,
        Json(
            json!({"status": "error", "category": category, "message": message,
                    "correlationId": "00000000-0000-4000-8000-000000000000"}),
        ),
    )
        .into_response()
}

fn counted(state: &FakeState, path: &str, response: Response) -> Response {
    lock(&state.calls).push(super::Call {
        path: path.to_owned(),
        inputs: 1,
        status: response.status().as_u16(),
    });
    response
}

pub(super) async fn create(
    State(state): State<Arc<FakeState>>,
    uri: Uri,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let path = uri.path();
    if let Some(refusal) = refused(&state, &headers) {
        return counted(&state, path, refusal);
    }
    let body_text = body["properties"]["hs_note_body"].as_str().unwrap_or("");
    let timestamp = body["properties"]["hs_timestamp"].as_str().unwrap_or("");
    if body_text.is_empty() || timestamp.is_empty() {
        return counted(
            &state,
            path,
            error(
                StatusCode::BAD_REQUEST,
                "VALIDATION_ERROR",
                "hs_timestamp and hs_note_body are required",
            ),
        );
    }
    let association = &body["associations"][0];
    let contact = association["to"]["id"].as_str().unwrap_or("").to_owned();
    let typed = association["types"][0]["associationTypeId"].as_u64() == Some(202)
        && association["types"][0]["associationCategory"] == "HUBSPOT_DEFINED";
    if !typed || !lock(&state.contacts).iter().any(|c| c.id == contact) {
        return counted(
            &state,
            path,
            error(
                StatusCode::BAD_REQUEST,
                "VALIDATION_ERROR",
                "invalid association",
            ),
        );
    }
    let note = {
        let mut notes = lock(&state.notes);
        let note = Note {
            id: (5000 + notes.len()).to_string(),
            contact_id: contact,
            body: body_text.to_owned(),
            timestamp: timestamp.to_owned(),
        };
        notes.push(note.clone());
        note
    };
    let lose = {
        let mut lost = lock(&state.lost_note_answers);
        let lose = *lost > 0;
        *lost = lost.saturating_sub(1);
        lose
    };
    let response = if lose {
        error(
            StatusCode::BAD_GATEWAY,
            "INTERNAL_ERROR",
            "upstream connection lost",
        )
    } else {
        (
            StatusCode::CREATED,
            Json(json!({"id": note.id, "properties": {"hs_note_body": note.body, "hs_timestamp": note.timestamp},
                        "createdAt": "2026-12-04T08:00:00Z", "archived": false})),
        )
            .into_response()
    };
    counted(&state, path, response)
}

pub(super) async fn associated(
    State(state): State<Arc<FakeState>>,
    Path(contact): Path<String>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if let Some(refusal) = refused(&state, &headers) {
        return counted(&state, uri.path(), refusal);
    }
    let query: HashMap<String, String> = uri
        .query()
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .collect()
        })
        .unwrap_or_default();
    let limit = query
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(ASSOCIATIONS_PAGE)
        .clamp(1, ASSOCIATIONS_PAGE);
    // The cursor is opaque to callers; here, how many were listed before.
    let from = query
        .get("after")
        .and_then(|a| a.parse::<usize>().ok())
        .unwrap_or(0);
    let all: Vec<Value> = lock(&state.notes)
        .iter()
        .filter(|n| n.contact_id == contact)
        .map(|n| json!({"toObjectId": n.id.parse::<u64>().unwrap_or(0),
                        "associationTypes": [{"category": "HUBSPOT_DEFINED", "typeId": 202, "label": null}]}))
        .collect();
    let page: Vec<Value> = all.iter().skip(from).take(limit).cloned().collect();
    let mut body = json!({"results": page});
    if from + limit < all.len() {
        body["paging"] = json!({"next": {"after": (from + limit).to_string()}});
    }
    counted(
        &state,
        uri.path(),
        (StatusCode::OK, Json(body)).into_response(),
    )
}

/// The most associations one page lists, and the default.
const ASSOCIATIONS_PAGE: usize = 500;

/// The most notes one batch read takes.
const BATCH_READ_MAX: usize = 100;

pub(super) async fn read(
    State(state): State<Arc<FakeState>>,
    uri: Uri,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(refusal) = refused(&state, &headers) {
        return counted(&state, uri.path(), refusal);
    }
    if body["inputs"]
        .as_array()
        .is_some_and(|inputs| inputs.len() > BATCH_READ_MAX)
    {
        return counted(
            &state,
            uri.path(),
            error(
                StatusCode::BAD_REQUEST,
                "VALIDATION_ERROR",
                "inputs: size must be between 1 and 100",
            ),
        );
    }
    let notes = lock(&state.notes).clone();
    let by_id: HashMap<&str, &Note> = notes.iter().map(|n| (n.id.as_str(), n)).collect();
    let results: Vec<Value> = body["inputs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|input| by_id.get(input["id"].as_str()?))
        .map(|n| json!({"id": n.id, "properties": {"hs_note_body": n.body}}))
        .collect();
    counted(
        &state,
        uri.path(),
        (
            StatusCode::OK,
            Json(json!({"status": "COMPLETE", "results": results})),
        )
            .into_response(),
    )
}

pub(super) async fn contact(
    State(state): State<Arc<FakeState>>,
    Path(params): Path<HashMap<String, String>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if let Some(refusal) = refused(&state, &headers) {
        return counted(&state, uri.path(), refusal);
    }
    let by_email = uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "idProperty=email"));
    let wanted = params.get("id").cloned().unwrap_or_default().to_lowercase();
    let found = lock(&state.contacts)
        .iter()
        .find(|c| {
            if by_email {
                c.properties.get("email").and_then(Value::as_str) == Some(wanted.as_str())
            } else {
                c.id == wanted
            }
        })
        .cloned();
    let response = match found {
        Some(contact) => (
            StatusCode::OK,
            Json(json!({"id": contact.id, "properties": contact.properties})),
        )
            .into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            "OBJECT_NOT_FOUND",
            "resource not found",
        ),
    };
    counted(&state, uri.path(), response)
}

pub(super) async fn list(State(state): State<Arc<FakeState>>) -> Json<Value> {
    let notes: Vec<Value> = lock(&state.notes)
        .iter()
        .map(|n| json!({"id": n.id, "contactId": n.contact_id, "body": n.body}))
        .collect();
    Json(json!({"count": notes.len(), "notes": notes}))
}
