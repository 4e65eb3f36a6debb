//! The listings paged by offset or page number, without a date filter of
//! their own (Webflow, Netlify) or with `since` only (Formspree): the same
//! store, each in its vendor's shape (the parent module cites the pages).

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use shared::receipt::{format_timestamp, parse_timestamp};

use super::{admit, formspree_date, listing, number, FakeState, Kept, FAKE_SITE};
use crate::server::lock;

pub(super) async fn webflow_sites(
    State(state): State<Arc<FakeState>>,
    headers: HeaderMap,
) -> Response {
    // Any known form admits the token check; the sites list names none.
    let form = lock(&state.forms)
        .keys()
        .next()
        .cloned()
        .unwrap_or_default();
    if let Err(response) = admit(&state, &headers, &form, "/v2/sites".to_owned()) {
        return *response;
    }
    Json(json!({"sites": [{"id": FAKE_SITE, "displayName": "Fake site"}]})).into_response()
}

pub(super) async fn webflow_submissions(
    State(state): State<Arc<FakeState>>,
    Path((site, form)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let path = format!("/v2/sites/{site}/forms/{form}/submissions");
    let known_site = if site == FAKE_SITE { form.as_str() } else { "" };
    let (params, kept) = match listing(&state, &headers, known_site, path, query) {
        Ok(listed) => listed,
        Err(response) => return *response,
    };
    let completed: Vec<&Kept> = kept.iter().filter(|k| !k.partial).collect();
    let limit = number(&params, "limit", 100)
        .min(*lock(&state.page_size))
        .max(1);
    let offset = number(&params, "offset", 0);
    let listed: Vec<Value> = completed
        .iter()
        .skip(offset)
        .take(limit)
        .map(|k| {
            json!({
            "id": k.id, "displayName": "Contact", "siteId": FAKE_SITE, "workspaceId": "w1",
            "dateSubmitted": format_timestamp(k.submitted_at),
            "formResponse": {"Name": k.name, "email": k.email, "Message": k.message}})
        })
        .collect();
    Json(json!({"formSubmissions": listed,
                "pagination": {"limit": limit, "offset": offset, "total": completed.len()}}))
    .into_response()
}

pub(super) async fn netlify_submissions(
    State(state): State<Arc<FakeState>>,
    Path(form): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let path = format!("/api/v1/forms/{form}/submissions");
    let (params, kept) = match listing(&state, &headers, &form, path, query) {
        Ok(listed) => listed,
        Err(response) => return *response,
    };
    let per_page = number(&params, "per_page", 100)
        .min(*lock(&state.page_size))
        .max(1);
    let page = number(&params, "page", 1).max(1);
    let listed: Vec<Value> = kept
        .iter()
        .filter(|k| !k.partial)
        .skip((page - 1) * per_page)
        .take(per_page)
        .map(|k| {
            json!({"id": k.id, "number": 1, "email": k.email, "name": k.name, "body": k.message,
                "data": {"name": k.name, "email": k.email, "message": k.message, "ip": "192.0.2.1"},
                "created_at": format_timestamp(k.submitted_at),
                "ordered_human_fields": [{"name": "name", "title": "Name", "value": k.name},
                    {"name": "email", "title": "Email", "value": k.email},
                    {"name": "message", "title": "Message", "value": k.message}],
                "form_id": form, "form_name": "contact", "site_url": "https://example.com"})
        })
        .collect();
    Json(Value::from(listed)).into_response()
}

pub(super) async fn formspree_submissions(
    State(state): State<Arc<FakeState>>,
    Path(form): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let path = format!("/api/0/forms/{form}/submissions");
    let (params, mut kept) = match listing(&state, &headers, &form, path, query) {
        Ok(listed) => listed,
        Err(response) => return *response,
    };
    if params.get("order").map(String::as_str) == Some("asc") {
        kept.reverse();
    }
    let since = params
        .get("since")
        .and_then(|t| parse_timestamp(&format!("{t}Z")));
    let limit = number(&params, "limit", 100)
        .min(*lock(&state.page_size))
        .max(1);
    let offset = number(&params, "offset", 0);
    let listed: Vec<Value> = kept
        .iter()
        .filter(|k| !k.partial && since.is_none_or(|s| k.submitted_at >= s))
        .skip(offset)
        .take(limit)
        .map(|k| {
            json!({"_date": formspree_date(k.submitted_at), "name": k.name, "email": k.email,
                   "message": k.message, "_status": {"owner@example.com": {"delivered": true}}})
        })
        .collect();
    Json(json!({"fields": ["_date", "name", "email", "message", "_status"], "submissions": listed}))
        .into_response()
}
