//! Set-up for the integration suite: real SDK clients with the functions'
//! own retry and timeout settings, pointed at the local DynamoDB-protocol
//! servers that the README's test command starts, and fresh tables created
//! as template.yaml defines them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::{Credentials, Region};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use devtools::template;
use lambda_http::{Body, Request};
use serde_json::Value;

pub mod browser;
pub mod pipeline;

/// moto's server: DynamoDB with Streams and TTL.
pub const DYNAMODB_ENDPOINT: &str = "DYNAMODB_ENDPOINT";
/// dynalite: serialises conditional writes per key (see the race test).
pub const DYNALITE_ENDPOINT: &str = "DYNALITE_ENDPOINT";

pub const TOKEN: &str = "integration-token-0001";

/// The endpoint in `variable`, or a loud failure that says how to get one.
pub fn endpoint(variable: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| {
        panic!(
            "{variable} is not set. The integration suite needs local DynamoDB servers: \
             run it with `make test` (scripts/test.sh), which installs moto (PyPI) and \
             dynalite (npm) into .tools/ and starts them on free ports."
        )
    })
}

fn credentials() -> Credentials {
    Credentials::new("test", "test", None, None, "integration-tests")
}

/// A client with the ingest function's own retry and time limits.
pub async fn ingest_client(endpoint: &str) -> Client {
    let config = ingest::dynamo::sdk_loader()
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(credentials())
        .load()
        .await;
    Client::new(&config)
}

/// A client with the worker function's own retry and time limits.
pub async fn worker_client(endpoint: &str) -> Client {
    Client::new(&worker_sdk_config(endpoint).await)
}

/// The worker function's SDK configuration, pointed at a local server
/// with test credentials: what its destinations are built with.
pub async fn worker_sdk_config(endpoint: &str) -> aws_config::SdkConfig {
    worker::ledger::dynamodb::sdk_loader()
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(credentials())
        .load()
        .await
}

/// The SDK's default configuration, pointed at a local server with test
/// credentials: for the clients whose functions have no limits of their own.
async fn local_config(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::from_env()
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(credentials())
        .load()
        .await
}

pub async fn streams_client(endpoint: &str) -> aws_sdk_dynamodbstreams::Client {
    aws_sdk_dynamodbstreams::Client::new(&local_config(endpoint).await)
}

/// A table name no other test uses.
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "{prefix}-{}-{}-{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    )
}

fn spec(logical_id: &str) -> template::TableSpec {
    let template = template::load(&template::workspace_template()).expect("template.yaml");
    template::table_spec(&template, logical_id).expect("table in template.yaml")
}

/// Creates a fresh table shaped like `logical_id` in template.yaml.
pub async fn create_table(client: &Client, logical_id: &str) -> String {
    create(client, spec(logical_id), logical_id).await
}

/// The same table with only its key: dynalite has neither Streams nor TTL.
pub async fn create_table_key_only(client: &Client, logical_id: &str) -> String {
    let spec = template::TableSpec {
        stream_view: None,
        ttl_attribute: None,
        ..spec(logical_id)
    };
    create(client, spec, logical_id).await
}

async fn create(client: &Client, spec: template::TableSpec, logical_id: &str) -> String {
    let name = unique_name(logical_id);
    template::create_table(client, &spec, &name)
        .await
        .expect("table created");
    name
}

/// The ingest handler over `store` with the inline test secret.
pub async fn ingest_over<S: ingest::store::ReceiptStore>(
    store: S,
    config: &ingest::Config,
) -> ingest::Ingest<S> {
    let auth =
        ingest::startup::authenticator_for(config, async || -> aws_sdk_secretsmanager::Client {
            unreachable!("inline secrets")
        })
        .await
        .expect("a valid configuration");
    ingest::Ingest::new(store, auth, config)
}

/// A fresh receipts table on the server at `endpoint` and the ingest
/// handler storing into it, as most failure cases start.
pub struct ReceiptsWithIngest {
    pub client: Client,
    pub table: String,
    pub ingest: ingest::Ingest<ingest::dynamo::DynamoReceiptStore>,
}

pub async fn receipts_with_ingest(endpoint: &str) -> ReceiptsWithIngest {
    let client = ingest_client(endpoint).await;
    let table = create_table(&client, "ReceiptsTable").await;
    let ingest = ingest_over(
        ingest::dynamo::DynamoReceiptStore::new(client.clone(), &table),
        &ingest_config(&table),
    )
    .await;
    ReceiptsWithIngest {
        client,
        table,
        ingest,
    }
}

