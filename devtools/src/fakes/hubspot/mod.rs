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
//! A contact's GDPR delete (`gdpr`). `GET /contacts` lists what it holds; `POST /faults` with
//! `{"status": 429, "policyName": "DAILY"}` (or 409, 423, 477, 5xx, 401, 403) makes
//! the next calls fail so, `"times"` of them (every call without it);
//! `DELETE /faults` restores it.

mod api;
mod gdpr;
mod notes;
mod statuses;

use std::collections::{HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::stand_in::{Counts, LocalDestination};
use crate::server::{self, lock, FaultQueue, Listener, Server};

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

/// A note as the fake holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub id: String,
    pub contact_id: String,
    /// `hs_note_body`: HTML.
    pub body: String,
    pub timestamp: String,
}

/// A subscription status set, as HubSpot records it (an event in the
/// contact's communication preferences).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusEvent {
    pub subscriber: String,
    pub subscription_id: u64,
    pub state: String,
    pub legal_basis: String,
    pub explanation: Option<String>,
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

impl server::Fault for Fault {
    fn times_mut(&mut self) -> &mut Option<u32> {
        &mut self.times
    }

    fn status(&self) -> u16 {
        self.status
    }
}

struct FakeState {
    /// Contacts by HubSpot id.
    contacts: Mutex<Vec<Contact>>,
    known: Mutex<HashSet<String>>,
    token: Mutex<Option<String>>,
    faults: Arc<FaultQueue<Fault>>,
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
    notes: Mutex<Vec<Note>>,
    /// Note creates done whose answer is then lost (a 502).
    lost_note_answers: Mutex<u32>,
    /// Each status that changed something, in order.
    status_events: Mutex<Vec<StatusEvent>>,
    /// Status calls answered 200, changes or not.
    status_calls: Mutex<u32>,
}

/// A running fake; it stops when dropped.
pub struct HubSpotFake {
    state: Arc<FakeState>,
    server: Server,
}

impl HubSpotFake {
    /// Each subscription status that changed something, in order.
    pub fn status_events(&self) -> Vec<StatusEvent> {
        lock(&self.state.status_events).clone()
    }

    /// Status calls answered 200, whether they changed anything or not.
    pub fn status_calls(&self) -> u32 {
        *lock(&self.state.status_calls)
    }

    /// Starts on a free loopback port, accepting `token`.
    pub async fn start(token: &str) -> std::io::Result<HubSpotFake> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), token).await
    }

    pub async fn start_on(address: SocketAddr, token: &str) -> std::io::Result<HubSpotFake> {
        let listener = Listener::bind(address).await?;
        let state = Arc::new(FakeState {
            contacts: Mutex::new(Vec::new()),
            known: Mutex::new(KNOWN_PROPERTIES.iter().map(|p| p.to_string()).collect()),
            token: Mutex::new(Some(token.to_owned())),
            faults: FaultQueue::new("hubspot fake"),
            calls: Mutex::new(Vec::new()),
            window: Mutex::new(VecDeque::new()),
            whole_request_errors: Mutex::new(false),
            required: Mutex::new(None),
            conflicting: Mutex::new(HashSet::new()),
            notes: Mutex::new(Vec::new()),
            lost_note_answers: Mutex::new(0),
            status_events: Mutex::new(Vec::new()),
            status_calls: Mutex::new(0),
        });
        let app = Router::new()
            .route(
                "/crm/v3/objects/contacts/batch/upsert",
                post(api::upsert_v3),
            )
            .route(
                "/crm/objects/{version}/contacts/batch/upsert",
                post(api::upsert_dated),
            )
            .route("/contacts", get(api::list))
            .route(
                "/communication-preferences/{version}/statuses/{subscriber}",
                post(statuses::set),
            )
            .route("/crm/v3/objects/notes", post(notes::create))
            .route("/crm/objects/{version}/notes", post(notes::create))
            .route("/crm/v3/objects/notes/batch/read", post(notes::read))
            .route("/crm/objects/{version}/notes/batch/read", post(notes::read))
            .route(
                "/crm/v4/objects/contacts/{id}/associations/notes",
                get(notes::associated),
            )
            .route("/crm/v3/objects/contacts/{id}", get(notes::contact))
            .route("/crm/objects/{version}/contacts/{id}", get(notes::contact))
            .route("/notes", get(notes::list))
            .route(gdpr::GDPR_DELETE_PATH, post(gdpr::delete))
            .with_state(Arc::clone(&state))
            .merge(state.faults.routes());
        let server = listener.serve(app);
        Ok(HubSpotFake { state, server })
    }

    /// For `HUBSPOT_BASE_URL`.
    pub fn base_url(&self) -> String {
        self.server.url()
    }

    pub fn address(&self) -> SocketAddr {
        self.server.address()
    }

    /// Accepts `token` from now on, and no other (a rotation).
    pub fn rotate_token(&self, token: &str) {
        *lock(&self.state.token) = Some(token.to_owned());
    }

    /// Answers the next calls with `fault` (see `Fault::times`).
    pub fn fail(&self, fault: Fault) {
        self.state.faults.push(fault);
    }

    pub fn recover(&self) {
        self.state.faults.clear();
    }

    /// Makes `property` known, as if someone created it in the portal (a
    /// custom property for attribution or a lead source).
    pub fn create_property(&self, property: &str) {
        lock(&self.state.known).insert(property.to_owned());
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

    pub fn notes(&self) -> Vec<Note> {
        lock(&self.state.notes).clone()
    }

    /// GDPR deletes asked for, whatever they answered.
    pub fn gdpr_deletes(&self) -> usize {
        lock(&self.state.calls)
            .iter()
            .filter(|call| call.path == gdpr::GDPR_DELETE_PATH)
            .count()
    }

    /// Deletes the contact `id`, as the team would in HubSpot.
    pub fn delete_contact(&self, id: &str) {
        lock(&self.state.contacts).retain(|c| c.id != id);
    }

    /// `count` notes on the contact `contact_id`, made elsewhere (by the
    /// team, another integration) before the calls to come.
    pub fn add_notes(&self, contact_id: &str, count: usize) {
        let mut notes = lock(&self.state.notes);
        for _ in 0..count {
            let id = (5000 + notes.len()).to_string();
            notes.push(Note {
                id,
                contact_id: contact_id.to_owned(),
                body: "<p>Called back, left a message.</p>".to_owned(),
                timestamp: "2026-11-01T09:00:00.000Z".to_owned(),
            });
        }
    }

    /// Creates the next `times` notes, then loses each answer (a 502).
    pub fn lose_note_answers(&self, times: u32) {
        *lock(&self.state.lost_note_answers) += times;
    }
}

impl LocalDestination for Arc<HubSpotFake> {
    fn worker_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("HUBSPOT_TOKEN", DEMO_HUBSPOT_TOKEN.to_owned()),
            ("HUBSPOT_BASE_URL", self.base_url()),
        ]
    }

    fn counts(&self) -> Counts {
        let fake = Arc::clone(self);
        Box::new(move || {
            let contacts = fake.contacts();
            let writes = contacts.iter().map(|c| u64::from(c.writes)).sum();
            (contacts.len(), writes)
        })
    }

    fn describe(&self, port: u16) -> String {
        format!("HubSpot   GET  http://127.0.0.1:{port}/contacts   (a local fake; POST/DELETE /faults to break and mend it)")
    }
}
