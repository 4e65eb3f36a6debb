//! A Pipedrive on 127.0.0.1: persons (v2) and notes (v1), with the request
//! and answer shapes Pipedrive documents, a search that lags behind its
//! writes, and faults a test can queue, for tests and
//! `DESTINATION=pipedrive make run`. Built from Pipedrive's pages and its
//! client libraries (generated from its OpenAPI description):
//!
//! - `GET /api/v2/persons/search?term=&fields=email&exact_match=true`,
//!   answer `data.items[]` of `{result_score, item: {id, type, name,
//!   emails[], phones[]}}`; exact matches are not case sensitive:
//!   <https://developers.pipedrive.com/docs/api/v1/Persons#searchPersons>;
//! - `POST /api/v2/persons` (`name`, `emails[]` and `phones[]` of `{value,
//!   primary, label}`, `custom_fields` by 40-character key) and
//!   `PATCH /api/v2/persons/{id}`, answer `data` (the person), 404 when it
//!   is gone: <https://developers.pipedrive.com/docs/api/v1/Persons#addPerson>;
//!   `GET` and `DELETE /api/v2/persons/{id}` the same way;
//! - `POST /api/v1/notes` (`content`, HTML, and `person_id`), answer `data`
//!   with `id`; `GET /api/v1/notes?person_id=&limit=&sort=`, answer `data[]`
//!   and `additional_data.pagination`: <https://developers.pipedrive.com/docs/api/v1/Notes>;
//! - `POST /api/v1/leads` (`title` and `person_id` required), answer `data`
//!   with `id` (a UUID); `GET /api/v1/leads?person_id=`, answer `data[]`:
//!   <https://developers.pipedrive.com/docs/api/v1/Leads>;
//! - the token in `x-api-token` (or `api_token` in the query), 401 with
//!   `success: false` and `error` otherwise:
//!   <https://pipedrive.readme.io/docs/core-api-concepts-authentication>,
//!   <https://pipedrive.readme.io/docs/core-api-concepts-http-status-codes>;
//! - 429 with `Retry-After` and `x-ratelimit-*` headers:
//!   <https://pipedrive.readme.io/docs/core-api-concepts-rate-limiting>.
//!
//! Its own assumptions, where Pipedrive's pages say nothing: a custom field
//! key the account lacks is a 400 whose `error` names the key; a person
//! shows in search `search_lag` after its create (Pipedrive's search index
//! is eventually consistent); notes are listed at once.
//! `GET /persons` and `GET /notes` list what it holds; `POST /faults` with
//! `{"status": 429, "retryAfter": "2"}` (or 5xx, 401, 403) makes the next
//! calls fail so, `"times"` of them; `DELETE /faults` restores it.

mod api;
mod items;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::middleware;
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::stand_in::{Counts, LocalDestination};
use crate::server::{self, lock, FaultQueue, Listener, Server};

/// The token the local Pipedrive fake accepts (`DESTINATION=pipedrive make run`).
pub const DEMO_PIPEDRIVE_TOKEN: &str = "local-demo-pipedrive-api-token";

/// The custom field key the local fake knows from the start (a person
/// field "Company", as an account would have).
pub const COMPANY_FIELD_KEY: &str = "dcf558aac1ae4e8c4f849ba5e668430d8df9be12";

/// How far the local fake's search lags behind its writes, and the lag the
/// local worker is told to allow for.
pub const LOCAL_SEARCH_LAG: Duration = Duration::from_secs(2);
pub const LOCAL_WORKER_LAG_SECONDS: &str = "5";

/// A person as the fake holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Person {
    pub id: u64,
    pub name: String,
    pub emails: Vec<String>,
    pub phones: Vec<String>,
    pub custom_fields: Map<String, Value>,
    /// How many creates and updates wrote it.
    pub writes: u32,
    created: Instant,
}

/// A note as the fake holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub id: u64,
    pub person_id: u64,
    pub content: String,
}

/// A lead as the fake holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lead {
    pub id: String,
    pub person_id: u64,
    pub title: String,
}

/// One request: its method and path, and the status answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub method: String,
    pub path: String,
    pub status: u16,
}

/// A failure to answer instead of working.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fault {
    pub status: u16,
    /// A `Retry-After` header value.
    pub retry_after: Option<String>,
    /// How many calls it answers; every call when absent.
    pub times: Option<u32>,
}

impl Fault {
    pub fn status(status: u16) -> Self {
        Fault {
            status,
            retry_after: None,
            times: None,
        }
    }

    pub fn rate_limited(retry_after: &str) -> Self {
        Fault {
            retry_after: Some(retry_after.to_owned()),
            ..Fault::status(429)
        }
    }

    pub fn times(mut self, times: u32) -> Self {
        self.times = Some(times);
        self
    }
}

impl server::Fault for Fault {
    fn times_mut(&mut self) -> &mut Option<u32> {
        &mut self.times
    }

    fn status(&self) -> u16 {
        self.status
    }
}

/// A write whose answer is lost: done, then answered 502 as a proxy whose
/// upstream connection dropped would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lost {
    PersonCreate,
    NoteCreate,
    LeadCreate,
}

