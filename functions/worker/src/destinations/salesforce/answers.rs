//! What Salesforce's answers mean, as pure functions: one record's result
//! of an sObject Collections upsert, and an answer for the whole request.
//! Built from Salesforce's pages (see the module's).

use std::time::Duration;

use serde_json::Value;

use crate::destinations::port::{DeliveredRecord, DestinationError, Upserted};

/// How long leads wait after the org's API request limit is exceeded (a
/// rolling 24-hour limit): the reconciliation pass tries again then.
pub const REQUEST_LIMIT_WAIT: Duration = Duration::from_secs(3600);

/// What one record's result means. Pure.
pub(super) fn record_result(
    result: &Value,
    external_id: &str,
) -> Result<Upserted, DestinationError> {
    if result["success"].as_bool() == Some(true) {
        let id = result["id"].as_str().unwrap_or_default();
        return Ok(Upserted::Written(DeliveredRecord::with_id(id)));
    }
    let code = result["errors"][0]["statusCode"]
        .as_str()
        .unwrap_or("UNKNOWN_EXCEPTION");
    match code {
        // The lead became a contact: for this pipeline it has arrived.
        "CANNOT_UPDATE_CONVERTED_LEAD" => {
            tracing::info!(
                destination = "salesforce",
                submission_id = external_id,
                "the lead was already converted; nothing more to write"
            );
            Ok(Upserted::Written(DeliveredRecord::unknown()))
        }
        // DUPLICATE_VALUE: another upsert of the same external ID (the
        // stream and a reconciliation pass racing) inserted the record
        // first. Retried, the upsert finds and updates that one record.
        "UNABLE_TO_LOCK_ROW" | "DUPLICATE_VALUE" => Err(DestinationError::retryable(code)),
        "DUPLICATE_EXTERNAL_ID" => Err(not_unique()),
        "REQUIRED_FIELD_MISSING"
        | "INVALID_FIELD"
        | "FIELD_CUSTOM_VALIDATION_EXCEPTION"
        | "DUPLICATES_DETECTED"
        | "STRING_TOO_LONG"
        | "INVALID_EMAIL_ADDRESS"
        | "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST"
        | "FIELD_INTEGRITY_EXCEPTION" => Err(DestinationError::Permanent {
            status: Some(200),
            reason: code.to_owned(),
        }),
        // Not known to be the lead's fault: retried, and given up on only
        // after DELIVERY_MAX_AGE_SECONDS.
        other => Err(DestinationError::retryable(other)),
    }
}

pub(super) fn not_unique() -> DestinationError {
    DestinationError::Permanent {
        status: Some(300),
        reason: "external-id-not-unique".to_owned(),
    }
}

/// Whole-request 400s about our configuration, never a record's data.
const CONFIGURATION_CODES: &[&str] = &[
    "INVALID_FIELD",
    "INVALID_FIELD_FOR_INSERT_UPDATE",
    "INVALID_TYPE",
    "NOT_FOUND",
];

/// The field a whole-request `INVALID_FIELD` names ("No such column
/// 'Bogus__c' on sobject of type Lead", as Salesforce's error pages show
/// it): only the records that carry it are refused for it.
pub(super) fn unknown_column(answer: &Value) -> Option<String> {
    let message = answer[0]["message"].as_str()?;
    let rest = message.split("No such column '").nth(1)?;
    let column = rest.split('\'').next()?;
    (!column.is_empty() && column.len() <= 100).then(|| column.to_owned())
}

/// The record's page in Lightning Experience, on the org's own instance:
/// `{instance}/lightning/r/{object}/{id}/view` (Salesforce's "Lightning
/// Experience URL" format). Kept only when it is https (`shared::record`).
pub(super) fn linked(
    result: Result<Upserted, DestinationError>,
    instance_url: &str,
    object: &str,
) -> Result<Upserted, DestinationError> {
    match result {
        Ok(Upserted::Written(record)) => {
            let url = record
                .id()
                .map(|id| format!("{instance_url}/lightning/r/{object}/{id}/view"));
            Ok(Upserted::Written(match url {
                Some(url) => record.linked(&url),
                None => record,
            }))
        }
        other => other,
    }
}

/// What an answer for the whole request means for each of its records. Pure.
pub(super) fn request_result(
    status: u16,
    retry_after: Option<Duration>,
    answer: &Value,
) -> Result<Upserted, DestinationError> {
    let code = answer[0]["errorCode"].as_str().unwrap_or("");
    match status {
        300 => Err(not_unique()),
        401 => Err(DestinationError::Unauthorized { status }),
        403 if code == "REQUEST_LIMIT_EXCEEDED" => {
            tracing::warn!(destination = "salesforce", error_code = code, "Salesforce's API request limit is exceeded; leads wait for the reconciliation pass");
            Err(DestinationError::Retryable {
                status: Some(status),
                retry_after: Some(REQUEST_LIMIT_WAIT.max(retry_after.unwrap_or_default())),
                reason: code.to_owned(),
            })
        }
        403 | 404 => {
            // A wrong object, field or version, or a run-as user without
            // access: configuration, never the lead's fault.
            tracing::error!(destination = "salesforce", http_status = status, error_code = code, "Salesforce refused the request: check SALESFORCE_OBJECT, SALESFORCE_EXTERNAL_ID_FIELD, SALESFORCE_API_VERSION and the run-as user's access");
            Err(DestinationError::Unauthorized { status })
        }
        // A 400 for the whole request reaches here only for one record (or
        // once narrowing stopped): a field or object the org does not have
        // is our configuration; anything else is the record's data.
        400 if CONFIGURATION_CODES.contains(&code) => {
            tracing::error!(destination = "salesforce", http_status = status, error_code = code, "Salesforce refused a field or object of our configuration: check FIELD_MAP, SALESFORCE_OBJECT and SALESFORCE_EXTERNAL_ID_FIELD; the leads wait");
            Err(DestinationError::Misconfigured {
                status: Some(status),
                reason: unknown_column(answer)
                    .map(|column| format!("{code}: {column}"))
                    .unwrap_or_else(|| code.to_owned()),
            })
        }
        400 => Err(DestinationError::Permanent {
            status: Some(status),
            reason: if code.is_empty() {
                "HTTP 400".to_owned()
            } else {
                code.to_owned()
            },
        }),
        _ => Err(crate::destinations::client::by_status(status, retry_after)),
    }
}
