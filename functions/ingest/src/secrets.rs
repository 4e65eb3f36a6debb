//! Webhook secrets kept in AWS Secrets Manager (`WEBHOOK_SECRETS_ARN`): read
//! once at init, and again only when a delivery fails authentication (see
//! `auth::SecretRefresh`). The secret's value has the same form as
//! `WEBHOOK_SECRETS`: comma-separated secrets.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_secretsmanager::config::retry::RetryConfig;
use aws_sdk_secretsmanager::config::timeout::TimeoutConfig;
use aws_sdk_secretsmanager::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_secretsmanager::Client;

use crate::auth::{Authenticator, SecretRefresh};
use crate::config::{AuthMode, ConfigError, WEBHOOK_SECRETS_ARN};

/// Why a secret could not be read. Never carries its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("could not be read ({0})")]
    Unreadable(String),
    #[error("has no text value")]
    NotText,
}

/// Where secrets are read from. Object-safe so the handler needs no extra
/// type parameter.
pub trait SecretSource: Send + Sync {
    fn fetch(&self) -> Pin<Box<dyn Future<Output = Result<String, SecretError>> + Send + '_>>;
}

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

impl SecretSource for SecretsManagerSource {
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

/// Reads the secrets now (init) and returns an authenticator that re-reads
/// them after a failed delivery, at most once per `refresh_interval`. A
/// missing, unreadable or malformed secret fails init with a message that
/// names `WEBHOOK_SECRETS_ARN`.
pub async fn authenticator(
    source: Arc<dyn SecretSource>,
    mode: &AuthMode,
    refresh_interval: Duration,
) -> Result<Authenticator, ConfigError> {
    let value = source.fetch().await.map_err(|error| ConfigError::Invalid {
        name: WEBHOOK_SECRETS_ARN,
        reason: format!("the secret {error}"),
    })?;
    let policy = mode.policy(&value, WEBHOOK_SECRETS_ARN)?;
    let refresh = SecretRefresh::new(source, mode.clone(), refresh_interval, Instant::now());
    Ok(Authenticator::refreshing(policy, refresh))
}
