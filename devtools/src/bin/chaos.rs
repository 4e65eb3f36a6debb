//! `make chaos`: the promise, demonstrated. Submissions go through the real
//! `ingest` and `worker` binaries on a local Lambda Runtime API, against a
//! local DynamoDB-protocol server, while the processes are killed with
//! SIGKILL at random moments (some while a lead is written to the CRM and
//! its receipt is not yet updated): ingest, the worker taking the stream,
//! and the worker running scheduled reconciliation passes, half of which
//! are killed mid-pass. The CRM fails and answers late at random. Senders retry until they get a 2xx, the stream retries failed
//! batches, and reconciliation passes run until nothing waits. Then it
//! counts: every accepted submission must be exactly one lead, and every
//! receipt `COMPLETED`. A seed makes a run repeatable.
//!
//! `chaos [--submissions N] [--seed S]`, with `DYNAMODB_ENDPOINT` (and
//! `FUNCTION_BIN_DIR`, default `target/debug`). Exit 1 when the promise
//! does not hold, saying how.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use devtools::crm_stub::CrmStub;
use devtools::http_api::{answer_from, event_for, WEBHOOK_ROUTE};
use devtools::local::{self, KillableFunction, DEMO_TOKEN};
use devtools::pump::StreamPump;
use serde_json::json;

const INGEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Short, so a claim left by a killed worker lapses soon (a claim holds
/// for the invocation's time and a minute more).
const WORKER_TIMEOUT: Duration = Duration::from_secs(15);
/// The whole run, at most: a hang fails, saying what it waited for.
const RUN_LIMIT: Duration = Duration::from_secs(900);
/// Senders at once.
const SENDERS: usize = 16;
/// Share of CRM calls that fail with 503, and the longest late answer.
const CRM_FAIL_PERCENT: u8 = 15;
const CRM_MAX_DELAY: Duration = Duration::from_millis(400);
/// Time between two kills, at random within these bounds (milliseconds).
const KILL_EVERY: (u64, u64) = (100, 700);
/// Time between two scheduled passes while kills go on (milliseconds), and
/// when in a pass a kill lands (after its start).
const PASS_EVERY: (u64, u64) = (200, 800);
const PASS_KILL_AFTER: (u64, u64) = (2, 200);
/// Kills go on after the last submission is accepted, while the stream and
/// the passes deliver, until this share of the leads exists, or this long.
const KILL_UNTIL_LEADS_PERCENT: usize = 90;
const KILL_AT_MOST_AFTER_ACCEPTED: Duration = Duration::from_secs(30);

struct Options {
    submissions: usize,
    seed: u64,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        submissions: 1000,
        seed: std::env::var("CHAOS_SEED")
            .ok()
            .and_then(|seed| seed.parse().ok())
            .unwrap_or_else(|| fastrand::u64(..)),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| format!("{name} needs a whole number"))
        };
        match arg.as_str() {
            "--submissions" => options.submissions = value("--submissions")? as usize,
            "--seed" => options.seed = value("--seed")?,
            other => {
                return Err(format!(
                    "unknown argument {other:?}; usage: chaos [--submissions N] [--seed S]"
                ))
            }
        }
    }
    Ok(options)
}

#[tokio::main]
async fn main() {
    match run().await {
        Ok(()) => {}
        Err(error) => {
            eprintln!("chaos: {error}");
            std::process::exit(1);
        }
    }
}

