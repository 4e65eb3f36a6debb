//! Start-up and wiring only: logging, configuration, the webhook secrets
//! and a browser form's bot check secret (from Secrets Manager when
//! configured so), the DynamoDB client (built and
//! connected once, at init), the routes stored in the table, then the
//! Lambda HTTP loop.

use std::convert::Infallible;

use aws_edge::routes::StoredRoutes;
use ingest::dynamo::{client_from_env, DynamoReceiptStore};
use ingest::secrets_manager;
use ingest::startup::{authenticator_for, bot_check_for};
use ingest::{Config, Ingest};
use lambda_http::{run, service_fn, Error, Request};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::logging::init();
    let config = Config::from_env().inspect_err(|error| {
        tracing::error!(error = %error, "invalid configuration; the function cannot start");
    })?;

    let auth = authenticator_for(&config, async || {
        aws_sdk_secretsmanager::Client::new(&secrets_manager::sdk_loader().load().await)
    })
    .await
    .inspect_err(|error| {
        tracing::error!(error = %error, "webhook secrets unavailable; the function cannot start");
    })?;

    let bot_check = bot_check_for(&config, async || {
        aws_sdk_secretsmanager::Client::new(&secrets_manager::sdk_loader().load().await)
    })
    .await
    .inspect_err(|error| {
        tracing::error!(error = %error, "the bot check's secret is unavailable; the function cannot start");
    })?;

    let client = client_from_env(config.dynamodb_endpoint.as_deref()).await;
    let routes = StoredRoutes::new(client.clone(), &config.receipts_table)
        .with_metrics(config.metrics.clone(), "ingest");
    let store = DynamoReceiptStore::new(client, &config.receipts_table);
    store.warm_up().await;
    let ingest = Ingest::new(store, auth, &config)
        .with_bot_check(bot_check)
        .with_routes(routes.into_force(config.routes_reread).await);
    let ingest = &ingest;

    run(service_fn(move |request: Request| async move {
        Ok::<_, Infallible>(ingest.handle(request).await)
    }))
    .await
}
