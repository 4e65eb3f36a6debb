//! A CRM on 127.0.0.1 that upserts leads by external id, the way a real CRM
//! with a native upsert does: `PUT /leads/{externalId}` creates or replaces.
//! Tests script its answers (429 with Retry-After, 503, 400...) and a delay
//! per call, and read back what it holds and how many calls ran at once.
//!
//! A person can break it too, over HTTP, to watch the pipeline recover:
//! `POST /faults` with `{"status": 503}` (optionally `"retryAfter": "5"`,
//! and `"times": 3` for that many calls only) makes upserts fail so;
//! `DELETE /faults` restores it.
//!
//! `DELETE /people` with `{"email": ...}` deletes every lead of that address
//! (204; 404 when it holds none), as docs/destinations/http.md asks of a
//! CRM behind `CRM_ERASE_URL`.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, put};
use axum::{Json, Router};
use serde_json::Value;

use crate::server::{self, lock, FaultQueue, Listener, Server};

/// A lead as the stub holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredLead {
    /// The stub's own id for the lead (`lead-1`, `lead-2`, ... in order of
    /// first write), answered as `id` as a CRM would.
    pub id: String,
    pub body: Value,
    pub idempotency_key: Option<String>,
    pub authorization: Option<String>,
    /// How many successful upserts wrote this lead.
    pub writes: u32,
    /// When it was first written, in milliseconds since the Unix epoch:
    /// `make bench` measures from a submission to here.
    pub first_written_ms: u64,
}

/// One request the stub received, successful or not.
#[derive(Debug, Clone)]
pub struct Call {
    pub external_id: String,
    pub idempotency_key: Option<String>,
    pub at: Instant,
}

/// A scripted answer: status and optional Retry-After value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub retry_after: Option<String>,
}

impl Answer {
    pub fn status(status: u16) -> Self {
        Answer {
            status,
            retry_after: None,
        }
    }

    pub fn retry_after(status: u16, value: &str) -> Self {
        Answer {
            status,
            retry_after: Some(value.to_owned()),
        }
    }
}

struct StubState {
    leads: Mutex<HashMap<String, StoredLead>>,
    calls: Mutex<Vec<Call>>,
    /// Answers given once each, in order, per external id.
    scripted: Mutex<HashMap<String, VecDeque<Answer>>>,
    /// Answers given every time, per external id.
    fixed: Mutex<HashMap<String, Answer>>,
    delay: Mutex<Duration>,
    /// Answers calls before anything else does (an outage).
    faults: Arc<FaultQueue<Outage>>,
    /// When set, a call without `Authorization: Bearer <token>` gets 401.
    required_bearer: Mutex<Option<String>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    log_upserts: bool,
    /// Random failures and delays (`set_unreliable`).
    unreliable: Mutex<Option<Unreliable>>,
}

/// A CRM that fails some calls and is slow to answer others, at random
/// from a seed: the chaos run's destination.
struct Unreliable {
    rng: fastrand::Rng,
    fail_percent: u8,
    max_delay: Duration,
}

/// What `POST /faults` sets, and `fail_all`: every call's answer while
/// `times` lasts.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Outage {
    status: u16,
    retry_after: Option<String>,
    times: Option<u32>,
}

impl server::Fault for Outage {
    fn times_mut(&mut self) -> &mut Option<u32> {
        &mut self.times
    }

    fn status(&self) -> u16 {
        self.status
    }
}

/// A read-only view of a running stub (its counts), for another task.
#[derive(Clone)]
pub struct CrmView(Arc<StubState>);

impl CrmView {
    /// Calls being answered right now.
    pub fn in_flight(&self) -> usize {
        self.0.in_flight.load(Ordering::SeqCst)
    }

    pub fn lead_count(&self) -> usize {
        lock(&self.0.leads).len()
    }

    pub fn writes(&self) -> u64 {
        lock(&self.0.leads)
            .values()
            .map(|lead| u64::from(lead.writes))
            .sum()
    }
}

/// A running stub; it stops when dropped.
pub struct CrmStub {
    state: Arc<StubState>,
    server: Server,
}

