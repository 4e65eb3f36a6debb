//! Building what the handler needs from the configuration, once, at init:
//! the one place `main.rs` and the tests share, so a test starts the
//! function the way Lambda does.

use std::sync::Arc;

use aws_sdk_secretsmanager::Client;

use crate::auth::{Authenticator, SecretLoadError};
use crate::config::{AuthConfig, Config, ConfigError, WEBHOOK_SECRETS_ARN};
use crate::secrets_manager::SecretsManagerSource;
use shared::config::invalid;

/// The authenticator `config` asks for. With `WEBHOOK_SECRETS_ARN`, the
/// secret is read now through the client `connect` gives (called only then),
/// and an unreadable or malformed secret fails init naming the variable.
pub async fn authenticator_for(
    config: &Config,
    connect: impl AsyncFnOnce() -> Client,
) -> Result<Authenticator, ConfigError> {
    match &config.auth {
        AuthConfig::Fixed(verifier) => Ok(Authenticator::fixed(verifier.clone())),
        AuthConfig::SecretsManager {
            arn,
            scheme,
            refresh_interval,
            max_stale,
        } => {
            let source = Arc::new(SecretsManagerSource::new(connect().await, arn));
            Authenticator::from_source(source, scheme.clone(), *refresh_interval, *max_stale)
                .await
                .map_err(|error: SecretLoadError| invalid(WEBHOOK_SECRETS_ARN, error.to_string()))
        }
    }
}
