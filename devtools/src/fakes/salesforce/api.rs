//! The org's HTTP side: the token endpoint and both upsert forms, as
//! Salesforce validates and answers them (sources in the module's
//! documentation), and the listing.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Form, Json};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{Call, Org, Record, EXTERNAL_ID_FIELD, KNOWN_FIELDS, NUMBER_FIELDS, OBJECT};
use crate::server::lock;

#[derive(Deserialize)]
pub(super) struct TokenRequest {
    grant_type: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
}

pub(super) async fn token(
    State(org): State<Arc<Org>>,
    Form(request): Form<TokenRequest>,
) -> Response {
    if request.grant_type.as_deref() != Some("client_credentials") {
        return (StatusCode::BAD_REQUEST, Json(json!({"error": "unsupported_grant_type", "error_description": "grant type not supported"}))).into_response();
    }
    if request.client_id.as_deref() != Some(&org.client_id)
        || request.client_secret.as_deref() != Some(lock(&org.client_secret).as_str())
    {
        return (StatusCode::BAD_REQUEST, Json(json!({"error": "invalid_client", "error_description": "invalid client credentials"}))).into_response();
    }
    let issued = {
        let mut issued = lock(&org.tokens_issued);
        *issued += 1;
        *issued
    };
    let access_token = format!("00DFAKE0000000001!token-{issued}");
    let expires = Instant::now() + *lock(&org.token_ttl);
    lock(&org.tokens).insert(access_token.clone(), expires);
    let base_url = lock(&org.base_url).clone();
    Json(json!({
        "access_token": access_token,
        "instance_url": base_url,
        "id": format!("{base_url}/id/00DFAKE0000000001/005FAKE0000000001"),
        "token_type": "Bearer",
        "issued_at": "1796029200000",
        "signature": "c2lnbmF0dXJl",
        "scope": "api",
    }))
    .into_response()
}

pub(super) fn errors(status: StatusCode, code: &str, message: &str) -> (StatusCode, Value) {
    (status, json!([{"message": message, "errorCode": code}]))
}

pub(super) fn answer(
    org: &Org,
    path: &str,
    records: usize,
    (status, body): (StatusCode, Value),
) -> Response {
    lock(&org.calls).push(Call {
        path: path.to_owned(),
        records,
        status: status.as_u16(),
    });
    let used = lock(&org.calls).len();
    {
        let mut countdown = lock(&org.expire_after_calls);
        if let Some(left) = countdown.as_mut() {
            *left = left.saturating_sub(1);
            if *left == 0 {
                *countdown = None;
                lock(&org.tokens).clear();
            }
        }
    }
    let mut response = (status, Json(body)).into_response();
    if let Ok(value) = format!("api-usage={used}/15000").parse() {
        response.headers_mut().insert("sforce-limit-info", value);
    }
    response
}

