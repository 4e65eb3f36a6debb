//! Start-up and wiring only: logging, configuration, the CRM token (from
//! Secrets Manager when configured so), the SDK and HTTP clients (built and
//! connected once, at init), the destinations `DESTINATION` names, the
//! routes stored in the table, the scheduled audit when configured, then the
//! Lambda event loop for every trigger (stream batches and the schedules).

use aws_edge::routes::StoredRoutes;
use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use serde_json::Value;
use worker::audit::Auditor;
use worker::destinations::gates::gate_secret;
use worker::invocation::deadline_from;
use worker::ledger::dynamodb::{sdk_loader, DynamoLedger};
use worker::notice::Notifier;
use worker::{Config, Worker};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::logging::init();
    let config = Config::from_env().inspect_err(|error| {
        tracing::error!(error = %error, "invalid configuration; the function cannot start");
    })?;

    let sdk_config = sdk_loader().load().await;
    let client = aws_edge::dynamodb_client(&sdk_config, config.dynamodb_endpoint.as_deref());
    let stack = config.destinations.set.clone();
    let mut destinations = config
        .destinations
        .build(&config.receipts_table, &sdk_config, &client)
        .await
        .inspect_err(|error| {
            tracing::error!(error = %error, "a destination is unavailable; the function cannot start");
        })?;
    let destination = destinations.remove(0);
    let stack_key = gate_secret(config.gate_key.as_ref(), || {
        aws_sdk_secretsmanager::Client::new(&sdk_config)
    })
    .await
    .inspect_err(|error| {
        tracing::error!(error = %error, "the gate key is unavailable; the function cannot start");
    })?;
    if stack_key.is_none() {
        tracing::warn!(
            "no GATE_KEY or GATE_KEY_SECRET_ARN: double submits (duplicate_window) are not recognised"
        );
    }
    let notifier = Notifier::from_setting(config.notify.as_ref(), config.allow_http, || {
        aws_sdk_secretsmanager::Client::new(&sdk_config)
    })
    .await
    .inspect_err(|error| {
        tracing::error!(error = %error, "the notice URL is unavailable; the function cannot start");
    })?;
    let routes = StoredRoutes::new(client.clone(), &config.receipts_table)
        .with_metrics(config.metrics.clone(), "worker")
        .for_destinations(stack);
    let auditor = config.audit.map(|settings| {
        let secrets = aws_sdk_secretsmanager::Client::new(&sdk_config);
        Auditor::new(
            settings,
            client.clone(),
            &config.receipts_table,
            secrets,
            config.metrics.clone(),
        )
    });
    let ledger = DynamoLedger::new(client, config.receipts_table);
    ledger.warm_up().await;
    let worker = Worker::new(destination, ledger, config.concurrency)
        .also_to(destinations)
        .with_routes(routes.into_force(config.routes_reread).await)
        .with_delivery_rules(config.delivery)
        .with_reconcile_after(config.reconcile_after)
        .with_metrics(config.metrics)
        .with_auditor(auditor)
        .with_stack_key(stack_key)
        .with_notifier(notifier);
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
