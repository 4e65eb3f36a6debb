//! What `main` builds at start-up, in one place that the tests share: the
//! destination `DESTINATION` names, with its credentials read from Secrets
//! Manager when so configured. Choosing an adapter is wiring, so the enum
//! that dispatches to them lives here, outside the `destinations` wing.

use aws_sdk_dynamodb::Client;
use shared::newest::GateSecret;
use shared::{IdempotencyKey, Lead};

use crate::config::{ConfigError, DestinationConfig};
use crate::destinations::http::HttpCrm;
use crate::destinations::hubspot::HubSpot;
use crate::destinations::leads_table::LeadsTable;
use crate::destinations::salesforce::Salesforce;
use crate::destinations::token::TOKEN_REFRESH_INTERVAL;
use crate::destinations::{Answer, CallDeadline, Destination, DestinationError, Upserted, Write};
use crate::secrets::{http_crm, hubspot, salesforce};

/// The destination chosen by `DESTINATION`, as one type for the worker.
pub enum ConfiguredDestination {
    Http(HttpCrm),
    LeadsTable(LeadsTable),
    HubSpot(HubSpot),
    Salesforce(Salesforce),
}

impl Destination for ConfiguredDestination {
    fn newest_gates(&self) -> Option<&GateSecret> {
        match self {
            ConfiguredDestination::Http(crm) => crm.newest_gates(),
            ConfiguredDestination::LeadsTable(table) => table.newest_gates(),
            ConfiguredDestination::HubSpot(hubspot) => hubspot.newest_gates(),
            ConfiguredDestination::Salesforce(salesforce) => salesforce.newest_gates(),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            ConfiguredDestination::Http(crm) => crm.name(),
            ConfiguredDestination::LeadsTable(table) => table.name(),
            ConfiguredDestination::HubSpot(hubspot) => hubspot.name(),
            ConfiguredDestination::Salesforce(salesforce) => salesforce.name(),
        }
    }

    async fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> Result<Upserted, DestinationError> {
        match self {
            ConfiguredDestination::Http(crm) => crm.upsert(lead, key).await,
            ConfiguredDestination::LeadsTable(table) => table.upsert(lead, key).await,
            ConfiguredDestination::HubSpot(hubspot) => hubspot.upsert(lead, key).await,
            ConfiguredDestination::Salesforce(salesforce) => salesforce.upsert(lead, key).await,
        }
    }

    async fn upsert_batch(
        &self,
        writes: &[Write<'_>],
        concurrency: usize,
        deadline: CallDeadline,
    ) -> Vec<Answer> {
        match self {
            ConfiguredDestination::Http(crm) => {
                crm.upsert_batch(writes, concurrency, deadline).await
            }
            ConfiguredDestination::LeadsTable(table) => {
                table.upsert_batch(writes, concurrency, deadline).await
            }
            ConfiguredDestination::HubSpot(hubspot) => {
                hubspot.upsert_batch(writes, concurrency, deadline).await
            }
            ConfiguredDestination::Salesforce(salesforce) => {
                salesforce.upsert_batch(writes, concurrency, deadline).await
            }
        }
    }
}

/// The configured destination, its credentials read once. `dynamodb` is the
/// client of the leads table (and the receipts table).
pub async fn destination_for(
    destination: DestinationConfig,
    receipts_table: &str,
    sdk_config: &aws_config::SdkConfig,
    dynamodb: &Client,
) -> Result<ConfiguredDestination, ConfigError> {
    let secrets_client = || aws_sdk_secretsmanager::Client::new(sdk_config);
    Ok(match destination {
        DestinationConfig::Http { url, token } => ConfiguredDestination::Http(
            http_crm(url, token, secrets_client, TOKEN_REFRESH_INTERVAL).await?,
        ),
        DestinationConfig::Hubspot { settings, token } => ConfiguredDestination::HubSpot(
            hubspot(settings, token, secrets_client, TOKEN_REFRESH_INTERVAL).await?,
        ),
        DestinationConfig::Salesforce {
            settings,
            credentials,
        } => ConfiguredDestination::Salesforce(
            salesforce(
                settings,
                credentials,
                secrets_client,
                TOKEN_REFRESH_INTERVAL,
            )
            .await?,
        ),
        DestinationConfig::Dynamodb(settings) => ConfiguredDestination::LeadsTable(
            LeadsTable::new(
                dynamodb.clone(),
                settings.table,
                settings.lead_key,
                receipts_table,
            )
            .expiring_after(settings.retention),
        ),
    })
}
