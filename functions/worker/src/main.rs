//! Start-up and wiring only: logging, configuration, the CRM token (from
//! Secrets Manager when configured so), the SDK and HTTP clients (built and
//! connected once, at init), then the Lambda event loop.

use aws_lambda_events::event::dynamodb::Event;
use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use worker::config::DestinationConfig;
use worker::destination::ConfiguredDestination;
use worker::dynamo::{sdk_loader, DynamoLedger};
use worker::handler::deadline_from;
use worker::http_crm::HttpCrm;
use worker::leads_table::LeadsTable;
use worker::secrets::resolve_token;
use worker::{Config, Worker};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::logging::init();
    let config = Config::from_env().inspect_err(|error| {
        tracing::error!(error = %error, "invalid configuration; the function cannot start");
    })?;

    let sdk_config = sdk_loader().load().await;
    let client = aws_sdk_dynamodb::Client::new(&sdk_config);
    let destination = match config.destination {
        DestinationConfig::Http { url, token } => {
            let secrets_client = aws_sdk_secretsmanager::Client::new(&sdk_config);
            let token = resolve_token(token, || secrets_client)
                .await
                .inspect_err(|error| {
                    tracing::error!(error = %error, "CRM token unavailable; the function cannot start");
                })?;
            ConfiguredDestination::Http(HttpCrm::new(url, token)?)
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
    let worker = Worker::new(destination, ledger, config.concurrency);
    let worker = &worker;

    run(service_fn(move |event: LambdaEvent<Event>| async move {
        let deadline = deadline_from(event.context.deadline());
        Ok::<_, Error>(worker.handle(event.payload, deadline).await)
    }))
    .await
}
