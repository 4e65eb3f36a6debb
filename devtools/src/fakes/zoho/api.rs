//! The fake's HTTP side: the accounts server's token, the access token
//! every API call needs, records and notes as Zoho validates and answers
//! them (sources in the module's documentation), and the listings.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use super::{Call, FakeState, Lost, Note, Record, LIVE_TOKENS};
use crate::server::lock;

fn params(text: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(text.as_bytes())
        .into_owned()
        .collect()
}

/// `POST /oauth/v2/token`: a new access token for a valid refresh token.
pub(super) async fn token(State(state): State<Arc<FakeState>>, uri: Uri, body: Bytes) -> Response {
    let delay = *lock(&state.token_delay);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let mut asked = params(uri.query().unwrap_or(""));
    asked.extend(params(&String::from_utf8_lossy(&body)));
    let given = |name: &str| asked.get(name).map(String::as_str).unwrap_or("");
    if given("client_id") != state.client_id || given("client_secret") != state.client_secret {
        return Json(json!({"error": "invalid_client"})).into_response();
    }
    let refresh_token = lock(&state.refresh_token).clone();
    if given("grant_type") != "refresh_token"
        || refresh_token.is_empty()
        || given("refresh_token") != refresh_token
    {
        return Json(json!({"error": "invalid_code"})).into_response();
    }
    let life = *lock(&state.token_life);
    let number = {
        let mut refreshes = lock(&state.refreshes);
        *refreshes += 1;
        *refreshes
    };
    let access_token = format!("1000.access{number:04}.{:016x}", fastrand::u64(..));
    {
        let mut tokens = lock(&state.tokens);
        let now = Instant::now();
        tokens.retain(|(_, expires)| *expires > now);
        tokens.push((access_token.clone(), now + life));
        // The 31st deletes the oldest.
        while tokens.len() > LIVE_TOKENS {
            tokens.remove(0);
        }
    }
    Json(json!({
        "access_token": access_token,
        "expires_in": life.as_secs().max(1),
        "api_domain": "https://www.zohoapis.com",
        "token_type": "Bearer",
    }))
    .into_response()
}

