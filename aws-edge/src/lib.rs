//! The AWS edge every binary shares, so each says only what differs (its
//! limits, its table, its secret's meaning):
//!
//! - [`sdk_loader`]: the SDK configuration from the environment, with
//!   bounded retries and time limits, so a stuck call ends while there is
//!   still time to answer or report it;
//! - [`dynamodb_client`] at a configured endpoint, and [`warm_up`], which
//!   opens its connection during init;
//! - [`secret_text`]: a Secrets Manager secret's text, with errors that
//!   carry the service's code and never the value;
//! - [`routes`]: the routes `receipts routes apply` stores, kept in force
//!   by both functions and read again while they run;
//! - [`item_size`]: an item's size as DynamoDB counts it, and its limit.
//!
//! `shared` holds the rules and knows no AWS; this crate holds no rules.

use std::time::Duration;

pub mod item_size;
pub mod routes;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_sdk_secretsmanager::config::http::HttpResponse;
use aws_sdk_secretsmanager::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_secretsmanager::operation::get_secret_value::GetSecretValueError;

/// How long and how often one SDK call may try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// The first and the longest wait between attempts; the SDK's own when
    /// `None`.
    pub backoff: Option<(Duration, Duration)>,
    pub connect: Duration,
    /// One attempt's limit; only the whole call's when `None`.
    pub attempt: Option<Duration>,
    /// The whole call, retries included.
    pub call: Duration,
}

/// The SDK configuration from the environment (region, credentials, any
/// `AWS_ENDPOINT_URL*` override), bounded by `limits`. Tests add an endpoint
/// and credentials to it.
pub fn sdk_loader(limits: CallLimits) -> aws_config::ConfigLoader {
    let mut retry = RetryConfig::standard().with_max_attempts(limits.attempts);
    if let Some((initial, max)) = limits.backoff {
        retry = retry.with_initial_backoff(initial).with_max_backoff(max);
    }
    let mut timeouts = TimeoutConfig::builder()
        .connect_timeout(limits.connect)
        .operation_timeout(limits.call);
    if let Some(attempt) = limits.attempt {
        timeouts = timeouts.operation_attempt_timeout(attempt);
    }
    aws_config::from_env()
        .retry_config(retry)
        .timeout_config(timeouts.build())
}

/// The DynamoDB client of `sdk_config`, at `endpoint` when one is
/// configured (`DYNAMODB_ENDPOINT`); other services keep AWS's endpoints.
pub fn dynamodb_client(
    sdk_config: &aws_config::SdkConfig,
    endpoint: Option<&str>,
) -> aws_sdk_dynamodb::Client {
    let mut config = aws_sdk_dynamodb::config::Builder::from(sdk_config);
    if let Some(endpoint) = endpoint {
        config = config.endpoint_url(endpoint);
    }
    aws_sdk_dynamodb::Client::from_conf(config.build())
}

/// Opens the connection (DNS, TCP, TLS) during init, which runs with more
/// CPU than a 128 MB invocation, instead of on the first request. The
/// template grants `DescribeTable` on `table` for it; the answer, and any
/// failure, are not used: the first real call reports its own.
pub async fn warm_up(client: &aws_sdk_dynamodb::Client, table: &str) {
    let _ = client.describe_table().table_name(table).send().await;
}

/// Why a secret's text could not be read. Neither form holds the value.
#[derive(Debug, thiserror::Error)]
pub enum SecretReadError {
    #[error("the secret has no text value")]
    NoText,
    #[error("the secret could not be read ({})", code_of(.0))]
    Call(Box<SdkError<GetSecretValueError, HttpResponse>>),
}

impl SecretReadError {
    /// The service's error code, or what kept the call from reaching it:
    /// short enough for a log field or a one-line error.
    pub fn code(&self) -> &str {
        match self {
            SecretReadError::NoText => "NoTextValue",
            SecretReadError::Call(error) => code_of(error),
        }
    }
}

fn code_of(error: &SdkError<GetSecretValueError, HttpResponse>) -> &str {
    match error {
        SdkError::ServiceError(failure) => failure.err().code().unwrap_or("UnknownServiceError"),
        _ => "Secrets Manager unreachable",
    }
}

