//! The DynamoDB adapter's request shape and error mapping, checked against
//! the real SDK client with aws-smithy-mocks (no network). The adapter's
//! behaviour against a real DynamoDB-protocol server is the integration
//! suite's job.

use std::collections::HashMap;
use std::time::SystemTime;

use aws_sdk_dynamodb::error::ErrorMetadata;
use aws_sdk_dynamodb::operation::put_item::{PutItemError, PutItemOutput};
use aws_sdk_dynamodb::types::error::{
    ConditionalCheckFailedException, ProvisionedThroughputExceededException,
    ResourceNotFoundException,
};
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use aws_sdk_dynamodb::Client;
use aws_smithy_mocks::{mock, mock_client, RuleMode};
use ingest::dynamo::DynamoReceiptStore;
use ingest::store::{PutOutcome, ReceiptStore, StoreError};
use shared::{FormSubmission, Receipt};

fn receipt() -> Receipt {
    let body = serde_json::json!({
        "event": "form.submitted",
        "timestamp": 1,
        "data": {"submissionId": "sub_9", "apiKey": "sf_key", "formData": {"email": "a@b.c"}}
    });
    let submission = FormSubmission::parse(body.to_string().as_bytes()).unwrap();
    Receipt::new(&submission, SystemTime::now())
}

fn code(code: &str) -> ErrorMetadata {
    ErrorMetadata::builder().code(code).build()
}

fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.to_owned())
}

#[tokio::test]
async fn put_is_conditional_returns_the_old_item_and_carries_every_attribute() {
    let receipt = receipt();
    let expected = receipt.clone();
    let put = mock!(Client::put_item)
        .match_requests(move |input| {
            let item = input.item().expect("an item");
            input.table_name() == Some("receipts")
                && input.condition_expression() == Some("attribute_not_exists(pk)")
                && input.return_values_on_condition_check_failure()
                    == Some(&ReturnValuesOnConditionCheckFailure::AllOld)
                && item.get("pk") == Some(&s(&expected.pk))
                && item.get("event") == Some(&s("form.submitted"))
                && item.get("submissionId") == Some(&s("sub_9"))
                && item.get("status") == Some(&s("RECEIVED"))
                && item.get("payloadFingerprint") == Some(&s(&expected.payload_fingerprint))
                && item.get("receivedAt") == Some(&s(&expected.received_at))
                // In the day index the console reads.
                && item.get("receivedDay") == Some(&s(&expected.received_at[..10]))
                // No TTL attribute until the lead is delivered.
                && !item.contains_key("expiresAt")
                && matches!(item.get("payload"), Some(AttributeValue::S(p)) if !p.contains("sf_key"))
                // In the reconciler's queue, due at once.
                && item.get("pending") == Some(&s("PENDING"))
                && item.get("nextAttemptAt") == Some(&s(&expected.received_at))
                && item.get("attempts") == Some(&AttributeValue::N("0".into()))
                // Its form by a hash: never the apiKey itself.
                && item.get("formRef") == Some(&s(&shared::routes::form_ref("sf_key")))
                && item.len() == 12
        })
        .then_output(|| PutItemOutput::builder().build());
    let client = mock_client!(aws_sdk_dynamodb, [&put]);
    let store = DynamoReceiptStore::new(client, "receipts");

    assert_eq!(store.put_if_absent(&receipt).await, Ok(PutOutcome::Stored));
    assert_eq!(put.num_calls(), 1);
}

#[tokio::test]
async fn a_failed_condition_is_an_existing_receipt_with_its_fingerprint() {
    let exists = mock!(Client::put_item).then_error(|| {
        let old: HashMap<String, AttributeValue> = [
            ("pk".to_owned(), s("staticforms:form.submitted:sub_9")),
            ("payloadFingerprint".to_owned(), s("abc123")),
        ]
        .into();
        PutItemError::ConditionalCheckFailedException(
            ConditionalCheckFailedException::builder()
                .message("The conditional request failed")
                .set_item(Some(old))
                .build(),
        )
    });
    let client = mock_client!(aws_sdk_dynamodb, [&exists]);
    let store = DynamoReceiptStore::new(client, "receipts");

    assert_eq!(
        store.put_if_absent(&receipt()).await,
        Ok(PutOutcome::AlreadyExists {
            payload_fingerprint: Some("abc123".to_owned()),
            imported: false,
        })
    );
}

/// dynalite (and older DynamoDB Local) ignore ReturnValuesOnConditionCheckFailure:
/// the adapter reads the receipt, consistently, instead of guessing.
#[tokio::test]
async fn a_failed_condition_without_the_old_item_reads_the_receipt() {
    use aws_sdk_dynamodb::operation::get_item::GetItemOutput;
    let failed_condition = || {
        mock!(Client::put_item).then_error(|| {
            PutItemError::ConditionalCheckFailedException(
                ConditionalCheckFailedException::builder()
                    .message("The conditional request failed")
                    .build(),
            )
        })
    };
    let exists = failed_condition();
    let read = mock!(Client::get_item)
        .match_requests(|input| {
            input.table_name() == Some("receipts")
                && input.key().and_then(|k| k.get("pk"))
                    == Some(&s("staticforms:form.submitted:sub_9"))
                && input.consistent_read() == Some(true)
                && input.projection_expression() == Some("payloadFingerprint, #source")
        })
        .then_output(|| {
            GetItemOutput::builder()
                .item("payloadFingerprint", s("abc123"))
                .build()
        });
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::Sequential, [&exists, &read]);
    let store = DynamoReceiptStore::new(client, "receipts");
    assert_eq!(
        store.put_if_absent(&receipt()).await,
        Ok(PutOutcome::AlreadyExists {
            payload_fingerprint: Some("abc123".to_owned()),
            imported: false,
        })
    );
    assert_eq!(read.num_calls(), 1);

    let exists = failed_condition();
    let gone = mock!(Client::get_item).then_output(|| GetItemOutput::builder().build());
    let client = mock_client!(aws_sdk_dynamodb, RuleMode::Sequential, [&exists, &gone]);
    let store = DynamoReceiptStore::new(client, "receipts");
    assert_eq!(
        store.put_if_absent(&receipt()).await,
        Err(StoreError::Unavailable("ReceiptGoneDuringRead".to_owned())),
        "expired in between: retry, never a guess"
    );
}

