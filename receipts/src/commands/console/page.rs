//! The page and its assets, embedded in the binary: one HTML file, one
//! script, one style sheet; no build step, nothing from another host.

use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;

const INDEX: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const STYLE: &str = include_str!("page/app.css");

/// The page, with this run's token for its assets and its calls (hex: no
/// markup can come in with it).
pub(super) async fn index(
    axum::extract::State(served): axum::extract::State<std::sync::Arc<super::Served>>,
) -> impl IntoResponse {
    (
        [(CONTENT_TYPE, "text/html; charset=utf-8")],
        INDEX.replace("__TOKEN__", served.guard.token()),
    )
}

pub(super) async fn script() -> impl IntoResponse {
    ([(CONTENT_TYPE, "text/javascript; charset=utf-8")], SCRIPT)
}

pub(super) async fn style() -> impl IntoResponse {
    ([(CONTENT_TYPE, "text/css; charset=utf-8")], STYLE)
}
