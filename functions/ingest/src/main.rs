//! Start-up and wiring only: logging, configuration, the DynamoDB client
//! (built and connected once, at init), then the Lambda HTTP loop.

use std::convert::Infallible;

use ingest::dynamo::{client_from_env, DynamoReceiptStore};
use ingest::{Config, Ingest};
use lambda_http::{run, service_fn, Error, Request};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::logging::init();
    let config = Config::from_env().inspect_err(|error| {
        tracing::error!(error = %error, "invalid configuration; the function cannot start");
    })?;

    let store = DynamoReceiptStore::new(client_from_env().await, &config.receipts_table);
    store.warm_up().await;
    let ingest = Ingest::new(store, &config);
    let ingest = &ingest;

    run(service_fn(move |request: Request| async move {
        Ok::<_, Infallible>(ingest.handle(request).await)
    }))
    .await
}
