//! The `pipedrive` destination as `main` builds it: a CRM reached with one
//! token that keeps newest-wins gates and a person memory on the receipts
//! table, started as the others are (`connect::GatedTokenConfig`).

use std::time::Duration;

use shared::config::ConfigError;
use shared::newest::{GateKeySetting, GateSecret};

use super::{Pipedrive, PipedriveSettings, PIPEDRIVE_API_TOKEN_SECRET_ARN, PIPEDRIVE_BASE_URL};
use crate::destinations::connect::{GatedTokenConfig, GatedTokenCrm, TokenSource};
use crate::destinations::memory::dynamodb::DynamoPersonMemory;
use crate::destinations::token::{CrmToken, TokenSetting};
use crate::destinations::DestinationKind;

/// `DESTINATION=pipedrive`'s settings and where its token comes from.
pub type PipedriveConfig = GatedTokenConfig<Pipedrive<DynamoPersonMemory>>;

impl GatedTokenCrm for Pipedrive<DynamoPersonMemory> {
    type Settings = PipedriveSettings;
    const KIND: DestinationKind = DestinationKind::Pipedrive;
    const TOKEN_SECRET_ARN: &'static str = PIPEDRIVE_API_TOKEN_SECRET_ARN;
    const BASE_URL: &'static str = PIPEDRIVE_BASE_URL;

    fn read_settings(
        get: &dyn Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<(PipedriveSettings, TokenSetting), ConfigError> {
        PipedriveSettings::from_lookup(&get, allow_http)
    }

    fn gate_key(settings: &mut PipedriveSettings) -> &mut GateKeySetting {
        &mut settings.gate_key
    }

    fn open(
        settings: PipedriveSettings,
        token: Option<CrmToken>,
        gate_secret: GateSecret,
        memory: DynamoPersonMemory,
    ) -> Result<Self, reqwest::Error> {
        Pipedrive::new(settings, token, gate_secret, memory)
    }

    fn renewing(self, source: TokenSource, interval: Duration) -> Self {
        self.refreshing_from(source, interval)
    }
}
