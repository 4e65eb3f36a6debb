//! The fake's HTTP side: the batch upsert, as HubSpot validates and answers
//! it (sources in the module's documentation), and the listing.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::{Call, Contact, FakeState, Fault, UNIQUE_PROPERTIES, WINDOW, WINDOW_MAX};
use crate::server::lock;

pub(super) async fn upsert_v3(
    State(state): State<Arc<FakeState>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    handle(
        &state,
        "/crm/v3/objects/contacts/batch/upsert",
        &headers,
        body,
    )
}

pub(super) async fn upsert_dated(
    State(state): State<Arc<FakeState>>,
    Path(version): Path<String>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let path = format!("/crm/objects/{version}/contacts/batch/upsert");
    // Date versions are `YYYY-MM`.
    let dated = version.len() == 7
        && version.as_bytes()[4] == b'-'
        && version.chars().filter(char::is_ascii_digit).count() == 6;
    if !dated {
        return answer(
            &state,
            &path,
            0,
            StatusCode::NOT_FOUND,
            json!({"status": "error", "message": "Unknown API version", "category": "OBJECT_NOT_FOUND"}),
        );
    }
    handle(&state, &path, &headers, body)
}

fn answer(
    state: &FakeState,
    path: &str,
    inputs: usize,
    status: StatusCode,
    body: Value,
) -> Response {
    lock(&state.calls).push(Call {
        path: path.to_owned(),
        inputs,
        status: status.as_u16(),
    });
    let remaining = {
        let mut window = lock(&state.window);
        let now = Instant::now();
        window.push_back(now);
        while window
            .front()
            .is_some_and(|t| now.duration_since(*t) > WINDOW)
        {
            window.pop_front();
        }
        WINDOW_MAX.saturating_sub(window.len())
    };
    let mut response = (status, Json(body)).into_response();
    let headers = response.headers_mut();
    headers.insert("x-hubspot-ratelimit-max", WINDOW_MAX.into());
    headers.insert("x-hubspot-ratelimit-remaining", remaining.into());
    headers.insert(
        "x-hubspot-ratelimit-interval-milliseconds",
        (WINDOW.as_millis() as u64).into(),
    );
    response
}

fn error_body(message: &str, category: &str, code: Option<&str>, context: Value) -> Value {
    let mut body = json!({
        "status": "error",
        "message": message,
        "correlationId": "00000000-0000-4000-8000-000000000000",
        "category": category,
    });
    if let Some(code) = code {
        body["errors"] = json!([{"message": message, "code": code, "context": context}]);
    }
    body
}

fn handle(state: &FakeState, path: &str, headers: &HeaderMap, body: Value) -> Response {
    let inputs = body["inputs"].as_array().cloned().unwrap_or_default();
    let count = inputs.len();
    // A 400 for the whole request: HubSpot's validation error body.
    let refuse = |body: Value| answer(state, path, count, StatusCode::BAD_REQUEST, body);
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if bearer.is_none() || bearer != lock(&state.token).as_deref() {
        return answer(
            state,
            path,
            count,
            StatusCode::UNAUTHORIZED,
            error_body(
                "Authentication credentials not found.",
                "INVALID_AUTHENTICATION",
                None,
                json!({}),
            ),
        );
    }
    if let Some(fault) = state.faults.next() {
        return fault_answer(state, path, count, &fault);
    }
    if count == 0 || count > 100 {
        return refuse(error_body(
            "Batch size must be between 1 and 100",
            "VALIDATION_ERROR",
            None,
            json!({}),
        ));
    }
    // Whole-request checks first: one bad input fails them all.
    let known = lock(&state.known).clone();
    let mut ids = HashSet::new();
    for input in &inputs {
        let id_property = input["idProperty"].as_str().unwrap_or("");
        if !UNIQUE_PROPERTIES.contains(&id_property) {
            return refuse(error_body(
                "idProperty must be a property with unique values",
                "VALIDATION_ERROR",
                Some("INVALID_ID_PROPERTY"),
                json!({"propertyName": [id_property]}),
            ));
        }
        let Some(id) = input["id"].as_str() else {
            return refuse(error_body(
                "Each input needs an id",
                "VALIDATION_ERROR",
                None,
                json!({}),
            ));
        };
        if !ids.insert((id_property.to_owned(), id.to_lowercase())) {
            return refuse(error_body(
                "Duplicate IDs found in batch input",
                "VALIDATION_ERROR",
                Some("DUPLICATE_ID"),
                json!({"ids": [id]}),
            ));
        }
        if let Some(properties) = input["properties"].as_object() {
            let email = properties.get("email").and_then(Value::as_str);
            if *lock(&state.whole_request_errors) && email.is_some_and(|e| !plausible_email(e)) {
                return refuse(error_body(
                    "Email address is invalid",
                    "VALIDATION_ERROR",
                    Some("INVALID_EMAIL"),
                    json!({}),
                ));
            }
            let required = lock(&state.required).clone();
            if let Some(required) = required.filter(|_| enforces_validation_rules(path)) {
                if properties
                    .get(&required)
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    return refuse(json!({
                        "status": "error",
                        "category": "VALIDATION_ERROR",
                        "message": format!("Property \"{required}\" is required by a validation rule of this account"),
                        "correlationId": "00000000-0000-4000-8000-000000000000",
                    }));
                }
            }
            if let Some(unknown) = properties.keys().find(|p| !known.contains(*p)) {
                return refuse(error_body(
                    &format!("Property \"{unknown}\" does not exist"),
                    "VALIDATION_ERROR",
                    Some("PROPERTY_DOESNT_EXIST"),
                    json!({"propertyName": [unknown]}),
                ));
            }
        }
    }
    let conflicting = lock(&state.conflicting).clone();
    if let Some(id) = inputs
        .iter()
        .filter_map(|input| input["id"].as_str())
        .find(|id| conflicting.contains(*id))
    {
        return answer(state, path, count, StatusCode::CONFLICT, conflict_body(id));
    }
    let mut results = Vec::new();
    let mut errors = Vec::new();
    let mut contacts = lock(&state.contacts);
    for input in &inputs {
        let id_property = input["idProperty"].as_str().unwrap_or_default();
        let id = input["id"].as_str().unwrap_or_default();
        let trace = input["objectWriteTraceId"].clone();
        let mut properties = input["properties"].as_object().cloned().unwrap_or_default();
        properties.insert(id_property.to_owned(), Value::String(id.to_owned()));
        let email = properties
            .get("email")
            .and_then(Value::as_str)
            .unwrap_or("");
        if properties.contains_key("email") && !plausible_email(email) {
            errors.push(json!({
                "status": "error",
                "category": "VALIDATION_ERROR",
                "message": "Email address is invalid",
                "context": {"objectWriteTraceId": [trace]},
                "errors": [{"message": "Email address is invalid", "code": "INVALID_EMAIL"}],
            }));
            continue;
        }
        let existing = contacts
            .iter_mut()
            .find(|c| c.properties.get(id_property).and_then(Value::as_str) == Some(id));
        let (contact, new) = match existing {
            Some(contact) => {
                contact.properties.extend(properties);
                contact.writes += 1;
                (contact.clone(), false)
            }
            None => {
                let contact = Contact {
                    id: (1000 + contacts.len()).to_string(),
                    properties,
                    writes: 1,
                };
                contacts.push(contact.clone());
                (contact, true)
            }
        };
        results.push(json!({
            "id": contact.id,
            "properties": contact.properties,
            "createdAt": "2026-11-30T08:00:00Z",
            "updatedAt": "2026-11-30T08:00:00Z",
            "archived": false,
            "new": new,
            "objectWriteTraceId": trace,
        }));
    }
    drop(contacts);
    let status = if errors.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::MULTI_STATUS
    };
    let mut body = json!({
        "status": "COMPLETE",
        "results": results,
        "startedAt": "2026-11-30T08:00:00Z",
        "completedAt": "2026-11-30T08:00:01Z",
    });
    if !errors.is_empty() {
        body["numErrors"] = errors.len().into();
        body["errors"] = errors.into();
    }
    answer(state, path, count, status, body)
}

