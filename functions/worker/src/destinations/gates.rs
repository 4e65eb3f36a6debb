//! The newest-wins gates' key, for any destination that keeps one record
//! per e-mail address: read once, at init, from where its setting
//! (`shared::newest::GateKeySetting`) says.

use aws_sdk_secretsmanager::Client;
use shared::config::ConfigError;
use shared::newest::{GateKeySetting, GateSecret, GATE_KEY_SECRET_ARN};

use crate::secrets::secret_text;

/// The gates' key, when the destination keeps gates.
pub async fn gate_secret(
    setting: Option<&GateKeySetting>,
    client: impl FnOnce() -> Client,
) -> Result<Option<GateSecret>, ConfigError> {
    match setting {
        None => Ok(None),
        Some(GateKeySetting::ForDestination { stack, destination }) => {
            let stack = Box::pin(gate_secret(Some(stack), client)).await?;
            Ok(stack.map(|secret| secret.for_destination(destination)))
        }
        Some(GateKeySetting::Inline(secret)) => Ok(Some(secret.clone())),
        Some(GateKeySetting::SecretsManager(arn)) => {
            let text = secret_text(&client(), arn)
                .await
                .map_err(|error| ConfigError::Invalid {
                    name: GATE_KEY_SECRET_ARN,
                    reason: format!("the secret could not be read ({})", error.reason),
                })?;
            let secret = GateSecret::new(&text).ok_or_else(|| ConfigError::Invalid {
                name: GATE_KEY_SECRET_ARN,
                reason: format!(
                    "the secret holds fewer than {} characters",
                    GateSecret::MIN_LEN
                ),
            })?;
            Ok(Some(secret))
        }
    }
}
