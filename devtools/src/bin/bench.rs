//! `make bench`: a load test of the local pipeline, the one `make run`
//! starts (the real `ingest` and `worker` binaries on a local Lambda
//! Runtime API, the stream pump, the CRM stub), with the write meter
//! (`devtools::write_meter`) between it and the DynamoDB-protocol server.
//! It sends `N` submissions at `RATE` a second (`RATE=0`: as fast as they
//! are accepted, 16 senders at once, each retrying a refusal as a sender
//! does), waits until every accepted one is a lead in the CRM, and prints:
//! accepted per second, the webhook's answer time and the time from a
//! submission to its CRM write (p50 and p99), CRM calls per lead, and
//! DynamoDB write units per lead. Exit 1 if a lead is missing or written
//! twice.
//!
//! `N` (200), `RATE` (50), `CRM_DELAY_MS` (50: how long the CRM takes to
//! answer), with `DYNAMODB_ENDPOINT` and `FUNCTION_BIN_DIR` (default
//! `target/debug`). Figures from a machine's loopback and a local
//! DynamoDB server: they compare runs and show where the pipeline
//! saturates; they are no forecast of AWS.

use std::io::Write;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use devtools::local::DEMO_TOKEN;
use devtools::write_meter::WriteMeter;
use tokio::io::{AsyncBufReadExt, BufReader};

/// Senders at once with `RATE=0`, and sends in flight at most otherwise.
const SENDERS: usize = 16;
/// Tries per submission, as a sender retries a refusal or an outage.
const TRIES: u32 = 5;

struct Options {
    submissions: usize,
    rate: f64,
    crm_delay_ms: u64,
    endpoint: String,
    bin_dir: String,
}

fn options() -> Result<Options, String> {
    let number = |name: &str, default: &str| -> Result<f64, String> {
        // Blank is unset: `make bench` passes every variable, given or not.
        let text = std::env::var(name)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| default.to_owned());
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
            .ok_or_else(|| format!("{name}={text}: expected a number, 0 or more"))
    };
    let submissions = number("N", "200")? as usize;
    if submissions == 0 {
        return Err("N=0: nothing to send".to_owned());
    }
    Ok(Options {
        submissions,
        rate: number("RATE", "50")?,
        crm_delay_ms: number("CRM_DELAY_MS", "50")? as u64,
        endpoint: std::env::var("DYNAMODB_ENDPOINT")
            .map_err(|_| "DYNAMODB_ENDPOINT is not set: run it with `make bench`".to_owned())?,
        bin_dir: std::env::var("FUNCTION_BIN_DIR").unwrap_or_else(|_| "target/debug".to_owned()),
    })
}

