//! The `salesforce` destination as `main` builds it: its client
//! credentials, read from Secrets Manager when so configured.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_secretsmanager::Client;
use shared::config::ConfigError;

use super::{
    ClientCredentials, CredentialsSetting, Salesforce, SalesforceSettings,
    SALESFORCE_CREDENTIALS_SECRET_ARN, SALESFORCE_LOGIN_URL,
};
use crate::destinations::token::{Source, TokenError, TOKEN_REFRESH_INTERVAL};
use crate::destinations::{
    Boxed, BuildEnv, ConfiguredDestination, DestinationKind, DestinationSettings,
};
use crate::secrets::secret_text;

/// `DESTINATION=salesforce`'s settings and where its credentials come
/// from, as read at init.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SalesforceConfig {
    pub settings: SalesforceSettings,
    pub credentials: CredentialsSetting,
}

impl SalesforceConfig {
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<Self, ConfigError> {
        let (settings, credentials) = SalesforceSettings::from_lookup(get, allow_http)?;
        Ok(SalesforceConfig {
            settings,
            credentials,
        })
    }
}

impl DestinationSettings for SalesforceConfig {
    fn kind(&self) -> DestinationKind {
        DestinationKind::Salesforce
    }

    fn build<'a>(
        self: Box<Self>,
        env: BuildEnv<'a>,
    ) -> Boxed<'a, Result<ConfiguredDestination, ConfigError>> {
        Box::pin(async move {
            let salesforce = connect(
                self.settings,
                self.credentials,
                || env.secrets_client(),
                TOKEN_REFRESH_INTERVAL,
            )
            .await?;
            Ok(ConfiguredDestination::new(salesforce))
        })
    }
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
pub async fn connect(
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
