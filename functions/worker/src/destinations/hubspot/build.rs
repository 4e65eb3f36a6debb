//! The `hubspot` destination as `main` builds it: its token, and the
//! newest-wins gates' key, read from Secrets Manager when so configured.

use std::time::Duration;

use aws_sdk_secretsmanager::Client;
use shared::config::ConfigError;
use shared::newest::{GateSecret, GATE_KEY_SECRET_ARN};

use super::{GateKeySetting, HubSpot, HubSpotSettings, HUBSPOT_BASE_URL, HUBSPOT_TOKEN_SECRET_ARN};
use crate::destinations::token::TokenSetting;
use crate::secrets::{secret_text, token_and_source};

/// The `hubspot` destination as `main` builds it, the token as for `http`;
/// for contacts by email, the gates' key read now.
pub async fn connect(
    settings: HubSpotSettings,
    setting: TokenSetting,
    client: impl Fn() -> Client,
    refresh_interval: Duration,
) -> Result<HubSpot, ConfigError> {
    let gate_secret = match &settings.gate_key {
        None => None,
        Some(GateKeySetting::Inline(secret)) => Some(secret.clone()),
        Some(GateKeySetting::SecretsManager(arn)) => {
            let text = secret_text(&client(), arn)
                .await
                .map_err(|error| ConfigError::Invalid {
                    name: GATE_KEY_SECRET_ARN,
                    reason: format!("the secret could not be read ({})", error.reason),
                })?;
            Some(GateSecret::new(&text).ok_or_else(|| ConfigError::Invalid {
                name: GATE_KEY_SECRET_ARN,
                reason: format!(
                    "the secret holds fewer than {} characters",
                    GateSecret::MIN_LEN
                ),
            })?)
        }
    };
    let (token, source) = token_and_source(setting, HUBSPOT_TOKEN_SECRET_ARN, client).await?;
    let hubspot = HubSpot::new(settings, token, gate_secret).map_err(|_| ConfigError::Invalid {
        name: HUBSPOT_BASE_URL,
        reason: "the HTTP client could not be built".to_owned(),
    })?;
    Ok(match source {
        Some(source) => hubspot.refreshing_from(source, refresh_interval),
        None => hubspot,
    })
}
