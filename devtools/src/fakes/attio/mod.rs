//! An Attio on 127.0.0.1: person records and their notes, with the request
//! and answer shapes Attio documents, its rate limit's 429 with an HTTP-date
//! `Retry-After` on demand, and faults a test can queue, for tests and
//! `DESTINATION=attio make run`. Built from Attio's pages:
//!
//! - `POST /v2/objects/people/records/query` (`filter` shorthand
//!   `{"email_addresses": …}`, `limit`), answer `{"data": [records]}`:
//!   <https://docs.attio.com/rest-api/endpoint-reference/people/list-person-records>;
//! - `PUT /v2/objects/people/records?matching_attribute=email_addresses`
//!   (assert: `{"data": {"values": …}}`), the record created or the one
//!   matched updated, its multiselect values (`email_addresses`)
//!   *replaced*:
//!   <https://docs.attio.com/rest-api/endpoint-reference/people/upsert-a-person-record>;
//! - `PATCH /v2/objects/people/records/{record_id}`, multiselect values
//!   added in front of those there; `DELETE` of the same path:
//!   <https://docs.attio.com/rest-api/endpoint-reference/people/update-a-person-record>,
//!   <https://docs.attio.com/rest-api/endpoint-reference/records/delete-a-record>;
//! - a record: `{"id": {"workspace_id", "object_id", "record_id"},
//!   "created_at", "web_url", "values"}`;
//! - `POST /v2/notes` (`parent_object`, `parent_record_id`, `title`,
//!   `format`, `content`), `GET /v2/notes` (`parent_object`,
//!   `parent_record_id`, `limit` 10 by default and at most 50, `offset`),
//!   `DELETE /v2/notes/{note_id}`; a note: `{"id": {"workspace_id",
//!   "note_id"}, "parent_object", "parent_record_id", "title",
//!   "content_plaintext", "created_at"}`:
//!   <https://docs.attio.com/rest-api/endpoint-reference/notes/create-a-note>,
//!   <https://docs.attio.com/rest-api/endpoint-reference/notes/list-notes>;
//! - `GET /v2/self` answers any valid token (make deploy's check):
//!   <https://docs.attio.com/rest-api/endpoint-reference/meta/identify>;
//! - the token as `Authorization: Bearer`, 401 otherwise; errors as
//!   `{"status_code", "type", "code", "message"}`; 429 with `Retry-After`
//!   as an HTTP date: <https://docs.attio.com/rest-api/guides/rate-limiting>.
//!
//! Its own assumptions, where the pages say nothing: a value for an
//! attribute the workspace lacks is refused (400 `value_not_found`); notes
//! are listed at once, oldest first. `GET /people` and `GET /notes` list
//! what it holds; `POST /faults` with `{"status": 503}` makes the next
//! calls fail so; `DELETE /faults` restores it.

mod api;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::middleware;
use axum::routing::{get, post, put};
use axum::Router;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::stand_in::{Counts, LocalDestination};
use crate::server::{self, lock, FaultQueue, Listener, Server};

/// The token the local fake accepts (`DESTINATION=attio make run`).
pub const DEMO_ATTIO_API_TOKEN: &str = "attio-local-demo-token";

/// The person attributes the fake's workspace has, besides
/// `email_addresses` and `name`.
pub const KNOWN_ATTRIBUTES: [&str; 3] = ["job_title", "description", "linkedin"];

/// A person record as the fake holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct PersonRecord {
    pub id: String,
    pub email_addresses: Vec<String>,
    /// `name` and every other attribute, as last written.
    pub values: Map<String, Value>,
    /// How many asserts and updates wrote it.
    pub writes: u32,
}

/// A note as the fake holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub id: String,
    pub parent_record_id: String,
    pub title: String,
    pub content: String,
}

pub use crate::server::Call;

/// A failure to answer instead of working.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fault {
    pub status: u16,
    /// How many calls it answers; every call when absent.
    pub times: Option<u32>,
}

impl server::Fault for Fault {
    fn times_mut(&mut self) -> &mut Option<u32> {
        &mut self.times
    }

    fn status(&self) -> u16 {
        self.status
    }
}

/// A write whose answer is lost: done, then answered 502.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lost {
    PersonAssert,
    NoteCreate,
}

/// The next calls answered 429, each with a `Retry-After` this far ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttle {
    pub calls: u32,
    pub retry_after_seconds: u64,
}

struct FakeState {
    token: Mutex<String>,
    people: Mutex<Vec<PersonRecord>>,
    notes: Mutex<Vec<Note>>,
    next_id: Mutex<u64>,
    faults: Arc<FaultQueue<Fault>>,
    lost: Mutex<Vec<Lost>>,
    throttle: Mutex<Option<Throttle>>,
    calls: Mutex<Vec<Call>>,
    delay: Mutex<Duration>,
}

