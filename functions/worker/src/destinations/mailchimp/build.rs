//! The `mailchimp` destination as `main` builds it: its API key and the
//! newest-wins gates' key, read from Secrets Manager when so configured,
//! where the API is (the key's data centre), and its memory and its call
//! slots on the receipts table.

use std::time::Duration;

use aws_sdk_secretsmanager::Client;
use shared::config::{invalid, ConfigError};

use super::{
    api_url, Mailchimp, MailchimpSettings, MAILCHIMP_API_KEY, MAILCHIMP_API_KEY_SECRET_ARN,
    MAX_CONNECTIONS,
};
use crate::destinations::connect::{client_not_built, connect_keyed};
use crate::destinations::memory::dynamodb::DynamoPersonMemory;
use crate::destinations::memory::PersonMemory;
use crate::destinations::slots::dynamodb::DynamoCallSlots;
use crate::destinations::slots::AnySlots;
use crate::destinations::token::{TokenSetting, TOKEN_REFRESH_INTERVAL};
use crate::destinations::{
    Boxed, BuildEnv, ConfiguredDestination, DestinationKind, DestinationSettings,
};

/// `DESTINATION=mailchimp`'s settings and where its API key comes from,
/// as read at init.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailchimpConfig {
    pub settings: MailchimpSettings,
    pub key: TokenSetting,
}

impl MailchimpConfig {
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<Self, ConfigError> {
        let (settings, key) = MailchimpSettings::from_lookup(get, allow_http)?;
        Ok(MailchimpConfig { settings, key })
    }
}

impl DestinationSettings for MailchimpConfig {
    fn kind(&self) -> DestinationKind {
        DestinationKind::Mailchimp
    }

    fn build<'a>(
        self: Box<Self>,
        env: BuildEnv<'a>,
    ) -> Boxed<'a, Result<ConfiguredDestination, ConfigError>> {
        Box::pin(async move {
            let memory = DynamoPersonMemory::new(env.dynamodb.clone(), env.receipts_table);
            let slots = AnySlots::Dynamo(DynamoCallSlots::new(
                env.dynamodb.clone(),
                env.receipts_table,
                "mailchimp",
                MAX_CONNECTIONS,
            ));
            let mut settings = self.settings;
            settings.gate_key = env.own_gates(settings.gate_key);
            let mailchimp = connect(
                settings,
                self.key,
                memory,
                slots,
                || env.secrets_client(),
                TOKEN_REFRESH_INTERVAL,
            )
            .await?;
            Ok(ConfiguredDestination::new(mailchimp))
        })
    }
}

/// The `mailchimp` destination, its key read as the other CRMs' tokens,
/// the gates' key read now, and its API at `MAILCHIMP_BASE_URL` or the
/// key's data centre.
pub async fn connect<M: PersonMemory>(
    settings: MailchimpSettings,
    setting: TokenSetting,
    memory: M,
    slots: AnySlots,
    client: impl Fn() -> Client,
    refresh_interval: Duration,
) -> Result<Mailchimp<M>, ConfigError> {
    let gate_key = settings.gate_key.clone();
    connect_keyed(
        Some(&gate_key),
        setting,
        MAILCHIMP_API_KEY_SECRET_ARN,
        client,
        refresh_interval,
        |mut keys| {
            let gate_secret = keys.required_gate_secret()?;
            let base_url = match settings.base_url.clone() {
                Some(url) => url,
                None => keys
                    .token
                    .as_ref()
                    .and_then(|key| api_url(key.expose()))
                    .ok_or_else(|| {
                        invalid(
                            MAILCHIMP_API_KEY,
                            "does not end in its data centre (…-us21): copy the whole key",
                        )
                    })?,
            };
            Mailchimp::new(settings, base_url, keys.token, gate_secret, memory, slots)
                .map_err(client_not_built(MAILCHIMP_API_KEY))
        },
        Mailchimp::refreshing_from,
    )
    .await
}