impl CrmStub {
    /// Starts on a free loopback port.
    pub async fn start() -> std::io::Result<CrmStub> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), false).await
    }

    /// Starts on `address`; with `log_upserts`, prints one line per upsert
    /// (external id and write count only: no lead data).
    pub async fn start_on(address: SocketAddr, log_upserts: bool) -> std::io::Result<CrmStub> {
        let listener = Listener::bind(address).await?;
        let state = Arc::new(StubState {
            leads: Mutex::default(),
            calls: Mutex::default(),
            scripted: Mutex::default(),
            fixed: Mutex::default(),
            delay: Mutex::default(),
            faults: FaultQueue::new("crm-stub"),
            required_bearer: Mutex::default(),
            in_flight: AtomicUsize::default(),
            max_in_flight: AtomicUsize::default(),
            log_upserts,
            unreliable: Mutex::default(),
        });
        let app = Router::new()
            .route("/leads", get(list))
            .route("/leads/{external_id}", put(upsert).get(read))
            .route("/people", delete(erase))
            .with_state(Arc::clone(&state))
            .merge(state.faults.routes());
        let server = listener.serve(app);
        Ok(CrmStub { state, server })
    }

    /// The URL for `CRM_ERASE_URL`.
    pub fn erase_url(&self) -> String {
        format!("{}/people", self.server.url())
    }

    /// The URL template for `CRM_URL`.
    pub fn leads_url(&self) -> String {
        format!("{}/leads/{{externalId}}", self.server.url())
    }

    pub fn address(&self) -> SocketAddr {
        self.server.address()
    }

    /// Answers for `external_id`, used once each before normal upserts.
    pub fn script(&self, external_id: &str, answers: impl IntoIterator<Item = Answer>) {
        lock(&self.state.scripted)
            .entry(external_id.to_owned())
            .or_default()
            .extend(answers);
    }

    /// Answers every call for `external_id` with `answer`.
    pub fn always(&self, external_id: &str, answer: Answer) {
        lock(&self.state.fixed).insert(external_id.to_owned(), answer);
    }

    /// Forgets the answers scripted or fixed for `external_id`.
    pub fn answer_normally(&self, external_id: &str) {
        lock(&self.state.scripted).remove(external_id);
        lock(&self.state.fixed).remove(external_id);
    }

    /// Every call gets `answer` until [`CrmStub::recover`] (an outage).
    pub fn fail_all(&self, answer: Answer) {
        self.state.faults.clear();
        self.state.faults.push(Outage {
            status: answer.status,
            retry_after: answer.retry_after,
            times: None,
        });
    }

    pub fn recover(&self) {
        self.state.faults.clear();
    }

    /// Calls without `Authorization: Bearer <token>` get 401 from now on.
    pub fn require_bearer(&self, token: &str) {
        *lock(&self.state.required_bearer) = Some(format!("Bearer {token}"));
    }

    /// From now on `fail_percent` of the calls answer 503 (nothing
    /// written), and the others are written at once but answered after a
    /// random delay of up to `max_delay`: a worker killed meanwhile has
    /// written the lead and not yet its receipt. Repeatable from `seed`.
    pub fn set_unreliable(&self, seed: u64, fail_percent: u8, max_delay: Duration) {
        *lock(&self.state.unreliable) = Some(Unreliable {
            rng: fastrand::Rng::with_seed(seed),
            fail_percent,
            max_delay,
        });
    }

    /// Every call takes at least this long.
    pub fn set_delay(&self, delay: Duration) {
        *lock(&self.state.delay) = delay;
    }

    pub fn lead(&self, external_id: &str) -> Option<StoredLead> {
        lock(&self.state.leads).get(external_id).cloned()
    }

    pub fn lead_count(&self) -> usize {
        lock(&self.state.leads).len()
    }

    /// Successful upserts, over every lead.
    pub fn writes(&self) -> u64 {
        self.clone_handle().writes()
    }

    /// A handle on the same stub that does not stop it when dropped.
    pub fn clone_handle(&self) -> CrmView {
        CrmView(Arc::clone(&self.state))
    }

    pub fn calls(&self) -> Vec<Call> {
        lock(&self.state.calls).clone()
    }

    pub fn calls_for(&self, external_id: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.external_id == external_id)
            .collect()
    }

    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }
}

