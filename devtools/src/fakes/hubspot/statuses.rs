//! The fake's subscription statuses, as HubSpot documents them
//! (<https://developers.hubspot.com/docs/api-reference/latest/communication-preferences/status/update-subscription>):
//! `POST /communication-preferences/{version}/statuses/{subscriberIdString}`
//! with `channel` (`EMAIL`), `statusState`, `subscriptionId`, `legalBasis`
//! (one of HubSpot's) and `legalBasisExplanation`; the answer names the
//! status and `setStatusSuccessReason`, `NO_STATUS_CHANGE` for a status the
//! subscriber has already (no event is recorded then).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::notes::{error, refused};
use super::{FakeState, StatusEvent};
use crate::server::lock;

pub(super) async fn set(
    State(state): State<Arc<FakeState>>,
    Path((_version, subscriber)): Path<(String, String)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(refusal) = refused(&state, &headers) {
        return refusal;
    }
    let state_text = body["statusState"].as_str().unwrap_or_default();
    let basis = body["legalBasis"].as_str().unwrap_or_default();
    let valid = body["channel"] == "EMAIL"
        && ["SUBSCRIBED", "UNSUBSCRIBED", "NOT_SPECIFIED"].contains(&state_text)
        && body["subscriptionId"].is_u64()
        && shared::consent::LEGAL_BASES.contains(&basis)
        && subscriber.contains('@');
    if !valid {
        return error(
            StatusCode::BAD_REQUEST,
            "VALIDATION_ERROR",
            "Invalid input JSON on line 1",
        );
    }
    let subscription = body["subscriptionId"].as_u64().unwrap_or_default();
    let mut events = lock(&state.status_events);
    let current = events
        .iter()
        .rev()
        .find(|e| e.subscriber == subscriber && e.subscription_id == subscription)
        .map(|e| e.state.clone());
    let reason = if current.as_deref() == Some(state_text) {
        "NO_STATUS_CHANGE"
    } else {
        events.push(StatusEvent {
            subscriber: subscriber.clone(),
            subscription_id: subscription,
            state: state_text.to_owned(),
            legal_basis: basis.to_owned(),
            explanation: body["legalBasisExplanation"].as_str().map(str::to_owned),
        });
        "RESUBSCRIBE_OCCURRED"
    };
    *lock(&state.status_calls) += 1;
    (
        StatusCode::OK,
        Json(
            json!({"subscriberIdString": subscriber, "subscriptionId": subscription,
                    "channel": "EMAIL", "statusState": state_text, "legalBasis": basis,
                    "setStatusSuccessReason": reason, "source": "Public Status API",
                    "timestamp": "2026-12-01T08:00:00.000Z"}),
        ),
    )
        .into_response()
}
