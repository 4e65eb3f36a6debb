//! What HubSpot's answers mean, as pure functions: for the whole call
//! (rate limits, locks, conflicts, migrations, refusals) and for each input
//! of a 200/207 answer. Built from HubSpot's error-handling page (see the
//! module's pages).

use std::time::Duration;

use serde_json::Value;

use crate::destinations::port::{DeliveredRecord, DestinationError, Upserted};

/// How long leads wait after HubSpot's daily limit: the reconciliation pass
/// tries again then, and hourly after that, until the day's quota resets.
pub const DAILY_LIMIT_WAIT: Duration = Duration::from_secs(3600);

/// `SECONDLY` and `TEN_SECONDLY_ROLLING` windows, when no `Retry-After`.
pub(super) const SECONDLY_WAIT: Duration = Duration::from_secs(1);
pub(super) const TEN_SECONDLY_WAIT: Duration = Duration::from_secs(10);
/// HubSpot's 423 (a lock on the record): wait at least this.
pub(super) const LOCKED_WAIT: Duration = Duration::from_secs(2);
/// HubSpot's 477 (the account is moving between data centres) without a
/// `Retry-After`: HubSpot says a migration takes up to a day.
pub(super) const MIGRATION_WAIT: Duration = Duration::from_secs(3600);

/// What one call came to.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum BatchAnswer {
    /// The same answer for every input (401, 429, 5xx, a 400 for the whole
    /// request, a transport failure).
    Whole(Result<Upserted, DestinationError>),
    /// Per input, by `objectWriteTraceId` (200, 207).
    PerInput(Vec<(String, Result<Upserted, DestinationError>)>),
}

/// What HubSpot's answer means for the inputs of the call. Pure.
pub(super) fn answer_for(status: u16, retry_after: Option<Duration>, body: &Value) -> BatchAnswer {
    let category = body["category"].as_str().unwrap_or("");
    let retryable = |reason: String, wait: Option<Duration>| {
        BatchAnswer::Whole(Err(DestinationError::Retryable {
            status: Some(status),
            retry_after: wait,
            reason,
        }))
    };
    match status {
        200 | 201 | 207 => per_input(body),
        429 => {
            let policy = body["policyName"].as_str().unwrap_or("");
            let wait = match policy {
                "DAILY" => {
                    tracing::warn!(destination = "hubspot", policy, "HubSpot's daily API limit is reached; leads wait for the reconciliation pass");
                    Some(DAILY_LIMIT_WAIT)
                }
                "SECONDLY" => Some(retry_after.unwrap_or(SECONDLY_WAIT)),
                _ => Some(retry_after.unwrap_or(TEN_SECONDLY_WAIT)),
            };
            retryable(format!("HTTP 429 {policy}").trim().to_owned(), wait)
        }
        423 => retryable(
            "HTTP 423".to_owned(),
            Some(retry_after.unwrap_or(LOCKED_WAIT).max(LOCKED_WAIT)),
        ),
        // Another writer holds the contact (two upserts of one new contact
        // at once) or its email: a race resolves on the retry; a lasting
        // conflict waits, visible, until DELIVERY_MAX_AGE_SECONDS. Never
        // FAILED at once: the lead may well be written next time.
        409 => retryable(
            reason_of(body).unwrap_or_else(|| "HTTP 409".to_owned()),
            retry_after,
        ),
        477 => retryable(
            "HTTP 477 migration in progress".to_owned(),
            Some(retry_after.unwrap_or(MIGRATION_WAIT)),
        ),
        408 | 425 | 500..=599 => retryable(format!("HTTP {status}"), retry_after),
        401 => BatchAnswer::Whole(Err(DestinationError::Unauthorized { status })),
        403 => {
            // Never the lead's fault: the token lacks a scope (MISSING_SCOPES)
            // or the account refuses the app.
            tracing::error!(destination = "hubspot", category, "HubSpot refused the request: give the private app or service key crm.objects.contacts.write");
            BatchAnswer::Whole(Err(DestinationError::Unauthorized { status }))
        }
        _ => {
            let reason = whole_request_reason(body).unwrap_or_else(|| format!("HTTP {status}"));
            if status == 400 && ABOUT_THE_REQUEST.contains(&reason.as_str()) {
                // A property or id property the portal lacks: our
                // configuration, never the leads'. They wait, with an alarm,
                // and the reason names the property (the adapter adds where
                // it came from: a route, FIELD_MAP).
                let property = missing_property(body);
                tracing::error!(destination = "hubspot", reason, property = property.as_deref().unwrap_or(""), "HubSpot has no such contact property: create it in HubSpot, or change the route or FIELD_MAP that sends it (HUBSPOT_ID_PROPERTY for the id); the leads wait");
                return BatchAnswer::Whole(Err(DestinationError::Misconfigured {
                    status: Some(status),
                    reason: match property {
                        Some(property) => format!("{reason}: {property}"),
                        None => reason,
                    },
                }));
            }
            BatchAnswer::Whole(Err(DestinationError::Permanent {
                status: Some(status),
                reason,
            }))
        }
    }
}

