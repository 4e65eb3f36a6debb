//! `receipts console`: a local web page for the people who own the leads,
//! served by the operator's own CLI from their own machine, with their own
//! AWS credentials: an inbox of receipts (live), one receipt's card, the
//! counts and a chart, the quarantine; and two actions, release and
//! redrive, each with the CLI's own rules. It adds no resource, permission
//! or cost to the stack.
//!
//! A receipt's card and every action are the CLI command's own function
//! (`show`, `release`, `redrive`) writing into a buffer: nothing the CLI
//! decides is decided again here. The inbox and the counts read the day
//! index a page or a period at a time (`inbox`), with the CLI's own rules
//! for statuses and destinations. Who may ask is `guard`'s; the
//! page (`page/`, embedded, no build step, nothing from another host) is
//! in `page`.

mod api;
mod counts;
mod guard;
mod inbox;
mod page;

use std::io::Write;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

use super::redrive::GateRetention;
use super::Failed;
use crate::table::ReceiptsTable;

/// What the console serves from.
pub(super) struct Console {
    pub table: ReceiptsTable,
    /// Whose submission ids bare ids are (`show` of a bare id).
    pub sender: shared::Sender,
    /// As `redrive` warns of them.
    pub gates: GateRetention,
}

pub(super) struct Served {
    console: Console,
    guard: guard::Guard,
}

/// Serves `console` on `address` (127.0.0.1) until Ctrl-C: prints the URL
/// with this run's token, and opens it unless `open` is false.
pub(super) async fn console(
    console: Console,
    address: std::net::SocketAddr,
    open: bool,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| Failed::Run(format!("the console cannot listen on {address}: {error}")))?;
    let port = listener
        .local_addr()
        .map_err(|error| Failed::Run(format!("the console's address: {error}")))?
        .port();
    let guard = guard::Guard::new(new_token()?, port);
    let url = format!("http://127.0.0.1:{port}/?token={}", guard.token());
    let _ = writeln!(out, "receipts console: {url}");
    let _ = writeln!(
        out,
        "(anyone who has this URL while it runs acts with your AWS credentials; Ctrl-C stops it)"
    );
    let _ = out.flush();
    if open {
        open_browser(&url);
    }
    let served = Arc::new(Served { console, guard });
    let app = Router::new()
        .route("/", get(page::index))
        .route("/app.js", get(page::script))
        .route("/app.css", get(page::style))
        .route("/api/receipts", get(inbox::receipts))
        .route("/api/receipt", get(api::receipt))
        .route("/api/counts", get(inbox::counts))
        .route("/api/audit", get(api::audit))
        .route("/api/release", post(api::release))
        .route("/api/redrive", post(api::redrive))
        .layer(middleware::from_fn_with_state(Arc::clone(&served), guarded))
        .with_state(served);
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|error| Failed::Run(format!("the console stopped: {error}")))
}

/// 32 random bytes as hex: this run's token.
fn new_token() -> Result<String, Failed> {
    let mut bytes = [0u8; 32];
    aws_lc_rs::rand::fill(&mut bytes)
        .map_err(|_| Failed::Run("no random bytes for the console's token".to_owned()))?;
    Ok(hex::encode(bytes))
}

/// The system's way to open a URL; a failure only means the operator
/// opens the printed URL themselves.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let _ = std::process::Command::new(opener)
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

/// Every request through the guard first; every answer with the headers
/// that keep the page to itself.
async fn guarded(State(served): State<Arc<Served>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    let query_token = request.uri().query().and_then(|query| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("token="))
    });
    let asked = guard::Asked {
        write: request.method() != axum::http::Method::GET,
        host: header("host"),
        origin: header("origin"),
        fetch_site: header("sec-fetch-site"),
        token: header("x-console-token").or(query_token),
    };
    let mut response = match served.guard.check(&asked) {
        Ok(()) => next.run(request).await,
        Err(refusal) => (
            StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::FORBIDDEN),
            refusal.reason(),
        )
            .into_response(),
    };
    protect(response.headers_mut());
    response
}

/// The page loads nothing from anywhere but the console, runs no inline
/// script, is framed by nobody, and is never cached or referred.
fn protect(headers: &mut HeaderMap) {
    let set = |headers: &mut HeaderMap, name: &'static str, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(
        headers,
        "content-security-policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    set(headers, "x-content-type-options", "nosniff");
    set(headers, "referrer-policy", "no-referrer");
    set(headers, "x-frame-options", "DENY");
    set(headers, "cache-control", "no-store");
    set(headers, "cross-origin-resource-policy", "same-origin");
}