/// One submission's fate.
#[derive(Debug, Clone, Copy, Default)]
struct Sent {
    /// When it was first sent (ms since the epoch).
    at_ms: u64,
    /// The accepted answer's time, or `None` if every try was refused.
    answer_ms: Option<f64>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

/// The value at `share` (0.5, 0.99) of sorted `values`.
fn percentile(sorted: &[f64], share: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((share * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn sorted(mut values: Vec<f64>) -> Vec<f64> {
    values.sort_by(f64::total_cmp);
    values
}

#[tokio::main]
async fn main() {
    if let Err(problem) = run().await {
        eprintln!("\nbench: {problem}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), String> {
    let options = options()?;
    let meter = WriteMeter::start(&options.endpoint)
        .await
        .map_err(|e| format!("write meter: {e}"))?;
    let (webhook_port, crm_port) = (free_port()?, free_port()?);
    let run_id = format!("{}-{}", std::process::id(), now_ms());
    let mut pipeline = tokio::process::Command::new(format!("{}/local-pipeline", options.bin_dir))
        .env("DYNAMODB_ENDPOINT", meter.url())
        .env("FUNCTION_BIN_DIR", &options.bin_dir)
        .env("WEBHOOK_PORT", webhook_port.to_string())
        .env("CRM_PORT", crm_port.to_string())
        .env("DESTINATION", "http")
        .env("CRM_DELAY_MS", options.crm_delay_ms.to_string())
        .env("RECEIPTS_TABLE", format!("bench-receipts-{run_id}"))
        .env("LEADS_TABLE", format!("bench-leads-{run_id}"))
        .env("LOGS", "json")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start local-pipeline: {e} (cargo build -p devtools)"))?;
    let mut lines = BufReader::new(pipeline.stdout.take().expect("piped")).lines();
    let up = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("Local pipeline is up") {
                return true;
            }
        }
        false
    })
    .await;
    if up != Ok(true) {
        return Err("the local pipeline did not come up (see above)".to_owned());
    }
    // Its log lines are not the bench's output.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

    let pace = if options.rate > 0.0 {
        format!("{} a second", options.rate)
    } else {
        format!("as fast as accepted ({SENDERS} senders)")
    };
    println!(
        "bench: {} submissions, {pace}, through the local pipeline (http destination, the CRM answers in {} ms)",
        options.submissions, options.crm_delay_ms
    );
    let report = load(&options, webhook_port, crm_port, &meter).await;
    let _ = std::process::Command::new("kill")
        .args(["-INT", &pipeline.id().unwrap_or_default().to_string()])
        .status();
    let _ = tokio::time::timeout(Duration::from_secs(10), pipeline.wait()).await;
    report
}

async fn load(
    options: &Options,
    webhook_port: u16,
    crm_port: u16,
    meter: &WriteMeter,
) -> Result<(), String> {
    let http = reqwest::Client::new();
    let leads_url = format!("http://127.0.0.1:{crm_port}/leads");
    let n = options.submissions;
    let sender = Sender {
        http: http.clone(),
        url: Arc::new(format!(
            "http://127.0.0.1:{webhook_port}/webhooks/staticforms?token={DEMO_TOKEN}"
        )),
        sent: Arc::new(Mutex::new(vec![Sent::default(); n])),
        accepted: Arc::new(AtomicUsize::new(0)),
    };
    let begin = Instant::now();

    let progress = {
        let accepted = Arc::clone(&sender.accepted);
        let http = http.clone();
        let leads_url = leads_url.clone();
        tokio::spawn(async move {
            loop {
                let leads = lead_count(&http, &leads_url).await;
                eprint!(
                    "\r  accepted {}/{n} · in the CRM {leads}   ",
                    accepted.load(Ordering::SeqCst)
                );
                let _ = std::io::stderr().flush();
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    };

    let mut in_flight = tokio::task::JoinSet::new();
    if options.rate > 0.0 {
        let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / options.rate));
        for i in 0..n {
            tick.tick().await;
            while in_flight.len() >= SENDERS * 4 {
                in_flight.join_next().await;
            }
            in_flight.spawn(sender.clone().send(i));
        }
    } else {
        let next = Arc::new(AtomicUsize::new(0));
        for _ in 0..SENDERS {
            let (sender, next) = (sender.clone(), Arc::clone(&next));
            in_flight.spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= n {
                        break;
                    }
                    sender.clone().send(i).await;
                }
            });
        }
    }
    while in_flight.join_next().await.is_some() {}
    let sending = begin.elapsed();
    let accepted = sender.accepted.load(Ordering::SeqCst);

    let patience = Duration::from_secs(120 + n as u64 / 10);
    let deadline = Instant::now() + patience;
    let listing = loop {
        let listing = listing(&http, &leads_url).await;
        if listing["count"].as_u64() == Some(accepted as u64) || Instant::now() > deadline {
            break listing;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    progress.abort();
    eprintln!();
    // A lead is in the CRM before its receipt is completed: count the
    // writes once they stop (a pass writes nothing for completed ones).
    let mut counted = meter.metered().len();
    let settle_by = Instant::now() + Duration::from_secs(20);
    while Instant::now() < settle_by {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let now = meter.metered().len();
        if now == counted {
            break;
        }
        counted = now;
    }

    let sent = sender.sent.lock().expect("not poisoned").clone();
    let leads = listing["leads"].as_array().cloned().unwrap_or_default();
    let answers = sorted(sent.iter().filter_map(|s| s.answer_ms).collect());
    let to_crm = sorted(
        leads
            .iter()
            .filter_map(|lead| {
                let i: usize = lead["externalId"]
                    .as_str()?
                    .strip_prefix("bench_")?
                    .parse()
                    .ok()?;
                let written = lead["firstWrittenMs"].as_u64()?;
                Some(written.saturating_sub(sent.get(i)?.at_ms) as f64)
            })
            .collect(),
    );
    let calls = listing["calls"].as_u64().unwrap_or_default();
    let metered: Vec<_> = meter
        .metered()
        .into_iter()
        .filter(|m| m.key.starts_with("staticforms:") || m.key.starts_with("gate#"))
        .collect();
    let table: u32 = metered.iter().map(|m| m.table_units).sum();
    let index: u32 = metered.iter().map(|m| m.index_units).sum();
    let per_lead = |total: f64| total / leads.len().max(1) as f64;

    println!(
        "accepted            {accepted} of {n} in {:.1} s: {:.1}/s",
        sending.as_secs_f64(),
        accepted as f64 / sending.as_secs_f64()
    );
    println!(
        "webhook answer      p50 {:.0} ms   p99 {:.0} ms",
        percentile(&answers, 0.5),
        percentile(&answers, 0.99)
    );
    println!(
        "submission to CRM   p50 {:.0} ms   p99 {:.0} ms",
        percentile(&to_crm, 0.5),
        percentile(&to_crm, 0.99)
    );
    println!("CRM calls per lead  {:.2}", per_lead(calls as f64));
    println!(
        "write units / lead  {:.2} (table {:.2}, index {:.2})",
        per_lead(f64::from(table + index)),
        per_lead(f64::from(table)),
        per_lead(f64::from(index))
    );

    let twice = leads
        .iter()
        .filter(|l| l["writes"].as_u64() != Some(1))
        .count();
    if leads.len() != accepted {
        return Err(format!(
            "{} of {accepted} accepted submissions are leads after {} s",
            leads.len(),
            patience.as_secs()
        ));
    }
    if twice > 0 {
        return Err(format!("{twice} leads were written more than once"));
    }
    Ok(())
}

/// What every send shares: the client, the webhook URL, each
/// submission's fate, and the count accepted.
#[derive(Clone)]
struct Sender {
    http: reqwest::Client,
    url: Arc<String>,
    sent: Arc<Mutex<Vec<Sent>>>,
    accepted: Arc<AtomicUsize>,
}

impl Sender {
    /// Submission `i`, tried until accepted, as a sender retries.
    async fn send(self, i: usize) {
        let body = format!(
            r#"{{"event":"form.submitted","timestamp":{},"data":{{"submissionId":"bench_{i}","formData":{{"name":"Person {i}","email":"p{i}@example.com","message":"bench"}}}}}}"#,
            now_ms() / 1000
        );
        let at_ms = now_ms();
        let mut answer_ms = None;
        for _ in 0..TRIES {
            let asked = Instant::now();
            let answer = self
                .http
                .post(self.url.as_str())
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await;
            if answer.as_ref().is_ok_and(|a| a.status().is_success()) {
                answer_ms = Some(asked.elapsed().as_secs_f64() * 1000.0);
                self.accepted.fetch_add(1, Ordering::SeqCst);
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        self.sent.lock().expect("not poisoned")[i] = Sent { at_ms, answer_ms };
    }
}

async fn listing(http: &reqwest::Client, url: &str) -> serde_json::Value {
    match http.get(url).send().await {
        Ok(answer) => answer.json().await.unwrap_or_default(),
        Err(_) => serde_json::Value::Null,
    }
}

async fn lead_count(http: &reqwest::Client, url: &str) -> u64 {
    listing(http, url).await["count"]
        .as_u64()
        .unwrap_or_default()
}
