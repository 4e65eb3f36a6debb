//! A Brevo on 127.0.0.1: contacts, their lists and their CRM notes, with
//! the request and answer shapes Brevo documents, its rate limit's 429 and
//! reset header on demand, and faults a test can queue, for tests and
//! `DESTINATION=brevo make run`. Built from Brevo's pages:
//!
//! - `POST /v3/contacts` (`email`, `attributes`, `listIds`,
//!   `updateEnabled`): 201 `{"id": n}` for a new contact, 204 with no body
//!   when `updateEnabled` updated an existing one, 400 `duplicate_parameter`
//!   for an existing address without it:
//!   <https://developers.brevo.com/reference/create-contact>,
//!   <https://developers.brevo.com/changelog/operations-and-management-for-contacts>;
//! - `GET`/`DELETE /v3/contacts/{identifier}` with `identifierType`
//!   (`email_id`, `contact_id`): the contact (`id`, `email`, `attributes`,
//!   `listIds`), 204 when deleted, 404 `document_not_found`:
//!   <https://developers.brevo.com/reference/get-contact-info>,
//!   <https://developers.brevo.com/reference/delete-contact>;
//! - `POST /v3/crm/notes` (`text`, `contactIds`), answer `{"id": "…"}`;
//!   `GET /v3/crm/notes` (`entity`, `entityIds`, `limit` 50 by default,
//!   `offset`, `sort` newest first by default), answer an array of notes;
//!   `DELETE /v3/crm/notes/{id}`, 204:
//!   <https://developers.brevo.com/reference/create-a-note>,
//!   <https://developers.brevo.com/reference/get-all-notes>,
//!   <https://developers.brevo.com/reference/delete-a-note>;
//! - `GET /v3/account` answers any valid key (make deploy's check):
//!   <https://developers.brevo.com/reference/get-account>;
//! - the key in `api-key`, 401 `unauthorized` otherwise; 429 past the rate
//!   limit with `x-sib-ratelimit-limit`, `-remaining`, `-reset` (seconds):
//!   <https://developers.brevo.com/docs/api-limits>.
//!
//! Its own assumptions, where the pages say nothing: an attribute the
//! account lacks is ignored (as a value of the wrong type is); notes are
//! listed at once. `GET /contacts` and `GET /notes` list what it holds;
//! `POST /faults` with `{"status": 503}` makes the next calls fail so;
//! `DELETE /faults` restores it.

mod api;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::middleware;
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::stand_in::{Counts, LocalDestination};
use crate::server::{self, lock, FaultQueue, Listener, Server};

/// The key the local fake accepts (`DESTINATION=brevo make run`).
pub const DEMO_BREVO_API_KEY: &str = "xkeysib-local-demo-key";

/// The attributes the fake's account has.
pub const KNOWN_ATTRIBUTES: [&str; 5] = ["FIRSTNAME", "LASTNAME", "SMS", "COMPANY", "PLAN"];

/// A contact as the fake holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Contact {
    pub id: u64,
    pub email: String,
    pub attributes: Map<String, Value>,
    pub list_ids: Vec<u64>,
    /// How many creates and updates wrote it.
    pub writes: u32,
}

/// A note as the fake holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub id: String,
    pub text: String,
    pub contact_ids: Vec<u64>,
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
    ContactUpsert,
    NoteCreate,
}

/// The next calls answered 429, each with this reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttle {
    pub calls: u32,
    pub reset_seconds: u64,
}

struct FakeState {
    key: Mutex<String>,
    contacts: Mutex<Vec<Contact>>,
    notes: Mutex<Vec<Note>>,
    next_id: Mutex<u64>,
    faults: Arc<FaultQueue<Fault>>,
    lost: Mutex<Vec<Lost>>,
    throttle: Mutex<Option<Throttle>>,
    calls: Mutex<Vec<Call>>,
    delay: Mutex<Duration>,
}

/// A running fake; it stops when dropped.
pub struct BrevoFake {
    state: Arc<FakeState>,
    server: Server,
}

impl BrevoFake {
    /// Starts on a free loopback port, accepting `key`.
    pub async fn start(key: &str) -> std::io::Result<BrevoFake> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), key).await
    }

    pub async fn start_on(address: SocketAddr, key: &str) -> std::io::Result<BrevoFake> {
        let listener = Listener::bind(address).await?;
        let state = Arc::new(FakeState {
            key: Mutex::new(key.to_owned()),
            contacts: Mutex::new(Vec::new()),
            notes: Mutex::new(Vec::new()),
            next_id: Mutex::new(1),
            faults: FaultQueue::new("brevo fake"),
            lost: Mutex::new(Vec::new()),
            throttle: Mutex::new(None),
            calls: Mutex::new(Vec::new()),
            delay: Mutex::new(Duration::ZERO),
        });
        let app = Router::new()
            .route("/v3/account", get(api::account))
            .route("/v3/contacts", post(api::upsert_contact))
            .route(
                "/v3/contacts/{identifier}",
                get(api::get_contact).delete(api::delete_contact),
            )
            .route("/v3/crm/notes", get(api::list_notes).post(api::create_note))
            .route(
                "/v3/crm/notes/{id}",
                axum::routing::delete(api::delete_note),
            )
            // Brevo's API, and only it: the key, the rate limit, the faults
            // a test queued, and each call recorded.
            .route_layer(middleware::from_fn_with_state(
                Arc::clone(&state),
                api::admit_and_record,
            ))
            .route("/contacts", get(api::all_contacts))
            .route("/notes", get(api::all_notes))
            .with_state(Arc::clone(&state))
            .merge(state.faults.routes());
        let server = listener.serve(app);
        Ok(BrevoFake { state, server })
    }

    /// For `BREVO_BASE_URL`.
    pub fn base_url(&self) -> String {
        self.server.url()
    }

    /// Accepts `key` from now on, and no other (a regenerated key).
    pub fn rotate_key(&self, key: &str) {
        *lock(&self.state.key) = key.to_owned();
    }

    pub fn fail(&self, fault: Fault) {
        self.state.faults.push(fault);
    }

    /// Answers the next `calls` calls 429 with `reset_seconds` in
    /// `x-sib-ratelimit-reset`.
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

    pub fn contacts(&self) -> Vec<Contact> {
        lock(&self.state.contacts).clone()
    }

    pub fn notes(&self) -> Vec<Note> {
        lock(&self.state.notes).clone()
    }

    pub fn calls(&self) -> Vec<Call> {
        lock(&self.state.calls).clone()
    }
}

impl LocalDestination for Arc<BrevoFake> {
    fn worker_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("BREVO_API_KEY", DEMO_BREVO_API_KEY.to_owned()),
            ("BREVO_BASE_URL", self.base_url()),
        ]
    }

    fn counts(&self) -> Counts {
        let fake = Arc::clone(self);
        Box::new(move || {
            let contacts = fake.contacts();
            let writes = contacts.iter().map(|c| u64::from(c.writes)).sum::<u64>()
                + fake.notes().len() as u64;
            (contacts.len(), writes)
        })
    }

    fn describe(&self, port: u16) -> String {
        format!("Brevo     GET  http://127.0.0.1:{port}/contacts and /notes   (a local fake; POST/DELETE /faults to break and mend it)")
    }

    fn set_delay(&self, delay: Duration) -> Result<(), String> {
        BrevoFake::set_delay(self, delay);
        Ok(())
    }
}
