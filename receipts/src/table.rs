//! The receipts table, as the CLI reads and changes it. The only adapter of
//! this crate: everything else is formatting and argument rules.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use shared::receipt::{attr, PENDING};
use shared::{IdempotencyKey, Receipt, ReceiptStatus, SubmissionId};

use crate::cli::{StatusFilter, Window};

type Item = HashMap<String, AttributeValue>;

#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("DynamoDB: {0}")]
    Store(String),
    #[error("{0:?} is not a submission id")]
    BadId(String),
}

fn store_error<E: std::error::Error + 'static, R: std::fmt::Debug>(
    error: SdkError<E, R>,
) -> TableError {
    TableError::Store(DisplayErrorContext(error).to_string())
}

/// What a redrive did to one receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redriven {
    Queued,
    /// Delivered already: never redriven.
    Completed,
    /// RECEIVED and not due before this time: claimed by a delivery right
    /// now, or deferred to then. The worker delivers it; a redrive would
    /// run beside it.
    Waiting(String),
    Missing,
}

/// Receipts found, and items that did not read as receipts.
#[derive(Debug, Default)]
pub struct Found {
    pub receipts: Vec<Receipt>,
    pub unreadable: usize,
}

impl Found {
    /// Newest first: receipt timestamps sort as text; the submission id
    /// breaks ties so the order is the same on every run.
    fn newest_first(&mut self) {
        self.receipts.sort_by(|a, b| {
            b.received_at
                .cmp(&a.received_at)
                .then_with(|| a.submission_id.cmp(&b.submission_id))
        });
    }
}

pub struct ReceiptsTable {
    client: Client,
    table: String,
}

