//! The console's API for one receipt and its actions: each answer is a CLI
//! command's own output (`show` as its card and JSON; `release` and
//! `redrive` as their lines), so the page shows what the terminal would.
//! The inbox and the counts are `inbox`'s. Form data only when a receipt's
//! card asks for it (`payload=1`, as `--payload`); never a secret.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::super::{destination_named, redrive, release, show, Failed};
use super::Served;
use crate::table::ReceiptsTable;

/// A failed command as an answer: the operator's mistake 400, else 409.
pub(super) fn failed(error: Failed) -> Response {
    let (status, said) = match error {
        Failed::Usage(said) => (StatusCode::BAD_REQUEST, said),
        Failed::Run(said) | Failed::RunAgainLater(said) | Failed::Missing(said) => {
            (StatusCode::CONFLICT, said)
        }
    };
    (status, Json(json!({ "error": said }))).into_response()
}

fn json_of(bytes: Vec<u8>) -> Result<Value, Failed> {
    serde_json::from_slice(&bytes)
        .map_err(|_| Failed::Run("the command's answer is not JSON".to_owned()))
}

type Params = Query<HashMap<String, String>>;

/// `GET /api/receipt?id=KEY[&payload=1]`: `receipts show`, its card and
/// its JSON.
pub(super) async fn receipt(State(served): State<Arc<Served>>, Query(asked): Params) -> Response {
    let table = &served.console.table;
    let Some(id) = asked.get("id") else {
        return failed(Failed::Usage("give id".to_owned()));
    };
    let payload = asked.get("payload").map(String::as_str) == Some("1");
    let key = match ReceiptsTable::key_of(id, served.console.sender) {
        Ok(key) => key,
        Err(error) => return failed(Failed::Usage(error.to_string())),
    };
    let now = SystemTime::now();
    let (mut card, mut data) = (Vec::new(), Vec::new());
    let shown = async {
        show::show(table, &key, false, payload, now, &mut card).await?;
        show::show(table, &key, true, payload, now, &mut data).await?;
        json_of(data)
    };
    match shown.await {
        Ok(receipt) => Json(json!({
            "card": String::from_utf8_lossy(&card),
            "receipt": receipt,
        }))
        .into_response(),
        Err(error) => failed(error),
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct Act {
    id: String,
    destination: Option<String>,
}

/// `POST /api/release {"id"}`: `receipts release`.
pub(super) async fn release(State(served): State<Arc<Served>>, Json(act): Json<Act>) -> Response {
    let key = match ReceiptsTable::key_of(&act.id, served.console.sender) {
        Ok(key) => key,
        Err(error) => return failed(Failed::Usage(error.to_string())),
    };
    let mut out = Vec::new();
    let done = release::release(&served.console.table, &[key], SystemTime::now(), &mut out).await;
    said(done, out)
}

/// `POST /api/redrive {"id", "destination"?}`: `receipts redrive`.
pub(super) async fn redrive(State(served): State<Arc<Served>>, Json(act): Json<Act>) -> Response {
    let key = match ReceiptsTable::key_of(&act.id, served.console.sender) {
        Ok(key) => key,
        Err(error) => return failed(Failed::Usage(error.to_string())),
    };
    let destination = match act
        .destination
        .as_deref()
        .map(destination_named)
        .transpose()
    {
        Ok(destination) => destination,
        Err(error) => return failed(error),
    };
    let mut out = Vec::new();
    let done = redrive::redrive(
        &served.console.table,
        &[key],
        (false, destination),
        &served.console.gates,
        &mut out,
    )
    .await;
    said(done, out)
}

/// A command's lines, and whether it did what was asked.
fn said(done: Result<(), Failed>, out: Vec<u8>) -> Response {
    let lines = String::from_utf8_lossy(&out).into_owned();
    match done {
        Ok(()) => Json(json!({ "ok": true, "said": lines })).into_response(),
        Err(error) => {
            let mut response = failed(error);
            *response.status_mut() = StatusCode::CONFLICT;
            response
        }
    }
}

/// `GET /api/audit`: where the scheduled audit of the sender's own list
/// ended (`receipts audit` says what it finds), or that it never ran.
pub(super) async fn audit(State(served): State<Arc<Served>>) -> Response {
    match served.console.table.audited_until().await {
        Ok(until) => Json(json!({ "auditedUntil": until })).into_response(),
        Err(error) => failed(Failed::Run(error.to_string())),
    }
}
