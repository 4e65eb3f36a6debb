//! The local pipeline (`make run`) as the tests start it: the real
//! binaries on free ports with their own tables, their printed lines kept,
//! and a clean stop.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::{endpoint, unique_name, DYNAMODB_ENDPOINT};

/// Two distinct free ports: both sockets are held until both are known, or
/// the kernel could hand out the same port twice.
pub fn two_free_ports() -> (u16, u16) {
    let first = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let second = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    (
        first.local_addr().unwrap().port(),
        second.local_addr().unwrap().port(),
    )
}

/// The CRM stub's `GET /leads` once it holds `count` leads, or as it is when
/// `patience` runs out (the caller's assertion then says what is missing).
pub async fn leads_once_there(
    http: &reqwest::Client,
    leads_url: &str,
    count: u64,
    patience: Duration,
) -> serde_json::Value {
    let deadline = Instant::now() + patience;
    loop {
        let leads: serde_json::Value = http
            .get(leads_url)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if leads["count"] == count || Instant::now() > deadline {
            return leads;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Lines the pipeline printed after it said it is up.
pub type Printed = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// The local pipeline with `DESTINATION=<destination>` on its own tables,
/// once it says it is up; its ports (webhook, CRM) and what it prints.
pub async fn start_pipeline_for(destination: &str) -> (tokio::process::Child, u16, u16, Printed) {
    start_pipeline_on(
        destination,
        &unique_name(&format!("{destination}-receipts")),
    )
    .await
}

/// The same, on the receipts table named.
pub async fn start_pipeline_on(
    destination: &str,
    receipts_table: &str,
) -> (tokio::process::Child, u16, u16, Printed) {
    start_pipeline_with(destination, receipts_table, &[]).await
}

/// The same, with more variables (`SENDER`...).
pub async fn start_pipeline_with(
    destination: &str,
    receipts_table: &str,
    more: &[(&str, &str)],
) -> (tokio::process::Child, u16, u16, Printed) {
    let bin_dir = std::env::var("FUNCTION_BIN_DIR").unwrap_or_else(|_| {
        panic!("FUNCTION_BIN_DIR is not set: run the suite with `make test`, which builds the function binaries first")
    });
    // A port found free can be taken before the pipeline binds it (the
    // other tests run at once): then it says so and exits, and it is
    // started again on other ports.
    let mut failures = Vec::new();
    let (mut pipeline, mut lines, webhook_port, crm_port) = loop {
        let (webhook_port, crm_port) = two_free_ports();
        let mut pipeline = Command::new(format!("{bin_dir}/local-pipeline"))
            .env("DYNAMODB_ENDPOINT", endpoint(DYNAMODB_ENDPOINT))
            .env("FUNCTION_BIN_DIR", &bin_dir)
            .env("WEBHOOK_PORT", webhook_port.to_string())
            .env("CRM_PORT", crm_port.to_string())
            .env("DESTINATION", destination)
            // Its own tables: the other pipeline tests use the default names.
            .env("RECEIPTS_TABLE", receipts_table)
            .env(
                "LEADS_TABLE",
                unique_name(&format!("{}-leads", destination.replace(',', "-"))),
            )
            .envs(more.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("local-pipeline starts");
        let mut lines = BufReader::new(pipeline.stdout.take().unwrap()).lines();
        let ready = tokio::time::timeout(Duration::from_secs(60), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains("Local pipeline is up") {
                    return true;
                }
            }
            false
        })
        .await;
        if ready == Ok(true) {
            break (pipeline, lines, webhook_port, crm_port);
        }
        let _ = pipeline.start_kill();
        let output = pipeline.wait_with_output().await.expect("its output");
        let said = String::from_utf8_lossy(&output.stderr).into_owned();
        failures.push(format!("{ready:?}: {said}"));
        assert!(
            failures.len() < 3 && said.contains("in use"),
            "the pipeline did not come up: {failures:?}"
        );
    };
    // Its errors go to the test's output, so a failure says why.
    let mut errors = BufReader::new(pipeline.stderr.take().unwrap()).lines();
    tokio::spawn(async move {
        while let Ok(Some(line)) = errors.next_line().await {
            eprintln!("{line}");
        }
    });
    let printed = Printed::default();
    let keep = std::sync::Arc::clone(&printed);
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            keep.lock().unwrap().push(line);
        }
    });
    (pipeline, webhook_port, crm_port, printed)
}

pub async fn stop(mut pipeline: tokio::process::Child) {
    let pid = pipeline.id().expect("running");
    std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    let exit = tokio::time::timeout(Duration::from_secs(10), pipeline.wait()).await;
    assert!(
        matches!(exit, Ok(Ok(status)) if status.success()),
        "{exit:?}"
    );
}

/// A POST to the local pipeline's Static Forms webhook on `port`, as Static
/// Forms sends one: the demo token in the URL, a JSON body, no header of
/// ours; the caller adds the body.
pub fn static_forms_post(http: &reqwest::Client, port: u16) -> reqwest::RequestBuilder {
    http.post(format!(
        "http://127.0.0.1:{port}/webhooks/staticforms?token={}",
        devtools::local::DEMO_TOKEN
    ))
    .header("content-type", "application/json")
}

/// What a fake lists at `url`, as JSON.
pub async fn get_json(http: &reqwest::Client, url: &str) -> serde_json::Value {
    http.get(url)
        .send()
        .await
        .unwrap_or_else(|error| panic!("GET {url}: {error}"))
        .json()
        .await
        .unwrap_or_else(|error| panic!("GET {url}: not JSON ({error})"))
}