async fn upsert(
    State(state): State<Arc<StubState>>,
    Path(external_id): Path<String>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let now_in_flight = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state
        .max_in_flight
        .fetch_max(now_in_flight, Ordering::SeqCst);
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    lock(&state.calls).push(Call {
        external_id: external_id.clone(),
        idempotency_key: header("idempotency-key"),
        at: Instant::now(),
    });

    let delay = *lock(&state.delay);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    // Decided now, from the seed in call order: fail, or answer late.
    let chaos = lock(&state.unreliable).as_mut().map(|unreliable| {
        let fails = unreliable.rng.u8(0..100) < unreliable.fail_percent;
        let late = unreliable.max_delay.mul_f64(unreliable.rng.f64());
        (fails, late)
    });
    if let Some((true, _)) = chaos {
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }

    let scripted = lock(&state.scripted)
        .get_mut(&external_id)
        .and_then(VecDeque::pop_front);
    let required = lock(&state.required_bearer).clone();
    let unauthorized = required
        .filter(|required| header("authorization").as_ref() != Some(required))
        .map(|_| Answer::status(401));
    let outage = state.faults.next().map(|outage| Answer {
        status: outage.status,
        retry_after: outage.retry_after,
    });
    let answer = outage
        .or(unauthorized)
        .or(scripted)
        .or_else(|| lock(&state.fixed).get(&external_id).cloned());
    let response = match answer {
        Some(answer) => {
            let status =
                StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = status.into_response();
            if let Some(value) = answer.retry_after.and_then(|v| v.parse().ok()) {
                response.headers_mut().insert("retry-after", value);
            }
            response
        }
        None => {
            let mut leads = lock(&state.leads);
            let writes = leads.get(&external_id).map_or(0, |lead| lead.writes) + 1;
            let first_written_ms = leads
                .get(&external_id)
                .map_or_else(now_ms, |lead| lead.first_written_ms);
            let id = leads.get(&external_id).map_or_else(
                || format!("lead-{}", leads.len() + 1),
                |lead| lead.id.clone(),
            );
            leads.insert(
                external_id.clone(),
                StoredLead {
                    id: id.clone(),
                    body: body.clone(),
                    idempotency_key: header("idempotency-key"),
                    authorization: header("authorization"),
                    writes,
                    first_written_ms,
                },
            );
            if state.log_upserts {
                println!(
                    "crm-stub: upserted lead externalId={external_id} writes={writes} leads={}",
                    leads.len()
                );
            }
            // The lead as stored, with the id a CRM answers (see
            // docs/destinations/http.md: `id` names the record).
            let mut answered = body;
            if let Some(fields) = answered.as_object_mut() {
                fields.insert("id".to_owned(), Value::String(id));
            }
            (StatusCode::OK, Json(answered)).into_response()
        }
    };
    if let Some((_, late)) = chaos {
        tokio::time::sleep(late).await;
    }
    state.in_flight.fetch_sub(1, Ordering::SeqCst);
    response
}

async fn read(State(state): State<Arc<StubState>>, Path(external_id): Path<String>) -> Response {
    match lock(&state.leads).get(&external_id) {
        Some(lead) => (StatusCode::OK, Json(lead.body.clone())).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Every lead the stub holds, by external id, with how often and when it
/// was first written, and the upsert calls received (answered or not).
async fn list(State(state): State<Arc<StubState>>) -> Response {
    let leads = lock(&state.leads);
    let mut ids: Vec<&String> = leads.keys().collect();
    ids.sort();
    let listed: Vec<Value> = ids
        .into_iter()
        .map(|id| {
            serde_json::json!({
                "externalId": id,
                "writes": leads[id].writes,
                "firstWrittenMs": leads[id].first_written_ms,
                "lead": leads[id].body
            })
        })
        .collect();
    let calls = lock(&state.calls).len();
    Json(serde_json::json!({"count": listed.len(), "calls": calls, "leads": listed}))
        .into_response()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}

/// `DELETE /people`: every lead whose `email` is the body's, trimmed and
/// lower-cased; a bearer token as the upserts take it.
async fn erase(
    State(state): State<Arc<StubState>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let required = lock(&state.required_bearer).clone();
    let sent = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if required.is_some_and(|required| sent.as_ref() != Some(&required)) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    if let Some(outage) = state.faults.next() {
        return StatusCode::from_u16(outage.status)
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            .into_response();
    }
    let Some(email) = body["email"].as_str().map(|e| e.trim().to_lowercase()) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let mut leads = lock(&state.leads);
    let before = leads.len();
    leads.retain(|_, lead| {
        lead.body["email"].as_str().map(|e| e.trim().to_lowercase()) != Some(email.clone())
    });
    if leads.len() < before {
        StatusCode::NO_CONTENT.into_response()
    } else {
        StatusCode::NOT_FOUND.into_response()
    }
}
