//! A HubSpot on 127.0.0.1: the contacts batch upsert endpoint, with the
//! request validation and answer shapes HubSpot documents, for tests and
//! `DESTINATION=hubspot make run`. Built from HubSpot's reference pages:
//!
//! - batch upsert, request and response (`inputs[]` with `idProperty`, `id`,
//!   `properties`, `objectWriteTraceId`; `results[]` with `new` and
//!   `objectWriteTraceId`; `errors[]`, `numErrors`), for both path forms:
//!   <https://developers.hubspot.com/docs/api-reference/2026-03/crm/objects/contacts/batch/upsert-contacts>
//!   and <https://developers.hubspot.com/docs/api-reference/legacy/crm/objects/contacts/batch/upsert-contacts>;
//! - errors: 207 multi-status with per-input errors, 401, 403 with
//!   `MISSING_SCOPES`, the error body (`status`, `message`, `category`,
//!   `errors[].code`, `context`), 429 with `policyName`, and 477 with a
//!   `Retry-After`: <https://developers.hubspot.com/docs/api-reference/error-handling>;
//! - 409 "Contact already exists" (category `OBJECT_ALREADY_EXISTS`) for a
//!   write that conflicts with an existing contact:
//!   <https://developers.hubspot.com/docs/methods/contacts/create_or_update>;
//!   a batch with one such input fails as a whole, as HubSpot's batch
//!   contact writes do for one contact's error:
//!   <https://developers.hubspot.com/docs/methods/contacts/batch_create_or_update>;
//! - the rate-limit headers (`X-HubSpot-RateLimit-Max`, `-Remaining`,
//!   `-Interval-Milliseconds`): <https://developers.hubspot.com/docs/guides/apps/api-usage/usage-details>.
//!
//! What it enforces: a bearer token; at most 100 inputs; an `idProperty`
//! that is a unique property; no two inputs for the same id in one request
//! (HubSpot refuses the whole request); only known properties (an unknown
//! one fails the whole request); a plausible email (per input, 207).
//! `GET /contacts` lists what it holds; `POST /faults` with
//! `{"status": 429, "policyName": "DAILY"}` (or 409, 423, 477, 5xx, 401, 403) makes
//! the next calls fail so, `"times"` of them (every call without it);
//! `DELETE /faults` restores it.

use std::collections::{HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// The token the local HubSpot fake accepts (`DESTINATION=hubspot make run`).
pub const DEMO_HUBSPOT_TOKEN: &str = "pat-local-demo-hubspot-token";

/// The properties a fresh portal knows (HubSpot's standard contact
/// properties used here, and one custom unique property).
pub const KNOWN_PROPERTIES: &[&str] = &[
    "email",
    "firstname",
    "lastname",
    "phone",
    "company",
    "message",
    "hs_lead_status",
    "staticforms_submission_id",
];

/// Properties with unique values: the ones an upsert may be keyed by.
pub const UNIQUE_PROPERTIES: &[&str] = &["email", "staticforms_submission_id"];

/// The rolling window of `TEN_SECONDLY_ROLLING` and its size.
const WINDOW: Duration = Duration::from_secs(10);
const WINDOW_MAX: usize = 100;

/// A contact as the fake holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Contact {
    pub id: String,
    pub properties: Map<String, Value>,
    /// How many upserts wrote it.
    pub writes: u32,
}

/// One request to the upsert endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub path: String,
    pub inputs: usize,
    pub status: u16,
}

/// A failure to answer instead of upserting.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fault {
    pub status: u16,
    /// For 429: `TEN_SECONDLY_ROLLING`, `SECONDLY` or `DAILY`.
    pub policy_name: Option<String>,
    /// A `Retry-After` header value.
    pub retry_after: Option<String>,
    /// For 403: the error category, e.g. `MISSING_SCOPES`.
    pub category: Option<String>,
    /// How many calls it answers; every call when absent.
    pub times: Option<u32>,
}

impl Fault {
    pub fn status(status: u16) -> Self {
        Fault {
            status,
            policy_name: None,
            retry_after: None,
            category: None,
            times: None,
        }
    }

    pub fn rate_limited(policy_name: &str) -> Self {
        Fault {
            policy_name: Some(policy_name.to_owned()),
            ..Fault::status(429)
        }
    }

    pub fn times(mut self, times: u32) -> Self {
        self.times = Some(times);
        self
    }
}

struct FakeState {
    /// Contacts by HubSpot id.
    contacts: Mutex<Vec<Contact>>,
    known: Mutex<HashSet<String>>,
    token: Mutex<Option<String>>,
    faults: Mutex<VecDeque<Fault>>,
    calls: Mutex<Vec<Call>>,
    window: Mutex<VecDeque<Instant>>,
    /// Ids whose every write conflicts with another contact (409 for the
    /// whole request that carries one).
    conflicting: Mutex<HashSet<String>>,
    /// When set, an invalid email fails the whole request (400) instead of
    /// its own input (207): HubSpot answers either way depending on the
    /// endpoint, and the adapter must isolate the bad input in both.
    whole_request_errors: Mutex<bool>,
    /// A property an admin's validation rule requires on every contact
    /// written: enforced on API writes from date version 2026-09 on.
    required: Mutex<Option<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A running fake; it stops when dropped.
pub struct HubSpotFake {
    address: SocketAddr,
    state: Arc<FakeState>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for HubSpotFake {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl HubSpotFake {
    /// Starts on a free loopback port, accepting `token`.
    pub async fn start(token: &str) -> std::io::Result<HubSpotFake> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), token).await
    }

