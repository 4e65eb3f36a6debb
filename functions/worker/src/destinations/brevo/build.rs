//! The `brevo` destination as `main` builds it: a CRM reached with one
//! API key that keeps newest-wins gates and a person memory on the receipts
//! table, started as the others are (`connect::GatedTokenConfig`).

use std::time::Duration;

use shared::config::ConfigError;
use shared::newest::{GateKeySetting, GateSecret};

use super::{Brevo, BrevoSettings, BREVO_API_KEY_SECRET_ARN, BREVO_BASE_URL};
use crate::destinations::connect::{GatedTokenConfig, GatedTokenCrm, TokenSource};
use crate::destinations::memory::dynamodb::DynamoPersonMemory;
use crate::destinations::token::{CrmToken, TokenSetting};
use crate::destinations::DestinationKind;

/// `DESTINATION=brevo`'s settings and where its API key comes from.
pub type BrevoConfig = GatedTokenConfig<Brevo<DynamoPersonMemory>>;

impl GatedTokenCrm for Brevo<DynamoPersonMemory> {
    type Settings = BrevoSettings;
    const KIND: DestinationKind = DestinationKind::Brevo;
    const TOKEN_SECRET_ARN: &'static str = BREVO_API_KEY_SECRET_ARN;
    const BASE_URL: &'static str = BREVO_BASE_URL;

    fn read_settings(
        get: &dyn Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<(BrevoSettings, TokenSetting), ConfigError> {
        BrevoSettings::from_lookup(&get, allow_http)
    }

    fn gate_key(settings: &mut BrevoSettings) -> &mut GateKeySetting {
        &mut settings.gate_key
    }

    fn open(
        settings: BrevoSettings,
        key: Option<CrmToken>,
        gate_secret: GateSecret,
        memory: DynamoPersonMemory,
    ) -> Result<Self, reqwest::Error> {
        Brevo::new(settings, key, gate_secret, memory)
    }

    fn renewing(self, source: TokenSource, interval: Duration) -> Self {
        self.refreshing_from(source, interval)
    }
}
