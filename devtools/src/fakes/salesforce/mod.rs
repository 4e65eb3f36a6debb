//! A Salesforce org on 127.0.0.1, for tests and `DESTINATION=salesforce
//! make run`: the OAuth client-credentials token endpoint and both upsert
//! forms by external ID, with the answers Salesforce documents. Built from:
//!
//! - the client credentials flow (`POST /services/oauth2/token`,
//!   `grant_type=client_credentials`; answer `access_token`, `instance_url`,
//!   `token_type`, `issued_at`, no `expires_in`; `invalid_client` when the
//!   credentials are wrong):
//!   <https://help.salesforce.com/s/articleView?id=sf.remoteaccess_oauth_client_credentials_flow.htm>;
//! - sObject Collections upsert (`PATCH /services/data/vXX.X/composite/sobjects/{object}/{field}`,
//!   up to 200 records with `attributes.type`, `allOrNone`; a 200 with one
//!   result per record, in order: `id`, `success`, `created`, `errors[]`
//!   with `statusCode`):
//!   <https://developer.salesforce.com/docs/platform/api-rest/guide/resources-composite-sobjects-collections-upsert.html>;
//! - one-record upsert (`PATCH .../sobjects/{object}/{field}/{value}`: 201
//!   created, 200 updated, 300 when several records match):
//!   <https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_upsert.htm>;
//! - errors (`[{"errorCode", "message"}]`; 401 `INVALID_SESSION_ID`, 403
//!   `REQUEST_LIMIT_EXCEEDED`, 404 `NOT_FOUND`) and the `Sforce-Limit-Info`
//!   header: <https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/errorcodes.htm>.
//!
//! What it enforces: the client credentials; tokens that expire (after a
//! configured time, or at once on demand); the object and external ID field
//! it knows; at most 200 records; known fields (an unknown one fails the
//! whole request, as Salesforce's `INVALID_FIELD` does); a number field
//! (`NumberOfEmployees`) given text that is no number (the whole request
//! fails with `JSON_PARSER_ERROR`, as Salesforce's deserialiser does, on the
//! same errors page); a Lead's required
//! `LastName` and `Company` (per record, `REQUIRED_FIELD_MISSING`); one
//! record per external ID. Per-record errors and whole-request faults are
//! injected on demand; `GET /records` lists what it holds.

mod api;
mod rest;

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::routing::{get, patch, post};
use axum::Router;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::stand_in::{Counts, LocalDestination};
use crate::server::{self, lock, FaultQueue, Listener, Server};

/// The client credentials the local Salesforce fake accepts.
pub const DEMO_SALESFORCE_CLIENT_ID: &str = "3MVG9local.demo.client";

pub const DEMO_SALESFORCE_CLIENT_SECRET: &str = "local-demo-salesforce-secret";

pub const OBJECT: &str = "Lead";
pub const EXTERNAL_ID_FIELD: &str = "StaticForms_Submission_Id__c";

/// The Lead fields this org knows.
pub const KNOWN_FIELDS: &[&str] = &[
    "FirstName",
    "LastName",
    "Email",
    "Phone",
    "Company",
    "Description",
    "LeadSource",
    "NumberOfEmployees",
    EXTERNAL_ID_FIELD,
];

/// Fields of type number: a value that is no number fails the request.
const NUMBER_FIELDS: &[&str] = &["NumberOfEmployees"];

/// A record as the fake holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub id: String,
    pub fields: Map<String, Value>,
    /// How many upserts wrote it.
    pub writes: u32,
}

/// One API call (token requests excluded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub path: String,
    pub records: usize,
    pub status: u16,
}

/// A failure answered for a whole request instead of the upsert.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fault {
    pub status: u16,
    /// `REQUEST_LIMIT_EXCEEDED`, `NOT_FOUND`, …
    pub error_code: Option<String>,
    /// How many calls it answers; every call when absent.
    pub times: Option<u32>,
}

