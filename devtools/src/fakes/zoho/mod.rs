//! A Zoho CRM on 127.0.0.1, its accounts server and its API on one port:
//! access tokens that expire (and at most 30 live per refresh token, the
//! oldest deleted by a 31st, as Zoho does), Leads and Contacts upserted by
//! a duplicate check field, records found by e-mail, notes, and faults a
//! test can queue, for tests and `DESTINATION=zoho make run`. Built from
//! Zoho's pages:
//!
//! - `POST /oauth/v2/token` (`refresh_token`, `client_id`, `client_secret`,
//!   `grant_type=refresh_token`, in the query or the form), answer
//!   `{"access_token", "expires_in", "api_domain", "token_type"}`, or
//!   `{"error": "invalid_code"}` (HTTP 200) for a refresh token revoked or
//!   wrong; 30 live access tokens per refresh token:
//!   <https://www.zoho.com/crm/developer/docs/api/v8/refresh.html>,
//!   <https://www.zoho.com/crm/developer/docs/api/v8/token-validity.html>;
//! - `POST /crm/v8/{module}/upsert` (`data[]`, at most 100,
//!   `duplicate_check_fields`, `trigger`), per record `{"code": "SUCCESS",
//!   "action": "insert"|"update", "duplicate_field", "details": {"id"},
//!   "status": "success"}` or `{"code": "MANDATORY_NOT_FOUND", "details":
//!   {"api_name"}, "status": "error"}`; `Last_Name` is mandatory on Leads
//!   and Contacts; 401 `INVALID_TOKEN` for an expired token:
//!   <https://www.zoho.com/crm/developer/docs/api/v8/upsert-records.html>;
//! - `GET /crm/v8/{module}/search?email=`, `data[]` or 204:
//!   <https://www.zoho.com/crm/developer/docs/api/v8/search-records.html>;
//! - `POST`/`GET /crm/v8/{module}/{id}/Notes` (`Note_Title`,
//!   `Note_Content`), 204 when none:
//!   <https://www.zoho.com/crm/developer/docs/api/v8/create-notes.html>.
//!
//! `GET /records` and `GET /notes` list what it holds; `POST /faults` with
//! `{"status": 503}` makes the next API calls fail so; `DELETE /faults`
//! restores it.

mod api;

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

/// The Self Client the local fake accepts (`DESTINATION=zoho make run`).
pub const DEMO_ZOHO_CLIENT_ID: &str = "1000.LOCALDEMOCLIENT";
pub const DEMO_ZOHO_CLIENT_SECRET: &str = "local-demo-zoho-client-secret";
pub const DEMO_ZOHO_REFRESH_TOKEN: &str = "1000.local-demo-zoho-refresh-token";

/// How many access tokens one refresh token may have live at once.
pub const LIVE_TOKENS: usize = 30;

/// A record as the fake holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub id: String,
    pub module: String,
    pub fields: Map<String, Value>,
    /// How many upserts wrote it.
    pub writes: u32,
}

/// A note as the fake holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub id: String,
    pub record: String,
    pub content: String,
}

/// One request: its method and path, and the status answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub method: String,
    pub path: String,
    pub status: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fault {
    pub status: u16,
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
    Upsert,
    NoteCreate,
}

struct FakeState {
    client_id: String,
    client_secret: String,
    refresh_token: Mutex<String>,
    token_life: Mutex<Duration>,
    /// How long the accounts server takes to answer.
    token_delay: Mutex<Duration>,
    /// Live access tokens, oldest first, with when each expires.
    tokens: Mutex<Vec<(String, Instant)>>,
    refreshes: Mutex<u32>,
    records: Mutex<Vec<Record>>,
    notes: Mutex<Vec<Note>>,
    triggers: Mutex<Vec<Value>>,
    next_id: Mutex<u64>,
    faults: Arc<FaultQueue<Fault>>,
    lost: Mutex<Vec<Lost>>,
    calls: Mutex<Vec<Call>>,
}

/// A running fake; it stops when dropped.
pub struct ZohoFake {
    state: Arc<FakeState>,
    server: Server,
}

impl ZohoFake {
    /// Starts on a free loopback port, accepting this Self Client, its
    /// access tokens lasting `token_life`.
    pub async fn start(
        client_id: &str,
        client_secret: &str,
        refresh_token: &str,
        token_life: Duration,
    ) -> std::io::Result<ZohoFake> {
        Self::start_on(
            SocketAddr::from(([127, 0, 0, 1], 0)),
            client_id,
            client_secret,
            refresh_token,
            token_life,
        )
        .await
    }

