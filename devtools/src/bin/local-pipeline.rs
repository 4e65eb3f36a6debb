//! The whole pipeline on one machine, with no cloud: the real `ingest` and
//! `worker` binaries run against a local Lambda Runtime API, behind a local
//! HTTP API, with the receipts stream pumped from a local DynamoDB-protocol
//! server to the worker, and a CRM stub as the destination (or, with
//! `DESTINATION=<a CRM>`, that CRM's fake: `devtools::fakes`). A reconciliation
//! pass runs every few seconds, as the schedule does in AWS (every
//! `ReconcileEveryMinutes`), with local timings short enough to watch.
//! `SENDER=<name>` (any of `shared::Sender::ALL`) takes that sender's
//! deliveries at `/webhooks/<sender>` instead of Static Forms'. Started by
//! `make run`; Ctrl-C stops it and every process it started.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use devtools::fakes::LocalCrm;
use devtools::http_api::{answer_from, event_for};
use devtools::lambda_emulator::LambdaEmulator;
use devtools::local::{self, LEADS_TABLE, RECEIPTS_TABLE};
use devtools::pump::StreamPump;
use devtools::server::{lock, Listener};

const INGEST_TIMEOUT: Duration = Duration::from_secs(10);
const WORKER_TIMEOUT: Duration = Duration::from_secs(60);

/// Local timings, so a newcomer sees a lead arrive seconds after the CRM
/// recovers: a pass every 5 s (`RECONCILE_EVERY_SECONDS`) takes receipts
/// older than 10 s, retried 1 s to 15 s apart. In AWS: 5 minutes, 10
/// minutes, and 2 minutes to 4 hours.
const LOCAL_DELIVERY_TIMINGS: [(&str, &str); 3] = [
    ("RECONCILE_AFTER_SECONDS", "10"),
    ("REDELIVERY_BASE_SECONDS", "1"),
    ("REDELIVERY_MAX_SECONDS", "15"),
];

/// Both functions read the routes again every 5 s here (5 minutes in AWS).
const LOCAL_ROUTES_REREAD_SECONDS: &str = "5";