impl ReceiptsTable {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        ReceiptsTable {
            client,
            table: table.into(),
        }
    }

    /// The key of a submission id, or of a full key given as it is.
    pub fn key_of(id: &str) -> Result<String, TableError> {
        if id.starts_with("staticforms:") {
            return Ok(id.to_owned());
        }
        let id = SubmissionId::parse(id).map_err(|_| TableError::BadId(id.to_owned()))?;
        Ok(
            IdempotencyKey::for_submission(shared::EventType::FormSubmitted, &id)
                .as_str()
                .to_owned(),
        )
    }

    pub async fn get(&self, key: &str) -> Result<Option<Receipt>, TableError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, AttributeValue::S(key.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .map_err(store_error)?;
        Ok(output
            .item
            .and_then(|item| serde_dynamo::from_item(item).ok()))
    }

    /// Receipts with `status` received in `window`, newest first;
    /// `progress` is told the items read after each page. A scan, which
    /// reads the whole table (a scan has no order, so every match is read
    /// before the newest can be told): an operator's tool, not a pass. (The
    /// worker's queue index holds keys only; reading receipts whole from it
    /// would cost a read per receipt on top.)
    pub async fn select(
        &self,
        status: Option<StatusFilter>,
        window: &Window,
        mut progress: impl FnMut(usize),
    ) -> Result<Found, TableError> {
        let mut conditions = Vec::new();
        let mut names = HashMap::new();
        let mut values = HashMap::new();
        let status_text = match status {
            Some(StatusFilter::Received) => Some(ReceiptStatus::Received.as_str()),
            Some(StatusFilter::Completed) => Some(ReceiptStatus::Completed.as_str()),
            Some(StatusFilter::Failed) => Some(ReceiptStatus::Failed.as_str()),
            Some(StatusFilter::Pending) | None => None,
        };
        if let Some(text) = status_text {
            conditions.push("#status = :status");
            names.insert("#status".to_owned(), attr::STATUS.to_owned());
            values.insert(":status".to_owned(), AttributeValue::S(text.to_owned()));
        }
        // Newest-wins gates share the table; they are no receipts.
        conditions.push("NOT begins_with(#pk, :gate)");
        names.insert("#pk".to_owned(), attr::PK.to_owned());
        values.insert(
            ":gate".to_owned(),
            AttributeValue::S(shared::newest::GATE_KEY_PREFIX.to_owned()),
        );
        if status == Some(StatusFilter::Pending) {
            conditions.push("#queue = :pending");
            names.insert("#queue".to_owned(), attr::QUEUE.to_owned());
            values.insert(":pending".to_owned(), AttributeValue::S(PENDING.to_owned()));
        }
        if let Some(since) = &window.since {
            conditions.push("#receivedAt >= :since");
            values.insert(":since".to_owned(), AttributeValue::S(since.clone()));
        }
        if let Some(until) = &window.until {
            conditions.push("#receivedAt <= :until");
            values.insert(":until".to_owned(), AttributeValue::S(until.clone()));
        }
        if window.since.is_some() || window.until.is_some() {
            names.insert("#receivedAt".to_owned(), attr::RECEIVED_AT.to_owned());
        }
        let filter = (!conditions.is_empty()).then(|| conditions.join(" AND "));

        let mut found = Found::default();
        let mut read = 0;
        let mut start: Option<Item> = None;
        loop {
            let (items, last, scanned) = {
                let output = self
                    .client
                    .scan()
                    .table_name(&self.table)
                    .set_filter_expression(filter.clone())
                    .set_expression_attribute_names((!names.is_empty()).then(|| names.clone()))
                    .set_expression_attribute_values((!values.is_empty()).then(|| values.clone()))
                    .set_exclusive_start_key(start)
                    .send()
                    .await
                    .map_err(store_error)?;
                let scanned = output.scanned_count() as usize;
                (
                    output.items.unwrap_or_default(),
                    output.last_evaluated_key,
                    scanned,
                )
            };
            read += scanned;
            progress(read);
            for item in items {
                match serde_dynamo::from_item::<_, Receipt>(item) {
                    Ok(receipt) => found.receipts.push(receipt),
                    Err(_) => found.unreadable += 1,
                }
            }
            match last {
                Some(last) => start = Some(last),
                None => {
                    found.newest_first();
                    return Ok(found);
                }
            }
        }
    }

    /// Back into the reconciler's queue: RECEIVED, attempts reset, due at
    /// `now`, the age limit counted from now, no expiry (TTL only removes
    /// delivered receipts). Only a receipt that exists, is not COMPLETED,
    /// and, if RECEIVED, is due by `now`: a receipt claimed by a delivery
    /// (or deferred) is left to the worker. `now` is written in the table's
    /// timestamp format, the one its text order relies on.
    pub async fn redrive(&self, key: &str, now: &str) -> Result<Redriven, TableError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, AttributeValue::S(key.to_owned()))
            .update_expression(
                "SET #status = :received, #attempts = :zero, #next = :now, #queue = :pending, #redrivenAt = :now \
                 REMOVE #failedAt, #reason, #failureStatus, #lastError, #lastStatus, #expiresAt",
            )
            .condition_expression(
                "attribute_exists(#pk) AND (#status = :failed OR (#status = :received AND \
                 (attribute_not_exists(#next) OR #next <= :now)))",
            )
            .expression_attribute_names("#pk", attr::PK)
            .expression_attribute_names("#status", attr::STATUS)
            .expression_attribute_names("#attempts", attr::ATTEMPTS)
            .expression_attribute_names("#next", attr::NEXT_ATTEMPT_AT)
            .expression_attribute_names("#queue", attr::QUEUE)
            .expression_attribute_names("#redrivenAt", attr::REDRIVEN_AT)
            .expression_attribute_names("#failedAt", attr::FAILED_AT)
            .expression_attribute_names("#reason", attr::FAILURE_REASON)
            .expression_attribute_names("#failureStatus", attr::FAILURE_HTTP_STATUS)
            .expression_attribute_names("#lastError", attr::LAST_ERROR)
            .expression_attribute_names("#lastStatus", attr::LAST_HTTP_STATUS)
            .expression_attribute_names("#expiresAt", attr::EXPIRES_AT)
            .expression_attribute_values(":received", AttributeValue::S(ReceiptStatus::Received.as_str().to_owned()))
            .expression_attribute_values(":failed", AttributeValue::S(ReceiptStatus::Failed.as_str().to_owned()))
            .expression_attribute_values(":zero", AttributeValue::N("0".to_owned()))
            .expression_attribute_values(":now", AttributeValue::S(now.to_owned()))
            .expression_attribute_values(":pending", AttributeValue::S(PENDING.to_owned()))
            .send()
            .await;
        match result {
            Ok(_) => Ok(Redriven::Queued),
            Err(SdkError::ServiceError(failure))
                if matches!(
                    failure.err(),
                    UpdateItemError::ConditionalCheckFailedException(_)
                ) =>
            {
                // Say why: gone, delivered, or claimed or deferred.
                Ok(match self.get(key).await? {
                    Some(receipt) if receipt.status == ReceiptStatus::Received => {
                        Redriven::Waiting(receipt.next_attempt_at.unwrap_or_default())
                    }
                    Some(_) => Redriven::Completed,
                    None => Redriven::Missing,
                })
            }
            Err(error) => Err(store_error(error)),
        }
    }
}
