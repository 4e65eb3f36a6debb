//! The senders' deletions of submissions, for `receipts forget
//! --everywhere`, each as its vendor documents it:
//! - Typeform, `DELETE /forms/{form_id}/responses?included_response_ids=a,b`,
//!   200 (ids it does not hold are passed over):
//!   <https://www.typeform.com/developers/responses/reference/delete-responses/>;
//! - Tally, `DELETE /forms/{formId}/submissions/{submissionId}`, 204, 404
//!   for a submission it does not hold:
//!   <https://developers.tally.so/api-reference/endpoint/forms/submissions/delete>;
//! - Netlify, `DELETE /api/v1/submissions/{submission_id}`, 204, 404 for
//!   one it does not hold: <https://open-api.netlify.com/#tag/submission>;
//! - Webflow, `DELETE /v2/sites/{site_id}/form_submissions/{form_submission_id}`,
//!   204, 404 for one it does not hold or a site it does not know:
//!   <https://developers.webflow.com/data/reference/forms/form-submissions/delete-submission>.
//!
//! Each takes the token and the queued faults as the listings do; each
//! call is recorded as `DELETE <path>`.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::{params_of, presents_token, FakeState, FAKE_SITE};
use crate::server::lock;

/// The fault or refusal answered instead of a deletion, if any; the call
/// recorded.
pub(super) fn refusal(state: &FakeState, headers: &HeaderMap, called: String) -> Option<Response> {
    let refusal = if let Some(fault) = state.faults.next() {
        let status =
            StatusCode::from_u16(fault.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        Some((status, Json(json!({"message": "fault injected"}))).into_response())
    } else if !presents_token(headers, &state.token) {
        Some(
            (
                StatusCode::UNAUTHORIZED,
                Json(json!({"message": "Unauthorized"})),
            )
                .into_response(),
        )
    } else {
        None
    };
    let status = refusal.as_ref().map_or(200, |r| r.status().as_u16());
    lock(&state.calls).push((format!("DELETE {called}"), status));
    refusal
}

/// Removes the submissions `ids` of `form` (any form when `None`); how
/// many it held.
pub(super) fn remove(state: &FakeState, form: Option<&str>, ids: &[&str]) -> usize {
    let mut forms = lock(&state.forms);
    let mut removed = 0;
    for (name, kept) in forms.iter_mut() {
        if form.is_some_and(|form| form != name) {
            continue;
        }
        let before = kept.len();
        kept.retain(|k| !ids.contains(&k.id.as_str()));
        removed += before - kept.len();
    }
    removed
}

pub(super) async fn typeform(
    State(state): State<Arc<FakeState>>,
    Path(form): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let params = params_of(query);
    let ids = params
        .get("included_response_ids")
        .cloned()
        .unwrap_or_default();
    if let Some(refused) = refusal(
        &state,
        &headers,
        format!("/forms/{form}/responses?included_response_ids={ids}"),
    ) {
        return refused;
    }
    let ids: Vec<&str> = ids.split(',').filter(|id| !id.is_empty()).collect();
    remove(&state, Some(&form), &ids);
    StatusCode::OK.into_response()
}

pub(super) async fn tally(
    State(state): State<Arc<FakeState>>,
    Path((form, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refusal(&state, &headers, format!("/forms/{form}/submissions/{id}")) {
        return refused;
    }
    match remove(&state, Some(&form), &[&id]) {
        0 => StatusCode::NOT_FOUND.into_response(),
        _ => StatusCode::NO_CONTENT.into_response(),
    }
}

pub(super) async fn netlify(
    State(state): State<Arc<FakeState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refusal(&state, &headers, format!("/api/v1/submissions/{id}")) {
        return refused;
    }
    match remove(&state, None, &[&id]) {
        0 => StatusCode::NOT_FOUND.into_response(),
        _ => StatusCode::NO_CONTENT.into_response(),
    }
}

pub(super) async fn webflow(
    State(state): State<Arc<FakeState>>,
    Path((site, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let called = format!("/v2/sites/{site}/form_submissions/{id}");
    if let Some(refused) = refusal(&state, &headers, called) {
        return refused;
    }
    if site != FAKE_SITE {
        return StatusCode::NOT_FOUND.into_response();
    }
    match remove(&state, None, &[&id]) {
        0 => StatusCode::NOT_FOUND.into_response(),
        _ => StatusCode::NO_CONTENT.into_response(),
    }
}
