//! The fake's HTTP side: the key, the rate limit, contacts and notes as
//! Brevo validates and answers them (sources in the module's
//! documentation), and the listings.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use super::{Contact, FakeState, Lost, Note, KNOWN_ATTRIBUTES};
use crate::server::lock;

/// What every API call goes through: a throttled call (429 with its
/// headers), the key, a queued fault, the delay, then the handler; and the
/// call recorded with its answer.
pub(super) async fn admit_and_record(
    State(state): State<Arc<FakeState>>,
    request: Request,
    next: Next,
) -> Response {
    let refused = throttled(&state)
        .map(|reset| {
            let mut response = error(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_requests",
                "Too many requests",
            );
            let headers = response.headers_mut();
            headers.insert(
                "x-sib-ratelimit-limit",
                "10".parse().expect("a header value"),
            );
            headers.insert(
                "x-sib-ratelimit-remaining",
                "0".parse().expect("a header value"),
            );
            headers.insert(
                "x-sib-ratelimit-reset",
                reset.to_string().parse().expect("a header value"),
            );
            response
        })
        .or_else(|| admitted(&state, request.headers()));
    let delay = *lock(&state.delay);
    crate::server::answer_and_record(request, next, refused, delay, &state.calls).await
}

/// The reset of a throttled call, counting it.
fn throttled(state: &FakeState) -> Option<u64> {
    let mut throttle = lock(&state.throttle);
    let current = (*throttle)?;
    *throttle = (current.calls > 1).then(|| super::Throttle {
        calls: current.calls - 1,
        ..current
    });
    (current.calls > 0).then_some(current.reset_seconds)
}

fn admitted(state: &FakeState, headers: &HeaderMap) -> Option<Response> {
    let key = headers.get("api-key").and_then(|value| value.to_str().ok());
    if key != Some(lock(&state.key).as_str()) {
        return Some(error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "Key not found",
        ));
    }
    let fault = state.faults.next()?;
    let status = StatusCode::from_u16(fault.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    Some(error(status, "fault", "fault injected by the test"))
}

/// An error as Brevo sends one: `code` and `message`.
fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (status, Json(json!({"code": code, "message": message}))).into_response()
}

fn not_found(what: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        "document_not_found",
        &format!("{what} does not exist"),
    )
}

fn lost() -> Response {
    error(
        StatusCode::BAD_GATEWAY,
        "bad_gateway",
        "upstream connection lost",
    )
}

/// Whether the next `what`'s answer is to be lost (and counts it).
fn loses(state: &FakeState, what: Lost) -> bool {
    crate::server::take_one(&state.lost, &what)
}

fn contact_json(contact: &Contact) -> Value {
    json!({
        "id": contact.id,
        "email": contact.email,
        "emailBlacklisted": false,
        "smsBlacklisted": false,
        "attributes": contact.attributes,
        "listIds": contact.list_ids,
    })
}

pub(super) async fn account() -> Response {
    Json(json!({"email": "owner@example.com", "companyName": "Local", "plan": [{"type": "free"}]}))
        .into_response()
}

pub(super) async fn upsert_contact(
    State(state): State<Arc<FakeState>>,
    Json(body): Json<Value>,
) -> Response {
    let Some(email) = body
        .get("email")
        .and_then(Value::as_str)
        .map(|email| email.trim().to_lowercase())
        .filter(|email| email.contains('@'))
    else {
        return error(
            StatusCode::BAD_REQUEST,
            "missing_parameter",
            "An email or SMS phone number is mandatory",
        );
    };
    let update = body.get("updateEnabled").and_then(Value::as_bool) == Some(true);
    let lists: Vec<u64> = body
        .get("listIds")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_u64)
        .collect();
    // Values for attributes the account lacks are ignored.
    let attributes: Map<String, Value> = body
        .get("attributes")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(name, _)| KNOWN_ATTRIBUTES.contains(&name.as_str()))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    let created = {
        let mut contacts = lock(&state.contacts);
        match contacts.iter_mut().find(|contact| contact.email == email) {
            Some(_) if !update => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "duplicate_parameter",
                    "Contact already exist",
                )
            }
            Some(contact) => {
                contact.attributes.extend(attributes);
                for list in lists {
                    if !contact.list_ids.contains(&list) {
                        contact.list_ids.push(list);
                    }
                }
                contact.writes += 1;
                None
            }
            None => {
                let id = {
                    let mut next = lock(&state.next_id);
                    *next += 1;
                    *next
                };
                contacts.push(Contact {
                    id,
                    email,
                    attributes,
                    list_ids: lists,
                    writes: 1,
                });
                Some(id)
            }
        }
    };
    if loses(&state, Lost::ContactUpsert) {
        return lost();
    }
    match created {
        Some(id) => (StatusCode::CREATED, Json(json!({"id": id}))).into_response(),
        None => StatusCode::NO_CONTENT.into_response(),
    }
}