/// The checks every API call passes first: a live token, no fault queued,
/// the object and field this org has.
pub(super) fn refused(
    org: &Org,
    headers: &HeaderMap,
    object: &str,
    field: &str,
) -> Option<(StatusCode, Value)> {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let live = lock(&org.tokens)
        .get(token)
        .is_some_and(|expires| Instant::now() < *expires);
    if !live {
        return Some(errors(
            StatusCode::UNAUTHORIZED,
            "INVALID_SESSION_ID",
            "Session expired or invalid",
        ));
    }
    if let Some(fault) = org.faults.next() {
        let status =
            StatusCode::from_u16(fault.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let code = fault
            .error_code
            .unwrap_or_else(|| "UNKNOWN_EXCEPTION".to_owned());
        return Some(errors(status, &code, "injected fault"));
    }
    if object != OBJECT {
        return Some(errors(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "The requested resource does not exist",
        ));
    }
    if field != EXTERNAL_ID_FIELD {
        return Some(errors(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "Provided external ID field does not exist or is not accessible",
        ));
    }
    None
}

/// One record's upsert: its result object and whether it created.
fn upsert_record(org: &Org, external_id: &str, fields: &Map<String, Value>) -> Value {
    if let Some(code) = lock(&org.record_errors)
        .get_mut(external_id)
        .and_then(VecDeque::pop_front)
    {
        return json!({"success": false, "errors": [{"statusCode": code, "message": "injected", "fields": []}]});
    }
    if lock(&org.ambiguous).contains(external_id) {
        return json!({"success": false, "errors": [{"statusCode": "DUPLICATE_EXTERNAL_ID", "message": format!("{EXTERNAL_ID_FIELD}: more than one record found for external id field"), "fields": []}]});
    }
    let mut records = lock(&org.records);
    if lock(&org.racing).remove(external_id) {
        let mut winner = fields.clone();
        winner.insert(
            EXTERNAL_ID_FIELD.to_owned(),
            Value::String(external_id.to_owned()),
        );
        let id = format!("00QFAKE{:011}", records.len() + 1);
        records.push(Record {
            id: id.clone(),
            fields: winner,
            writes: 1,
        });
        return json!({"success": false, "errors": [{"statusCode": "DUPLICATE_VALUE", "message": format!("duplicate value found: {EXTERNAL_ID_FIELD} duplicates value on record with id: {id}"), "fields": []}]});
    }
    let existing = records
        .iter_mut()
        .find(|r| r.fields.get(EXTERNAL_ID_FIELD).and_then(Value::as_str) == Some(external_id));
    let mut merged = existing
        .as_ref()
        .map(|r| r.fields.clone())
        .unwrap_or_default();
    merged.extend(fields.clone());
    merged.insert(
        EXTERNAL_ID_FIELD.to_owned(),
        Value::String(external_id.to_owned()),
    );
    for required in ["LastName", "Company"] {
        if merged
            .get(required)
            .and_then(Value::as_str)
            .is_none_or(|v| v.trim().is_empty())
        {
            return json!({"success": false, "errors": [{"statusCode": "REQUIRED_FIELD_MISSING", "message": format!("Required fields are missing: [{required}]"), "fields": [required]}]});
        }
    }
    match existing {
        Some(record) => {
            record.fields = merged;
            record.writes += 1;
            json!({"id": record.id, "success": true, "errors": [], "created": false})
        }
        None => {
            let id = format!("00QFAKE{:011}", records.len() + 1);
            records.push(Record {
                id: id.clone(),
                fields: merged,
                writes: 1,
            });
            json!({"id": id, "success": true, "errors": [], "created": true})
        }
    }
}

fn unknown_field(fields: &Map<String, Value>) -> Option<&String> {
    fields
        .keys()
        .find(|f| *f != "attributes" && !KNOWN_FIELDS.contains(&f.as_str()))
}

fn record_auto_assign(org: &Org, headers: &HeaderMap) {
    let sent = headers
        .get("sforce-auto-assign")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    lock(&org.auto_assign).push(sent);
}

pub(super) async fn upsert_collection(
    State(org): State<Arc<Org>>,
    Path((_version, object, field)): Path<(String, String, String)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let path = format!("/composite/sobjects/{object}/{field}");
    record_auto_assign(&org, &headers);
    let records = body["records"].as_array().cloned().unwrap_or_default();
    if let Some(refusal) = refused(&org, &headers, &object, &field) {
        return answer(&org, &path, records.len(), refusal);
    }
    // A 400 for the whole request: nothing is written.
    let refuse = |code: &str, message: &str| {
        answer(
            &org,
            &path,
            records.len(),
            errors(StatusCode::BAD_REQUEST, code, message),
        )
    };
    if records.is_empty() || records.len() > 200 {
        return refuse("EXCEEDED_ID_LIMIT", "record limit exceeded: 200");
    }
    for record in &records {
        let fields = record.as_object().cloned().unwrap_or_default();
        if record["attributes"]["type"] != OBJECT {
            return refuse(
                "INVALID_TYPE",
                "every record needs attributes.type of the object in the URI",
            );
        }
        if let Some((field, value)) = fields.iter().find(|(name, value)| {
            NUMBER_FIELDS.contains(&name.as_str())
                && value
                    .as_str()
                    .is_some_and(|v| v.trim().parse::<f64>().is_err())
        }) {
            return refuse(
                "JSON_PARSER_ERROR",
                &format!("Cannot deserialize instance of int from VALUE_STRING value {value} or request may be missing a required field at [line:1, column:1] ({field})"),
            );
        }
        if let Some(unknown) = unknown_field(&fields) {
            return refuse(
                "INVALID_FIELD",
                &format!("No such column '{unknown}' on sobject of type {OBJECT}"),
            );
        }
    }
    let results: Vec<Value> = records
        .iter()
        .map(|record| {
            let mut fields = record.as_object().cloned().unwrap_or_default();
            fields.remove("attributes");
            match fields.get(EXTERNAL_ID_FIELD).and_then(Value::as_str).map(str::to_owned) {
                Some(external_id) => upsert_record(&org, &external_id, &fields),
                None => json!({"success": false, "errors": [{"statusCode": "REQUIRED_FIELD_MISSING", "message": "external ID missing", "fields": [EXTERNAL_ID_FIELD]}]}),
            }
        })
        .collect();
    answer(
        &org,
        &path,
        records.len(),
        (StatusCode::OK, Value::Array(results)),
    )
}

pub(super) async fn upsert_one(
    State(org): State<Arc<Org>>,
    Path((_version, object, field, value)): Path<(String, String, String, String)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let path = format!("/sobjects/{object}/{field}/{value}");
    record_auto_assign(&org, &headers);
    if let Some(refusal) = refused(&org, &headers, &object, &field) {
        return answer(&org, &path, 1, refusal);
    }
    let fields = body.as_object().cloned().unwrap_or_default();
    if let Some(unknown) = unknown_field(&fields) {
        return answer(
            &org,
            &path,
            1,
            errors(
                StatusCode::BAD_REQUEST,
                "INVALID_FIELD",
                &format!("No such column '{unknown}' on sobject of type {OBJECT}"),
            ),
        );
    }
    if lock(&org.ambiguous).contains(&value) {
        let base = lock(&org.base_url).clone();
        return answer(
            &org,
            &path,
            1,
            (
                StatusCode::MULTIPLE_CHOICES,
                json!([
                    format!("{base}/services/data/v67.0/sobjects/Lead/00QFAKE1"),
                    format!("{base}/services/data/v67.0/sobjects/Lead/00QFAKE2")
                ]),
            ),
        );
    }
    let result = upsert_record(&org, &value, &fields);
    let status = match (result["success"].as_bool(), result["created"].as_bool()) {
        (Some(true), Some(true)) => StatusCode::CREATED,
        (Some(true), _) => StatusCode::OK,
        _ => {
            let code = result["errors"][0]["statusCode"]
                .as_str()
                .unwrap_or("UNKNOWN_EXCEPTION")
                .to_owned();
            return answer(
                &org,
                &path,
                1,
                errors(StatusCode::BAD_REQUEST, &code, "record refused"),
            );
        }
    };
    answer(&org, &path, 1, (status, result))
}

pub(super) async fn list(State(org): State<Arc<Org>>) -> Json<Value> {
    let records = lock(&org.records).clone();
    let listed: Vec<Value> = records
        .iter()
        .map(|r| json!({"id": r.id, "fields": r.fields, "writes": r.writes}))
        .collect();
    Json(json!({"count": listed.len(), "records": listed}))
}
