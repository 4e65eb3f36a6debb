//! The `attio` destination as `main` builds it: a CRM reached with one
//! token that keeps newest-wins gates and a person memory on the receipts
//! table, started as the others are (`connect::GatedTokenConfig`).

use std::time::Duration;

use shared::config::ConfigError;
use shared::newest::{GateKeySetting, GateSecret};

use super::{Attio, AttioSettings, ATTIO_API_TOKEN_SECRET_ARN, ATTIO_BASE_URL};
use crate::destinations::connect::{GatedTokenConfig, GatedTokenCrm, TokenSource};
use crate::destinations::memory::dynamodb::DynamoPersonMemory;
use crate::destinations::token::{CrmToken, TokenSetting};
use crate::destinations::DestinationKind;

/// `DESTINATION=attio`'s settings and where its token comes from.
pub type AttioConfig = GatedTokenConfig<Attio<DynamoPersonMemory>>;

impl GatedTokenCrm for Attio<DynamoPersonMemory> {
    type Settings = AttioSettings;
    const KIND: DestinationKind = DestinationKind::Attio;
    const TOKEN_SECRET_ARN: &'static str = ATTIO_API_TOKEN_SECRET_ARN;
    const BASE_URL: &'static str = ATTIO_BASE_URL;

    fn read_settings(
        get: &dyn Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<(AttioSettings, TokenSetting), ConfigError> {
        AttioSettings::from_lookup(&get, allow_http)
    }

    fn gate_key(settings: &mut AttioSettings) -> &mut GateKeySetting {
        &mut settings.gate_key
    }

    fn open(
        settings: AttioSettings,
        token: Option<CrmToken>,
        gate_secret: GateSecret,
        memory: DynamoPersonMemory,
    ) -> Result<Self, reqwest::Error> {
        Attio::new(settings, token, gate_secret, memory)
    }

    fn renewing(self, source: TokenSource, interval: Duration) -> Self {
        self.refreshing_from(source, interval)
    }
}
