//! The CRM token kept in AWS Secrets Manager (`CRM_TOKEN_SECRET_ARN`), read
//! once at init. A missing or unreadable secret stops start-up with a
//! message naming the variable, never the value.

use aws_sdk_secretsmanager::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_secretsmanager::Client;

use crate::config::{ConfigError, CrmToken, TokenSetting, CRM_TOKEN_SECRET_ARN};

fn unreadable(reason: &str) -> ConfigError {
    ConfigError::Invalid {
        name: CRM_TOKEN_SECRET_ARN,
        reason: format!("the secret could not be read ({reason})"),
    }
}

/// The token the CRM gets, from the configuration or from Secrets Manager.
/// `client` is only used (and only needs to exist) for the secret form.
pub async fn resolve_token(
    setting: TokenSetting,
    client: impl FnOnce() -> Client,
) -> Result<Option<CrmToken>, ConfigError> {
    let arn = match setting {
        TokenSetting::None => return Ok(None),
        TokenSetting::Inline(token) => return Ok(Some(token)),
        TokenSetting::SecretsManager(arn) => arn,
    };
    match client().get_secret_value().secret_id(&arn).send().await {
        Ok(output) => output
            .secret_string()
            .and_then(CrmToken::new)
            .map(Some)
            .ok_or_else(|| unreadable("the secret has no text value")),
        Err(SdkError::ServiceError(failure)) => Err(unreadable(
            failure.err().code().unwrap_or("UnknownServiceError"),
        )),
        Err(_) => Err(unreadable("Secrets Manager unreachable")),
    }
}
