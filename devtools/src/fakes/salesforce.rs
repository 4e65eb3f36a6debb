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

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use axum::{Form, Json, Router};
use serde::Deserialize;
use serde_json::{json, Map, Value};

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
    faults: Mutex<VecDeque<Fault>>,
    calls: Mutex<Vec<Call>>,
    /// Each upsert's `Sforce-Auto-Assign` header, as sent (absent: None).
    auto_assign: Mutex<Vec<Option<String>>>,
    base_url: Mutex<String>,
    /// Every token expires once this many more API calls are answered.
    expire_after_calls: Mutex<Option<u32>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A running fake; it stops when dropped.
pub struct SalesforceFake {
    address: SocketAddr,
    org: Arc<Org>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for SalesforceFake {
    fn drop(&mut self) {
        self.server.abort();
    }
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
        let listener = tokio::net::TcpListener::bind(address).await?;
        let address = listener.local_addr()?;
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
            faults: Mutex::new(VecDeque::new()),
            calls: Mutex::new(Vec::new()),
            auto_assign: Mutex::new(Vec::new()),
            base_url: Mutex::new(format!("http://{address}")),
            expire_after_calls: Mutex::new(None),
        });
        let app = Router::new()
            .route("/services/oauth2/token", post(token))
            .route(
                "/services/data/{version}/composite/sobjects/{object}/{field}",
                patch(upsert_collection),
            )
            .route(
                "/services/data/{version}/sobjects/{object}/{field}/{value}",
                patch(upsert_one),
            )
            .route("/records", get(list))
            .route("/faults", post(set_fault).delete(clear_faults))
            .with_state(Arc::clone(&org));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(SalesforceFake {
            address,
            org,
            server,
        })
    }

    /// For `SALESFORCE_LOGIN_URL` (the org's My Domain URL).
    pub fn login_url(&self) -> String {
        format!("http://{}", self.address)
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
        lock(&self.org.faults).push_back(fault);
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

#[derive(Deserialize)]
struct TokenRequest {
    grant_type: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
}

async fn token(State(org): State<Arc<Org>>, Form(request): Form<TokenRequest>) -> Response {
    if request.grant_type.as_deref() != Some("client_credentials") {
        return (StatusCode::BAD_REQUEST, Json(json!({"error": "unsupported_grant_type", "error_description": "grant type not supported"}))).into_response();
    }
    if request.client_id.as_deref() != Some(&org.client_id)
        || request.client_secret.as_deref() != Some(lock(&org.client_secret).as_str())
    {
        return (StatusCode::BAD_REQUEST, Json(json!({"error": "invalid_client", "error_description": "invalid client credentials"}))).into_response();
    }
    let issued = {
        let mut issued = lock(&org.tokens_issued);
        *issued += 1;
        *issued
    };
    let access_token = format!("00DFAKE0000000001!token-{issued}");
    let expires = Instant::now() + *lock(&org.token_ttl);
    lock(&org.tokens).insert(access_token.clone(), expires);
    let base_url = lock(&org.base_url).clone();
    Json(json!({
        "access_token": access_token,
        "instance_url": base_url,
        "id": format!("{base_url}/id/00DFAKE0000000001/005FAKE0000000001"),
        "token_type": "Bearer",
        "issued_at": "1796029200000",
        "signature": "c2lnbmF0dXJl",
        "scope": "api",
    }))
    .into_response()
}

fn errors(status: StatusCode, code: &str, message: &str) -> (StatusCode, Value) {
    (status, json!([{"message": message, "errorCode": code}]))
}

fn answer(org: &Org, path: &str, records: usize, (status, body): (StatusCode, Value)) -> Response {
    lock(&org.calls).push(Call {
        path: path.to_owned(),
        records,
        status: status.as_u16(),
    });
    let used = lock(&org.calls).len();
    {
        let mut countdown = lock(&org.expire_after_calls);
        if let Some(left) = countdown.as_mut() {
            *left = left.saturating_sub(1);
            if *left == 0 {
                *countdown = None;
                lock(&org.tokens).clear();
            }
        }
    }
    let mut response = (status, Json(body)).into_response();
    if let Ok(value) = format!("api-usage={used}/15000").parse() {
        response.headers_mut().insert("sforce-limit-info", value);
    }
    response
}

/// The checks every API call passes first: a live token, no fault queued,
/// the object and field this org has.
fn refused(
    org: &Org,
    headers: &HeaderMap,
    object: &str,
    field: &str,
) -> Option<(StatusCode, Value)> {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let live = lock(&org.tokens)
        .get(token)
        .is_some_and(|expires| Instant::now() < *expires);
    if !live {
        return Some(errors(
            StatusCode::UNAUTHORIZED,
            "INVALID_SESSION_ID",
            "Session expired or invalid",
        ));
    }
    {
        let mut faults = lock(&org.faults);
        if let Some(fault) = faults.front_mut() {
            let given = fault.clone();
            if let Some(times) = &mut fault.times {
                *times = times.saturating_sub(1);
                if *times == 0 {
                    faults.pop_front();
                }
            }
            let status =
                StatusCode::from_u16(given.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let code = given
                .error_code
                .unwrap_or_else(|| "UNKNOWN_EXCEPTION".to_owned());
            return Some(errors(status, &code, "injected fault"));
        }
    }
    if object != OBJECT {
        return Some(errors(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "The requested resource does not exist",
        ));
    }
    if field != EXTERNAL_ID_FIELD {
        return Some(errors(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "Provided external ID field does not exist or is not accessible",
        ));
    }
    None
}

/// One record's upsert: its result object and whether it created.
fn upsert_record(org: &Org, external_id: &str, fields: &Map<String, Value>) -> Value {
    if let Some(code) = lock(&org.record_errors)
        .get_mut(external_id)
        .and_then(VecDeque::pop_front)
    {
        return json!({"success": false, "errors": [{"statusCode": code, "message": "injected", "fields": []}]});
    }
    if lock(&org.ambiguous).contains(external_id) {
        return json!({"success": false, "errors": [{"statusCode": "DUPLICATE_EXTERNAL_ID", "message": format!("{EXTERNAL_ID_FIELD}: more than one record found for external id field"), "fields": []}]});
    }
    let mut records = lock(&org.records);
    if lock(&org.racing).remove(external_id) {
        let mut winner = fields.clone();
        winner.insert(
            EXTERNAL_ID_FIELD.to_owned(),
            Value::String(external_id.to_owned()),
        );
        let id = format!("00QFAKE{:011}", records.len() + 1);
        records.push(Record {
            id: id.clone(),
            fields: winner,
            writes: 1,
        });
        return json!({"success": false, "errors": [{"statusCode": "DUPLICATE_VALUE", "message": format!("duplicate value found: {EXTERNAL_ID_FIELD} duplicates value on record with id: {id}"), "fields": []}]});
    }
    let existing = records
        .iter_mut()
        .find(|r| r.fields.get(EXTERNAL_ID_FIELD).and_then(Value::as_str) == Some(external_id));
    let mut merged = existing
        .as_ref()
        .map(|r| r.fields.clone())
        .unwrap_or_default();
    merged.extend(fields.clone());
    merged.insert(
        EXTERNAL_ID_FIELD.to_owned(),
        Value::String(external_id.to_owned()),
    );
    for required in ["LastName", "Company"] {
        if merged
            .get(required)
            .and_then(Value::as_str)
            .is_none_or(|v| v.trim().is_empty())
        {
            return json!({"success": false, "errors": [{"statusCode": "REQUIRED_FIELD_MISSING", "message": format!("Required fields are missing: [{required}]"), "fields": [required]}]});
        }
    }
    match existing {
        Some(record) => {
            record.fields = merged;
            record.writes += 1;
            json!({"id": record.id, "success": true, "errors": [], "created": false})
        }
        None => {
            let id = format!("00QFAKE{:011}", records.len() + 1);
            records.push(Record {
                id: id.clone(),
                fields: merged,
                writes: 1,
            });
            json!({"id": id, "success": true, "errors": [], "created": true})
        }
    }
}

fn unknown_field(fields: &Map<String, Value>) -> Option<&String> {
    fields
        .keys()
        .find(|f| *f != "attributes" && !KNOWN_FIELDS.contains(&f.as_str()))
}

fn record_auto_assign(org: &Org, headers: &HeaderMap) {
    let sent = headers
        .get("sforce-auto-assign")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    lock(&org.auto_assign).push(sent);
}

async fn upsert_collection(
    State(org): State<Arc<Org>>,
    Path((_version, object, field)): Path<(String, String, String)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let path = format!("/composite/sobjects/{object}/{field}");
    record_auto_assign(&org, &headers);
    let records = body["records"].as_array().cloned().unwrap_or_default();
    if let Some(refusal) = refused(&org, &headers, &object, &field) {
        return answer(&org, &path, records.len(), refusal);
    }
    // A 400 for the whole request: nothing is written.
    let refuse = |code: &str, message: &str| {
        answer(
            &org,
            &path,
            records.len(),
            errors(StatusCode::BAD_REQUEST, code, message),
        )
    };
    if records.is_empty() || records.len() > 200 {
        return refuse("EXCEEDED_ID_LIMIT", "record limit exceeded: 200");
    }
    for record in &records {
        let fields = record.as_object().cloned().unwrap_or_default();
        if record["attributes"]["type"] != OBJECT {
            return refuse(
                "INVALID_TYPE",
                "every record needs attributes.type of the object in the URI",
            );
        }
        if let Some((field, value)) = fields.iter().find(|(name, value)| {
            NUMBER_FIELDS.contains(&name.as_str())
                && value
                    .as_str()
                    .is_some_and(|v| v.trim().parse::<f64>().is_err())
        }) {
            return refuse(
                "JSON_PARSER_ERROR",
                &format!("Cannot deserialize instance of int from VALUE_STRING value {value} or request may be missing a required field at [line:1, column:1] ({field})"),
            );
        }
        if let Some(unknown) = unknown_field(&fields) {
            return refuse(
                "INVALID_FIELD",
                &format!("No such column '{unknown}' on sobject of type {OBJECT}"),
            );
        }
    }
    let results: Vec<Value> = records
        .iter()
        .map(|record| {
            let mut fields = record.as_object().cloned().unwrap_or_default();
            fields.remove("attributes");
            match fields.get(EXTERNAL_ID_FIELD).and_then(Value::as_str).map(str::to_owned) {
                Some(external_id) => upsert_record(&org, &external_id, &fields),
                None => json!({"success": false, "errors": [{"statusCode": "REQUIRED_FIELD_MISSING", "message": "external ID missing", "fields": [EXTERNAL_ID_FIELD]}]}),
            }
        })
        .collect();
    answer(
        &org,
        &path,
        records.len(),
        (StatusCode::OK, Value::Array(results)),
    )
}

async fn upsert_one(
    State(org): State<Arc<Org>>,
    Path((_version, object, field, value)): Path<(String, String, String, String)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let path = format!("/sobjects/{object}/{field}/{value}");
    record_auto_assign(&org, &headers);
    if let Some(refusal) = refused(&org, &headers, &object, &field) {
        return answer(&org, &path, 1, refusal);
    }
    let fields = body.as_object().cloned().unwrap_or_default();
    if let Some(unknown) = unknown_field(&fields) {
        return answer(
            &org,
            &path,
            1,
            errors(
                StatusCode::BAD_REQUEST,
                "INVALID_FIELD",
                &format!("No such column '{unknown}' on sobject of type {OBJECT}"),
            ),
        );
    }
    if lock(&org.ambiguous).contains(&value) {
        let base = lock(&org.base_url).clone();
        return answer(
            &org,
            &path,
            1,
            (
                StatusCode::MULTIPLE_CHOICES,
                json!([
                    format!("{base}/services/data/v67.0/sobjects/Lead/00QFAKE1"),
                    format!("{base}/services/data/v67.0/sobjects/Lead/00QFAKE2")
                ]),
            ),
        );
    }
    let result = upsert_record(&org, &value, &fields);
    let status = match (result["success"].as_bool(), result["created"].as_bool()) {
        (Some(true), Some(true)) => StatusCode::CREATED,
        (Some(true), _) => StatusCode::OK,
        _ => {
            let code = result["errors"][0]["statusCode"]
                .as_str()
                .unwrap_or("UNKNOWN_EXCEPTION")
                .to_owned();
            return answer(
                &org,
                &path,
                1,
                errors(StatusCode::BAD_REQUEST, &code, "record refused"),
            );
        }
    };
    answer(&org, &path, 1, (status, result))
}

async fn list(State(org): State<Arc<Org>>) -> Json<Value> {
    let records = lock(&org.records).clone();
    let listed: Vec<Value> = records
        .iter()
        .map(|r| json!({"id": r.id, "fields": r.fields, "writes": r.writes}))
        .collect();
    Json(json!({"count": listed.len(), "records": listed}))
}

async fn set_fault(State(org): State<Arc<Org>>, Json(fault): Json<Fault>) -> StatusCode {
    lock(&org.faults).push_back(fault);
    StatusCode::NO_CONTENT
}

async fn clear_faults(State(org): State<Arc<Org>>) -> StatusCode {
    lock(&org.faults).clear();
    StatusCode::NO_CONTENT
}
