//! A stand-in for a chat's incoming webhook (Slack's, Teams'), for tests
//! of new-lead notices: it keeps every JSON body POSTed to it, answers
//! `500` to the first `refuse_first` of them, then `200` with the body
//! `ok`. Slack's incoming webhooks answer a posted message `200` `ok` and
//! report a failure with an error status and a short code in the body
//! (https://docs.slack.dev/messaging/sending-messages-using-incoming-webhooks).

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::Value;

use crate::server::{lock, Listener, Server};

#[derive(Default)]
struct Received {
    refuse_first: usize,
    calls: usize,
    accepted: Vec<Value>,
}

/// The running stand-in; it stops when dropped.
pub struct NoticeEndpoint {
    server: Server,
    received: Arc<Mutex<Received>>,
}

impl NoticeEndpoint {
    /// Listens on a free loopback port; the first `refuse_first` POSTs are
    /// answered 500.
    pub async fn start(refuse_first: usize) -> std::io::Result<NoticeEndpoint> {
        let received = Arc::new(Mutex::new(Received {
            refuse_first,
            ..Received::default()
        }));
        let app = Router::new()
            .route("/hook", post(take))
            .with_state(Arc::clone(&received));
        let server = Listener::loopback().await?.serve(app);
        Ok(NoticeEndpoint { server, received })
    }

    /// Where the worker POSTs (`NOTIFY_URL`).
    pub fn url(&self) -> String {
        format!("{}/hook", self.server.url())
    }

    /// The bodies it accepted, in order.
    pub fn accepted(&self) -> Vec<Value> {
        lock(&self.received).accepted.clone()
    }

    /// Every POST, refused ones included.
    pub fn calls(&self) -> usize {
        lock(&self.received).calls
    }
}

async fn take(
    State(received): State<Arc<Mutex<Received>>>,
    Json(body): Json<Value>,
) -> (StatusCode, &'static str) {
    let mut received = lock(&received);
    received.calls += 1;
    if received.calls <= received.refuse_first {
        return (StatusCode::INTERNAL_SERVER_ERROR, "internal_error");
    }
    received.accepted.push(body);
    (StatusCode::OK, "ok")
}
