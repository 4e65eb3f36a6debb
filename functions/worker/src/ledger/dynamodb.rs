//! The DynamoDB side of the worker: the SDK client, and the receipts table
//! as the ledger (conditional updates of RECEIVED receipts) and as the
//! queue of pending ones (a query of the sparse pending index).

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::query::QueryError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use shared::receipt::Timestamp;
use shared::receipt::{attr, PENDING, PENDING_INDEX};
use shared::{IdempotencyKey, ReceiptStatus};

use super::{
    AttemptRecord, Census, Cursor, DuePage, DueQuery, LedgerError, Marked, PendingQueue,
    ReceiptLedger, UnreadableItem,
};
use crate::decide::AttemptError;

/// The SDK configuration with bounded retries and time limits: a stuck call
/// must end while the invocation still has time to report it. Tests add an
/// endpoint and credentials to it.
pub fn sdk_loader() -> aws_config::ConfigLoader {
    aws_config::from_env()
        .retry_config(RetryConfig::standard().with_max_attempts(4))
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(1))
                .operation_attempt_timeout(Duration::from_secs(2))
                .operation_timeout(Duration::from_secs(6))
                .build(),
        )
}

/// The DynamoDB client of `sdk_config`, at `endpoint` when one is configured
/// (`DYNAMODB_ENDPOINT`); other services keep AWS's endpoints.
pub fn client(sdk_config: &aws_config::SdkConfig, endpoint: Option<&str>) -> Client {
    let mut config = aws_sdk_dynamodb::config::Builder::from(sdk_config);
    if let Some(endpoint) = endpoint {
        config = config.endpoint_url(endpoint);
    }
    Client::from_conf(config.build())
}

pub struct DynamoLedger {
    client: Client,
    table: String,
}

impl DynamoLedger {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        DynamoLedger {
            client,
            table: table.into(),
        }
    }

    /// Opens the connection during init instead of on the first batch. The
    /// template grants `DescribeTable` for it; the answer is not used.
    pub async fn warm_up(&self) {
        let _ = self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await;
    }

    /// An update of a receipt that is still RECEIVED, counting `attempt`.
    /// A failed condition means the receipt is gone or already settled.
    async fn settle(
        &self,
        key: &str,
        attempt: &AttemptRecord,
        set: &str,
        remove: &str,
        names: &[(&str, &str)],
        values: Vec<(&str, AttributeValue)>,
    ) -> Result<Marked, LedgerError> {
        let expression = format!(
            "SET #attempts = if_not_exists(#attempts, :zero) + :attempts, #lastAttemptAt = :at, {set}{remove}"
        );
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(key))
            .update_expression(expression)
            .condition_expression("#status = :received")
            .expression_attribute_names("#status", attr::STATUS)
            .expression_attribute_names("#attempts", attr::ATTEMPTS)
            .expression_attribute_names("#lastAttemptAt", attr::LAST_ATTEMPT_AT)
            .expression_attribute_values(":received", s(ReceiptStatus::Received.as_str()))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":attempts", n(attempt.attempts))
            .expression_attribute_values(":at", s(attempt.at.as_str()));
        for (placeholder, attribute) in names {
            request = request.expression_attribute_names(*placeholder, *attribute);
        }
        for (placeholder, value) in values {
            request = request.expression_attribute_values(placeholder, value);
        }
        match request.send().await {
            Ok(_) => Ok(Marked::Updated),
            Err(error) => conditional_failure(error).map(|()| Marked::NotPending),
        }
    }
}

/// `Ok(())` for a failed condition; any other error as a `LedgerError`.
fn conditional_failure(error: SdkError<UpdateItemError, HttpResponse>) -> Result<(), LedgerError> {
    match error {
        SdkError::ServiceError(failure)
            if matches!(
                failure.err(),
                UpdateItemError::ConditionalCheckFailedException(_)
            ) =>
        {
            Ok(())
        }
        SdkError::ServiceError(failure) => Err(LedgerError(
            failure
                .err()
                .code()
                .unwrap_or("UnknownServiceError")
                .to_owned(),
        )),
        _ => Err(LedgerError("store unreachable".to_owned())),
    }
}

fn query_error(error: SdkError<QueryError, HttpResponse>) -> LedgerError {
    match error {
        SdkError::ServiceError(failure) => LedgerError(
            failure
                .err()
                .code()
                .unwrap_or("UnknownServiceError")
                .to_owned(),
        ),
        _ => LedgerError("store unreachable".to_owned()),
    }
}

fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.to_owned())
}

fn n(number: impl ToString) -> AttributeValue {
    AttributeValue::N(number.to_string())
}

fn status_value(status: Option<u16>) -> AttributeValue {
    match status {
        Some(status) => n(status),
        None => AttributeValue::Null(true),
    }
}

impl ReceiptLedger for DynamoLedger {
    async fn mark_completed(
        &self,
        key: &IdempotencyKey,
        attempt: &AttemptRecord,
    ) -> Result<Marked, LedgerError> {
        let key = key.as_str();
        self.settle(
            key,
            attempt,
            "#status = :completed, #completedAt = :at",
            // A receipt delivered after a failure keeps no failure fields.
            " REMOVE #pending, #nextAttemptAt, #lastError, #lastHttpStatus, #failedAt, #reason, #failureStatus",
            &[
                ("#completedAt", attr::COMPLETED_AT),
                ("#pending", attr::PENDING),
                ("#nextAttemptAt", attr::NEXT_ATTEMPT_AT),
                ("#lastError", attr::LAST_ERROR),
                ("#lastHttpStatus", attr::LAST_HTTP_STATUS),
                ("#failedAt", attr::FAILED_AT),
                ("#reason", attr::FAILURE_REASON),
                ("#failureStatus", attr::FAILURE_HTTP_STATUS),
            ],
            vec![(":completed", s(ReceiptStatus::Completed.as_str()))],
        )
        .await
    }