/// A running fake; it stops when dropped.
pub struct AttioFake {
    state: Arc<FakeState>,
    server: Server,
}

impl AttioFake {
    /// Starts on a free loopback port, accepting `token`.
    pub async fn start(token: &str) -> std::io::Result<AttioFake> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), token).await
    }

    pub async fn start_on(address: SocketAddr, token: &str) -> std::io::Result<AttioFake> {
        let listener = Listener::bind(address).await?;
        let state = Arc::new(FakeState {
            token: Mutex::new(token.to_owned()),
            people: Mutex::new(Vec::new()),
            notes: Mutex::new(Vec::new()),
            next_id: Mutex::new(0),
            faults: FaultQueue::new("attio fake"),
            lost: Mutex::new(Vec::new()),
            throttle: Mutex::new(None),
            calls: Mutex::new(Vec::new()),
            delay: Mutex::new(Duration::ZERO),
        });
        let app = Router::new()
            .route("/v2/self", get(api::identify))
            .route("/v2/objects/people/records", put(api::assert_person))
            .route("/v2/objects/people/records/query", post(api::query_people))
            .route(
                "/v2/objects/people/records/{record_id}",
                axum::routing::patch(api::update_person).delete(api::delete_person),
            )
            .route("/v2/notes", get(api::list_notes).post(api::create_note))
            .route(
                "/v2/notes/{note_id}",
                axum::routing::delete(api::delete_note),
            )
            // Attio's API, and only it: the token, the rate limit, the
            // faults a test queued, and each call recorded.
            .route_layer(middleware::from_fn_with_state(
                Arc::clone(&state),
                api::admit_and_record,
            ))
            .route("/people", get(api::all_people))
            .route("/notes", get(api::all_notes))
            .with_state(Arc::clone(&state))
            .merge(state.faults.routes());
        let server = listener.serve(app);
        Ok(AttioFake { state, server })
    }

    /// For `ATTIO_BASE_URL`.
    pub fn base_url(&self) -> String {
        self.server.url()
    }

    /// Accepts `token` from now on, and no other (a regenerated token).
    pub fn rotate_token(&self, token: &str) {
        *lock(&self.state.token) = token.to_owned();
    }

    pub fn fail(&self, fault: Fault) {
        self.state.faults.push(fault);
    }

    /// Answers the next `calls` calls 429, `Retry-After` a date
    /// `retry_after_seconds` ahead.
    pub fn throttle(&self, throttle: Throttle) {
        *lock(&self.state.throttle) = Some(throttle);
    }

    /// Does the next `what`, then loses its answer.
    pub fn lose_answer(&self, what: Lost) {
        lock(&self.state.lost).push(what);
    }

    /// Each call takes `delay` before it is answered.
    pub fn set_delay(&self, delay: Duration) {
        *lock(&self.state.delay) = delay;
    }

    /// A person someone made in Attio itself, with these addresses.
    pub fn add_person(&self, email_addresses: &[&str]) -> String {
        let id = api::next_record_id(&self.state);
        lock(&self.state.people).push(PersonRecord {
            id: id.clone(),
            email_addresses: email_addresses.iter().map(|a| a.to_string()).collect(),
            values: Map::new(),
            writes: 0,
        });
        id
    }

    pub fn people(&self) -> Vec<PersonRecord> {
        lock(&self.state.people).clone()
    }

    pub fn notes(&self) -> Vec<Note> {
        lock(&self.state.notes).clone()
    }

    pub fn calls(&self) -> Vec<Call> {
        lock(&self.state.calls).clone()
    }
}

impl LocalDestination for Arc<AttioFake> {
    fn worker_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("ATTIO_API_TOKEN", DEMO_ATTIO_API_TOKEN.to_owned()),
            ("ATTIO_BASE_URL", self.base_url()),
        ]
    }

    fn counts(&self) -> Counts {
        let fake = Arc::clone(self);
        Box::new(move || {
            let people = fake.people();
            let writes =
                people.iter().map(|p| u64::from(p.writes)).sum::<u64>() + fake.notes().len() as u64;
            (people.len(), writes)
        })
    }

    fn describe(&self, port: u16) -> String {
        format!("Attio     GET  http://127.0.0.1:{port}/people and /notes   (a local fake; POST/DELETE /faults to break and mend it)")
    }

    fn set_delay(&self, delay: Duration) -> Result<(), String> {
        AttioFake::set_delay(self, delay);
        Ok(())
    }
}