/// The contact `identifier` names, by `identifierType` (an address when
/// none is given and it holds an `@`, as Brevo reads it).
fn find(contacts: &[Contact], identifier: &str, kind: Option<&str>) -> Option<usize> {
    let by_id = match kind {
        Some("contact_id") => true,
        Some(_) => false,
        None => !identifier.contains('@'),
    };
    contacts.iter().position(|contact| {
        if by_id {
            contact.id.to_string() == identifier
        } else {
            contact.email == identifier.trim().to_lowercase()
        }
    })
}

pub(super) async fn get_contact(
    State(state): State<Arc<FakeState>>,
    Path(identifier): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let contacts = lock(&state.contacts);
    match find(
        &contacts,
        &identifier,
        query.get("identifierType").map(String::as_str),
    ) {
        Some(at) => Json(contact_json(&contacts[at])).into_response(),
        None => not_found("Contact"),
    }
}

pub(super) async fn delete_contact(
    State(state): State<Arc<FakeState>>,
    Path(identifier): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let mut contacts = lock(&state.contacts);
    match find(
        &contacts,
        &identifier,
        query.get("identifierType").map(String::as_str),
    ) {
        Some(at) => {
            contacts.remove(at);
            StatusCode::NO_CONTENT.into_response()
        }
        None => not_found("Contact"),
    }
}

pub(super) async fn create_note(
    State(state): State<Arc<FakeState>>,
    Json(body): Json<Value>,
) -> Response {
    let Some(text) = body
        .get("text")
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
    else {
        return error(
            StatusCode::BAD_REQUEST,
            "missing_parameter",
            "text is required",
        );
    };
    let contact_ids: Vec<u64> = body
        .get("contactIds")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_u64)
        .collect();
    {
        let contacts = lock(&state.contacts);
        if contact_ids
            .iter()
            .any(|id| !contacts.iter().any(|contact| contact.id == *id))
        {
            return not_found("Contact");
        }
    }
    let id = {
        let mut next = lock(&state.next_id);
        *next += 1;
        format!("61a5ce5a2e0b1c02b1{:06x}", *next)
    };
    lock(&state.notes).push(Note {
        id: id.clone(),
        text: text.to_owned(),
        contact_ids,
    });
    if loses(&state, Lost::NoteCreate) {
        return lost();
    }
    Json(json!({ "id": id })).into_response()
}

pub(super) async fn list_notes(
    State(state): State<Arc<FakeState>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let number = |name: &str, default: usize| {
        query
            .get(name)
            .map_or(Some(default), |value| value.parse().ok())
    };
    let (Some(limit), Some(offset)) = (number("limit", 50), number("offset", 0)) else {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
            "limit and offset are numbers",
        );
    };
    let ids: Option<Vec<u64>> = query.get("entityIds").map(|ids| {
        ids.split(',')
            .filter_map(|id| id.trim().parse().ok())
            .collect()
    });
    let notes = lock(&state.notes);
    let mut listed: Vec<&Note> = notes
        .iter()
        .filter(
            |note| match (&ids, query.get("entity").map(String::as_str)) {
                (Some(ids), Some("contacts") | None) => {
                    note.contact_ids.iter().any(|id| ids.contains(id))
                }
                (None, _) => true,
                (Some(_), Some(_)) => false,
            },
        )
        .collect();
    // Newest first unless `sort=asc`.
    if query.get("sort").map(String::as_str) != Some("asc") {
        listed.reverse();
    }
    let page: Vec<Value> = listed
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|note| json!({"id": note.id, "text": note.text, "contactIds": note.contact_ids}))
        .collect();
    Json(Value::Array(page)).into_response()
}

pub(super) async fn delete_note(
    State(state): State<Arc<FakeState>>,
    Path(id): Path<String>,
) -> Response {
    let mut notes = lock(&state.notes);
    match notes.iter().position(|note| note.id == id) {
        Some(at) => {
            notes.remove(at);
            StatusCode::NO_CONTENT.into_response()
        }
        None => not_found("Note"),
    }
}

pub(super) async fn all_contacts(State(state): State<Arc<FakeState>>) -> Response {
    let contacts: Vec<Value> = lock(&state.contacts)
        .iter()
        .map(|contact| {
            let mut listed = contact_json(contact);
            listed["writes"] = json!(contact.writes);
            listed
        })
        .collect();
    Json(json!({"count": contacts.len(), "contacts": contacts})).into_response()
}

/// Each note with its first contact's id as `contactId`, for a reader.
pub(super) async fn all_notes(State(state): State<Arc<FakeState>>) -> Response {
    let notes: Vec<Value> = lock(&state.notes)
        .iter()
        .map(|note| {
            json!({"id": note.id, "text": note.text, "contactIds": note.contact_ids,
                   "contactId": note.contact_ids.first()})
        })
        .collect();
    Json(json!({"count": notes.len(), "notes": notes})).into_response()
}
