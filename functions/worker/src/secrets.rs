//! CRM credentials kept in AWS Secrets Manager: a token
//! (`CRM_TOKEN_SECRET_ARN`, `HUBSPOT_TOKEN_SECRET_ARN`), read at init and
//! again when the CRM refuses it (see `destinations::token`), or Salesforce's client
//! credentials (`SALESFORCE_CREDENTIALS_SECRET_ARN`) and the newest-wins
//! gates' key (`GATE_KEY_SECRET_ARN`), read at init. A missing
//! or unreadable secret stops start-up with a message naming the variable,
//! never the value.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_secretsmanager::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_secretsmanager::Client;
use shared::newest::{GateSecret, GATE_KEY_SECRET_ARN};

use crate::config::{
    ConfigError, CredentialsSetting, TokenSetting, CRM_TOKEN_SECRET_ARN, CRM_URL, HUBSPOT_BASE_URL,
    HUBSPOT_TOKEN_SECRET_ARN, SALESFORCE_CREDENTIALS_SECRET_ARN, SALESFORCE_LOGIN_URL,
};
use crate::destinations::http::HttpCrm;
use crate::destinations::hubspot::{GateKeySetting, HubSpot, HubSpotSettings};
use crate::destinations::salesforce::{ClientCredentials, Salesforce, SalesforceSettings};
use crate::destinations::token::{CrmToken, Source, TokenError};

pub struct SecretsManagerToken {
    client: Client,
    arn: String,
}

impl SecretsManagerToken {
    pub fn new(client: Client, arn: impl Into<String>) -> Self {
        SecretsManagerToken {
            client,
            arn: arn.into(),
        }
    }
}

/// The text value of the secret `arn`; errors carry the service's error
/// code, never the value.
async fn secret_text(client: &Client, arn: &str) -> Result<String, TokenError> {
    match client.get_secret_value().secret_id(arn).send().await {
        Ok(output) => output
            .secret_string
            .ok_or_else(|| TokenError::malformed("the secret has no text value")),
        Err(SdkError::ServiceError(failure)) => Err(TokenError::unreadable(
            failure.err().code().unwrap_or("UnknownServiceError"),
        )),
        Err(_) => Err(TokenError::unreadable("Secrets Manager unreachable")),
    }
}

impl Source<CrmToken, TokenError> for SecretsManagerToken {
    fn fetch(&self) -> Pin<Box<dyn Future<Output = Result<CrmToken, TokenError>> + Send + '_>> {
        Box::pin(async move {
            let text = secret_text(&self.client, &self.arn).await?;
            CrmToken::new(&text)
                .ok_or_else(|| TokenError::malformed("the secret has no text value"))
        })
    }
}

/// The token the CRM gets at start-up, from the configuration or from
/// Secrets Manager. `client` is only used (and only needs to exist) for the
/// secret form.
pub async fn resolve_token(
    setting: TokenSetting,
    client: impl FnOnce() -> Client,
) -> Result<Option<CrmToken>, ConfigError> {
    match setting {
        TokenSetting::None => Ok(None),
        TokenSetting::Inline(token) => Ok(Some(token)),
        TokenSetting::SecretsManager(arn) => SecretsManagerToken::new(client(), arn)
            .fetch()
            .await
            .map(Some)
            .map_err(|error| ConfigError::Invalid {
                name: CRM_TOKEN_SECRET_ARN,
                reason: format!("the secret could not be read ({})", error.reason),
            }),
    }
}

/// The token read now, and, when it lives in Secrets Manager (`arn_name`),
/// where to read it again.
async fn token_and_source(
    setting: TokenSetting,
    arn_name: &'static str,
    client: impl FnOnce() -> Client,
) -> Result<
    (
        Option<CrmToken>,
        Option<Arc<dyn Source<CrmToken, TokenError>>>,
    ),
    ConfigError,
> {
    match setting {
        TokenSetting::None => Ok((None, None)),
        TokenSetting::Inline(token) => Ok((Some(token), None)),
        TokenSetting::SecretsManager(arn) => {
            let source = SecretsManagerToken::new(client(), arn);
            let token = source.fetch().await.map_err(|error| ConfigError::Invalid {
                name: arn_name,
                reason: format!("the secret could not be read ({})", error.reason),
            })?;
            Ok((Some(token), Some(Arc::new(source))))
        }
    }
}

/// The `http` destination as `main` builds it: the token read now, and, when
/// it lives in Secrets Manager, read again after a 401/403 at most once per
/// `refresh_interval`.
pub async fn http_crm(
    url: String,
    setting: TokenSetting,
    client: impl FnOnce() -> Client,
    refresh_interval: Duration,
) -> Result<HttpCrm, ConfigError> {
    let (token, source) = token_and_source(setting, CRM_TOKEN_SECRET_ARN, client).await?;
    let crm = HttpCrm::new(url, token).map_err(|_| ConfigError::Invalid {
        name: CRM_URL,
        reason: "the HTTP client could not be built".to_owned(),
    })?;
    Ok(match source {
        Some(source) => crm.refreshing_from(source, refresh_interval),
        None => crm,
    })
}

/// The `hubspot` destination as `main` builds it, the token as for `http`;
/// for contacts by email, the gates' key read now.
pub async fn hubspot(
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

/// Salesforce's client credentials in a Secrets Manager secret:
/// `{"client_id": "...", "client_secret": "..."}`.
pub struct SecretsManagerCredentials {
    client: Client,
    arn: String,
}

impl Source<ClientCredentials, TokenError> for SecretsManagerCredentials {
    fn fetch(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<ClientCredentials, TokenError>> + Send + '_>> {
        Box::pin(async move {
            let text = secret_text(&self.client, &self.arn).await?;
            ClientCredentials::from_secret_json(&text).map_err(TokenError::malformed)
        })
    }
}

/// The `salesforce` destination as `main` builds it: the client credentials
/// read now (from Secrets Manager when configured so, and then read again
/// when the token endpoint refuses them, at most once per
/// `refresh_interval`); the first call logs in. A secret that is missing or
/// malformed stops init, naming the variable and never a value.
pub async fn salesforce(
    settings: SalesforceSettings,
    setting: CredentialsSetting,
    client: impl FnOnce() -> Client,
    refresh_interval: Duration,
) -> Result<Salesforce, ConfigError> {
    let built = |credentials| {
        Salesforce::new(settings, credentials).map_err(|_| ConfigError::Invalid {
            name: SALESFORCE_LOGIN_URL,
            reason: "the HTTP client could not be built".to_owned(),
        })
    };
    match setting {
        CredentialsSetting::Inline(credentials) => built(credentials),
        CredentialsSetting::SecretsManager(arn) => {
            let source = SecretsManagerCredentials {
                client: client(),
                arn,
            };
            let credentials = source.fetch().await.map_err(|error| ConfigError::Invalid {
                name: SALESFORCE_CREDENTIALS_SECRET_ARN,
                reason: format!("the secret could not be used ({})", error.reason),
            })?;
            Ok(built(credentials)?.refreshing_credentials_from(Arc::new(source), refresh_interval))
        }
    }
}
