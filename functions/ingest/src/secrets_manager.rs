//! The Secrets Manager adapter for webhook secrets (`WEBHOOK_SECRETS_ARN`).
//! When it is read is `auth::refresh`'s business; the secret's value has
//! the same form as `WEBHOOK_SECRETS`: comma-separated secrets.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use aws_sdk_secretsmanager::config::retry::RetryConfig;
use aws_sdk_secretsmanager::config::timeout::TimeoutConfig;
use aws_sdk_secretsmanager::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_secretsmanager::Client;

use crate::auth::{SecretError, Source};

pub struct SecretsManagerSource {
    client: Client,
    arn: String,
}

impl SecretsManagerSource {
    pub fn new(client: Client, arn: impl Into<String>) -> Self {
        SecretsManagerSource {
            client,
            arn: arn.into(),
        }
    }
}

impl Source<String, SecretError> for SecretsManagerSource {
    fn fetch(&self) -> Pin<Box<dyn Future<Output = Result<String, SecretError>> + Send + '_>> {
        Box::pin(async move {
            match self
                .client
                .get_secret_value()
                .secret_id(&self.arn)
                .send()
                .await
            {
                Ok(output) => output.secret_string.ok_or(SecretError::NotText),
                Err(SdkError::ServiceError(failure)) => Err(SecretError::Unreadable(
                    failure
                        .err()
                        .code()
                        .unwrap_or("UnknownServiceError")
                        .to_owned(),
                )),
                Err(_) => Err(SecretError::Unreadable(
                    "Secrets Manager unreachable".to_owned(),
                )),
            }
        })
    }
}

/// The Secrets Manager client: a re-read happens while a sender waits, so
/// it is bounded like the receipt store.
pub fn sdk_loader() -> aws_config::ConfigLoader {
    aws_config::from_env()
        .retry_config(RetryConfig::standard().with_max_attempts(2))
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(1))
                .operation_timeout(Duration::from_secs(2))
                .build(),
        )
}
