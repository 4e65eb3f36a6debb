//! Start-up and wiring only: logging, configuration, the webhook secrets
//! (from Secrets Manager when configured so), the DynamoDB client (built and
//! connected once, at init), then the Lambda HTTP loop.

use std::convert::Infallible;
use std::sync::Arc;

use ingest::auth::Authenticator;
use ingest::config::AuthSetting;
use ingest::dynamo::{client_from_env, DynamoReceiptStore};
use ingest::secrets::{self, SecretsManagerSource};
use ingest::{Config, Ingest};
use lambda_http::{run, service_fn, Error, Request};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::logging::init();
    let config = Config::from_env().inspect_err(|error| {
        tracing::error!(error = %error, "invalid configuration; the function cannot start");
    })?;

    let auth = match &config.auth {
        AuthSetting::Inline(policy) => Authenticator::fixed(policy.clone()),
        AuthSetting::SecretsManager {
            arn,
            mode,
            refresh_interval,
        } => {
            let client = aws_sdk_secretsmanager::Client::new(&secrets::sdk_loader().load().await);
            let source = Arc::new(SecretsManagerSource::new(client, arn));
            secrets::authenticator(source, mode, *refresh_interval)
                .await
                .inspect_err(|error| {
                    tracing::error!(error = %error, "webhook secrets unavailable; the function cannot start");
                })?
        }
    };

    let store = DynamoReceiptStore::new(
        client_from_env(config.dynamodb_endpoint.as_deref()).await,
        &config.receipts_table,
    );
    store.warm_up().await;
    let ingest = Ingest::new(store, auth, &config);
    let ingest = &ingest;

    run(service_fn(move |request: Request| async move {
        Ok::<_, Infallible>(ingest.handle(request).await)
    }))
    .await
}
