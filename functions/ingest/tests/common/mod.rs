//! Helpers shared by the ingest tests: configurations, requests and stores.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use ingest::startup::authenticator_for;
use ingest::store::{PutOutcome, ReceiptStore, StoreError};
use ingest::{Config, Ingest};
use lambda_http::{Body, Request};
use shared::Receipt;

pub const TOKEN: &str = "local-demo-token-change-me";
/// The secret events/ingest-{tally,typeform,webflow}.json are signed with,
/// as `make run SENDER=...` configures it.
pub const DEMO_SIGNING_SECRET: &str = "local-demo-signing-secret";
pub const SUBMISSION_ID: &str = "sub_01JDEMO00000000000000000001";
pub const KEY: &str = "staticforms:form.submitted:sub_01JDEMO00000000000000000001";

pub fn bearer_config() -> Config {
    Config::from_lookup(|name| match name {
        "RECEIPTS_TABLE" => Some("receipts".to_owned()),
        "WEBHOOK_AUTH" => Some("bearer".to_owned()),
        "WEBHOOK_SECRETS" => Some(format!("{TOKEN},rotated-token-000000001")),
        _ => None,
    })
    .expect("test configuration is valid")
}

/// The handler as `main` builds it, for a configuration with inline secrets.
pub async fn ingest_with<S: ReceiptStore>(store: S, config: &Config) -> Ingest<S> {
    let auth = authenticator_for(config, async || -> aws_sdk_secretsmanager::Client {
        unreachable!("test configurations have inline secrets")
    })
    .await
    .expect("test configurations are valid");
    Ingest::new(store, auth, config)
}

pub fn events_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../events")
}

/// A Lambda HTTP event from events/, parsed the way the runtime parses it.
pub fn event(file: &str) -> Request {
    let text = std::fs::read_to_string(events_dir().join(file)).expect("event file exists");
    lambda_http::request::from_str(&text).expect("event file is a Lambda HTTP event")
}

pub fn body_json(submission_id: &str, email: &str) -> String {
    serde_json::json!({
        "event": "form.submitted",
        "timestamp": 1_795_941_528,
        "data": {
            "submissionId": submission_id,
            "formData": {"name": "Ada Lovelace", "email": email, "message": "Call me"},
            "apiKey": "sf_live_api_key_0000001"
        }
    })
    .to_string()
}

/// A delivery with the given headers (name, value) and body.
pub fn request(headers: &[(&str, &str)], body: impl Into<String>) -> Request {
    let mut builder = http::Request::builder()
        .method("POST")
        .uri("/webhooks/staticforms");
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder
        .body(Body::from(body.into()))
        .expect("valid test request")
}

/// A well-formed, authenticated delivery of `submission_id`.
pub fn delivery(submission_id: &str) -> Request {
    let key = format!("staticforms:form.submitted:{submission_id}");
    request(
        &[
            ("authorization", &format!("Bearer {TOKEN}")),
            ("content-type", "application/json"),
            ("idempotency-key", &key),
        ],
        body_json(submission_id, "ada@example.com"),
    )
}

pub fn json_body(response: &http::Response<Body>) -> serde_json::Value {
    serde_json::from_slice(response.body().as_ref()).expect("response body is JSON")
}

/// A store that answers every put with the same scripted result and counts
/// how often it was asked.
pub struct ScriptedStore {
    pub answer: Result<PutOutcome, StoreError>,
    pub calls: AtomicUsize,
}

impl ScriptedStore {
    pub fn new(answer: Result<PutOutcome, StoreError>) -> Self {
        ScriptedStore {
            answer,
            calls: AtomicUsize::new(0),
        }
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl ReceiptStore for ScriptedStore {
    async fn put_if_absent(&self, _receipt: &Receipt) -> Result<PutOutcome, StoreError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.answer.clone()
    }
}