async fn run() -> Result<(), String> {
    let options = options()?;
    let started = Instant::now();
    let deadline = started + RUN_LIMIT;
    let endpoint = std::env::var("DYNAMODB_ENDPOINT")
        .map_err(|_| "DYNAMODB_ENDPOINT is not set; run it with `make chaos`".to_owned())?;
    let bin_dir = PathBuf::from(
        std::env::var("FUNCTION_BIN_DIR").unwrap_or_else(|_| "target/debug".to_owned()),
    );
    println!(
        "chaos: {} submissions, seed {} (make chaos SEED={} repeats this run)",
        options.submissions, options.seed, options.seed
    );

    let sdk = local::sdk_config(&endpoint).await;
    let dynamodb = aws_sdk_dynamodb::Client::new(&sdk);
    let tag = format!("{}-{}", options.seed, std::process::id());
    let receipts_table = format!("chaos-receipts-{tag}");
    local::create_tables_named(&dynamodb, &receipts_table, &format!("chaos-leads-{tag}")).await?;

    let crm = CrmStub::start().await.map_err(|e| e.to_string())?;
    crm.set_unreliable(options.seed, CRM_FAIL_PERCENT, CRM_MAX_DELAY);

    let common_env = local::function_env(&endpoint, &receipts_table);
    let ingest = Arc::new(
        KillableFunction::start(
            "ingest",
            "ingest",
            &bin_dir,
            &common_env,
            vec![
                ("WEBHOOK_AUTH", "bearer".to_owned()),
                ("WEBHOOK_SECRETS", DEMO_TOKEN.to_owned()),
            ],
        )
        .await?,
    );
    let worker_env = vec![
        ("DESTINATION", "http".to_owned()),
        (
            shared::newest::GATE_KEY,
            devtools::local::DEMO_GATE_KEY.to_owned(),
        ),
        ("CRM_URL", crm.leads_url()),
        ("RECONCILE_AFTER_SECONDS", "1".to_owned()),
        ("REDELIVERY_BASE_SECONDS", "1".to_owned()),
        ("REDELIVERY_MAX_SECONDS", "2".to_owned()),
    ];
    // As on Lambda, the stream's invocations and the schedule's passes run
    // in containers of their own: each can be killed alone.
    let worker = Arc::new(
        KillableFunction::start(
            "worker",
            "stream",
            &bin_dir,
            &common_env,
            worker_env.clone(),
        )
        .await?,
    );
    let passes_worker = Arc::new(
        KillableFunction::start("worker", "pass", &bin_dir, &common_env, worker_env).await?,
    );

    // The stream, retrying failed batches, until told to stop.
    let stop_pump = Arc::new(AtomicBool::new(false));
    let mut pump = StreamPump::for_table(
        &dynamodb,
        aws_sdk_dynamodbstreams::Client::new(&sdk),
        &receipts_table,
    )
    .await?;
    let pump_task = {
        let worker = Arc::clone(&worker);
        let stop = Arc::clone(&stop_pump);
        tokio::spawn(async move {
            let mut given_up = 0;
            while !stop.load(Ordering::SeqCst) {
                let runtime = Arc::clone(&worker.runtime);
                if let Ok(report) = pump
                    .drain(|event| {
                        let runtime = Arc::clone(&runtime);
                        async move { runtime.invoke(event, WORKER_TIMEOUT).await }
                    })
                    .await
                {
                    given_up += report.given_up.len();
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            given_up
        })
    };

    // Scheduled passes, every second or so, half of them killed mid-pass
    // at a random moment, until told to stop.
    let stop_kills = Arc::new(AtomicBool::new(false));
    let kills_during_crm_calls = Arc::new(AtomicUsize::new(0));
    let passes_run = Arc::new(AtomicUsize::new(0));
    let pass_task = {
        let passes = Arc::clone(&passes_worker);
        let stop = Arc::clone(&stop_kills);
        let during = Arc::clone(&kills_during_crm_calls);
        let run = Arc::clone(&passes_run);
        let crm_view = crm.clone_handle();
        let mut rng = fastrand::Rng::with_seed(options.seed ^ 0x7061_7373);
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(rng.u64(PASS_EVERY.0..PASS_EVERY.1)))
                    .await;
                run.fetch_add(1, Ordering::SeqCst);
                let runtime = Arc::clone(&passes.runtime);
                let mut pass =
                    tokio::spawn(
                        async move { runtime.invoke(scheduled_event(), WORKER_TIMEOUT).await },
                    );
                let kill_after = rng
                    .bool()
                    .then(|| Duration::from_millis(rng.u64(PASS_KILL_AFTER.0..PASS_KILL_AFTER.1)));
                if let Some(kill_after) = kill_after {
                    if tokio::time::timeout(kill_after, &mut pass).await.is_ok() {
                        continue;
                    }
                    if crm_view.in_flight() > 0 {
                        during.fetch_add(1, Ordering::SeqCst);
                    }
                    passes.kill_and_restart().await?;
                }
                let _ = pass.await;
            }
            Ok::<(), String>(())
        })
    };

    // Kills at random moments, until told to stop.
    let kill_task = {
        let (ingest, worker) = (Arc::clone(&ingest), Arc::clone(&worker));
        let stop = Arc::clone(&stop_kills);
        let during = Arc::clone(&kills_during_crm_calls);
        let crm_view = crm.clone_handle();
        let mut rng = fastrand::Rng::with_seed(options.seed ^ 0x6b69_6c6c);
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(rng.u64(KILL_EVERY.0..KILL_EVERY.1)))
                    .await;
                let victim = if rng.bool() { &ingest } else { &worker };
                if victim.name == "worker" && crm_view.in_flight() > 0 {
                    // Its CRM write may be done and its receipt not yet
                    // updated: the case the promise is hardest on.
                    during.fetch_add(1, Ordering::SeqCst);
                }
                victim.kill_and_restart().await?;
            }
            Ok::<(), String>(())
        })
    };

    // Senders: each submission until it gets a 2xx.
    let ids: Vec<String> = (0..options.submissions)
        .map(|n| format!("chaos_{tag}_{n:05}"))
        .collect();
    let queue = Arc::new(Mutex::new(ids.clone()));
    let attempts = Arc::new(AtomicUsize::new(0));
    let accepted_count = Arc::new(AtomicUsize::new(0));
    // A line every 15 s, so a run of minutes is never silent.
    let stop_progress = Arc::new(AtomicBool::new(false));
    let progress_task = {
        let (stop, accepted, passes) = (
            Arc::clone(&stop_progress),
            Arc::clone(&accepted_count),
            Arc::clone(&passes_run),
        );
        let crm_view = crm.clone_handle();
        let total = ids.len();
        tokio::spawn(async move {
            loop {
                for _ in 0..75 {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                }
                println!(
                    "chaos: {}s: {}/{total} accepted, {} leads, {} passes so far",
                    started.elapsed().as_secs(),
                    accepted.load(Ordering::SeqCst),
                    crm_view.lead_count(),
                    passes.load(Ordering::SeqCst),
                );
            }
        })
    };
    let mut senders = Vec::new();
    for _ in 0..SENDERS {
        let (queue, ingest, attempts, accepted_count) = (
            Arc::clone(&queue),
            Arc::clone(&ingest),
            Arc::clone(&attempts),
            Arc::clone(&accepted_count),
        );
        senders.push(tokio::spawn(async move {
            loop {
                let Some(id) = queue.lock().unwrap_or_else(|p| p.into_inner()).pop() else {
                    return Ok(());
                };
                loop {
                    if Instant::now() > deadline {
                        return Err(format!("{id} was still not accepted after {RUN_LIMIT:?}"));
                    }
                    attempts.fetch_add(1, Ordering::SeqCst);
                    let answer = ingest.runtime.invoke(delivery(&id), INGEST_TIMEOUT).await;
                    let accepted = answer
                        .ok()
                        .and_then(|answer| answer_from(&answer).ok())
                        .is_some_and(|answer| (200..300).contains(&answer.status));
                    if accepted {
                        accepted_count.fetch_add(1, Ordering::SeqCst);
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }));
    }
    for sender in senders {
        sender.await.map_err(|e| e.to_string())??;
    }
    let accepted_after = started.elapsed();
    println!(
        "chaos: all {} accepted after {}s; the kills go on until {KILL_UNTIL_LEADS_PERCENT}% are leads",
        ids.len(),
        accepted_after.as_secs()
    );
    let kills_end = Instant::now() + KILL_AT_MOST_AFTER_ACCEPTED;
    while crm.lead_count() * 100 < ids.len() * KILL_UNTIL_LEADS_PERCENT
        && Instant::now() < kills_end
    {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    stop_kills.store(true, Ordering::SeqCst);
    kill_task.await.map_err(|e| e.to_string())??;
    pass_task.await.map_err(|e| e.to_string())??;

    // Passes until nothing waits: a claim left by a killed worker lapses a
    // minute after its invocation's end.
    println!("chaos: kills stopped; passes until nothing waits (a killed worker's claim lapses after a minute)");
    let mut passes = 0;
    loop {
        if Instant::now() > deadline {
            return Err(format!(
                "receipts still waited after {RUN_LIMIT:?} and {passes} passes"
            ));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        passes += 1;
        let report = passes_worker
            .runtime
            .invoke(scheduled_event(), WORKER_TIMEOUT)
            .await;
        let waiting = report.as_ref().ok().and_then(|report| {
            Some(report["pending"].as_u64()? + report["failedReceipts"].as_u64()?)
        });
        if waiting == Some(0) {
            break;
        }
    }
    stop_pump.store(true, Ordering::SeqCst);
    stop_progress.store(true, Ordering::SeqCst);
    let _ = progress_task.await;
    let given_up = pump_task.await.map_err(|e| e.to_string())?;
    ingest.stop().await;
    worker.stop().await;
    passes_worker.stop().await;

    // The count.
    let mut statuses: BTreeMap<String, usize> = BTreeMap::new();
    let mut stored = 0;
    let mut start = None;
    loop {
        let page = dynamodb
            .scan()
            .table_name(&receipts_table)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| format!("scan: {}", aws_sdk_dynamodb::error::DisplayErrorContext(e)))?;
        // Receipts only: the worker's gate items (double submits) live in
        // the same table.
        let receipts = page.items().iter().filter(|item| {
            matches!(item.get("pk"), Some(AttributeValue::S(key)) if shared::keys::is_receipt_key(key))
        });
        for item in receipts {
            stored += 1;
            if let Some(AttributeValue::S(status)) = item.get("status") {
                *statuses.entry(status.clone()).or_default() += 1;
            }
        }
        start = page.last_evaluated_key().cloned();
        if start.is_none() {
            break;
        }
    }
    let leads = crm.lead_count();
    let missing: Vec<&String> = ids.iter().filter(|id| crm.lead(id).is_none()).collect();
    println!(
        "chaos: {} submissions accepted in {:.1} s ({} sends); kills: {} {}, {} {}, {} {} of {} passes ({} worker kills during a CRM call)",
        ids.len(),
        accepted_after.as_secs_f64(),
        attempts.load(Ordering::SeqCst),
        ingest.label,
        ingest.kills(),
        worker.label,
        worker.kills(),
        passes_worker.label,
        passes_worker.kills(),
        passes_run.load(Ordering::SeqCst),
        kills_during_crm_calls.load(Ordering::SeqCst)
    );
    println!(
        "chaos: CRM calls {}, writes {}, distinct leads {leads}; stream records given up {given_up}; passes {passes}",
        crm.calls().len(),
        crm.writes()
    );
    println!("chaos: receipts {stored}, by status {statuses:?}");

    let completed = statuses.get("COMPLETED").copied().unwrap_or(0);
    let mut broken = Vec::new();
    if stored != ids.len() {
        broken.push(format!("{} receipts for {} submissions", stored, ids.len()));
    }
    if completed != ids.len() {
        broken.push(format!("{completed} of {} receipts COMPLETED", ids.len()));
    }
    if !missing.is_empty() {
        broken.push(format!(
            "{} submissions have no lead (first: {})",
            missing.len(),
            missing[0]
        ));
    }
    if leads != ids.len() {
        broken.push(format!("{leads} leads for {} submissions", ids.len()));
    }
    if broken.is_empty() {
        println!(
            "chaos: 0 lost, every receipt COMPLETED, one lead per submission ({:.1} s)",
            started.elapsed().as_secs_f64()
        );
        Ok(())
    } else {
        Err(format!("the promise did not hold: {}", broken.join("; ")))
    }
}

/// What EventBridge's schedule sends the worker for a pass.
fn scheduled_event() -> serde_json::Value {
    json!({"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}})
}

/// One Static Forms delivery of `id`, as API Gateway hands it to ingest.
fn delivery(id: &str) -> serde_json::Value {
    let body = json!({
        "event": "form.submitted",
        "data": {"submissionId": id, "formData": {"name": "Chaos Test", "email": format!("{id}@example.com"), "message": "hello"}}
    })
    .to_string();
    event_for(
        WEBHOOK_ROUTE.0,
        WEBHOOK_ROUTE.1,
        "",
        &[
            ("content-type".to_owned(), "application/json".to_owned()),
            ("authorization".to_owned(), format!("Bearer {DEMO_TOKEN}")),
            (
                "idempotency-key".to_owned(),
                format!("staticforms:form.submitted:{id}"),
            ),
        ],
        body.as_bytes(),
        &format!("chaos-{id}"),
    )
}
