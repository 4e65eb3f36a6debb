//! The DynamoDB receipt store: one conditional `PutItem` per delivery.
//!
//! `attribute_not_exists(pk)` lets DynamoDB decide which of two racing
//! deliveries is first, and `ReturnValuesOnConditionCheckFailure=ALL_OLD`
//! returns the existing receipt with the failure, so telling a duplicate from
//! a reused key costs no extra read.

use std::collections::HashMap;
use std::time::Duration;

use aws_edge::CallLimits;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use aws_sdk_dynamodb::Client;
use shared::receipt::attr;
use shared::store_errors::is_transient;
use shared::Receipt;

use crate::store::{PutOutcome, ReceiptStore, StoreError};

/// The whole store call, retries included, ends within this time, so the
/// sender gets a 503 well inside its own timeout instead of a hang.
pub const STORE_CALL_LIMIT: Duration = Duration::from_secs(5);
const STORE_LIMITS: CallLimits = CallLimits {
    attempts: 3,
    backoff: Some((Duration::from_millis(50), Duration::from_millis(500))),
    connect: Duration::from_secs(1),
    attempt: Some(Duration::from_secs(2)),
    call: STORE_CALL_LIMIT,
};

/// Builds the client once, at init, from the environment (region,
/// credentials, and any `AWS_ENDPOINT_URL_DYNAMODB` / `AWS_ENDPOINT_URL`
/// override), at `endpoint` when one is configured (`DYNAMODB_ENDPOINT`).
pub async fn client_from_env(endpoint: Option<&str>) -> Client {
    aws_edge::dynamodb_client(&sdk_loader().load().await, endpoint)
}

/// The SDK configuration with bounded retries and time limits; tests add an
/// endpoint and credentials to it.
pub fn sdk_loader() -> aws_config::ConfigLoader {
    aws_edge::sdk_loader(STORE_LIMITS)
}

#[derive(Debug, Clone)]
pub struct DynamoReceiptStore {
    client: Client,
    table: String,
}

impl DynamoReceiptStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        DynamoReceiptStore {
            client,
            table: table.into(),
        }
    }

    /// Opens the connection during init instead of on the first webhook
    /// (`aws_edge::warm_up`).
    pub async fn warm_up(&self) {
        aws_edge::warm_up(&self.client, &self.table).await;
    }
}

impl ReceiptStore for DynamoReceiptStore {
    async fn put_if_absent(&self, receipt: &Receipt) -> Result<PutOutcome, StoreError> {
        let item: HashMap<String, AttributeValue> = serde_dynamo::to_item(receipt)
            .map_err(|_| StoreError::Failed("ReceiptNotSerialisable".to_owned()))?;
        // DynamoDB would refuse it with a ValidationException, which no
        // retry can change: answered 413 before the call.
        let bytes = item_size(&item);
        if bytes > MAX_ITEM_BYTES {
            return Err(StoreError::TooLarge {
                bytes,
                limit: MAX_ITEM_BYTES,
            });
        }
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(format!("attribute_not_exists({})", attr::PK))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(_) => Ok(PutOutcome::Stored),
            Err(SdkError::ServiceError(failure)) => match failure.err() {
                PutItemError::ConditionalCheckFailedException(existing) => {
                    match existing.item() {
                        Some(item) => Ok(already_exists(item)),
                        // A server that ignores ReturnValuesOnConditionCheckFailure
                        // (dynalite, older DynamoDB Local): read it, rather than
                        // take a receipt we did not see for one without a
                        // fingerprint. DynamoDB itself always returns it.
                        None => self.stored_fingerprint(&receipt.pk).await,
                    }
                }
                service_error => Err(classify_service_error(
                    service_error,
                    failure.raw().status().as_u16(),
                )),
            },
            Err(other) => Err(classify_transport_error(&other)),
        }
    }
}

impl DynamoReceiptStore {
    /// The fingerprint of the receipt stored under `pk`, by a consistent read.
    async fn stored_fingerprint(&self, pk: &str) -> Result<PutOutcome, StoreError> {
        let read = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, AttributeValue::S(pk.to_owned()))
            .projection_expression(format!("{}, #source", attr::PAYLOAD_FINGERPRINT))
            // `source` is one of DynamoDB's reserved words.
            .expression_attribute_names("#source", attr::SOURCE)
            .consistent_read(true)
            .send()
            .await;
        match read {
            Ok(output) => match output.item() {
                Some(item) => Ok(already_exists(item)),
                // Gone between the put and the read (TTL): a retry stores it.
                None => Err(StoreError::Unavailable("ReceiptGoneDuringRead".to_owned())),
            },
            Err(SdkError::ServiceError(failure)) => {
                let code = failure.err().code().unwrap_or("UnknownServiceError");
                let status = failure.raw().status().as_u16();
                Err(if is_transient(Some(code), status) {
                    StoreError::Unavailable(code.to_owned())
                } else {
                    StoreError::Failed(code.to_owned())
                })
            }
            Err(other) => Err(classify_transport_error(&other)),
        }
    }
}

pub use aws_edge::item_size::{item_size, MAX_ITEM_BYTES};

/// What the stored `item` says of itself: its fingerprint, and whether it
/// was imported.
fn already_exists(item: &HashMap<String, AttributeValue>) -> PutOutcome {
    let text = |name| match item.get(name) {
        Some(AttributeValue::S(text)) => Some(text.clone()),
        _ => None,
    };
    PutOutcome::AlreadyExists {
        payload_fingerprint: text(attr::PAYLOAD_FINGERPRINT),
        imported: text(attr::SOURCE).as_deref() == Some(shared::receipt::IMPORTED),
    }
}

fn classify_service_error(error: &PutItemError, http_status: u16) -> StoreError {
    let code = error.code().unwrap_or("UnknownServiceError").to_owned();
    if is_transient(error.code(), http_status) {
        StoreError::Unavailable(code)
    } else {
        StoreError::Failed(code)
    }
}

/// No answer from DynamoDB at all: the caller should retry later. A request
/// that could not even be built is our fault, not DynamoDB's.
fn classify_transport_error<E, R>(error: &SdkError<E, R>) -> StoreError {
    match error {
        SdkError::ConstructionFailure(_) => StoreError::Failed("RequestNotBuilt".to_owned()),
        SdkError::TimeoutError(_) => StoreError::Unavailable("Timeout".to_owned()),
        SdkError::DispatchFailure(_) => StoreError::Unavailable("ConnectionFailed".to_owned()),
        SdkError::ResponseError(_) => StoreError::Unavailable("UnreadableResponse".to_owned()),
        _ => StoreError::Unavailable("Unknown".to_owned()),
    }
}
