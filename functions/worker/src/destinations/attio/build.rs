//! The `attio` destination as `main` builds it: its token and the
//! newest-wins gates' key, read from Secrets Manager when so configured,
//! and its person memory on the receipts table.

use std::time::Duration;

use aws_sdk_secretsmanager::Client;
use shared::config::ConfigError;

use super::{Attio, AttioSettings, ATTIO_API_TOKEN_SECRET_ARN, ATTIO_BASE_URL};
use crate::destinations::connect::{client_not_built, connect_keyed};
use crate::destinations::memory::dynamodb::DynamoPersonMemory;
use crate::destinations::memory::PersonMemory;
use crate::destinations::token::{TokenSetting, TOKEN_REFRESH_INTERVAL};
use crate::destinations::{
    Boxed, BuildEnv, ConfiguredDestination, DestinationKind, DestinationSettings,
};

/// `DESTINATION=attio`'s settings and where its token comes from, as
/// read at init.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttioConfig {
    pub settings: AttioSettings,
    pub token: TokenSetting,
}

impl AttioConfig {
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<Self, ConfigError> {
        let (settings, token) = AttioSettings::from_lookup(get, allow_http)?;
        Ok(AttioConfig { settings, token })
    }
}

impl DestinationSettings for AttioConfig {
    fn kind(&self) -> DestinationKind {
        DestinationKind::Attio
    }

    fn build<'a>(
        self: Box<Self>,
        env: BuildEnv<'a>,
    ) -> Boxed<'a, Result<ConfiguredDestination, ConfigError>> {
        Box::pin(async move {
            let memory = DynamoPersonMemory::new(env.dynamodb.clone(), env.receipts_table);
            let mut settings = self.settings;
            settings.gate_key = env.own_gates(settings.gate_key);
            let attio = connect(
                settings,
                self.token,
                memory,
                || env.secrets_client(),
                TOKEN_REFRESH_INTERVAL,
            )
            .await?;
            Ok(ConfiguredDestination::new(attio))
        })
    }
}

/// The `attio` destination, its token read as the other CRMs' and the
/// gates' key read now.
pub async fn connect<M: PersonMemory>(
    settings: AttioSettings,
    setting: TokenSetting,
    memory: M,
    client: impl Fn() -> Client,
    refresh_interval: Duration,
) -> Result<Attio<M>, ConfigError> {
    let gate_key = settings.gate_key.clone();
    connect_keyed(
        Some(&gate_key),
        setting,
        ATTIO_API_TOKEN_SECRET_ARN,
        client,
        refresh_interval,
        |mut keys| {
            let gate_secret = keys.required_gate_secret()?;
            Attio::new(settings, keys.token, gate_secret, memory)
                .map_err(client_not_built(ATTIO_BASE_URL))
        },
        Attio::refreshing_from,
    )
    .await
}