pub fn ingest_config(receipts_table: &str) -> ingest::Config {
    ingest::Config::from_lookup(|name| match name {
        "RECEIPTS_TABLE" => Some(receipts_table.to_owned()),
        "WEBHOOK_AUTH" => Some("bearer".to_owned()),
        "WEBHOOK_SECRETS" => Some(TOKEN.to_owned()),
        _ => None,
    })
    .expect("valid ingest configuration")
}

pub fn body(submission_id: &str, email: &str) -> String {
    serde_json::json!({
        "event": "form.submitted",
        "timestamp": 1_795_941_528,
        "data": {
            "submissionId": submission_id,
            "apiKey": "sf_integration_key",
            "formData": {"name": "Ada", "email": email, "message": "Hello"}
        }
    })
    .to_string()
}

/// An authenticated delivery with the given Idempotency-Key.
pub fn delivery_with_key(body: String, key: &str) -> Request {
    http::Request::builder()
        .method("POST")
        .uri("/webhooks/staticforms")
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
        .header("idempotency-key", key)
        .body(Body::from(body))
        .expect("valid request")
}

/// A correct delivery of `submission_id`.
pub fn delivery(submission_id: &str, email: &str) -> Request {
    delivery_with_key(
        body(submission_id, email),
        &format!("staticforms:form.submitted:{submission_id}"),
    )
}

/// The key of `email`'s newest-wins gate under the local gate key
/// (`devtools::local::DEMO_GATE_KEY`).
pub fn gate_of(email: &str) -> String {
    shared::newest::GateSecret::new(devtools::local::DEMO_GATE_KEY)
        .expect("the demo gate key is long enough")
        .gate_key(email)
}

/// A newest-wins gate item `gate` (e.g. [`gate_of`]), put directly.
pub async fn put_gate(client: &Client, table: &str, gate: &str, newest_at: &str, expires_at: u64) {
    client
        .put_item()
        .table_name(table)
        .item("pk", AttributeValue::S(gate.to_owned()))
        .item("newestAt", AttributeValue::S(newest_at.to_owned()))
        .item("expiresAt", AttributeValue::N(expires_at.to_string()))
        .send()
        .await
        .expect("the gate is written");
}

/// `receipt`, put directly as ingest would store it.
pub async fn store_receipt(client: &Client, table: &str, receipt: &shared::Receipt) {
    client
        .put_item()
        .table_name(table)
        .set_item(Some(
            serde_dynamo::to_item(receipt).expect("a receipt is an item"),
        ))
        .send()
        .await
        .expect("the receipt is written");
}

/// Every item of `table`. A test's own check, so it does not take the
/// functions' tight time limits (a 2 s attempt): a 1 MB page of moto's scan
/// on a loaded 2-core machine can take longer, and a check that times out
/// fails a test for nothing.
pub async fn scan(client: &Client, table: &str) -> Vec<HashMap<String, AttributeValue>> {
    let client = Client::from_conf(
        client
            .config()
            .to_builder()
            .timeout_config(
                aws_sdk_dynamodb::config::timeout::TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(5))
                    .operation_attempt_timeout(Duration::from_secs(60))
                    .operation_timeout(Duration::from_secs(120))
                    .build(),
            )
            .build(),
    );
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let page = client
            .scan()
            .table_name(table)
            .set_exclusive_start_key(start)
            .consistent_read(true)
            .send()
            .await
            .expect("scan");
        items.extend(page.items().iter().cloned());
        start = page.last_evaluated_key().cloned();
        if start.is_none() {
            return items;
        }
    }
}

pub fn text(item: &HashMap<String, AttributeValue>, name: &str) -> String {
    match item.get(name) {
        Some(AttributeValue::S(text)) => text.clone(),
        other => panic!("{name} is not a string attribute: {other:?}"),
    }
}

/// A Secrets Manager client for moto's server, bounded as ingest's is.
pub async fn secrets_client(endpoint: &str) -> aws_sdk_secretsmanager::Client {
    let config = ingest::secrets_manager::sdk_loader()
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "test",
            "test",
            None,
            None,
            "integration-tests",
        ))
        .load()
        .await;
    aws_sdk_secretsmanager::Client::new(&config)
}

/// A new secret holding `value` (name from `prefix`); its ARN. A set-up
/// step, not the code under test: it is not held to the functions' 2 s
/// bound, which moto's first Secrets Manager call (it loads its backend
/// then) can pass on a loaded machine.
pub async fn create_secret(
    client: &aws_sdk_secretsmanager::Client,
    prefix: &str,
    value: &str,
) -> String {
    let set_up = aws_sdk_secretsmanager::config::Builder::default().timeout_config(
        aws_config::timeout::TimeoutConfig::builder()
            .operation_timeout(Duration::from_secs(30))
            .operation_attempt_timeout(Duration::from_secs(30))
            .build(),
    );
    client
        .create_secret()
        .name(unique_name(prefix))
        .secret_string(value)
        .customize()
        .config_override(set_up)
        .send()
        .await
        .expect("moto creates the secret")
        .arn()
        .expect("a created secret has an ARN")
        .to_owned()
}