/// Date versions from 2026-09 on apply an account's validation rules to
/// API writes; v3 and older date versions do not.
fn enforces_validation_rules(path: &str) -> bool {
    path.strip_prefix("/crm/objects/")
        .and_then(|rest| rest.split('/').next())
        .is_some_and(|version| version >= "2026-09")
}

fn conflict_body(id: &str) -> Value {
    json!({
        "status": "error",
        "message": "Contact already exists. Existing ID: 999",
        "correlationId": "00000000-0000-4000-8000-000000000000",
        "category": "OBJECT_ALREADY_EXISTS",
        "errors": [{"message": format!("A contact with {id} already exists. Existing ID: 999"), "in": "email"}],
    })
}

fn plausible_email(email: &str) -> bool {
    match email.split_once('@') {
        Some((local, domain)) => !local.is_empty() && domain.contains('.') && !email.contains(' '),
        None => false,
    }
}

fn fault_answer(state: &FakeState, path: &str, count: usize, fault: &Fault) -> Response {
    let status = StatusCode::from_u16(fault.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = match fault.status {
        429 => {
            let policy = fault
                .policy_name
                .as_deref()
                .unwrap_or("TEN_SECONDLY_ROLLING");
            json!({
                "status": "error",
                "message": format!("You have reached your {} limit.", policy.to_lowercase()),
                "errorType": "RATE_LIMIT",
                "correlationId": "00000000-0000-4000-8000-000000000000",
                "policyName": policy,
            })
        }
        403 => error_body(
            "This app hasn't been granted all required scopes to make this call.",
            fault.category.as_deref().unwrap_or("MISSING_SCOPES"),
            None,
            json!({"requiredScopes": ["crm.objects.contacts.write"]}),
        ),
        401 => error_body(
            "Authentication credentials not found.",
            "INVALID_AUTHENTICATION",
            None,
            json!({}),
        ),
        409 => conflict_body("someone@example.com"),
        _ => error_body("Internal error", "INTERNAL_ERROR", None, json!({})),
    };
    let mut response = answer(state, path, count, status, body);
    if let Some(retry_after) = fault.retry_after.as_deref().and_then(|v| v.parse().ok()) {
        response.headers_mut().insert("retry-after", retry_after);
    }
    response
}

pub(super) async fn list(State(state): State<Arc<FakeState>>) -> Json<Value> {
    let contacts = lock(&state.contacts).clone();
    let listed: Vec<Value> = contacts
        .iter()
        .map(|c| json!({"id": c.id, "properties": c.properties, "writes": c.writes}))
        .collect();
    Json(json!({"count": listed.len(), "contacts": listed}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_that_hubspot_refuses() {
        for (email, plausible) in [
            ("ada@example.com", true),
            ("ada@example", false),
            ("@example.com", false),
            ("not an email", false),
            ("", false),
        ] {
            assert_eq!(plausible_email(email), plausible, "{email:?}");
        }
    }
}
