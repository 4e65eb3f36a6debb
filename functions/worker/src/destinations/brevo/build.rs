//! The `brevo` destination as `main` builds it: its API key and the
//! newest-wins gates' key, read from Secrets Manager when so configured,
//! and its person memory on the receipts table.

use std::time::Duration;

use aws_sdk_secretsmanager::Client;
use shared::config::ConfigError;

use super::{Brevo, BrevoSettings, BREVO_API_KEY_SECRET_ARN, BREVO_BASE_URL};
use crate::destinations::connect::{client_not_built, connect_keyed};
use crate::destinations::memory::dynamodb::DynamoPersonMemory;
use crate::destinations::memory::PersonMemory;
use crate::destinations::token::{TokenSetting, TOKEN_REFRESH_INTERVAL};
use crate::destinations::{
    Boxed, BuildEnv, ConfiguredDestination, DestinationKind, DestinationSettings,
};

/// `DESTINATION=brevo`'s settings and where its API key comes from, as
/// read at init.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrevoConfig {
    pub settings: BrevoSettings,
    pub key: TokenSetting,
}

impl BrevoConfig {
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<Self, ConfigError> {
        let (settings, key) = BrevoSettings::from_lookup(get, allow_http)?;
        Ok(BrevoConfig { settings, key })
    }
}

impl DestinationSettings for BrevoConfig {
    fn kind(&self) -> DestinationKind {
        DestinationKind::Brevo
    }

    fn build<'a>(
        self: Box<Self>,
        env: BuildEnv<'a>,
    ) -> Boxed<'a, Result<ConfiguredDestination, ConfigError>> {
        Box::pin(async move {
            let memory = DynamoPersonMemory::new(env.dynamodb.clone(), env.receipts_table);
            let mut settings = self.settings;
            settings.gate_key = env.own_gates(settings.gate_key);
            let brevo = connect(
                settings,
                self.key,
                memory,
                || env.secrets_client(),
                TOKEN_REFRESH_INTERVAL,
            )
            .await?;
            Ok(ConfiguredDestination::new(brevo))
        })
    }
}

/// The `brevo` destination, its key read as the other CRMs' tokens and the
/// gates' key read now.
pub async fn connect<M: PersonMemory>(
    settings: BrevoSettings,
    setting: TokenSetting,
    memory: M,
    client: impl Fn() -> Client,
    refresh_interval: Duration,
) -> Result<Brevo<M>, ConfigError> {
    let gate_key = settings.gate_key.clone();
    connect_keyed(
        Some(&gate_key),
        setting,
        BREVO_API_KEY_SECRET_ARN,
        client,
        refresh_interval,
        |mut keys| {
            let gate_secret = keys.required_gate_secret()?;
            Brevo::new(settings, keys.token, gate_secret, memory)
                .map_err(client_not_built(BREVO_BASE_URL))
        },
        Brevo::refreshing_from,
    )
    .await
}
