//! Cloudflare Turnstile's `siteverify` on 127.0.0.1, for ingest's bot check
//! in tests and `SENDER=html make run`. Built from Cloudflare's pages:
//!
//! - `POST /turnstile/v0/siteverify`, urlencoded or JSON, with `secret`,
//!   `response` (the widget's token), `remoteip` and `idempotency_key`;
//!   answer `{"success", "challenge_ts", "hostname", "error-codes": [],
//!   "action", "cdata"}`. "A response may only be validated once": a token
//!   verified before is refused with `timeout-or-duplicate`, unless the
//!   same `idempotency_key` comes with it, which gets the first answer
//!   again; `missing-input-response`, `invalid-input-response`,
//!   `missing-input-secret`, `invalid-input-secret`:
//!   <https://developers.cloudflare.com/turnstile/get-started/server-side-validation/>;
//! - the test keys: the secret `1x0000000000000000000000000000000AA`
//!   passes every token (the widget's test site keys give the dummy token
//!   `XXXX.DUMMY.TOKEN.XXXX`), `2x…AA` fails every one, `3x…AA` answers
//!   `timeout-or-duplicate`:
//!   <https://developers.cloudflare.com/turnstile/troubleshooting/testing/>.
//!
//! Otherwise a token is one the fake issued ([`TurnstileFake::issue`]),
//! valid once. A test may make the next calls fail (500) or lose the next
//! answer after verifying (502), and reads how often each token was
//! verified for the first time and asked about at all.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::server::{lock, Listener, Server};

/// The test secret that passes every token.
pub const ALWAYS_PASSES_SECRET: &str = "1x0000000000000000000000000000000AA";
/// The test secret that fails every token.
pub const ALWAYS_FAILS_SECRET: &str = "2x0000000000000000000000000000000AA";
/// The test secret whose every token reads as already spent.
pub const ALREADY_SPENT_SECRET: &str = "3x0000000000000000000000000000000AA";
/// The token the widget's test site keys give.
pub const DUMMY_TOKEN: &str = "XXXX.DUMMY.TOKEN.XXXX";
/// A test site key whose widget always passes (visible).
pub const ALWAYS_PASSES_SITE_KEY: &str = "1x00000000000000000000AA";

#[derive(Default)]
struct Token {
    /// The idempotency key of its one successful verification, once spent.
    spent_with: Option<Option<String>>,
    /// Verifications that spent it (at most 1).
    first_verifications: u32,
    /// Every call about it.
    calls: u32,
}

struct FakeState {
    secret: String,
    tokens: Mutex<HashMap<String, Token>>,
    next: Mutex<u64>,
    fail_next: Mutex<u32>,
    lose_next: Mutex<u32>,
}

/// A running fake; it stops when dropped.
pub struct TurnstileFake {
    state: Arc<FakeState>,
    server: Server,
}

impl TurnstileFake {
    /// Starts on a free loopback port, with the widget's secret `secret`.
    pub async fn start(secret: &str) -> std::io::Result<TurnstileFake> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), secret).await
    }

    pub async fn start_on(address: SocketAddr, secret: &str) -> std::io::Result<TurnstileFake> {
        let listener = Listener::bind(address).await?;
        let state = Arc::new(FakeState {
            secret: secret.to_owned(),
            tokens: Mutex::new(HashMap::new()),
            next: Mutex::new(0),
            fail_next: Mutex::new(0),
            lose_next: Mutex::new(0),
        });
        let app = Router::new()
            .route("/turnstile/v0/siteverify", post(siteverify))
            .with_state(Arc::clone(&state));
        Ok(TurnstileFake {
            state,
            server: listener.serve(app),
        })
    }

    /// For `TURNSTILE_VERIFY_URL`.
    pub fn verify_url(&self) -> String {
        format!("{}/turnstile/v0/siteverify", self.server.url())
    }

    /// A token as the widget gives one, valid once.
    pub fn issue(&self) -> String {
        let mut next = lock(&self.state.next);
        *next += 1;
        let token = format!("0.fake-turnstile-token-{:08}.{}", *next, "x".repeat(40));
        lock(&self.state.tokens).insert(token.clone(), Token::default());
        token
    }

    /// Answers the next `calls` calls 500, verifying nothing.
    pub fn fail_next(&self, calls: u32) {
        *lock(&self.state.fail_next) = calls;
    }

    /// Verifies the next `calls` calls, then loses their answers (502).
    pub fn lose_next(&self, calls: u32) {
        *lock(&self.state.lose_next) = calls;
    }

    /// How often `token` was verified for the first time (0 or 1), and how
    /// often it was asked about at all.
    pub fn verifications(&self, token: &str) -> (u32, u32) {
        lock(&self.state.tokens)
            .get(token)
            .map_or((0, 0), |t| (t.first_verifications, t.calls))
    }
}

fn verdict(success: bool, codes: &[&str]) -> Value {
    json!({"success": success, "challenge_ts": "2026-12-06T00:00:00.000Z", "hostname": "localhost",
           "error-codes": codes, "action": "", "cdata": ""})
}

/// The request's fields, urlencoded or JSON.
fn fields(headers: &HeaderMap, body: &[u8]) -> HashMap<String, String> {
    let json = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if json {
        serde_json::from_slice::<serde_json::Map<String, Value>>(body)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(k, v)| v.as_str().map(|v| (k, v.to_owned())))
            .collect()
    } else {
        url::form_urlencoded::parse(body).into_owned().collect()
    }
}

async fn siteverify(
    State(state): State<Arc<FakeState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    {
        let mut fail = lock(&state.fail_next);
        if *fail > 0 {
            *fail -= 1;
            return (StatusCode::INTERNAL_SERVER_ERROR, "upstream error").into_response();
        }
    }
    let fields = fields(&headers, &body);
    let secret = fields.get("secret").map(String::as_str).unwrap_or_default();
    let Some(token) = fields.get("response").filter(|t| !t.is_empty()) else {
        return Json(verdict(false, &["missing-input-response"])).into_response();
    };
    match secret {
        "" => return Json(verdict(false, &["missing-input-secret"])).into_response(),
        ALWAYS_PASSES_SECRET => return Json(verdict(true, &[])).into_response(),
        ALWAYS_FAILS_SECRET => {
            return Json(verdict(false, &["invalid-input-response"])).into_response()
        }
        ALREADY_SPENT_SECRET => {
            return Json(verdict(false, &["timeout-or-duplicate"])).into_response()
        }
        secret if secret != state.secret => {
            return Json(verdict(false, &["invalid-input-secret"])).into_response()
        }
        _ => {}
    }
    let key = fields.get("idempotency_key").cloned();
    let answer = {
        let mut tokens = lock(&state.tokens);
        let Some(known) = tokens.get_mut(token) else {
            return Json(verdict(false, &["invalid-input-response"])).into_response();
        };
        known.calls += 1;
        match &known.spent_with {
            // The same idempotency key: the first answer again.
            Some(spent) if key.is_some() && *spent == key => verdict(true, &[]),
            Some(_) => verdict(false, &["timeout-or-duplicate"]),
            None => {
                known.spent_with = Some(key);
                known.first_verifications += 1;
                verdict(true, &[])
            }
        }
    };
    let mut lose = lock(&state.lose_next);
    if *lose > 0 {
        *lose -= 1;
        return (StatusCode::BAD_GATEWAY, "upstream connection lost").into_response();
    }
    Json(answer).into_response()
}
