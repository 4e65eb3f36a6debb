//! The fake's HTTP side: the token, the rate limit, people and notes as
//! Attio validates and answers them (sources in the module's
//! documentation), and the listings.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use super::{FakeState, Lost, Note, PersonRecord, KNOWN_ATTRIBUTES};
use crate::server::lock;

const WORKSPACE_ID: &str = "14beef7a-99f7-4534-a87e-70b564330a4c";
const PEOPLE_OBJECT_ID: &str = "97052eb9-e65e-443f-a297-f2d9a4a7f795";

/// What every API call goes through: a throttled call (429 with its
/// `Retry-After` date), the token, a queued fault, the delay, then the
/// handler; and the call recorded with its answer.
pub(super) async fn admit_and_record(
    State(state): State<Arc<FakeState>>,
    request: Request,
    next: Next,
) -> Response {
    let refused = throttled(&state)
        .map(|seconds| {
            let mut response = error(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                "rate_limit_exceeded",
                "Rate limit exceeded, please try again later",
            );
            let at = SystemTime::now() + Duration::from_secs(seconds);
            response.headers_mut().insert(
                "retry-after",
                crate::server::http_date(at)
                    .parse()
                    .expect("a header value"),
            );
            response
        })
        .or_else(|| admitted(&state, request.headers()));
    let delay = *lock(&state.delay);
    crate::server::answer_and_record(request, next, refused, delay, &state.calls).await
}

/// The `Retry-After` of a throttled call, counting it.
fn throttled(state: &FakeState) -> Option<u64> {
    let mut throttle = lock(&state.throttle);
    let current = (*throttle)?;
    *throttle = (current.calls > 1).then(|| super::Throttle {
        calls: current.calls - 1,
        ..current
    });
    (current.calls > 0).then_some(current.retry_after_seconds)
}

fn admitted(state: &FakeState, headers: &HeaderMap) -> Option<Response> {
    let expected = format!("Bearer {}", lock(&state.token));
    let given = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok());
    if given != Some(expected.as_str()) {
        return Some(error(
            StatusCode::UNAUTHORIZED,
            "auth_error",
            "unauthorized",
            "Invalid or missing access token",
        ));
    }
    let fault = state.faults.next()?;
    let status = StatusCode::from_u16(fault.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    Some(error(
        status,
        "fault",
        "fault_injected",
        "fault injected by the test",
    ))
}

/// An error as Attio sends one.
fn error(status: StatusCode, kind: &str, code: &str, message: &str) -> Response {
    (
        status,
        Json(
            json!({"status_code": status.as_u16(), "type": kind, "code": code, "message": message}),
        ),
    )
        .into_response()
}

fn invalid(code: &str, message: &str) -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        code,
        message,
    )
}

fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        "not_found",
        "The referenced record was not found.",
    )
}

fn lost() -> Response {
    error(
        StatusCode::BAD_GATEWAY,
        "api_error",
        "bad_gateway",
        "upstream connection lost",
    )
}

/// Whether the next `what`'s answer is to be lost (and counts it).
fn loses(state: &FakeState, what: Lost) -> bool {
    crate::server::take_one(&state.lost, &what)
}

/// A new id in Attio's UUID form.
pub(super) fn next_record_id(state: &FakeState) -> String {
    let mut next = lock(&state.next_id);
    *next += 1;
    format!("00000000-0000-4000-8000-{:012x}", *next)
}

fn record_json(person: &PersonRecord) -> Value {
    let mut values = person.values.clone();
    values.insert(
        "email_addresses".to_owned(),
        person
            .email_addresses
            .iter()
            .map(|address| json!({"email_address": address}))
            .collect(),
    );
    json!({
        "id": {"workspace_id": WORKSPACE_ID, "object_id": PEOPLE_OBJECT_ID, "record_id": person.id},
        "created_at": "2026-12-01T09:00:00.000000000Z",
        "web_url": format!("https://app.attio.com/local/person/{}", person.id),
        "values": values,
    })
}