/// What every API call goes through: the access token, then a queued
/// fault, then the handler; and the call recorded with its answer.
pub(super) async fn admit_and_record(
    State(state): State<Arc<FakeState>>,
    request: Request,
    next: Next,
) -> Response {
    let method = request.method().to_string();
    let path = request.uri().path().to_owned();
    let response = match admitted(&state, request.headers()) {
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

fn admitted(state: &FakeState, headers: &HeaderMap) -> Option<Response> {
    let token = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Zoho-oauthtoken "));
    let now = Instant::now();
    let live = token.is_some_and(|token| {
        lock(&state.tokens)
            .iter()
            .any(|(live, expires)| live == token && *expires > now)
    });
    if !live {
        return Some(error(
            StatusCode::UNAUTHORIZED,
            "INVALID_TOKEN",
            "invalid oauth token",
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

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        Json(json!({"code": code, "details": {}, "message": message, "status": "error"})),
    )
        .into_response()
}

/// Whether the next `what`'s answer is to be lost (and counts it).
fn loses(state: &FakeState, what: Lost) -> bool {
    crate::server::take_one(&state.lost, &what)
}

fn next_id(state: &FakeState) -> String {
    let mut next = lock(&state.next_id);
    *next += 1;
    format!("{}", 4_150_868_000_000_000_000u64 + *next)
}

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_str(), b.as_str()) {
        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
        _ => a == b,
    }
}

/// `POST /crm/v8/{module}/upsert`.
pub(super) async fn upsert(
    State(state): State<Arc<FakeState>>,
    Path(module): Path<String>,
    Json(body): Json<Value>,
) -> Response {
    if !["Leads", "Contacts"].contains(&module.as_str()) {
        return error(
            StatusCode::BAD_REQUEST,
            "INVALID_MODULE",
            "the module name given seems to be invalid",
        );
    }
    let Some(data) = body.get("data").and_then(Value::as_array) else {
        return error(StatusCode::BAD_REQUEST, "INVALID_DATA", "invalid data");
    };
    if data.len() > 100 {
        return error(
            StatusCode::BAD_REQUEST,
            "LIMIT_EXCEEDED",
            "the number of records exceeds 100",
        );
    }
    lock(&state.triggers).push(body.get("trigger").cloned().unwrap_or(Value::Null));
    let check: Vec<String> = body
        .get("duplicate_check_fields")
        .and_then(Value::as_array)
        .map(|fields| {
            fields
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_else(|| vec!["Email".to_owned()]);
    let mut results = Vec::new();
    for record in data {
        let Some(fields) = record.as_object() else {
            results.push(json!({"code": "INVALID_DATA", "details": {}, "message": "invalid data", "status": "error"}));
            continue;
        };
        if fields
            .get("Last_Name")
            .and_then(Value::as_str)
            .is_none_or(|n| n.trim().is_empty())
        {
            results.push(json!({"code": "MANDATORY_NOT_FOUND", "details": {"api_name": "Last_Name"}, "message": "required field not found", "status": "error"}));
            continue;
        }
        let mut records = lock(&state.records);
        let found = check.iter().find_map(|field| {
            let value = fields.get(field)?;
            records
                .iter()
                .position(|r| {
                    r.module == module && r.fields.get(field).is_some_and(|v| same(v, value))
                })
                .map(|at| (at, field.clone()))
        });
        let result = match found {
            Some((at, field)) => {
                let existing = &mut records[at];
                existing.fields.extend(fields.clone());
                existing.writes += 1;
                json!({"code": "SUCCESS", "duplicate_field": field, "action": "update", "details": {"id": existing.id}, "message": "record updated", "status": "success"})
            }
            None => {
                let id = next_id(&state);
                records.push(Record {
                    id: id.clone(),
                    module: module.clone(),
                    fields: fields.clone(),
                    writes: 1,
                });
                json!({"code": "SUCCESS", "duplicate_field": null, "action": "insert", "details": {"id": id}, "message": "record added", "status": "success"})
            }
        };
        results.push(result);
    }
    if loses(&state, Lost::Upsert) {
        return error(
            StatusCode::BAD_GATEWAY,
            "BAD_GATEWAY",
            "upstream connection lost",
        );
    }
    let mixed = results.iter().any(|r| r["status"] != "success");
    let status = if mixed {
        StatusCode::MULTI_STATUS
    } else {
        StatusCode::OK
    };
    (status, Json(json!({"data": results}))).into_response()
}

/// `GET /crm/v8/{module}/search?email=`.
pub(super) async fn search(
    State(state): State<Arc<FakeState>>,
    Path(module): Path<String>,
    uri: Uri,
) -> Response {
    let asked = params(uri.query().unwrap_or(""));
    let email = Value::String(asked.get("email").cloned().unwrap_or_default());
    let found: Vec<Value> = lock(&state.records)
        .iter()
        .filter(|r| r.module == module && r.fields.get("Email").is_some_and(|v| same(v, &email)))
        .map(|r| json!({"id": r.id, "Email": r.fields.get("Email")}))
        .collect();
    if found.is_empty() {
        return StatusCode::NO_CONTENT.into_response();
    }
    Json(json!({"data": found, "info": {"count": found.len(), "more_records": false}}))
        .into_response()
}

/// `DELETE /crm/v8/{module}?ids=a,b`: each record and its notes deleted,
/// answered per id in `data[]`, `SUCCESS` or `INVALID_DATA` for an id that
/// is no record of the module
/// (<https://www.zoho.com/crm/developer/docs/api/v8/delete-records.html>).
pub(super) async fn delete_records(
    State(state): State<Arc<FakeState>>,
    Path(module): Path<String>,
    uri: Uri,
) -> Response {
    let asked = params(uri.query().unwrap_or(""));
    let ids: Vec<String> = asked
        .get("ids")
        .map(|ids| ids.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    let mut data = Vec::new();
    for id in &ids {
        let mut records = lock(&state.records);
        let before = records.len();
        records.retain(|r| !(r.module == module && &r.id == id));
        let deleted = records.len() < before;
        drop(records);
        if deleted {
            lock(&state.notes).retain(|note| &note.record != id);
            data.push(json!({"code": "SUCCESS", "details": {"id": id}, "message": "record deleted", "status": "success"}));
        } else {
            data.push(json!({"code": "INVALID_DATA", "details": {"id": id}, "message": "the related id given seems to be invalid", "status": "error"}));
        }
    }
    Json(json!({ "data": data })).into_response()
}

fn record_exists(state: &FakeState, module: &str, id: &str) -> bool {
    lock(&state.records)
        .iter()
        .any(|r| r.module == module && r.id == id)
}

/// `POST /crm/v8/{module}/{id}/Notes`.
pub(super) async fn create_note(
    State(state): State<Arc<FakeState>>,
    Path((module, id)): Path<(String, String)>,
    Json(body): Json<Value>,
) -> Response {
    if !record_exists(&state, &module, &id) {
        return error(
            StatusCode::NOT_FOUND,
            "INVALID_URL_PATTERN",
            "Please check if the URL trying to access is a correct one",
        );
    }
    let Some(content) = body.pointer("/data/0/Note_Content").and_then(Value::as_str) else {
        return error(
            StatusCode::BAD_REQUEST,
            "MANDATORY_NOT_FOUND",
            "required field not found",
        );
    };
    let note_id = next_id(&state);
    lock(&state.notes).push(Note {
        id: note_id.clone(),
        record: id,
        content: content.to_owned(),
    });
    if loses(&state, Lost::NoteCreate) {
        return error(
            StatusCode::BAD_GATEWAY,
            "BAD_GATEWAY",
            "upstream connection lost",
        );
    }
    (
        StatusCode::CREATED,
        Json(json!({"data": [{"code": "SUCCESS", "details": {"id": note_id}, "message": "record added", "status": "success"}]})),
    )
        .into_response()
}

/// `GET /crm/v8/{module}/{id}/Notes`: a page of `per_page` (at most 200)
/// from `page` (1 first), `info.more_records` when another follows.
pub(super) async fn list_notes(
    State(state): State<Arc<FakeState>>,
    Path((module, id)): Path<(String, String)>,
    uri: axum::http::Uri,
) -> Response {
    let number = |wanted: &str| {
        url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
            .find(|(name, _)| name == wanted)
            .and_then(|(_, value)| value.parse::<usize>().ok())
    };
    let per_page = number("per_page").unwrap_or(200).clamp(1, 200);
    let page = number("page").unwrap_or(1).max(1);
    if !record_exists(&state, &module, &id) {
        return error(
            StatusCode::NOT_FOUND,
            "INVALID_URL_PATTERN",
            "Please check if the URL trying to access is a correct one",
        );
    }
    let all: Vec<Value> = lock(&state.notes)
        .iter()
        .filter(|note| note.record == id)
        .map(|note| json!({"id": note.id, "Note_Title": "Form submission", "Note_Content": note.content}))
        .collect();
    let from = (page - 1) * per_page;
    let more = all.len() > from + per_page;
    let notes: Vec<Value> = all.into_iter().skip(from).take(per_page).collect();
    if notes.is_empty() {
        return StatusCode::NO_CONTENT.into_response();
    }
    Json(json!({"data": notes, "info": {"per_page": per_page, "page": page, "more_records": more}}))
        .into_response()
}

pub(super) async fn all_records(State(state): State<Arc<FakeState>>) -> Json<Value> {
    let records: Vec<Value> = lock(&state.records)
        .iter()
        .map(|r| {
            let mut fields: Map<String, Value> = r.fields.clone();
            fields.insert("id".to_owned(), json!(r.id));
            fields.insert("writes".to_owned(), json!(r.writes));
            Value::Object(fields)
        })
        .collect();
    Json(json!({"count": records.len(), "records": records}))
}

pub(super) async fn all_notes(State(state): State<Arc<FakeState>>) -> Json<Value> {
    let notes: Vec<Value> = lock(&state.notes)
        .iter()
        .map(|note| json!({"id": note.id, "record": note.record, "content": note.content}))
        .collect();
    Json(json!({"count": notes.len(), "notes": notes}))
}
