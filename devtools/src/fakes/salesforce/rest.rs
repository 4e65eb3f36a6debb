//! The fake's single-record REST calls, for `receipts forget --everywhere`:
//! - a record deleted, `DELETE /services/data/vXX.X/sobjects/{object}/{id}`:
//!   204, or 404 `NOT_FOUND` for an id the org does not hold
//!   (<https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_delete_record.htm>);
//! - a query, `GET /services/data/vXX.X/query?q=SELECT Id FROM {object}
//!   WHERE Email = '…'` (the one shape the adapter sends): `totalSize`,
//!   `done`, `records[]` with `attributes` and `Id`
//!   (<https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_query.htm>).

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::api::{answer, errors, refused};
use super::{Org, EXTERNAL_ID_FIELD, OBJECT};
use crate::server::lock;

pub(super) async fn delete(
    State(org): State<Arc<Org>>,
    Path((version, object, id)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let path = format!("/services/data/{version}/sobjects/{object}/{id}");
    if let Some(refusal) = refused(&org, &headers, &object, EXTERNAL_ID_FIELD) {
        return answer(&org, &path, 0, refusal);
    }
    let mut records = lock(&org.records);
    let before = records.len();
    records.retain(|record| record.id != id);
    let deleted = records.len() < before;
    drop(records);
    if !deleted {
        return answer(
            &org,
            &path,
            0,
            errors(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                "The requested resource does not exist",
            ),
        );
    }
    let mut response = answer(&org, &path, 1, (StatusCode::NO_CONTENT, Value::Null));
    *response.body_mut() = axum::body::Body::empty();
    response
}

pub(super) async fn query(
    State(org): State<Arc<Org>>,
    Path(version): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let path = format!("/services/data/{version}/query");
    if let Some(refusal) = refused(&org, &headers, OBJECT, EXTERNAL_ID_FIELD) {
        return answer(&org, &path, 0, refusal);
    }
    let soql = reqwest::Url::parse(&format!("http://fake/?{}", query.unwrap_or_default()))
        .ok()
        .and_then(|url| {
            url.query_pairs()
                .find(|(name, _)| name == "q")
                .map(|(_, value)| value.into_owned())
        })
        .unwrap_or_default();
    let Some(email) = email_in(&soql) else {
        return answer(
            &org,
            &path,
            0,
            errors(
                StatusCode::BAD_REQUEST,
                "MALFORMED_QUERY",
                "the fake reads SELECT Id FROM Lead WHERE Email = '...' only",
            ),
        );
    };
    let found: Vec<Value> = lock(&org.records)
        .iter()
        .filter(|record| {
            record
                .fields
                .get("Email")
                .and_then(Value::as_str)
                .is_some_and(|stored| stored.eq_ignore_ascii_case(&email))
        })
        .map(|record| json!({"attributes": {"type": OBJECT}, "Id": record.id}))
        .collect();
    let body = json!({"totalSize": found.len(), "done": true, "records": found});
    answer(&org, &path, 0, (StatusCode::OK, body)).into_response()
}

/// The address in `... WHERE Email = '<address>' ...`, unescaped.
fn email_in(soql: &str) -> Option<String> {
    let rest = soql.strip_prefix(&format!("SELECT Id FROM {OBJECT} WHERE Email = '"))?;
    let mut email = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => email.push(chars.next()?),
            '\'' => return Some(email),
            c => email.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_of_a_query() {
        let q = |tail: &str| format!("SELECT Id FROM {OBJECT} WHERE Email = '{tail}");
        assert_eq!(
            email_in(&q("ada@example.com' LIMIT 200")).as_deref(),
            Some("ada@example.com")
        );
        assert_eq!(
            email_in(&q("o\\'n@example.com'")).as_deref(),
            Some("o'n@example.com")
        );
        assert_eq!(email_in(&q("unterminated")), None);
        assert_eq!(email_in("SELECT Name FROM Lead"), None);
    }
}
