//! Building what the handler needs from the configuration, once, at init:
//! the one place `main.rs` and the tests share, so a test starts the
//! function the way Lambda does.

use std::sync::Arc;

use aws_sdk_secretsmanager::Client;

use crate::auth::{Authenticator, SecretLoadError};
use crate::browser::config::{TurnstileSecret, TURNSTILE_SECRET_ARN};
use crate::browser::turnstile::{BotCheck, Turnstile};
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

/// The bot check of a browser-posted sender whose Turnstile secret is in
/// Secrets Manager (`TURNSTILE_SECRET_ARN`), read now; `None` when there is
/// none to read (an inline secret is used as the handler is built).
pub async fn bot_check_for(
    config: &Config,
    connect: impl AsyncFnOnce() -> Client,
) -> Result<Option<Arc<dyn BotCheck>>, ConfigError> {
    let Some(browser) = &config.browser else {
        return Ok(None);
    };
    let TurnstileSecret::SecretsManager(arn) = &browser.secret else {
        return Ok(None);
    };
    let secret = aws_edge::secret_text(&connect().await, arn)
        .await
        .map_err(|error| {
            invalid(
                TURNSTILE_SECRET_ARN,
                format!("the secret could not be read ({})", error.code()),
            )
        })?;
    let check = Turnstile::new(&browser.verify_url, secret.trim()).map_err(|_| {
        invalid(
            TURNSTILE_SECRET_ARN,
            "the HTTP client could not be built".to_owned(),
        )
    })?;
    Ok(Some(Arc::new(check)))
}
