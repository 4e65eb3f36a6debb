//! The start-up every token-keyed destination shares (HubSpot, Pipedrive,
//! Mailchimp, Brevo and the next): the gates' key and the CRM's token read
//! now, the adapter built from them, and the token's source kept so that a
//! refused call can read it again. Each adapter's `build.rs` says only what
//! its vendor needs differently.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_secretsmanager::Client;
use shared::config::ConfigError;
use shared::newest::{GateKeySetting, GateSecret};

use crate::destinations::gates::gate_secret;
use crate::destinations::token::{CrmToken, Source, TokenError, TokenSetting};
use crate::secrets::token_and_source;

/// What a token-keyed adapter is built from.
pub struct StartKeys {
    /// The CRM's token, if one is configured.
    pub token: Option<CrmToken>,
    /// The gates' key, if the destination keeps gates.
    pub gate_secret: Option<GateSecret>,
}

impl StartKeys {
    /// The gates' key, for a destination that cannot work without one.
    pub fn required_gate_secret(&mut self) -> Result<GateSecret, ConfigError> {
        self.gate_secret
            .take()
            .ok_or(ConfigError::Missing("GATE_KEY or GATE_KEY_SECRET_ARN"))
    }
}

/// Where a built adapter reads its token again.
pub type TokenSource = Arc<dyn Source<CrmToken, TokenError>>;

/// Reads the keys (`token_arn` names the token's secret variable in
/// errors), builds the adapter with `build`, and, when the token came from
/// Secrets Manager, hands its source to `renewing` with `refresh_interval`.
pub async fn connect_keyed<T>(
    gate_key: Option<&GateKeySetting>,
    token: TokenSetting,
    token_arn: &'static str,
    client: impl Fn() -> Client,
    refresh_interval: Duration,
    build: impl FnOnce(StartKeys) -> Result<T, ConfigError>,
    renewing: impl FnOnce(T, TokenSource, Duration) -> T,
) -> Result<T, ConfigError> {
    let gate_secret = gate_secret(gate_key, &client).await?;
    let (token, source) = token_and_source(token, token_arn, client).await?;
    let built = build(StartKeys { token, gate_secret })?;
    Ok(match source {
        Some(source) => renewing(built, source, refresh_interval),
        None => built,
    })
}

/// The one error of a client that cannot be built (no TLS backend), named
/// after the setting the adapter calls.
pub fn client_not_built(name: &'static str) -> impl FnOnce(reqwest::Error) -> ConfigError {
    move |_| ConfigError::Invalid {
        name,
        reason: "the HTTP client could not be built".to_owned(),
    }
}
