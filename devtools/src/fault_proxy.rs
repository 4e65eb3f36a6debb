//! A proxy in front of the local DynamoDB server that can be told to fail:
//! answer 500, or throttle, instead of forwarding. It shows what the ingest
//! function does when DynamoDB is unavailable, and after it recovers.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;

use crate::server::{forward, Listener, Server};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Fault {
    /// Forward every request to the real server.
    Healthy = 0,
    /// Answer 500 InternalServerError.
    ServerError = 1,
    /// Answer 400 ThrottlingException, as DynamoDB does under throttling.
    Throttle = 2,
}

struct ProxyState {
    upstream: String,
    client: reqwest::Client,
    fault: AtomicU8,
    requests: AtomicUsize,
}

pub struct FaultProxy {
    state: Arc<ProxyState>,
    server: Server,
}

impl FaultProxy {
    /// Starts on a free loopback port, forwarding to `upstream`.
    pub async fn start(upstream: &str) -> std::io::Result<FaultProxy> {
        let listener = Listener::loopback().await?;
        let state = Arc::new(ProxyState {
            upstream: upstream.trim_end_matches('/').to_owned(),
            client: reqwest::Client::new(),
            fault: AtomicU8::new(Fault::Healthy as u8),
            requests: AtomicUsize::new(0),
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&state));
        let server = listener.serve(app);
        Ok(FaultProxy { state, server })
    }

    pub fn url(&self) -> String {
        self.server.url()
    }

    pub fn set(&self, fault: Fault) {
        self.state.fault.store(fault as u8, Ordering::SeqCst);
    }

    /// Requests received, forwarded or not.
    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }
}

fn dynamodb_error(status: StatusCode, kind: &str) -> Response {
    let body = format!(
        r#"{{"__type":"com.amazonaws.dynamodb.v20120810#{kind}","message":"injected by fault proxy"}}"#
    );
    (
        status,
        [("content-type", "application/x-amz-json-1.0")],
        body,
    )
        .into_response()
}

async fn handle(
    State(state): State<Arc<ProxyState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    state.requests.fetch_add(1, Ordering::SeqCst);
    match state.fault.load(Ordering::SeqCst) {
        1 => return dynamodb_error(StatusCode::INTERNAL_SERVER_ERROR, "InternalServerError"),
        2 => return dynamodb_error(StatusCode::BAD_REQUEST, "ThrottlingException"),
        _ => {}
    }
    forward(&state.client, &state.upstream, method, &uri, &headers, body).await
}
