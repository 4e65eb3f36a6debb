//! The audit both `receipts audit` and the worker's scheduled audit run:
//! the sender's completed submissions of each form in a window
//! ([`SenderApiClient`]), the receipts under their keys (BatchGetItem,
//! keys and status only), compared by `shared::audit`; and the import of
//! what is missing, each one a conditional put, so an import run twice or
//! beside a late webhook stores one receipt. Only what the receipts still
//! remember can be missing (`shared::audit::Horizon`), and one submission
//! that cannot be stored never stops the others.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use aws_sdk_dynamodb::Client;
use shared::audit::{Audit, Entry, ErasedPeople, Horizon, Listing};
use shared::newest::GateSecret;
use shared::receipt::{attr, parse_timestamp};
use shared::routes::Routes;
use shared::{Receipt, ReceiptStatus, Retention, Sender};

use crate::sender_api::{SenderApiClient, SenderApiError};
use aws_edge::item_size::{item_size, MAX_ITEM_BYTES};

/// BatchGetItem's most keys a request.
const KEYS_PER_BATCH: usize = 100;
/// How often keys DynamoDB left unprocessed are asked again.
const UNPROCESSED_TRIES: u32 = 8;

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error(transparent)]
    SenderApi(#[from] SenderApiError),
    /// A DynamoDB call that failed: its operation and error code only.
    #[error("DynamoDB {operation} failed ({code})")]
    Store {
        operation: &'static str,
        code: String,
    },
}

impl AuditError {
    fn store<E: ProvideErrorMetadata, R>(operation: &'static str, error: SdkError<E, R>) -> Self {
        let code = match &error {
            SdkError::ServiceError(failure) => {
                failure.err().code().unwrap_or("UnknownServiceError")
            }
            SdkError::TimeoutError(_) => "Timeout",
            _ => "Unreachable",
        };
        AuditError::Store {
            operation,
            code: code.to_owned(),
        }
    }
}

/// What is audited: one sender's forms over `[since, until)`, against
/// receipts kept for `retention` (so remembered back to `horizon`), and the
/// erasure markers found under `erasure_key` (the stack's gate key;
/// `None`: none can be found).
#[derive(Debug, Clone)]
pub struct Scope {
    pub sender: Sender,
    /// Each once, in the order first named.
    pub forms: Vec<String>,
    pub since: SystemTime,
    pub until: SystemTime,
    pub retention: Retention,
    pub horizon: Horizon,
    pub erasure_key: Option<GateSecret>,
}

impl Scope {
    /// A form named twice is audited once; the receipts remember what
    /// `retention` keeps at `now`.
    pub fn new(
        sender: Sender,
        forms: impl IntoIterator<Item = String>,
        since: SystemTime,
        until: SystemTime,
        now: SystemTime,
        retention: Retention,
    ) -> Self {
        Scope {
            sender,
            forms: shared::audit::distinct(forms),
            since,
            until,
            retention,
            horizon: Horizon::at(now, retention),
            erasure_key: None,
        }
    }

    /// Erasure markers are looked up under `key`.
    pub fn with_erasure_key(mut self, key: Option<GateSecret>) -> Self {
        self.erasure_key = key;
        self
    }
}