#[tokio::test]
async fn throttling_is_unavailable_and_a_missing_table_is_a_failure() {
    let throttled = mock!(Client::put_item).then_error(|| {
        PutItemError::ProvisionedThroughputExceededException(
            // The SDK's deserialiser puts the wire error code in the metadata.
            ProvisionedThroughputExceededException::builder()
                .meta(code("ProvisionedThroughputExceededException"))
                .build(),
        )
    });
    let client = mock_client!(aws_sdk_dynamodb, [&throttled]);
    let result = DynamoReceiptStore::new(client, "receipts")
        .put_if_absent(&receipt())
        .await;
    assert!(
        matches!(result, Err(StoreError::Unavailable(_))),
        "{result:?}"
    );

    let missing = mock!(Client::put_item).then_error(|| {
        PutItemError::ResourceNotFoundException(
            ResourceNotFoundException::builder()
                .meta(code("ResourceNotFoundException"))
                .build(),
        )
    });
    let client = mock_client!(aws_sdk_dynamodb, [&missing]);
    let result = DynamoReceiptStore::new(client, "receipts")
        .put_if_absent(&receipt())
        .await;
    assert!(matches!(result, Err(StoreError::Failed(_))), "{result:?}");
}

/// A receipt over DynamoDB's 400 KB item limit is refused before any call
/// (DynamoDB's ValidationException would be answered "retry" for ever).
#[tokio::test]
async fn a_receipt_over_the_item_limit_is_too_large_and_never_sent() {
    let put = mock!(Client::put_item).then_output(|| PutItemOutput::builder().build());
    let client = mock_client!(aws_sdk_dynamodb, [&put]);
    let store = DynamoReceiptStore::new(client, "receipts");
    let mut large = receipt();
    large.payload = Some("x".repeat(ingest::dynamo::MAX_ITEM_BYTES));
    let result = store.put_if_absent(&large).await;
    match result {
        Err(StoreError::TooLarge { bytes, limit }) => {
            assert_eq!(limit, 409_600);
            assert!(bytes > limit, "{bytes}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(put.num_calls(), 0, "nothing sent, nothing stored");

    let mut fits = receipt();
    fits.payload = Some("x".repeat(ingest::dynamo::MAX_ITEM_BYTES - 1024));
    assert_eq!(store.put_if_absent(&fits).await, Ok(PutOutcome::Stored));
    assert_eq!(put.num_calls(), 1);
}

#[tokio::test]
async fn a_raw_server_error_is_unavailable() {
    let broken = mock!(Client::put_item)
        .sequence()
        .http_status(500, Some(r#"{"__type":"InternalFailure"}"#.to_owned()))
        // The SDK retries a 500: every attempt gets the same answer.
        .repeatedly()
        .build();
    let client = mock_client!(aws_sdk_dynamodb, [&broken]);
    let result = DynamoReceiptStore::new(client, "receipts")
        .put_if_absent(&receipt())
        .await;
    assert!(
        matches!(result, Err(StoreError::Unavailable(_))),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_configured_endpoint_receives_the_calls() {
    std::env::set_var("AWS_REGION", "us-east-1");
    std::env::set_var("AWS_ACCESS_KEY_ID", "test");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "test");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let client = ingest::dynamo::client_from_env(Some(&endpoint)).await;
    let call = tokio::spawn(async move { client.list_tables().send().await });
    let accepted = tokio::time::timeout(std::time::Duration::from_secs(5), listener.accept()).await;
    assert!(
        matches!(accepted, Ok(Ok(_))),
        "the call went to DYNAMODB_ENDPOINT"
    );
    call.abort();
}

#[tokio::test]
async fn the_client_bounds_retries_and_the_whole_call() {
    // Region and credentials from the environment, as in Lambda; nothing is sent.
    std::env::set_var("AWS_REGION", "us-east-1");
    std::env::set_var("AWS_ACCESS_KEY_ID", "test");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "test");
    let client = ingest::dynamo::client_from_env(None).await;
    let config = client.config();

    let retry = config.retry_config().expect("a retry configuration");
    assert_eq!(retry.max_attempts(), 3);
    let timeouts = config.timeout_config().expect("a timeout configuration");
    assert_eq!(
        timeouts.operation_timeout(),
        Some(ingest::dynamo::STORE_CALL_LIMIT)
    );
    assert!(timeouts.operation_attempt_timeout().is_some());
    assert!(timeouts.connect_timeout().is_some());
}