impl Fault {
    pub fn status(status: u16, error_code: &str) -> Self {
        Fault {
            status,
            error_code: Some(error_code.to_owned()),
            times: None,
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

struct Org {
    client_id: String,
    client_secret: Mutex<String>,
    token_ttl: Mutex<Duration>,
    /// Tokens issued, and when each expires.
    tokens: Mutex<HashMap<String, Instant>>,
    tokens_issued: Mutex<u32>,
    /// Records by external ID, in creation order.
    records: Mutex<Vec<Record>>,
    /// Per-record errors to answer, by external ID, given once each.
    record_errors: Mutex<HashMap<String, VecDeque<String>>>,
    /// External IDs held by two records (answered as "not unique").
    ambiguous: Mutex<HashSet<String>>,
    /// External IDs whose next upsert loses a race to another writer's.
    racing: Mutex<HashSet<String>>,
    faults: Arc<FaultQueue<Fault>>,
    calls: Mutex<Vec<Call>>,
    /// Each upsert's `Sforce-Auto-Assign` header, as sent (absent: None).
    auto_assign: Mutex<Vec<Option<String>>>,
    base_url: Mutex<String>,
    /// Every token expires once this many more API calls are answered.
    expire_after_calls: Mutex<Option<u32>>,
}

/// A running fake; it stops when dropped.
pub struct SalesforceFake {
    org: Arc<Org>,
    server: Server,
}

impl SalesforceFake {
    /// Starts on a free loopback port, accepting these client credentials.
    pub async fn start(client_id: &str, client_secret: &str) -> std::io::Result<SalesforceFake> {
        Self::start_on(
            SocketAddr::from(([127, 0, 0, 1], 0)),
            client_id,
            client_secret,
        )
        .await
    }

    pub async fn start_on(
        address: SocketAddr,
        client_id: &str,
        client_secret: &str,
    ) -> std::io::Result<SalesforceFake> {
        let listener = Listener::bind(address).await?;
        let org = Arc::new(Org {
            client_id: client_id.to_owned(),
            client_secret: Mutex::new(client_secret.to_owned()),
            token_ttl: Mutex::new(Duration::from_secs(7200)),
            tokens: Mutex::new(HashMap::new()),
            tokens_issued: Mutex::new(0),
            records: Mutex::new(Vec::new()),
            record_errors: Mutex::new(HashMap::new()),
            ambiguous: Mutex::new(HashSet::new()),
            racing: Mutex::new(HashSet::new()),
            faults: FaultQueue::new("salesforce fake"),
            calls: Mutex::new(Vec::new()),
            auto_assign: Mutex::new(Vec::new()),
            base_url: Mutex::new(format!("http://{}", listener.address())),
            expire_after_calls: Mutex::new(None),
        });
        let app = Router::new()
            .route("/services/oauth2/token", post(api::token))
            .route(
                "/services/data/{version}/composite/sobjects/{object}/{field}",
                patch(api::upsert_collection),
            )
            .route(
                "/services/data/{version}/sobjects/{object}/{field}/{value}",
                patch(api::upsert_one),
            )
            .route(
                "/services/data/{version}/sobjects/{object}/{id}",
                axum::routing::delete(rest::delete),
            )
            .route("/services/data/{version}/query", get(rest::query))
            .route("/records", get(api::list))
            .with_state(Arc::clone(&org))
            .merge(org.faults.routes());
        let server = listener.serve(app);
        Ok(SalesforceFake { org, server })
    }

    /// For `SALESFORCE_LOGIN_URL` (the org's My Domain URL).
    pub fn login_url(&self) -> String {
        self.server.url()
    }

    /// Accepts only `client_secret` from now on (a rotation); tokens already
    /// issued keep working, as in Salesforce.
    pub fn rotate_client_secret(&self, client_secret: &str) {
        *lock(&self.org.client_secret) = client_secret.to_owned();
    }

    /// Tokens issued from now on expire after `ttl`.
    pub fn token_lifetime(&self, ttl: Duration) {
        *lock(&self.org.token_ttl) = ttl;
    }

    /// Every token issued so far stops working now.
    pub fn expire_tokens(&self) {
        lock(&self.org.tokens).clear();
    }

    /// Every token stops working after `calls` more API calls: a token
    /// that expires in the middle of a batch.
    pub fn expire_tokens_after_calls(&self, calls: u32) {
        *lock(&self.org.expire_after_calls) = Some(calls);
    }

    pub fn tokens_issued(&self) -> u32 {
        *lock(&self.org.tokens_issued)
    }

    /// The next upsert of `external_id` fails with `status_code`.
    pub fn fail_record(&self, external_id: &str, status_code: &str) {
        lock(&self.org.record_errors)
            .entry(external_id.to_owned())
            .or_default()
            .push_back(status_code.to_owned());
    }

    /// Makes `external_id` match two records (a field that is not unique).
    pub fn make_ambiguous(&self, external_id: &str) {
        lock(&self.org.ambiguous).insert(external_id.to_owned());
    }

    /// The next upsert of `external_id` loses a race: another writer's
    /// upsert of the same external ID inserts the record first, and this one
    /// is answered `DUPLICATE_VALUE` ("duplicate value found: <field>
    /// duplicates value on record with id: <id>"), as Salesforce answers
    /// two upserts of one new external ID that overlap, reported in
    /// <https://salesforce.stackexchange.com/questions/197382> (Salesforce
    /// lists its status codes only in an org's WSDL).
    pub fn lose_race(&self, external_id: &str) {
        lock(&self.org.racing).insert(external_id.to_owned());
    }

    pub fn fail(&self, fault: Fault) {
        self.org.faults.push(fault);
    }

    pub fn records(&self) -> Vec<Record> {
        lock(&self.org.records).clone()
    }

    pub fn record(&self, external_id: &str) -> Option<Record> {
        lock(&self.org.records)
            .iter()
            .find(|r| r.fields.get(EXTERNAL_ID_FIELD).and_then(Value::as_str) == Some(external_id))
            .cloned()
    }

    pub fn calls(&self) -> Vec<Call> {
        lock(&self.org.calls).clone()
    }

    /// The `Sforce-Auto-Assign` header of each upsert request, in order:
    /// absent, Salesforce runs the org's assignment rules, on updates too
    /// (https://developer.salesforce.com/docs/platform/api-rest/guide/headers-autoassign.md).
    pub fn auto_assign_headers(&self) -> Vec<Option<String>> {
        lock(&self.org.auto_assign).clone()
    }
}

impl LocalDestination for Arc<SalesforceFake> {
    fn worker_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("SALESFORCE_LOGIN_URL", self.login_url()),
            ("SALESFORCE_CLIENT_ID", DEMO_SALESFORCE_CLIENT_ID.to_owned()),
            (
                "SALESFORCE_CLIENT_SECRET",
                DEMO_SALESFORCE_CLIENT_SECRET.to_owned(),
            ),
        ]
    }

    fn counts(&self) -> Counts {
        let fake = Arc::clone(self);
        Box::new(move || {
            let records = fake.records();
            let writes = records.iter().map(|r| u64::from(r.writes)).sum();
            (records.len(), writes)
        })
    }

    fn describe(&self, port: u16) -> String {
        format!("Salesforce GET http://127.0.0.1:{port}/records   (a local fake; POST/DELETE /faults to break and mend it)")
    }
}