/// Lists each form's submissions at the sender (each page said to
/// `progress`: the form, pages read, submissions so far) and compares them
/// with the receipts in `table`.
pub async fn audit(
    api: &mut SenderApiClient,
    client: &Client,
    table: &str,
    scope: &Scope,
    mut progress: impl FnMut(&str, usize, usize),
) -> Result<Audit, AuditError> {
    let mut listing = Listing::default();
    for form in &scope.forms {
        let listed = api
            .list(form, scope.since, scope.until, |pages, so_far| {
                progress(form, pages, so_far)
            })
            .await?;
        listing.add(scope.sender, form, listed.submissions, listed.partial);
    }
    let statuses = statuses(client, table, &listing.keys()).await?;
    let erased = match &scope.erasure_key {
        Some(secret) => {
            let markers = listing.marker_keys(secret);
            let erased_at = read_attribute(client, table, &markers, attr::ERASED_AT)
                .await?
                .into_iter()
                .filter_map(|(key, at)| Some((key, parse_timestamp(&at)?)))
                .collect();
            ErasedPeople::new(secret.clone(), erased_at)
        }
        None => ErasedPeople::none(),
    };
    Ok(listing.compare(&statuses, scope.horizon, &erased))
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Imported {
    pub stored: usize,
    /// Of those stored, held back by a spam rule as their webhooks would
    /// have been: QUARANTINED, never delivered unless released.
    pub held_back: usize,
    /// Stored meanwhile by a webhook or another import: left as it was.
    pub already_there: usize,
    /// Submission ids (never data) that no put can store: over DynamoDB's
    /// item limit (its webhook was answered 413), or refused for good.
    pub unimportable: Vec<Unimportable>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unimportable {
    pub form: String,
    pub submission_id: String,
    /// Why, without data: `too large (N bytes)` or DynamoDB's error code.
    pub why: String,
}

/// Stores each of `missing` as an imported receipt unless one is under
/// its key by then (`progress`: how many are done). An import is a
/// delivery by another door: one that breaks a spam rule of `routes` is
/// held back as its webhook would have been (kept `retention`). One that
/// can never be stored is counted and passed over; a failure that may pass
/// (throttled, unreachable) stops the import, to be tried again.
pub async fn import(
    client: &Client,
    table: &str,
    missing: &[Entry],
    now: SystemTime,
    routes: &Routes,
    retention: Retention,
    mut progress: impl FnMut(usize),
) -> Result<Imported, AuditError> {
    let mut imported = Imported::default();
    for (done, entry) in missing.iter().enumerate() {
        let unimportable = |why: String| Unimportable {
            form: entry.form.clone(),
            submission_id: entry.submission_id().to_owned(),
            why,
        };
        let held_by = routes.rule_broken_by(&entry.submission, now);
        let receipt = match &held_by {
            Some(rule) => Receipt::imported_quarantined(&entry.submission, now, rule, retention),
            None => Receipt::imported(&entry.submission, now),
        };
        let Ok(item) = serde_dynamo::to_item::<_, HashMap<String, AttributeValue>>(&receipt) else {
            imported
                .unimportable
                .push(unimportable("not serialisable".to_owned()));
            progress(done + 1);
            continue;
        };
        // As ingest: DynamoDB would refuse it with a ValidationException
        // at every audit, which no retry changes.
        let bytes = item_size(&item);
        if bytes > MAX_ITEM_BYTES {
            imported.unimportable.push(unimportable(format!(
                "too large ({bytes} bytes; DynamoDB stores at most {MAX_ITEM_BYTES})"
            )));
            progress(done + 1);
            continue;
        }
        let put = client
            .put_item()
            .table_name(table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", attr::PK)
            .send()
            .await;
        match put {
            Ok(_) => {
                imported.stored += 1;
                imported.held_back += usize::from(held_by.is_some());
            }
            Err(SdkError::ServiceError(failure))
                if failure.err().code() == Some("ConditionalCheckFailedException") =>
            {
                imported.already_there += 1
            }
            Err(SdkError::ServiceError(failure))
                if failure.err().code() == Some("ValidationException") =>
            {
                imported
                    .unimportable
                    .push(unimportable("ValidationException".to_owned()))
            }
            Err(error) => return Err(AuditError::store("PutItem", error)),
        }
        progress(done + 1);
    }
    Ok(imported)
}

/// The status of each receipt of `keys` that exists (consistent reads).
pub async fn statuses(
    client: &Client,
    table: &str,
    keys: &[String],
) -> Result<HashMap<String, ReceiptStatus>, AuditError> {
    Ok(read_attribute(client, table, keys, attr::STATUS)
        .await?
        .into_iter()
        .filter_map(|(key, status)| {
            let status = serde_json::from_value(serde_json::Value::String(status)).ok()?;
            Some((key, status))
        })
        .collect())
}

/// The text attribute `name` of each item of `keys` that exists and has it
/// (consistent reads, keys and that attribute only).
async fn read_attribute(
    client: &Client,
    table: &str,
    keys: &[String],
    name: &str,
) -> Result<HashMap<String, String>, AuditError> {
    let mut found = HashMap::new();
    for batch in keys.chunks(KEYS_PER_BATCH) {
        let mut asked: Vec<HashMap<String, AttributeValue>> = batch
            .iter()
            .map(|key| HashMap::from([(attr::PK.to_owned(), AttributeValue::S(key.clone()))]))
            .collect();
        let mut tries = 0;
        while !asked.is_empty() {
            if tries == UNPROCESSED_TRIES {
                return Err(AuditError::Store {
                    operation: "BatchGetItem",
                    code: "KeysLeftUnprocessed".to_owned(),
                });
            }
            if tries > 0 {
                tokio::time::sleep(Duration::from_millis(100 << tries.min(5))).await;
            }
            tries += 1;
            let request = KeysAndAttributes::builder()
                .set_keys(Some(std::mem::take(&mut asked)))
                .projection_expression("#pk, #wanted")
                .expression_attribute_names("#pk", attr::PK)
                .expression_attribute_names("#wanted", name)
                .consistent_read(true)
                .build()
                .map_err(|_| AuditError::Store {
                    operation: "BatchGetItem",
                    code: "RequestNotBuilt".to_owned(),
                })?;
            let output = client
                .batch_get_item()
                .request_items(table, request)
                .send()
                .await
                .map_err(|error| AuditError::store("BatchGetItem", error))?;
            let items = output
                .responses
                .and_then(|mut tables| tables.remove(table))
                .unwrap_or_default();
            for item in items {
                let text = |attribute| match item.get(attribute) {
                    Some(AttributeValue::S(text)) => Some(text.clone()),
                    _ => None,
                };
                if let (Some(key), Some(value)) = (text(attr::PK), text(name)) {
                    found.insert(key, value);
                }
            }
            asked = output
                .unprocessed_keys
                .and_then(|mut tables| tables.remove(table))
                .map(|left| left.keys)
                .unwrap_or_default();
        }
    }
    Ok(found)
}