/// Results and errors of a 200/207 answer, by trace id. A result's `id` is
/// the contact's record id (HubSpot's `hs_object_id`, digits).
pub(super) fn per_input(body: &Value) -> BatchAnswer {
    let mut results = Vec::new();
    for result in body["results"].as_array().into_iter().flatten() {
        if let Some(trace) = result["objectWriteTraceId"].as_str() {
            let id = result["id"].as_str().unwrap_or_default();
            let record = DeliveredRecord::with_id(id);
            results.push((trace.to_owned(), Ok(Upserted::Written(record))));
        }
    }
    for error in body["errors"].as_array().into_iter().flatten() {
        let category = error["category"].as_str().unwrap_or("");
        let reason = reason_of(error).unwrap_or_else(|| "HubSpot error".to_owned());
        let result = if is_validation(category, &reason) {
            Err(DestinationError::Permanent {
                status: Some(207),
                reason,
            })
        } else {
            Err(DestinationError::Retryable {
                status: Some(207),
                retry_after: None,
                reason,
            })
        };
        for trace in error["context"]["objectWriteTraceId"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(trace) = trace.as_str() {
                results.push((trace.to_owned(), result.clone()));
            }
        }
    }
    BatchAnswer::PerInput(results)
}

/// HubSpot's most specific word for an error: the first `errors[].code`,
/// else its `category`.
pub(super) fn reason_of(error: &Value) -> Option<String> {
    error["errors"][0]["code"]
        .as_str()
        .or_else(|| error["category"].as_str())
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}

/// The reason a whole-request refusal gives: its code, else its category
/// (the reason is also the code the refusal is classified by). Never
/// HubSpot's message: it is free text that may quote the lead (a name, a
/// phone number), and the reason is stored and logged. Only tokens of
/// letters, digits, `_` and `-` pass.
pub(super) fn whole_request_reason(body: &Value) -> Option<String> {
    let token = |value: &Value| {
        value
            .as_str()
            .filter(|text| {
                !text.is_empty()
                    && text.len() <= 64
                    && text
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            })
            .map(str::to_owned)
    };
    token(&body["errors"][0]["code"]).or_else(|| token(&body["category"]))
}

/// The property a configuration refusal names, from its first error's
/// `context.propertyName` (HubSpot's error object: `errors[].context`);
/// only a property's internal name passes, never free text.
pub(super) fn missing_property(body: &Value) -> Option<String> {
    body["errors"]
        .as_array()?
        .iter()
        .find_map(|error| error["context"]["propertyName"][0].as_str())
        .filter(|name| shared::field_map::is_property_name(name))
        .map(str::to_owned)
}

/// 400s about the request or the configuration, never about one lead: the
/// id property, or a property the portal does not have (every lead that
/// carries it fails with it; fix FIELD_MAP and redrive).
const ABOUT_THE_REQUEST: &[&str] = &["INVALID_ID_PROPERTY", "PROPERTY_DOESNT_EXIST"];

/// A whole-request answer that one input may have caused: any 400 that is
/// not clearly about the request itself (a bad value, an account's
/// validation rule, or a code we do not know), or a conflict on one
/// contact.
pub(super) fn one_input_may_cause(error: &DestinationError) -> bool {
    match error {
        DestinationError::Permanent {
            status: Some(400),
            reason,
        } => !ABOUT_THE_REQUEST.contains(&reason.as_str()),
        DestinationError::Retryable {
            status: Some(409), ..
        } => true,
        _ => false,
    }
}

/// Errors that no retry can fix: the lead's own data, or a property the
/// map names that the portal does not have.
pub(super) fn is_validation(category: &str, reason: &str) -> bool {
    category == "VALIDATION_ERROR"
        || reason.starts_with("INVALID_")
        || matches!(
            reason,
            "PROPERTY_DOESNT_EXIST" | "VALIDATION_ERROR" | "READ_ONLY_VALUE"
        )
}
