//! The Secrets Manager adapter for webhook secrets (`WEBHOOK_SECRETS_ARN`).
//! When it is read is `auth::refresh`'s business; the secret's value has
//! the same form as `WEBHOOK_SECRETS`: comma-separated secrets.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use aws_edge::{CallLimits, SecretReadError};
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
            aws_edge::secret_text(&self.client, &self.arn)
                .await
                .map_err(|error| match error {
                    SecretReadError::NoText => SecretError::NotText,
                    SecretReadError::Call(_) => SecretError::Unreadable(error.code().to_owned()),
                })
        })
    }
}

/// The Secrets Manager client: a re-read happens while a sender waits, so
/// it is bounded like the receipt store.
pub fn sdk_loader() -> aws_config::ConfigLoader {
    aws_edge::sdk_loader(CallLimits {
        attempts: 2,
        backoff: None,
        connect: Duration::from_secs(1),
        attempt: None,
        call: Duration::from_secs(2),
    })
}