fn note_json(note: &Note) -> Value {
    json!({
        "id": {"workspace_id": WORKSPACE_ID, "note_id": note.id},
        "parent_object": "people",
        "parent_record_id": note.parent_record_id,
        "title": note.title,
        "content_plaintext": note.content,
        "created_at": "2026-12-01T09:00:00.000000000Z",
    })
}

pub(super) async fn identify() -> Response {
    Json(
        json!({"active": true, "workspace_id": WORKSPACE_ID, "workspace_name": "Local",
                "scope": "record_permission:read-write object_configuration:read note:read-write"}),
    )
    .into_response()
}

/// A refusal's code and message.
type Refusal = (&'static str, &'static str);

/// A write's values: its addresses (lower-cased, as Attio normalises
/// them), and the rest, each attribute known to the workspace.
fn values_of(body: &Value) -> Result<(Vec<String>, Map<String, Value>), Refusal> {
    let Some(values) = body
        .get("data")
        .and_then(|data| data.get("values"))
        .and_then(Value::as_object)
    else {
        return Err(("validation_type", "data.values is required"));
    };
    let mut addresses = Vec::new();
    let mut rest = Map::new();
    for (slug, value) in values {
        match slug.as_str() {
            "email_addresses" => {
                for address in value.as_array().into_iter().flatten() {
                    let address = address
                        .as_str()
                        .or_else(|| address.get("email_address").and_then(Value::as_str));
                    match address.map(|a| a.trim().to_lowercase()) {
                        Some(address) if address.contains('@') => addresses.push(address),
                        _ => return Err(("validation_type", "not an email address")),
                    }
                }
            }
            "name" => {
                let parts = value.get(0).filter(|name| {
                    ["first_name", "last_name", "full_name"]
                        .iter()
                        .all(|part| name.get(part).is_some_and(Value::is_string))
                });
                if parts.is_none() {
                    return Err((
                        "validation_type",
                        "all three properties of a name must be set",
                    ));
                }
                rest.insert(slug.clone(), value.clone());
            }
            known if KNOWN_ATTRIBUTES.contains(&known) => {
                rest.insert(slug.clone(), value.clone());
            }
            _ => return Err(("value_not_found", "No attribute was found for that slug")),
        }
    }
    Ok((addresses, rest))
}

pub(super) async fn assert_person(
    State(state): State<Arc<FakeState>>,
    Query(query): Query<HashMap<String, String>>,
    Json(body): Json<Value>,
) -> Response {
    if query.get("matching_attribute").map(String::as_str) != Some("email_addresses") {
        return invalid(
            "value_not_found",
            "No attribute was found for matching_attribute",
        );
    }
    let (addresses, values) = match values_of(&body) {
        Ok(parsed) => parsed,
        Err((code, message)) => return invalid(code, message),
    };
    if addresses.is_empty() {
        return invalid("missing_value", "The matching attribute must have a value");
    }
    let record = {
        let mut people = lock(&state.people);
        let matched = people.iter_mut().find(|person| {
            person
                .email_addresses
                .iter()
                .any(|known| addresses.contains(known))
        });
        match matched {
            Some(person) => {
                // An assert replaces a multiselect's values.
                person.email_addresses = addresses;
                person.values.extend(values);
                person.writes += 1;
                record_json(person)
            }
            None => {
                let person = PersonRecord {
                    id: next_record_id(&state),
                    email_addresses: addresses,
                    values,
                    writes: 1,
                };
                let record = record_json(&person);
                people.push(person);
                record
            }
        }
    };
    if loses(&state, Lost::PersonAssert) {
        return lost();
    }
    Json(json!({ "data": record })).into_response()
}

pub(super) async fn update_person(
    State(state): State<Arc<FakeState>>,
    Path(record_id): Path<String>,
    Json(body): Json<Value>,
) -> Response {
    let (addresses, values) = match values_of(&body) {
        Ok(parsed) => parsed,
        Err((code, message)) => return invalid(code, message),
    };
    let mut people = lock(&state.people);
    let Some(person) = people.iter_mut().find(|person| person.id == record_id) else {
        return not_found();
    };
    // An update adds a multiselect's values in front of those there.
    for address in addresses.into_iter().rev() {
        if !person.email_addresses.contains(&address) {
            person.email_addresses.insert(0, address);
        }
    }
    person.values.extend(values);
    person.writes += 1;
    Json(json!({ "data": record_json(person) })).into_response()
}