    async fn mark_failed(
        &self,
        key: &IdempotencyKey,
        failure: &AttemptError,
        attempt: &AttemptRecord,
    ) -> Result<Marked, LedgerError> {
        let key = key.as_str();
        self.settle(
            key,
            attempt,
            "#status = :failed, #failedAt = :at, #reason = :reason, #httpStatus = :httpStatus",
            " REMOVE #pending, #nextAttemptAt",
            &[
                ("#failedAt", attr::FAILED_AT),
                ("#reason", attr::FAILURE_REASON),
                ("#httpStatus", attr::FAILURE_HTTP_STATUS),
                ("#pending", attr::PENDING),
                ("#nextAttemptAt", attr::NEXT_ATTEMPT_AT),
            ],
            vec![
                (":failed", s(ReceiptStatus::Failed.as_str())),
                (":reason", s(&failure.code)),
                (":httpStatus", status_value(failure.status)),
            ],
        )
        .await
    }

    async fn defer(
        &self,
        key: &IdempotencyKey,
        next_attempt_at: &Timestamp,
        error: &AttemptError,
        attempt: &AttemptRecord,
    ) -> Result<Marked, LedgerError> {
        let key = key.as_str();
        let next_attempt_at = next_attempt_at.as_str();
        self.settle(
            key,
            attempt,
            "#nextAttemptAt = :next, #pending = :pending, #lastError = :error, #httpStatus = :httpStatus",
            "",
            &[
                ("#nextAttemptAt", attr::NEXT_ATTEMPT_AT),
                ("#pending", attr::PENDING),
                ("#lastError", attr::LAST_ERROR),
                ("#httpStatus", attr::LAST_HTTP_STATUS),
            ],
            vec![
                (":next", s(next_attempt_at)),
                (":pending", s(PENDING)),
                (":error", s(&error.code)),
                (":httpStatus", status_value(error.status)),
            ],
        )
        .await
    }
}

impl PendingQueue for DynamoLedger {
    async fn census(&self) -> Result<Census, LedgerError> {
        let mut census = Census {
            pending: 0,
            oldest_received_at: None,
        };
        let mut start = None;
        loop {
            let output = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(PENDING_INDEX)
                .key_condition_expression("#pending = :pending")
                .projection_expression("#receivedAt")
                .expression_attribute_names("#pending", attr::PENDING)
                .expression_attribute_names("#receivedAt", attr::RECEIVED_AT)
                .expression_attribute_values(":pending", s(PENDING))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(query_error)?;
            for item in output.items() {
                census.pending += 1;
                if let Some(AttributeValue::S(received)) = item.get(attr::RECEIVED_AT) {
                    if census
                        .oldest_received_at
                        .as_ref()
                        .is_none_or(|oldest| received < oldest)
                    {
                        census.oldest_received_at = Some(received.clone());
                    }
                }
            }
            match output.last_evaluated_key {
                Some(last) => start = Some(last),
                None => return Ok(census),
            }
        }
    }

    async fn due(&self, query: &DueQuery, from: Option<&Cursor>) -> Result<DuePage, LedgerError> {
        let start = from.map(|cursor| {
            HashMap::from([
                (attr::PK.to_owned(), s(&cursor.key)),
                (attr::PENDING.to_owned(), s(PENDING)),
                (attr::NEXT_ATTEMPT_AT.to_owned(), s(&cursor.next_attempt_at)),
            ])
        });
        let output = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(PENDING_INDEX)
            .key_condition_expression("#pending = :pending AND #next <= :now")
            .filter_expression("#receivedAt <= :before")
            .expression_attribute_names("#pending", attr::PENDING)
            .expression_attribute_names("#next", attr::NEXT_ATTEMPT_AT)
            .expression_attribute_names("#receivedAt", attr::RECEIVED_AT)
            .expression_attribute_values(":pending", s(PENDING))
            .expression_attribute_values(":now", s(&query.now))
            .expression_attribute_values(":before", s(&query.received_before))
            .limit(i32::try_from(query.page_size).unwrap_or(i32::MAX))
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(query_error)?;
        let text = |item: &HashMap<String, AttributeValue>, name: &str| match item.get(name) {
            Some(AttributeValue::S(text)) => Some(text.clone()),
            _ => None,
        };
        let next = output.last_evaluated_key().and_then(|last| {
            Some(Cursor {
                key: text(last, attr::PK)?,
                next_attempt_at: text(last, attr::NEXT_ATTEMPT_AT)?,
            })
        });
        let read = usize::try_from(output.scanned_count()).unwrap_or(0);
        let receipts = output
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|item| {
                let key = text(&item, attr::PK);
                serde_dynamo::from_item(item).map_err(|_| UnreadableItem { key })
            })
            .collect();
        Ok(DuePage {
            receipts,
            read,
            next,
        })
    }

    async fn claim(
        &self,
        key: &IdempotencyKey,
        seen: &Timestamp,
        until: &Timestamp,
    ) -> Result<bool, LedgerError> {
        let key = key.as_str();
        let (seen, until) = (seen.as_str(), until.as_str());
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(key))
            .update_expression("SET #next = :until")
            .condition_expression("#status = :received AND #next = :seen")
            .expression_attribute_names("#status", attr::STATUS)
            .expression_attribute_names("#next", attr::NEXT_ATTEMPT_AT)
            .expression_attribute_values(":received", s(ReceiptStatus::Received.as_str()))
            .expression_attribute_values(":seen", s(seen))
            .expression_attribute_values(":until", s(until))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(error) => conditional_failure(error).map(|()| false),
        }
    }
}
