//! A local Lambda Runtime API: the real function binaries (`ingest`,
//! `worker`) run against it exactly as they run in AWS, polling for the next
//! event and posting their response. `invoke` hands an event to the
//! function and waits for its answer.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::Value;
use tokio::sync::{oneshot, Notify};

use crate::server::{lock, Listener, Server};

struct Invocation {
    request_id: String,
    event: Value,
    deadline: SystemTime,
}

#[derive(Default)]
struct EmulatorState {
    function_name: String,
    queue: Mutex<VecDeque<Invocation>>,
    arrived: Notify,
    waiting: Mutex<HashMap<String, oneshot::Sender<Result<Value, String>>>>,
    init_error: Mutex<Option<String>>,
    next_id: AtomicU64,
}

pub struct LambdaEmulator {
    state: Arc<EmulatorState>,
    server: Server,
}

impl LambdaEmulator {
    /// Starts the Runtime API for `function_name` on a free loopback port.
    pub async fn start(function_name: &str) -> std::io::Result<LambdaEmulator> {
        let listener = Listener::loopback().await?;
        let state = Arc::new(EmulatorState {
            function_name: function_name.to_owned(),
            ..EmulatorState::default()
        });
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route(
                "/2018-06-01/runtime/invocation/{id}/response",
                post(respond),
            )
            .route("/2018-06-01/runtime/invocation/{id}/error", post(fail))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .with_state(Arc::clone(&state));
        let server = listener.serve(app);
        Ok(LambdaEmulator { state, server })
    }

    /// The value for the function's `AWS_LAMBDA_RUNTIME_API`.
    pub fn runtime_api(&self) -> String {
        self.server.address().to_string()
    }

    /// What the function reported if its init failed.
    pub fn init_error(&self) -> Option<String> {
        lock(&self.state.init_error).clone()
    }

    /// The function's process died: every invocation waiting for an answer
    /// fails now (as Lambda reports a runtime that exited), and nothing
    /// queued is handed to the next process.
    pub fn fail_in_flight(&self, reason: &str) {
        lock(&self.state.queue).clear();
        for (_, sender) in lock(&self.state.waiting).drain() {
            let _ = sender.send(Err(reason.to_owned()));
        }
    }

    /// Hands `event` to the function and waits for its response, at most
    /// `timeout` (the function's configured timeout).
    pub async fn invoke(&self, event: Value, timeout: Duration) -> Result<Value, String> {
        let request_id = format!(
            "local-{:08}",
            self.state.next_id.fetch_add(1, Ordering::SeqCst)
        );
        let (sender, receiver) = oneshot::channel();
        lock(&self.state.waiting).insert(request_id.clone(), sender);
        lock(&self.state.queue).push_back(Invocation {
            request_id: request_id.clone(),
            event,
            deadline: SystemTime::now() + timeout,
        });
        self.state.arrived.notify_one();
        match tokio::time::timeout(timeout, receiver).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err("the emulator dropped the invocation".to_owned()),
            Err(_) => {
                lock(&self.state.waiting).remove(&request_id);
                Err(format!(
                    "{} timed out after {timeout:?}",
                    self.state.function_name
                ))
            }
        }
    }
}

async fn next(State(state): State<Arc<EmulatorState>>) -> Response {
    loop {
        let notified = state.arrived.notified();
        if let Some(invocation) = lock(&state.queue).pop_front() {
            let deadline_ms = invocation
                .deadline
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            let arn = format!(
                "arn:aws:lambda:us-east-1:000000000000:function:{}",
                state.function_name
            );
            return (
                StatusCode::OK,
                [
                    ("lambda-runtime-aws-request-id", invocation.request_id),
                    ("lambda-runtime-deadline-ms", deadline_ms.to_string()),
                    ("lambda-runtime-invoked-function-arn", arn),
                    (
                        "lambda-runtime-trace-id",
                        "Root=1-00000000-000000000000000000000000".to_owned(),
                    ),
                    ("content-type", "application/json".to_owned()),
                ],
                invocation.event.to_string(),
            )
                .into_response();
        }
        notified.await;
    }
}

fn complete(state: &EmulatorState, id: &str, result: Result<Value, String>) -> StatusCode {
    match lock(&state.waiting).remove(id) {
        Some(sender) => {
            let _ = sender.send(result);
            StatusCode::ACCEPTED
        }
        None => StatusCode::NOT_FOUND,
    }
}

async fn respond(
    State(state): State<Arc<EmulatorState>>,
    Path(id): Path<String>,
    body: Bytes,
) -> StatusCode {
    let value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    complete(&state, &id, Ok(value))
}

async fn fail(
    State(state): State<Arc<EmulatorState>>,
    Path(id): Path<String>,
    body: Bytes,
) -> StatusCode {
    complete(
        &state,
        &id,
        Err(String::from_utf8_lossy(&body).into_owned()),
    )
}

async fn init_error(State(state): State<Arc<EmulatorState>>, body: Bytes) -> StatusCode {
    *lock(&state.init_error) = Some(String::from_utf8_lossy(&body).into_owned());
    StatusCode::ACCEPTED
}
