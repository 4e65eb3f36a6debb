//! The fake's GDPR delete of a contact, as HubSpot documents it:
//! `POST /crm/v3/objects/contacts/gdpr-delete` with `objectId` (the
//! contact's id, or with `idProperty: "email"` its address); 204 No
//! Content when deleted, 404 `OBJECT_NOT_FOUND` when there is no such
//! contact; the contact's notes go with it:
//! <https://developers.hubspot.com/docs/api-reference/legacy/crm/objects/contacts/gdpr/gdpr-delete-contact>.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;

use super::notes::{error, refused};
use super::{Call, FakeState};
use crate::server::lock;

pub const GDPR_DELETE_PATH: &str = "/crm/v3/objects/contacts/gdpr-delete";

pub(super) async fn delete(
    State(state): State<Arc<FakeState>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let response = answer(&state, &headers, &body);
    lock(&state.calls).push(Call {
        path: GDPR_DELETE_PATH.to_owned(),
        inputs: 1,
        status: response.status().as_u16(),
    });
    response
}

fn answer(state: &FakeState, headers: &HeaderMap, body: &Value) -> Response {
    if let Some(refusal) = refused(state, headers) {
        return refusal;
    }
    let Some(object_id) = body["objectId"].as_str().filter(|id| !id.is_empty()) else {
        return error(
            StatusCode::BAD_REQUEST,
            "VALIDATION_ERROR",
            "objectId is required",
        );
    };
    let by_email = match body["idProperty"].as_str() {
        None => false,
        Some("email") => true,
        Some(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "VALIDATION_ERROR",
                "idProperty must be email",
            )
        }
    };
    let mut contacts = lock(&state.contacts);
    let found = contacts.iter().position(|contact| match by_email {
        true => contact.properties.get("email").and_then(Value::as_str) == Some(object_id),
        false => contact.id == object_id,
    });
    let Some(at) = found else {
        return error(
            StatusCode::NOT_FOUND,
            "OBJECT_NOT_FOUND",
            "resource not found",
        );
    };
    let gone = contacts.remove(at);
    drop(contacts);
    lock(&state.notes).retain(|note| note.contact_id != gone.id);
    StatusCode::NO_CONTENT.into_response()
}
