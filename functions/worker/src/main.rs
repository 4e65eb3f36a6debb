//! Start-up and wiring only: logging, configuration, the CRM token (from
//! Secrets Manager when configured so), the SDK and HTTP clients (built and
//! connected once, at init), the destination `DESTINATION` names, then the
//! Lambda event loop for both triggers (stream batches and the schedule).

use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use serde_json::Value;
use shared::{IdempotencyKey, Lead};
use worker::config::DestinationConfig;
use worker::destinations::http::HttpCrm;
use worker::destinations::hubspot::HubSpot;
use worker::destinations::leads_table::LeadsTable;
use worker::destinations::salesforce::Salesforce;
use worker::destinations::token::TOKEN_REFRESH_INTERVAL;
use worker::destinations::{Answer, Destination, DestinationError, Upserted, Write};
use worker::invocation::deadline_from;
use worker::ledger::dynamodb::{self, sdk_loader, DynamoLedger};
use worker::secrets::{http_crm, hubspot, salesforce};
use worker::{Config, Worker};

/// The destination chosen by `DESTINATION`, as one type for the worker.
enum ConfiguredDestination {
    Http(HttpCrm),
    LeadsTable(LeadsTable),
    HubSpot(HubSpot),
    Salesforce(Salesforce),
}

impl Destination for ConfiguredDestination {
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

    async fn upsert_batch(&self, writes: &[Write<'_>], concurrency: usize) -> Vec<Answer> {
        match self {
            ConfiguredDestination::Http(crm) => crm.upsert_batch(writes, concurrency).await,
            ConfiguredDestination::LeadsTable(table) => {
                table.upsert_batch(writes, concurrency).await
            }
            ConfiguredDestination::HubSpot(hubspot) => {
                hubspot.upsert_batch(writes, concurrency).await
            }
            ConfiguredDestination::Salesforce(salesforce) => {
                salesforce.upsert_batch(writes, concurrency).await
            }
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::logging::init();
    let config = Config::from_env().inspect_err(|error| {
        tracing::error!(error = %error, "invalid configuration; the function cannot start");
    })?;

    let sdk_config = sdk_loader().load().await;
    let client = dynamodb::client(&sdk_config, config.dynamodb_endpoint.as_deref());
    let destination = match config.destination {
        DestinationConfig::Http { url, token } => {
            let secrets_client = || aws_sdk_secretsmanager::Client::new(&sdk_config);
            let crm = http_crm(url, token, secrets_client, TOKEN_REFRESH_INTERVAL)
                .await
                .inspect_err(|error| {
                    tracing::error!(error = %error, "CRM destination unavailable; the function cannot start");
                })?;
            ConfiguredDestination::Http(crm)
        }
        DestinationConfig::Hubspot { settings, token } => {
            let secrets_client = || aws_sdk_secretsmanager::Client::new(&sdk_config);
            let hubspot = hubspot(settings, token, secrets_client, TOKEN_REFRESH_INTERVAL)
                .await
                .inspect_err(|error| {
                    tracing::error!(error = %error, "HubSpot destination unavailable; the function cannot start");
                })?;
            ConfiguredDestination::HubSpot(hubspot)
        }
        DestinationConfig::Salesforce {
            settings,
            credentials,
        } => {
            let secrets_client = || aws_sdk_secretsmanager::Client::new(&sdk_config);
            let salesforce = salesforce(settings, credentials, secrets_client, TOKEN_REFRESH_INTERVAL)
                .await
                .inspect_err(|error| {
                    tracing::error!(error = %error, "Salesforce destination unavailable; the function cannot start");
                })?;
            ConfiguredDestination::Salesforce(salesforce)
        }
        DestinationConfig::Dynamodb {
            leads_table,
            lead_key,
        } => ConfiguredDestination::LeadsTable(LeadsTable::new(
            client.clone(),
            leads_table,
            lead_key,
        )),
    };
    let ledger = DynamoLedger::new(client, config.receipts_table);
    ledger.warm_up().await;
    let worker = Worker::new(destination, ledger, config.concurrency)
        .with_delivery_rules(config.delivery)
        .with_reconcile_after(config.reconcile_after)
        .with_metrics_namespace(config.metrics_namespace);
    let worker = &worker;

    run(service_fn(move |event: LambdaEvent<Value>| async move {
        let deadline = deadline_from(event.context.deadline());
        worker
            .invoke(event.payload, deadline)
            .await
            .map_err(Error::from)
    }))
    .await
}