fn setting(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

fn port(name: &str, default: u16) -> Result<u16, String> {
    setting(name, &default.to_string())
        .parse()
        .map_err(|_| format!("{name} must be a port number"))
}

#[tokio::main]
async fn main() {
    if let Err(error) = run().await {
        eprintln!("local-pipeline: {error}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), String> {
    let dynamodb_endpoint = std::env::var("DYNAMODB_ENDPOINT").map_err(|_| {
        "DYNAMODB_ENDPOINT is not set; start the pipeline with `make run`".to_owned()
    })?;
    let bin_dir = PathBuf::from(setting("FUNCTION_BIN_DIR", "target/debug"));
    let webhook_port = port("WEBHOOK_PORT", 9000)?;
    let crm_port = port("CRM_PORT", 9001)?;
    let reconcile_every = Duration::from_secs(
        setting("RECONCILE_EVERY_SECONDS", "5")
            .parse()
            .map_err(|_| "RECONCILE_EVERY_SECONDS must be a whole number".to_owned())?,
    );

    let sender = shared::Sender::parse(&setting("SENDER", "staticforms"))
        .ok_or_else(|| format!("SENDER must be {}", shared::Sender::names()))?;
    let webhook_path = format!("/webhooks/{}", sender.name());
    // A form a browser posts: a page on the loopback that posts it.
    let demo_page = match sender.profile().browser {
        true => Some(
            devtools::demo_page::DemoPage::start(
                port("PAGE_PORT", 9002)?,
                &format!("http://127.0.0.1:{webhook_port}{webhook_path}"),
            )
            .await?,
        ),
        false => None,
    };
    let (mut ingest_auth, how) = local::sender_env(
        sender,
        demo_page.as_ref(),
        std::env::var("WEBHOOK_AUTH").ok(),
    );

    if let Ok(rule) = std::env::var("IDEMPOTENCY_KEY") {
        ingest_auth.push(("IDEMPOTENCY_KEY", rule));
    }

    let receipts_table = setting("RECEIPTS_TABLE", RECEIPTS_TABLE);
    let leads_table = setting("LEADS_TABLE", LEADS_TABLE);

    // Both ports first: one taken by another process stops the pipeline
    // before it creates anything, so a start again on other ports finds
    // no table of its own already there.
    let listener = Listener::bind(SocketAddr::from(([127, 0, 0, 1], webhook_port)))
        .await
        .map_err(|e| format!("webhook endpoint on port {webhook_port}: {e}"))?;
    let crm_address = SocketAddr::from(([127, 0, 0, 1], crm_port));
    let crm = LocalCrm::start(&setting("DESTINATION", "http"), crm_address).await?;
    // `make bench`: a CRM that takes this long to answer each call.
    if let Ok(delay) = std::env::var("CRM_DELAY_MS") {
        let delay: u64 = delay
            .parse()
            .map_err(|_| "CRM_DELAY_MS must be whole milliseconds".to_owned())?;
        crm.set_delay(Duration::from_millis(delay))?;
    }

    let sdk = local::sdk_config(&dynamodb_endpoint).await;
    let dynamodb = aws_sdk_dynamodb::Client::new(&sdk);
    let streams = aws_sdk_dynamodbstreams::Client::new(&sdk);
    local::create_tables_named(&dynamodb, &receipts_table, &leads_table).await?;
    // The routes file, stored as a deployed stack stores it (`receipts
    // routes apply`), before ingest starts and reads it: `ROUTES_FILE`, else
    // routes.toml when there is one.
    match std::env::var("ROUTES_FILE") {
        Ok(file) => apply_routes(&bin_dir, &dynamodb_endpoint, &receipts_table, &file)?,
        Err(_) if std::path::Path::new("routes.toml").exists() => {
            apply_routes(&bin_dir, &dynamodb_endpoint, &receipts_table, "routes.toml")?
        }
        Err(_) => {}
    }

    // A sender that keeps its submissions: its API too (`receipts audit`).
    let sender_api = devtools::fakes::sender_api::SenderApiFake::start_demo(sender).await?;
    let sender_api_line = sender_api.as_ref().map_or_else(String::new, |api| {
        format!("  sender API     {} (a local fake holding 2 submissions that never came: docs/local-development.md, \"Audit\")\n", api.base_url())
    });

    let mut common_env = local::function_env(&dynamodb_endpoint, &receipts_table);
    // `receipts routes apply` against the local table shows in seconds, not
    // the five minutes a deployed stack may take.
    common_env.push((
        shared::config::ROUTES_REREAD_SECONDS,
        setting(
            shared::config::ROUTES_REREAD_SECONDS,
            LOCAL_ROUTES_REREAD_SECONDS,
        ),
    ));
    // One human line per event, or the JSON lines as Lambda gets them.
    let output = if setting("LOGS", "human") == "json" {
        local::FunctionOutput::AsWritten
    } else {
        local::FunctionOutput::Human
    };
    let ingest_runtime = LambdaEmulator::start("ingest")
        .await
        .map_err(|e| e.to_string())?;
    let mut ingest = local::spawn_function(
        &bin_dir,
        "ingest",
        &ingest_runtime,
        &common_env,
        &ingest_auth,
        output,
    )?;
    let worker_runtime = LambdaEmulator::start("worker")
        .await
        .map_err(|e| e.to_string())?;
    let mut worker_env = crm.worker_env();
    // A field map for the CRM fakes (`FIELD_MAP='{...}' DESTINATION=hubspot make run`).
    if let Ok(field_map) = std::env::var(shared::field_map::FIELD_MAP) {
        worker_env.push((shared::field_map::FIELD_MAP, field_map));
    }
    // Where new-lead notices go (`NOTIFY_URL=http://127.0.0.1:9000/hook make run`).
    if let Ok(url) = std::env::var(shared::notice::NOTIFY_URL) {
        worker_env.push((shared::notice::NOTIFY_URL, url));
    }
    worker_env.extend(
        LOCAL_DELIVERY_TIMINGS
            .iter()
            .map(|(name, value)| (*name, (*value).to_owned())),
    );
    let mut worker = local::spawn_function(
        &bin_dir,
        "worker",
        &worker_runtime,
        &common_env,
        &worker_env,
        output,
    )?;

    let ingest_runtime = Arc::new(ingest_runtime);
    let tally = Arc::new(Tally::default());
    let app = Router::new().fallback(http_api_front).with_state(Front {
        ingest: Arc::clone(&ingest_runtime),
        tally: Arc::clone(&tally),
        path: Arc::new(webhook_path.clone()),
    });
    let _webhook_endpoint = listener.serve(app);

    let mut pump = StreamPump::for_table(&dynamodb, streams, &receipts_table).await?;
    let worker_runtime = Arc::new(worker_runtime);
    let pump_runtime = Arc::clone(&worker_runtime);
    tokio::spawn(async move {
        loop {
            let runtime = Arc::clone(&pump_runtime);
            match pump
                .drain(|event| {
                    let runtime = Arc::clone(&runtime);
                    async move { runtime.invoke(event, WORKER_TIMEOUT).await }
                })
                .await
            {
                Ok(report) if !report.given_up.is_empty() => {
                    eprintln!("local-pipeline: gave up on stream records {:?} (AWS would send them to the dead-letter queue)", report.given_up);
                }
                Ok(_) => {}
                Err(error) => eprintln!("local-pipeline: stream pump: {error}"),
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    });

    let pass_runtime = Arc::clone(&worker_runtime);
    let pass_tally = Arc::clone(&tally);
    tokio::spawn(async move {
        let scheduled = serde_json::json!({
            "version": "0",
            "id": "local-reconcile",
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "detail": {}
        });
        loop {
            tokio::time::sleep(reconcile_every).await;
            let report = pass_runtime.invoke(scheduled.clone(), WORKER_TIMEOUT).await;
            if let Some(pending) = report.as_ref().ok().and_then(|r| r["pending"].as_u64()) {
                *lock(&pass_tally.pending) = Some(pending);
            }
            match report {
                Ok(report) if report["due"].as_u64().unwrap_or(0) > 0 => println!(
                    "local-pipeline: reconciliation pass: {} due, {} delivered, {} deferred, {} failed",
                    report["due"], report["delivered"], report["deferred"], report["failed"]
                ),
                Ok(_) => {}
                Err(error) => eprintln!("local-pipeline: reconciliation pass: {error}"),
            }
        }
    });

    // One summary line every few seconds while something changes: what the
    // dashboard shows in AWS, in one line.
    let counts = crm.counts();
    tokio::spawn(async move {
        let mut last = String::new();
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            let (leads, writes) = counts();
            let line = tally.summary(leads, writes);
            if line != last {
                println!("{line}");
                last = line;
            }
        }
    });

    // The operator's CLI against this pipeline's table, ready to paste.
    let receipts_line = format!(
        "  receipts  AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_ENDPOINT_URL={dynamodb_endpoint} {} --table {receipts_table} list",
        bin_dir.join("receipts").display()
    );
    println!(
        "\nLocal pipeline is up (Ctrl-C stops it):\n  webhook   POST http://127.0.0.1:{webhook_port}{webhook_path} ({how})\n  {}\n  DynamoDB       {dynamodb_endpoint} (table {receipts_table})\n{receipts_line}\n{sender_api_line}",
        crm.describe(),
    );

    tokio::select! {
        _ = shutdown_signal() => println!("\nlocal-pipeline: stopping"),
        status = ingest.wait() => return Err(exit_message("ingest", status, ingest_runtime.init_error())),
        status = worker.wait() => return Err(exit_message("worker", status, worker_runtime.init_error())),
    }
    let _ = ingest.kill().await;
    let _ = worker.kill().await;
    Ok(())
}

/// Ctrl-C (SIGINT) or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

fn exit_message(
    name: &str,
    status: std::io::Result<std::process::ExitStatus>,
    init_error: Option<String>,
) -> String {
    let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
    match init_error {
        Some(error) => format!("{name} stopped ({status}); its init error: {error}"),
        None => format!("{name} stopped ({status})"),
    }
}

static REQUEST_IDS: AtomicU64 = AtomicU64::new(1);

/// What the HTTP front needs: the ingest function, and the tally it feeds.
#[derive(Clone)]
struct Front {
    ingest: Arc<LambdaEmulator>,
    tally: Arc<Tally>,
    /// `/webhooks/<sender>`.
    path: Arc<String>,
}

/// `receipts routes apply FILE` on the local table, with the real CLI:
/// what it changed is printed; a file with a problem stops the pipeline
/// with each problem.
fn apply_routes(
    bin_dir: &std::path::Path,
    endpoint: &str,
    table: &str,
    file: &str,
) -> Result<(), String> {
    let output = std::process::Command::new(bin_dir.join("receipts"))
        .args(["--table", table, "routes", "apply", file])
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env_remove("AWS_PROFILE")
        .output()
        .map_err(|e| {
            format!("cannot run receipts (build it with `cargo build -p receipts`): {e}")
        })?;
    if !output.status.success() {
        return Err(format!(
            "the routes in {file} were not stored:\n{}",
            String::from_utf8_lossy(&output.stderr).trim_end()
        ));
    }
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        println!("routes: {line}");
    }
    Ok(())
}

/// Counts for the summary line: deliveries by outcome (from ingest's
/// answers), and what the last reconciliation pass found waiting.
#[derive(Default)]
struct Tally {
    deliveries: Mutex<BTreeMap<String, u64>>,
    pending: Mutex<Option<u64>>,
}

impl Tally {
    /// The outcome of an ingest answer: accepted, duplicate, or its error code.
    fn count(&self, body: &[u8]) {
        let answer: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        let outcome = match (answer["accepted"].as_bool(), answer["duplicate"].as_bool()) {
            (Some(true), Some(true)) => "duplicate".to_owned(),
            (Some(true), _) => "accepted".to_owned(),
            _ => answer["error"].as_str().unwrap_or("unknown").to_owned(),
        };
        *lock(&self.deliveries).entry(outcome).or_default() += 1;
    }

    fn summary(&self, leads: usize, writes: u64) -> String {
        let mut deliveries = lock(&self.deliveries).clone();
        // A held-back submission was answered 202 like any new one: the log
        // says which were held, and they are counted apart.
        let held = local::HELD_BACK.load(Ordering::SeqCst);
        if held > 0 {
            if let Some(accepted) = deliveries.get_mut("accepted") {
                *accepted = accepted.saturating_sub(held);
            }
            deliveries.insert("quarantined".to_owned(), held);
        }
        let by_outcome = if deliveries.is_empty() {
            "none".to_owned()
        } else {
            deliveries
                .iter()
                .map(|(outcome, count)| format!("{outcome}={count}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let pending = lock(&self.pending).map_or("-".to_owned(), |p| p.to_string());
        format!("local-pipeline: deliveries {by_outcome} | leads {leads} ({writes} writes) | pending {pending}")
    }
}

/// API Gateway's part: route, build the event, invoke, answer.
async fn http_api_front(
    State(Front {
        ingest,
        tally,
        path,
    }): State<Front>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // POST, and a browser's CORS preflight (a route of its own in AWS).
    if !(method == Method::POST || method == Method::OPTIONS) || uri.path() != path.as_str() {
        // API Gateway answers 404 too; here the terminal also says why.
        println!(
            "local-pipeline: {method} {} answered 404: this pipeline takes POST {path} (SENDER chooses the sender)",
            uri.path()
        );
        return (StatusCode::NOT_FOUND, "{\"message\":\"Not Found\"}").into_response();
    }
    let headers: Vec<(String, String)> = headers
        .iter()
        .filter_map(|(name, value)| {
            value
                .to_str()
                .ok()
                .map(|v| (name.to_string(), v.to_owned()))
        })
        .collect();
    let request_id = format!(
        "local-http-{:06}",
        REQUEST_IDS.fetch_add(1, Ordering::SeqCst)
    );
    let event = event_for(
        method.as_str(),
        uri.path(),
        uri.query().unwrap_or(""),
        &headers,
        &body,
        &request_id,
    );
    let answer = match ingest
        .invoke(event, INGEST_TIMEOUT)
        .await
        .and_then(|r| answer_from(&r))
    {
        Ok(answer) => answer,
        Err(error) => {
            eprintln!("local-pipeline: ingest invocation failed: {error}");
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                "{\"message\":\"Internal Server Error\"}",
            )
                .into_response();
        }
    };
    tally.count(&answer.body);
    let mut response = (
        StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_GATEWAY),
        answer.body,
    )
        .into_response();
    for (name, value) in answer.headers {
        if let (Ok(name), Ok(value)) = (name.parse::<axum::http::HeaderName>(), value.parse()) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}
