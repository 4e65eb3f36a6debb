//! The `zoho` destination as `main` builds it: the Self Client's
//! credentials and the gates' key, read from Secrets Manager when so
//! configured; the shared access token, the person memory on the receipts
//! table.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use aws_sdk_secretsmanager::Client;
use shared::config::ConfigError;
use shared::refresh::Refreshing;

use super::{
    CredentialsSetting, Zoho, ZohoCredentials, ZohoSettings, ZOHO_API_URL,
    ZOHO_CREDENTIALS_SECRET_ARN,
};
use crate::destinations::gates::gate_secret;
use crate::destinations::memory::dynamodb::DynamoPersonMemory;
use crate::destinations::memory::PersonMemory;
use crate::destinations::shared_token::dynamodb::DynamoTokenStore;
use crate::destinations::shared_token::seal::TokenSeal;
use crate::destinations::shared_token::AnyTokenStore;
use crate::destinations::token::{Source, TokenError};
use crate::destinations::{
    Boxed, BuildEnv, ConfiguredDestination, DestinationKind, DestinationSettings,
};
use crate::secrets::secret_text;

/// What the credentials are called in log lines.
const CREDENTIALS: &str = "Zoho credentials";

/// `DESTINATION=zoho`'s settings and where its credentials come from, as
/// read at init.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZohoConfig {
    pub settings: ZohoSettings,
    pub credentials: CredentialsSetting,
}

impl ZohoConfig {
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<Self, ConfigError> {
        let (settings, credentials) = ZohoSettings::from_lookup(get, allow_http)?;
        Ok(ZohoConfig {
            settings,
            credentials,
        })
    }
}

impl DestinationSettings for ZohoConfig {
    fn kind(&self) -> DestinationKind {
        DestinationKind::Zoho
    }

    fn build<'a>(
        self: Box<Self>,
        env: BuildEnv<'a>,
    ) -> Boxed<'a, Result<ConfiguredDestination, ConfigError>> {
        Box::pin(async move {
            let memory = DynamoPersonMemory::new(env.dynamodb.clone(), env.receipts_table);
            let stack_key = gate_secret(Some(&self.settings.token_key), || env.secrets_client())
                .await?
                .ok_or(ConfigError::Missing("GATE_KEY or GATE_KEY_SECRET_ARN"))?;
            let store = AnyTokenStore::Dynamo(DynamoTokenStore::new(
                env.dynamodb.clone(),
                env.receipts_table,
                "zoho",
                TokenSeal::new(&stack_key, "zoho"),
            ));
            let mut settings = self.settings;
            settings.gate_key = settings.gate_key.map(|key| env.own_gates(key));
            let zoho = connect(settings, self.credentials, store, memory, || {
                env.secrets_client()
            })
            .await?;
            Ok(ConfiguredDestination::new(zoho))
        })
    }
}

/// The Self Client's credentials in a Secrets Manager secret.
pub struct SecretsManagerCredentials {
    client: Client,
    arn: String,
}

impl Source<ZohoCredentials, TokenError> for SecretsManagerCredentials {
    fn fetch(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<ZohoCredentials, TokenError>> + Send + '_>> {
        Box::pin(async move {
            let text = secret_text(&self.client, &self.arn).await?;
            ZohoCredentials::from_secret_json(&text).map_err(TokenError::malformed)
        })
    }
}

/// The `zoho` destination: its credentials read now (and again when the
/// token endpoint refuses them), the gates' key read now when keyed by
/// e-mail.
pub async fn connect<M: PersonMemory>(
    settings: ZohoSettings,
    setting: CredentialsSetting,
    store: AnyTokenStore,
    memory: M,
    client: impl Fn() -> Client,
) -> Result<Zoho<M>, ConfigError> {
    let gate_secret = gate_secret(settings.gate_key.as_ref(), &client).await?;
    let credentials = match setting {
        CredentialsSetting::Inline(credentials) => Refreshing::fixed(credentials, CREDENTIALS),
        CredentialsSetting::SecretsManager(arn) => {
            let source = SecretsManagerCredentials {
                client: client(),
                arn,
            };
            let credentials = source.fetch().await.map_err(|error| ConfigError::Invalid {
                name: ZOHO_CREDENTIALS_SECRET_ARN,
                reason: format!("the secret could not be used ({})", error.reason),
            })?;
            Refreshing::from_source(credentials, Arc::new(source), CREDENTIALS)
        }
    };
    Zoho::new(settings, credentials, store, gate_secret, memory).map_err(|_| ConfigError::Invalid {
        name: ZOHO_API_URL,
        reason: "the HTTP client could not be built".to_owned(),
    })
}
