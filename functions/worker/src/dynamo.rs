//! The DynamoDB side of the worker: the SDK client, and the receipt ledger
//! that marks receipts COMPLETED or FAILED only while they still exist.

use std::time::Duration;

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use shared::receipt::attr;

use crate::ledger::{Failure, LedgerError, Marked, ReceiptLedger};

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

    /// Opens the connection during init instead of on the first batch; the
    /// answer does not matter (even access-denied warms the pool).
    pub async fn warm_up(&self) {
        let _ = self
            .client
            .describe_table()
            .table_name(&self.table)
            .send()
            .await;
    }

    async fn update(
        &self,
        key: &str,
        set: &str,
        values: Vec<(&str, AttributeValue)>,
    ) -> Result<Marked, LedgerError> {
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, AttributeValue::S(key.to_owned()))
            .update_expression(set)
            .condition_expression(format!("attribute_exists({})", attr::PK))
            .expression_attribute_names("#status", attr::STATUS);
        for (name, value) in values {
            request = request.expression_attribute_values(name, value);
        }
        match request.send().await {
            Ok(_) => Ok(Marked::Updated),
            Err(SdkError::ServiceError(failure))
                if matches!(
                    failure.err(),
                    UpdateItemError::ConditionalCheckFailedException(_)
                ) =>
            {
                Ok(Marked::ReceiptGone)
            }
            Err(SdkError::ServiceError(failure)) => Err(LedgerError(
                failure
                    .err()
                    .code()
                    .unwrap_or("UnknownServiceError")
                    .to_owned(),
            )),
            Err(_) => Err(LedgerError("store unreachable".to_owned())),
        }
    }
}

fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.to_owned())
}

impl ReceiptLedger for DynamoLedger {
    async fn mark_completed(&self, key: &str, at: &str) -> Result<Marked, LedgerError> {
        self.update(
            key,
            "SET #status = :status, completedAt = :at",
            vec![(":status", s("COMPLETED")), (":at", s(at))],
        )
        .await
    }

    async fn mark_failed(
        &self,
        key: &str,
        failure: &Failure,
        at: &str,
    ) -> Result<Marked, LedgerError> {
        let mut values = vec![
            (":status", s("FAILED")),
            (":at", s(at)),
            (":reason", s(&failure.reason)),
        ];
        let set = match failure.status {
            Some(status) => {
                values.push((":httpStatus", AttributeValue::N(status.to_string())));
                "SET #status = :status, failedAt = :at, failureReason = :reason, failureHttpStatus = :httpStatus"
            }
            None => "SET #status = :status, failedAt = :at, failureReason = :reason",
        };
        self.update(key, set, values).await
    }
}