/// Everything on `table`'s stream so far, through `worker` as the event
/// source mapping delivers it (batches, retries from the first failure).
pub async fn drain_stream<D, L>(
    endpoint: &str,
    client: &Client,
    table: &str,
    worker: &worker::Worker<D, L>,
) -> devtools::pump::PumpReport
where
    D: worker::destinations::Destination,
    L: worker::ledger::ReceiptLedger,
{
    let mut pump =
        devtools::pump::StreamPump::for_table(client, streams_client(endpoint).await, table)
            .await
            .expect("the table has a stream");
    pump.drain(|event| invoke_worker(worker, event))
        .await
        .expect("the stream drains")
}

/// Invokes a worker the way the event source mapping does, in-process.
pub async fn invoke_worker<D, L>(
    worker: &worker::Worker<D, L>,
    event: Value,
) -> Result<Value, String>
where
    D: worker::destinations::Destination,
    L: worker::ledger::ReceiptLedger,
{
    let event = serde_json::from_value(event).map_err(|e| e.to_string())?;
    let response = worker
        .handle(event, Instant::now() + Duration::from_secs(30))
        .await;
    serde_json::to_value(response).map_err(|e| e.to_string())
}

/// A stack on moto's CloudFormation with these parameters and literal
/// outputs, as `receipts --stack` finds a deployed one. Its one resource
/// is a wait-condition handle: the outputs are what the CLI reads.
pub async fn create_stack(
    endpoint: &str,
    name: &str,
    parameters: &[(&str, &str)],
    outputs: &[(&str, &str)],
) {
    let config = local_config(endpoint).await;
    let template = serde_json::json!({
        "Parameters": parameters.iter().map(|(key, _)| (key.to_string(), serde_json::json!({"Type": "String"}))).collect::<serde_json::Map<_, _>>(),
        "Resources": {"Handle": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
        "Outputs": outputs.iter().map(|(key, value)| (key.to_string(), serde_json::json!({"Value": value}))).collect::<serde_json::Map<_, _>>(),
    });
    let mut create = aws_sdk_cloudformation::Client::new(&config)
        .create_stack()
        .stack_name(name)
        .template_body(template.to_string());
    for (key, value) in parameters {
        create = create.parameters(
            aws_sdk_cloudformation::types::Parameter::builder()
                .parameter_key(*key)
                .parameter_value(*value)
                .build(),
        );
    }
    create.send().await.expect("moto creates the stack");
}

/// Runs the `receipts` CLI binary against moto's server (DynamoDB,
/// CloudFormation, Secrets Manager), the way an operator would with the
/// standard AWS environment: exit success, stdout, stderr.
pub fn receipts_cli(env: &[(&str, &str)], args: &[&str]) -> (bool, String, String) {
    let (code, out, err) = receipts_cli_code(env, args);
    (code == Some(0), out, err)
}

/// The same, with the exit code.
pub fn receipts_cli_code(env: &[(&str, &str)], args: &[&str]) -> (Option<i32>, String, String) {
    let bin_dir = std::env::var("FUNCTION_BIN_DIR").unwrap_or_else(|_| {
        panic!("FUNCTION_BIN_DIR is not set: run the suite with `make test`, which builds the receipts CLI first")
    });
    let output = std::process::Command::new(format!("{bin_dir}/receipts"))
        .args(args)
        .env_remove("RECEIPTS_TABLE")
        .env_remove("LEADS_TABLE")
        .env_remove(shared::newest::GATE_KEY)
        .env_remove(shared::newest::GATE_KEY_SECRET_ARN)
        .env_remove("AWS_PROFILE")
        .envs(env.iter().copied())
        .env("AWS_ENDPOINT_URL", endpoint(DYNAMODB_ENDPOINT))
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .expect("the receipts binary runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The same, on a blocking thread beside the test's runtime, so that the
/// fakes a test serves on that runtime answer the CLI meanwhile.
pub async fn receipts_cli_beside(
    env: &[(&str, &str)],
    args: &[&str],
) -> (Option<i32>, String, String) {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let args: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        receipts_cli_code(&env, &args)
    })
    .await
    .expect("the receipts CLI's thread ends")
}

/// Every file under `dir`, recursively, whose name ends in `.{extension}`,
/// sorted: for the tests that read the workspace's own sources and docs.
pub fn files_under(dir: &std::path::Path, extension: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == extension) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}
