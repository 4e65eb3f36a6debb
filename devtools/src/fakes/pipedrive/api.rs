//! The fake's HTTP side: persons and notes as Pipedrive validates and
//! answers them (sources in the module's documentation), and the listings.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use super::{Call, FakeState, Lost, Person};
use crate::server::lock;

/// The query's parameters (the last of a repeated one).
pub(super) fn params_of(uri: &Uri) -> HashMap<String, String> {
    url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

/// What every call goes through first: the token, then a queued fault.
pub(super) fn admitted(
    state: &FakeState,
    headers: &HeaderMap,
    params: &HashMap<String, String>,
) -> Option<Response> {
    let token = headers
        .get("x-api-token")
        .and_then(|value| value.to_str().ok())
        .or(params.get("api_token").map(String::as_str));
    if token != Some(lock(&state.token).as_str()) {
        return Some(failure(StatusCode::UNAUTHORIZED, "unauthorized access"));
    }
    let fault = state.faults.next()?;
    let status = StatusCode::from_u16(fault.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = failure(status, "fault injected by the test");
    if let Some(wait) = fault.retry_after {
        if let Ok(value) = wait.parse() {
            response.headers_mut().insert("retry-after", value);
        }
    }
    if fault.status == 429 {
        response
            .headers_mut()
            .insert("x-ratelimit-remaining", 0.into());
    }
    Some(response)
}

pub(super) fn failure(status: StatusCode, error: &str) -> Response {
    (
        status,
        Json(json!({"success": false, "error": error, "errorCode": status.as_u16(), "data": null})),
    )
        .into_response()
}

pub(super) fn ok(status: StatusCode, data: Value) -> Response {
    (status, Json(json!({"success": true, "data": data}))).into_response()
}

/// What every API call goes through (a layer on the API's routes): the
/// token, then a queued fault, then the handler; and the call recorded
/// with its answer.
pub(super) async fn admit_and_record(
    State(state): State<Arc<FakeState>>,
    request: Request,
    next: Next,
) -> Response {
    let method = request.method().to_string();
    let path = request.uri().path().to_owned();
    let params = params_of(request.uri());
    let response = match admitted(&state, request.headers(), &params) {
        Some(refused) => refused,
        None => next.run(request).await,
    };
    lock(&state.calls).push(Call {
        method,
        path,
        status: response.status().as_u16(),
    });
    response
}

/// Whether the next `what`'s answer is to be lost (and counts it).
pub(super) fn loses(state: &FakeState, what: Lost) -> bool {
    crate::server::take_one(&state.lost, &what)
}

pub(super) fn lost_answer() -> Response {
    failure(StatusCode::BAD_GATEWAY, "upstream connection lost")
}

fn person_json(person: &Person) -> Value {
    let list = |values: &[String]| {
        values
            .iter()
            .enumerate()
            .map(|(i, value)| json!({"value": value, "primary": i == 0, "label": "work"}))
            .collect::<Vec<_>>()
    };
    json!({
        "id": person.id,
        "name": person.name,
        "emails": list(&person.emails),
        "phones": list(&person.phones),
        "custom_fields": person.custom_fields,
    })
}

pub(super) async fn search(State(state): State<Arc<FakeState>>, uri: Uri) -> Response {
    let params = params_of(&uri);
    let term = params
        .get("term")
        .map(|t| t.trim().to_lowercase())
        .unwrap_or_default();
    let exact = params.get("exact_match").map(String::as_str) == Some("true");
    let by_email = params
        .get("fields")
        .is_none_or(|fields| fields.split(',').any(|f| f == "email"));
    if term.is_empty() || (!exact && term.chars().count() < 2) {
        return failure(StatusCode::BAD_REQUEST, "term is too short");
    }
    let lag = *lock(&state.search_lag);
    let items: Vec<Value> = lock(&state.persons)
        .iter()
        .filter(|p| p.created.elapsed() >= lag)
        .filter(|p| {
            by_email
                && p.emails.iter().any(|e| {
                    let e = e.to_lowercase();
                    if exact {
                        e == term
                    } else {
                        e.contains(&term)
                    }
                })
        })
        .map(|p| {
            json!({"result_score": 1.0, "item": {
                "id": p.id, "type": "person", "name": p.name,
                "emails": p.emails, "phones": p.phones,
            }})
        })
        .collect();
    (
        StatusCode::OK,
        Json(json!({"success": true, "data": {"items": items}, "additional_data": {"next_cursor": null}})),
    )
        .into_response()
}

/// A person's fields as a request gives them.
struct Fields {
    name: Option<String>,
    emails: Option<Vec<String>>,
    phones: Option<Vec<String>>,
    custom: Map<String, Value>,
}

/// A person's fields from a request body, or why they are refused (a 400's
/// `error`).
fn fields_of(state: &FakeState, body: &Value) -> Result<Fields, String> {
    let Some(body) = body.as_object() else {
        return Err("body must be a JSON object".to_owned());
    };
    let name = body.get("name").and_then(Value::as_str).map(str::to_owned);
    let values = |key: &str| -> Result<Option<Vec<String>>, String> {
        match body.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    item.get("value")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .ok_or_else(|| format!("{key} must be objects with a value"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(format!("{key} must be an array")),
        }
    };
    let emails = values("emails")?;
    let phones = values("phones")?;
    let custom = match body.get("custom_fields") {
        None => Map::new(),
        Some(Value::Object(fields)) => fields.clone(),
        Some(_) => return Err("custom_fields must be an object".to_owned()),
    };
    let known = lock(&state.known_keys);
    if let Some(unknown) = custom.keys().find(|key| !known.contains(*key)) {
        return Err(format!("Custom field with key {unknown} does not exist"));
    }
    const TAKEN: [&str; 8] = [
        "name",
        "emails",
        "phones",
        "custom_fields",
        "owner_id",
        "org_id",
        "visible_to",
        "label_ids",
    ];
    if let Some(key) = body.keys().find(|key| !TAKEN.contains(&key.as_str())) {
        return Err(format!("unknown field {key}"));
    }
    Ok(Fields {
        name,
        emails,
        phones,
        custom,
    })
}

pub(super) fn next_id(state: &FakeState) -> u64 {
    let mut next = lock(&state.next_id);
    let id = *next;
    *next += 1;
    id
}

pub(super) async fn create_person(
    State(state): State<Arc<FakeState>>,
    Json(body): Json<Value>,
) -> Response {
    let Fields {
        name,
        emails,
        phones,
        custom: custom_fields,
    } = match fields_of(&state, &body) {
        Ok(fields) => fields,
        Err(error) => return failure(StatusCode::BAD_REQUEST, &error),
    };
    let Some(name) = name.filter(|n| !n.trim().is_empty()) else {
        return failure(StatusCode::BAD_REQUEST, "name is required");
    };
    let person = Person {
        id: next_id(&state),
        name,
        emails: emails.unwrap_or_default(),
        phones: phones.unwrap_or_default(),
        custom_fields,
        writes: 1,
        created: Instant::now(),
    };
    let data = person_json(&person);
    lock(&state.persons).push(person);
    if loses(&state, Lost::PersonCreate) {
        lost_answer()
    } else {
        ok(StatusCode::OK, data)
    }
}

pub(super) async fn update_person(
    State(state): State<Arc<FakeState>>,
    Path(id): Path<u64>,
    Json(body): Json<Value>,
) -> Response {
    let Fields {
        name,
        emails,
        phones,
        custom: custom_fields,
    } = match fields_of(&state, &body) {
        Ok(fields) => fields,
        Err(error) => return failure(StatusCode::BAD_REQUEST, &error),
    };
    let mut persons = lock(&state.persons);
    let Some(person) = persons.iter_mut().find(|p| p.id == id) else {
        drop(persons);
        return failure(StatusCode::NOT_FOUND, "Person not found");
    };
    if let Some(name) = name {
        person.name = name;
    }
    if let Some(emails) = emails {
        person.emails = emails;
    }
    if let Some(phones) = phones {
        person.phones = phones;
    }
    person.custom_fields.extend(custom_fields);
    person.writes += 1;
    let data = person_json(person);
    drop(persons);
    ok(StatusCode::OK, data)
}

/// Deletes the person (its notes stay: Pipedrive does not document that
/// they go with it).
/// `GET /api/v2/persons/{id}`: the person, or 404 when it is gone.
pub(super) async fn get_person(
    State(state): State<Arc<FakeState>>,
    Path(id): Path<u64>,
) -> Response {
    let persons = lock(&state.persons);
    match persons.iter().find(|p| p.id == id) {
        Some(person) => ok(StatusCode::OK, person_json(person)),
        None => failure(StatusCode::NOT_FOUND, "Person not found"),
    }
}

pub(super) async fn delete_person(
    State(state): State<Arc<FakeState>>,
    Path(id): Path<u64>,
) -> Response {
    let mut persons = lock(&state.persons);
    let before = persons.len();
    persons.retain(|p| p.id != id);
    let found = persons.len() < before;
    drop(persons);
    if found {
        ok(StatusCode::OK, json!({"id": id}))
    } else {
        failure(StatusCode::NOT_FOUND, "Person not found")
    }
}

pub(super) async fn all_persons(State(state): State<Arc<FakeState>>) -> Json<Value> {
    let persons: Vec<Value> = lock(&state.persons)
        .iter()
        .map(|p| {
            let mut listed = person_json(p);
            listed["writes"] = p.writes.into();
            listed
        })
        .collect();
    Json(json!({"count": persons.len(), "persons": persons}))
}

pub(super) async fn all_notes(State(state): State<Arc<FakeState>>) -> Json<Value> {
    let notes: Vec<Value> = lock(&state.notes)
        .iter()
        .map(|n| json!({"id": n.id, "person_id": n.person_id, "content": n.content}))
        .collect();
    Json(json!({"count": notes.len(), "notes": notes}))
}