    pub async fn start_on(address: SocketAddr, token: &str) -> std::io::Result<HubSpotFake> {
        let listener = tokio::net::TcpListener::bind(address).await?;
        let address = listener.local_addr()?;
        let state = Arc::new(FakeState {
            contacts: Mutex::new(Vec::new()),
            known: Mutex::new(KNOWN_PROPERTIES.iter().map(|p| p.to_string()).collect()),
            token: Mutex::new(Some(token.to_owned())),
            faults: Mutex::new(VecDeque::new()),
            calls: Mutex::new(Vec::new()),
            window: Mutex::new(VecDeque::new()),
            whole_request_errors: Mutex::new(false),
            required: Mutex::new(None),
            conflicting: Mutex::new(HashSet::new()),
        });
        let app = Router::new()
            .route("/crm/v3/objects/contacts/batch/upsert", post(upsert_v3))
            .route(
                "/crm/objects/{version}/contacts/batch/upsert",
                post(upsert_dated),
            )
            .route("/contacts", get(list))
            .route("/faults", post(set_fault).delete(clear_faults))
            .with_state(Arc::clone(&state));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(HubSpotFake {
            address,
            state,
            server,
        })
    }

    /// For `HUBSPOT_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Accepts `token` from now on, and no other (a rotation).
    pub fn rotate_token(&self, token: &str) {
        *lock(&self.state.token) = Some(token.to_owned());
    }

    /// Answers the next calls with `fault` (see `Fault::times`).
    pub fn fail(&self, fault: Fault) {
        lock(&self.state.faults).push_back(fault);
    }

    pub fn recover(&self) {
        lock(&self.state.faults).clear();
    }

    /// Makes `property` unknown, as if nobody created it in the portal.
    pub fn forget_property(&self, property: &str) {
        lock(&self.state.known).remove(property);
    }

    /// Answers an invalid email with a 400 for the whole request.
    pub fn fail_whole_requests_on_invalid_values(&self) {
        *lock(&self.state.whole_request_errors) = true;
    }

    /// An admin's validation rule: every contact written must carry
    /// `property`. HubSpot applies such rules to API writes from date
    /// version 2026-09
    /// (<https://developers.hubspot.com/changelog/crm-api-write-validation-enforcement>):
    /// a call with a lead that breaks it is a 400 for the whole request,
    /// category `VALIDATION_ERROR` and a message, without `errors[]` (every
    /// field of HubSpot's error body is optional). Older versions ignore it.
    pub fn require_property(&self, property: &str) {
        *lock(&self.state.required) = Some(property.to_owned());
    }

    /// Every request that carries an input with this `id` (its email, or
    /// its unique property's value) answers 409 for the whole request: a
    /// conflict with another contact that no retry resolves.
    pub fn conflict_on(&self, id: &str) {
        lock(&self.state.conflicting).insert(id.to_owned());
    }

    pub fn contacts(&self) -> Vec<Contact> {
        lock(&self.state.contacts).clone()
    }

    /// The contact whose `property` is `value`.
    pub fn contact_by(&self, property: &str, value: &str) -> Option<Contact> {
        lock(&self.state.contacts)
            .iter()
            .find(|c| c.properties.get(property).and_then(Value::as_str) == Some(value))
            .cloned()
    }

    pub fn calls(&self) -> Vec<Call> {
        lock(&self.state.calls).clone()
    }
}

async fn upsert_v3(
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

async fn upsert_dated(
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
    if let Some(fault) = take_fault(state) {
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

fn take_fault(state: &FakeState) -> Option<Fault> {
    let mut faults = lock(&state.faults);
    let fault = faults.front_mut()?;
    let given = fault.clone();
    if let Some(times) = &mut fault.times {
        *times = times.saturating_sub(1);
        if *times == 0 {
            faults.pop_front();
        }
    }
    Some(given)
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

async fn list(State(state): State<Arc<FakeState>>) -> Json<Value> {
    let contacts = lock(&state.contacts).clone();
    let listed: Vec<Value> = contacts
        .iter()
        .map(|c| json!({"id": c.id, "properties": c.properties, "writes": c.writes}))
        .collect();
    Json(json!({"count": listed.len(), "contacts": listed}))
}

async fn set_fault(State(state): State<Arc<FakeState>>, Json(fault): Json<Fault>) -> StatusCode {
    lock(&state.faults).push_back(fault);
    StatusCode::NO_CONTENT
}

async fn clear_faults(State(state): State<Arc<FakeState>>) -> StatusCode {
    lock(&state.faults).clear();
    StatusCode::NO_CONTENT
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
