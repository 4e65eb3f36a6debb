//! The `hubspot` destination as `main` builds it: its token, and the
//! newest-wins gates' key, read from Secrets Manager when so configured.

use std::time::Duration;

use aws_sdk_secretsmanager::Client;
use shared::config::ConfigError;

use super::notes::NOTE_LAG;
use super::{HubSpot, HubSpotSettings, HUBSPOT_BASE_URL, HUBSPOT_TOKEN_SECRET_ARN};
use crate::destinations::connect::{client_not_built, connect_keyed};
use crate::destinations::memory::dynamodb::DynamoPersonMemory;
use crate::destinations::memory::AnyMemory;
use crate::destinations::token::{TokenSetting, TOKEN_REFRESH_INTERVAL};
use crate::destinations::{
    Boxed, BuildEnv, ConfiguredDestination, DestinationKind, DestinationSettings,
};

/// `DESTINATION=hubspot`'s settings and where its token comes from, as
/// read at init.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubSpotConfig {
    pub settings: HubSpotSettings,
    pub token: TokenSetting,
}

impl HubSpotConfig {
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<Self, ConfigError> {
        let (settings, token) = HubSpotSettings::from_lookup(get, allow_http)?;
        Ok(HubSpotConfig { settings, token })
    }
}

impl DestinationSettings for HubSpotConfig {
    fn kind(&self) -> DestinationKind {
        DestinationKind::HubSpot
    }

    fn build<'a>(
        self: Box<Self>,
        env: BuildEnv<'a>,
    ) -> Boxed<'a, Result<ConfiguredDestination, ConfigError>> {
        Box::pin(async move {
            let mut settings = self.settings;
            settings.gate_key = settings.gate_key.map(|key| env.own_gates(key));
            let hubspot = connect(
                settings,
                self.token,
                || env.secrets_client(),
                TOKEN_REFRESH_INTERVAL,
            )
            .await?;
            // With contacts by email, each submission a note on its contact,
            // what was done recorded on the person's gate item.
            let memory = DynamoPersonMemory::new(env.dynamodb.clone(), env.receipts_table);
            Ok(ConfiguredDestination::new(
                hubspot.keeping_notes(AnyMemory::Dynamo(memory), NOTE_LAG),
            ))
        })
    }
}

/// The `hubspot` destination as `main` builds it, the token as for `http`;
/// for contacts by email, the gates' key read now.
pub async fn connect(
    settings: HubSpotSettings,
    setting: TokenSetting,
    client: impl Fn() -> Client,
    refresh_interval: Duration,
) -> Result<HubSpot, ConfigError> {
    let gate_key = settings.gate_key.clone();
    connect_keyed(
        gate_key.as_ref(),
        setting,
        HUBSPOT_TOKEN_SECRET_ARN,
        client,
        refresh_interval,
        |keys| {
            HubSpot::new(settings, keys.token, keys.gate_secret)
                .map_err(client_not_built(HUBSPOT_BASE_URL))
        },
        HubSpot::refreshing_from,
    )
    .await
}