struct FakeState {
    persons: Mutex<Vec<Person>>,
    notes: Mutex<Vec<Note>>,
    leads: Mutex<Vec<Lead>>,
    next_id: Mutex<u64>,
    known_keys: Mutex<HashSet<String>>,
    token: Mutex<String>,
    search_lag: Mutex<Duration>,
    faults: Arc<FaultQueue<Fault>>,
    lost: Mutex<Vec<Lost>>,
    /// Notes others add to the person right after a note whose answer is
    /// lost (before the worker can look for it).
    buried_under: Mutex<usize>,
    calls: Mutex<Vec<Call>>,
}

/// A running fake; it stops when dropped.
pub struct PipedriveFake {
    state: Arc<FakeState>,
    server: Server,
}

impl PipedriveFake {
    /// Starts on a free loopback port, accepting `token`, with a search
    /// that finds a person `search_lag` after its create.
    pub async fn start(token: &str, search_lag: Duration) -> std::io::Result<PipedriveFake> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), token, search_lag).await
    }

    pub async fn start_on(
        address: SocketAddr,
        token: &str,
        search_lag: Duration,
    ) -> std::io::Result<PipedriveFake> {
        let listener = Listener::bind(address).await?;
        let state = Arc::new(FakeState {
            persons: Mutex::new(Vec::new()),
            notes: Mutex::new(Vec::new()),
            leads: Mutex::new(Vec::new()),
            next_id: Mutex::new(1),
            known_keys: Mutex::new(HashSet::from([COMPANY_FIELD_KEY.to_owned()])),
            token: Mutex::new(token.to_owned()),
            search_lag: Mutex::new(search_lag),
            faults: FaultQueue::new("pipedrive fake"),
            lost: Mutex::new(Vec::new()),
            buried_under: Mutex::new(0),
            calls: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/api/v2/persons/search", get(api::search))
            .route("/api/v2/persons", post(api::create_person))
            .route(
                "/api/v2/persons/{id}",
                get(api::get_person)
                    .patch(api::update_person)
                    .delete(api::delete_person),
            )
            .route(
                "/api/v1/notes",
                post(items::create_note).get(items::list_notes),
            )
            .route(
                "/api/v1/leads",
                post(items::create_lead).get(items::list_leads),
            )
            .route(
                "/api/v1/notes/{id}",
                axum::routing::delete(items::delete_note),
            )
            .route(
                "/api/v1/leads/{id}",
                axum::routing::delete(items::delete_lead),
            )
            // Pipedrive's API, and only it: the token, the faults a test
            // queued, and each call recorded.
            .route_layer(middleware::from_fn_with_state(
                Arc::clone(&state),
                api::admit_and_record,
            ))
            .route("/persons", get(api::all_persons))
            .route("/notes", get(api::all_notes))
            .with_state(Arc::clone(&state))
            .merge(state.faults.routes());
        let server = listener.serve(app);
        Ok(PipedriveFake { state, server })
    }

    /// For `PIPEDRIVE_BASE_URL`.
    pub fn base_url(&self) -> String {
        self.server.url()
    }

    /// Accepts `token` from now on, and no other (a regenerated token).
    pub fn rotate_token(&self, token: &str) {
        *lock(&self.state.token) = token.to_owned();
    }

    /// Answers the next calls with `fault` (see `Fault::times`).
    pub fn fail(&self, fault: Fault) {
        self.state.faults.push(fault);
    }

    pub fn recover(&self) {
        self.state.faults.clear();
    }

    /// Does the next `what`, then loses its answer.
    pub fn lose_answer(&self, what: Lost) {
        lock(&self.state.lost).push(what);
    }

    /// Makes a custom field key known, as if an admin created the field.
    pub fn create_field(&self, key: &str) {
        lock(&self.state.known_keys).insert(key.to_owned());
    }

    pub fn set_search_lag(&self, lag: Duration) {
        *lock(&self.state.search_lag) = lag;
    }

    pub fn persons(&self) -> Vec<Person> {
        lock(&self.state.persons).clone()
    }

    /// After the next note whose answer is lost, `count` notes by others
    /// (the team, another integration) on the same person, before the
    /// worker can look for its own: it is no longer among the newest.
    pub fn bury_lost_note_under(&self, count: usize) {
        *lock(&self.state.buried_under) = count;
    }

    pub fn notes(&self) -> Vec<Note> {
        lock(&self.state.notes).clone()
    }

    pub fn leads(&self) -> Vec<Lead> {
        lock(&self.state.leads).clone()
    }

    pub fn calls(&self) -> Vec<Call> {
        lock(&self.state.calls).clone()
    }
}

impl LocalDestination for Arc<PipedriveFake> {
    fn worker_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("PIPEDRIVE_API_TOKEN", DEMO_PIPEDRIVE_TOKEN.to_owned()),
            ("PIPEDRIVE_BASE_URL", self.base_url()),
            (
                "PIPEDRIVE_SEARCH_LAG_SECONDS",
                LOCAL_WORKER_LAG_SECONDS.to_owned(),
            ),
        ]
    }

    fn counts(&self) -> Counts {
        let fake = Arc::clone(self);
        Box::new(move || {
            let persons = fake.persons();
            let writes = persons.iter().map(|p| u64::from(p.writes)).sum::<u64>()
                + fake.notes().len() as u64;
            (persons.len(), writes)
        })
    }

    fn describe(&self, port: u16) -> String {
        format!("Pipedrive GET  http://127.0.0.1:{port}/persons and /notes   (a local fake; POST/DELETE /faults to break and mend it)")
    }
}