/// The text value of the secret `arn`.
pub async fn secret_text(
    client: &aws_sdk_secretsmanager::Client,
    arn: &str,
) -> Result<String, SecretReadError> {
    let output = client
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .map_err(|error| SecretReadError::Call(Box::new(error)))?;
    output.secret_string.ok_or(SecretReadError::NoText)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_secretsmanager::operation::get_secret_value::GetSecretValueOutput;
    use aws_sdk_secretsmanager::types::error::ResourceNotFoundException;
    use aws_sdk_secretsmanager::Client;
    use aws_smithy_mocks::{mock, mock_client};

    const ARN: &str = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:crm-token";

    #[tokio::test]
    async fn a_secret_is_read_as_its_text() {
        let read = mock!(Client::get_secret_value)
            .match_requests(|request| request.secret_id() == Some(ARN))
            .then_output(|| {
                GetSecretValueOutput::builder()
                    .secret_string("the-value")
                    .build()
            });
        let client = mock_client!(aws_sdk_secretsmanager, [&read]);
        assert_eq!(secret_text(&client, ARN).await.unwrap(), "the-value");
    }

    #[tokio::test]
    async fn a_binary_secret_has_no_text() {
        let read = mock!(Client::get_secret_value).then_output(|| {
            GetSecretValueOutput::builder()
                .secret_binary(aws_sdk_secretsmanager::primitives::Blob::new("the-value"))
                .build()
        });
        let client = mock_client!(aws_sdk_secretsmanager, [&read]);
        let error = secret_text(&client, ARN).await.unwrap_err();
        assert_eq!(error.code(), "NoTextValue");
        assert!(!error.to_string().contains("the-value"), "{error}");
    }

    #[tokio::test]
    async fn a_refused_read_is_said_by_the_service_code_alone() {
        let read = mock!(Client::get_secret_value).then_error(|| {
            GetSecretValueError::ResourceNotFoundException(
                ResourceNotFoundException::builder()
                    .message(format!("Secrets Manager can't find {ARN}"))
                    .meta(
                        aws_sdk_secretsmanager::error::ErrorMetadata::builder()
                            .code("ResourceNotFoundException")
                            .build(),
                    )
                    .build(),
            )
        });
        let client = mock_client!(aws_sdk_secretsmanager, [&read]);
        let error = secret_text(&client, ARN).await.unwrap_err();
        assert_eq!(error.code(), "ResourceNotFoundException");
        assert_eq!(
            error.to_string(),
            "the secret could not be read (ResourceNotFoundException)"
        );
    }

    #[tokio::test]
    async fn the_loader_applies_every_limit() {
        let limits = CallLimits {
            attempts: 3,
            backoff: Some((Duration::from_millis(50), Duration::from_millis(500))),
            connect: Duration::from_secs(1),
            attempt: Some(Duration::from_secs(2)),
            call: Duration::from_secs(5),
        };
        let config = sdk_loader(limits)
            .region(aws_config::Region::new("eu-west-1"))
            .load()
            .await;
        let retry = config.retry_config().unwrap();
        assert_eq!(retry.max_attempts(), 3);
        assert_eq!(retry.initial_backoff(), Duration::from_millis(50));
        assert_eq!(retry.max_backoff(), Duration::from_millis(500));
        let timeouts = config.timeout_config().unwrap();
        assert_eq!(timeouts.connect_timeout(), Some(Duration::from_secs(1)));
        assert_eq!(
            timeouts.operation_attempt_timeout(),
            Some(Duration::from_secs(2))
        );
        assert_eq!(timeouts.operation_timeout(), Some(Duration::from_secs(5)));
    }

    /// The client calls the configured endpoint, and `warm_up` calls it at
    /// once: a listener on loopback sees its `DescribeTable`.
    #[tokio::test]
    async fn the_client_and_its_warm_up_go_to_the_configured_endpoint() {
        use aws_sdk_dynamodb::config::{Credentials, SharedCredentialsProvider};
        use tokio::io::AsyncReadExt;

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let config = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("eu-west-1"))
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                "local", "local", None, None, "test",
            )))
            .build();
        let client = dynamodb_client(&config, Some(&endpoint));
        let call = tokio::spawn(async move { warm_up(&client, "receipts").await });

        let (mut socket, _) = tokio::time::timeout(Duration::from_secs(10), listener.accept())
            .await
            .expect("the client called the endpoint")
            .unwrap();
        let mut request = Vec::new();
        let mut chunk = [0u8; 4096];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            let read = socket.read(&mut chunk).await.unwrap();
            assert!(read > 0, "the connection closed before the request");
            request.extend_from_slice(&chunk[..read]);
        }
        call.abort();
        let request = String::from_utf8_lossy(&request).to_lowercase();
        assert!(
            request.contains("x-amz-target: dynamodb_20120810.describetable"),
            "{request}"
        );
    }
}