    pub async fn start_on(
        address: SocketAddr,
        client_id: &str,
        client_secret: &str,
        refresh_token: &str,
        token_life: Duration,
    ) -> std::io::Result<ZohoFake> {
        let listener = Listener::bind(address).await?;
        let state = Arc::new(FakeState {
            client_id: client_id.to_owned(),
            client_secret: client_secret.to_owned(),
            refresh_token: Mutex::new(refresh_token.to_owned()),
            token_life: Mutex::new(token_life),
            token_delay: Mutex::new(Duration::ZERO),
            tokens: Mutex::new(Vec::new()),
            refreshes: Mutex::new(0),
            records: Mutex::new(Vec::new()),
            notes: Mutex::new(Vec::new()),
            triggers: Mutex::new(Vec::new()),
            next_id: Mutex::new(1),
            faults: FaultQueue::new("zoho fake"),
            lost: Mutex::new(Vec::new()),
            calls: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/crm/v8/{module}/upsert", post(api::upsert))
            .route("/crm/v8/{module}/search", get(api::search))
            .route(
                "/crm/v8/{module}",
                axum::routing::delete(api::delete_records),
            )
            .route(
                "/crm/v8/{module}/{id}/Notes",
                get(api::list_notes).post(api::create_note),
            )
            // Zoho's API, and only it: the access token, the faults a test
            // queued, and each call recorded.
            .route_layer(middleware::from_fn_with_state(
                Arc::clone(&state),
                api::admit_and_record,
            ))
            .route("/oauth/v2/token", post(api::token))
            .route("/records", get(api::all_records))
            .route("/notes", get(api::all_notes))
            .with_state(Arc::clone(&state))
            .merge(state.faults.routes());
        let server = listener.serve(app);
        Ok(ZohoFake { state, server })
    }

    /// For `ZOHO_ACCOUNTS_URL` and `ZOHO_API_URL` alike.
    pub fn base_url(&self) -> String {
        self.server.url()
    }

    /// Revokes the refresh token: every refresh is refused from now on.
    pub fn revoke_refresh_token(&self) {
        *lock(&self.state.refresh_token) = String::new();
    }

    /// Access tokens issued from now on last `life`.
    pub fn set_token_life(&self, life: Duration) {
        *lock(&self.state.token_life) = life;
    }

    /// The accounts server answers after `delay`.
    pub fn set_token_delay(&self, delay: Duration) {
        *lock(&self.state.token_delay) = delay;
    }

    /// Ends every live access token now (as if an hour had passed).
    pub fn expire_tokens(&self) {
        lock(&self.state.tokens).clear();
    }

    /// How many access tokens the accounts server issued.
    pub fn refreshes(&self) -> u32 {
        *lock(&self.state.refreshes)
    }

    pub fn fail(&self, fault: Fault) {
        self.state.faults.push(fault);
    }

    pub fn lose_answer(&self, what: Lost) {
        lock(&self.state.lost).push(what);
    }

    /// Deletes every record and its notes, as a person in Zoho would.
    pub fn delete_records(&self) {
        lock(&self.state.records).clear();
        lock(&self.state.notes).clear();
    }

    pub fn records(&self) -> Vec<Record> {
        lock(&self.state.records).clone()
    }

    pub fn notes(&self) -> Vec<Note> {
        lock(&self.state.notes).clone()
    }

    /// The `trigger` of each upsert call.
    pub fn triggers(&self) -> Vec<Value> {
        lock(&self.state.triggers).clone()
    }

    pub fn calls(&self) -> Vec<Call> {
        lock(&self.state.calls).clone()
    }
}

impl LocalDestination for Arc<ZohoFake> {
    fn worker_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("ZOHO_CLIENT_ID", DEMO_ZOHO_CLIENT_ID.to_owned()),
            ("ZOHO_CLIENT_SECRET", DEMO_ZOHO_CLIENT_SECRET.to_owned()),
            ("ZOHO_REFRESH_TOKEN", DEMO_ZOHO_REFRESH_TOKEN.to_owned()),
            ("ZOHO_ACCOUNTS_URL", self.base_url()),
            ("ZOHO_API_URL", self.base_url()),
        ]
    }

    fn counts(&self) -> Counts {
        let fake = Arc::clone(self);
        Box::new(move || {
            let records = fake.records();
            let writes = records.iter().map(|r| u64::from(r.writes)).sum::<u64>()
                + fake.notes().len() as u64;
            (records.len(), writes)
        })
    }

    fn describe(&self, port: u16) -> String {
        format!("Zoho CRM  GET  http://127.0.0.1:{port}/records and /notes   (a local fake; POST/DELETE /faults to break and mend it)")
    }
}