pub(super) async fn query_people(
    State(state): State<Arc<FakeState>>,
    Json(body): Json<Value>,
) -> Response {
    let address = body
        .get("filter")
        .and_then(|filter| filter.get("email_addresses"))
        .and_then(Value::as_str)
        .map(|address| address.trim().to_lowercase());
    let limit = body.get("limit").and_then(Value::as_u64).unwrap_or(500) as usize;
    let people = lock(&state.people);
    let found: Vec<Value> = people
        .iter()
        .filter(|person| {
            address
                .as_ref()
                .is_none_or(|address| person.email_addresses.contains(address))
        })
        .take(limit)
        .map(record_json)
        .collect();
    Json(json!({ "data": found })).into_response()
}

pub(super) async fn delete_person(
    State(state): State<Arc<FakeState>>,
    Path(record_id): Path<String>,
) -> Response {
    let mut people = lock(&state.people);
    match people.iter().position(|person| person.id == record_id) {
        Some(at) => {
            people.remove(at);
            Json(json!({})).into_response()
        }
        None => not_found(),
    }
}

pub(super) async fn create_note(
    State(state): State<Arc<FakeState>>,
    Json(body): Json<Value>,
) -> Response {
    let data = body.get("data").cloned().unwrap_or(Value::Null);
    let text = |name: &str| data.get(name).and_then(Value::as_str).map(str::to_owned);
    let (Some(parent_object), Some(parent), Some(title), Some(format), Some(content)) = (
        text("parent_object"),
        text("parent_record_id"),
        text("title"),
        text("format"),
        text("content"),
    ) else {
        return invalid(
            "validation_type",
            "parent_object, parent_record_id, title, format and content are required",
        );
    };
    if parent_object != "people" || !matches!(format.as_str(), "plaintext" | "markdown") {
        return invalid("validation_type", "unknown parent object or format");
    }
    if !lock(&state.people).iter().any(|person| person.id == parent) {
        return not_found();
    }
    let note = Note {
        id: next_record_id(&state),
        parent_record_id: parent,
        title,
        content,
    };
    let answer = note_json(&note);
    lock(&state.notes).push(note);
    if loses(&state, Lost::NoteCreate) {
        return lost();
    }
    Json(json!({ "data": answer })).into_response()
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
    let (Some(limit), Some(offset)) = (number("limit", 10), number("offset", 0)) else {
        return invalid("validation_type", "limit and offset are numbers");
    };
    if limit > 50 {
        return invalid("validation_type", "limit is at most 50");
    }
    let parent = query.get("parent_record_id");
    let notes = lock(&state.notes);
    let page: Vec<Value> = notes
        .iter()
        .filter(|note| parent.is_none_or(|parent| &note.parent_record_id == parent))
        .skip(offset)
        .take(limit)
        .map(note_json)
        .collect();
    Json(json!({ "data": page })).into_response()
}

pub(super) async fn delete_note(
    State(state): State<Arc<FakeState>>,
    Path(note_id): Path<String>,
) -> Response {
    let mut notes = lock(&state.notes);
    match notes.iter().position(|note| note.id == note_id) {
        Some(at) => {
            notes.remove(at);
            Json(json!({})).into_response()
        }
        None => not_found(),
    }
}

pub(super) async fn all_people(State(state): State<Arc<FakeState>>) -> Response {
    let people: Vec<Value> = lock(&state.people)
        .iter()
        .map(|person| {
            let mut listed = record_json(person);
            listed["record_id"] = json!(person.id);
            listed["writes"] = json!(person.writes);
            listed
        })
        .collect();
    Json(json!({"count": people.len(), "people": people})).into_response()
}

pub(super) async fn all_notes(State(state): State<Arc<FakeState>>) -> Response {
    let notes: Vec<Value> = lock(&state.notes).iter().map(note_json).collect();
    Json(json!({"count": notes.len(), "notes": notes})).into_response()
}
