//! What the worker logs: one JSON line per record (submission id,
//! destination, outcome, attempts, duration) plus a batch summary, and never
//! form data, names, emails, messages or the CRM token.

mod common;

use std::time::{Duration, Instant, SystemTime};

use aws_lambda_events::event::dynamodb::Event;
use devtools::crm_stub::{Answer, CrmStub};
use devtools::log_capture::CapturedLogs;
use devtools::stream_event;
use shared::Receipt;
use worker::config::TokenSetting;
use worker::destinations::http::HttpConfig;
use worker::destinations::http::HttpCrm;
use worker::ledger::memory::MemoryLedger;
use worker::{Config, Worker};

use common::static_forms_receipt;

const EMAIL: &str = "grace.hopper@example.com";
const NAME: &str = "Grace Brewster Hopper";
const MESSAGE: &str = "call me on 555-0100";
const TOKEN: &str = "crm-token-that-must-not-leak";

fn receipt(submission_id: &str) -> Receipt {
    let fields = serde_json::json!({"name": NAME, "email": EMAIL, "message": MESSAGE});
    static_forms_receipt(submission_id, None, fields, None)
}

#[tokio::test(flavor = "current_thread")]
async fn logs_one_line_per_record_without_personal_data_or_tokens() {
    let captured = CapturedLogs::default();
    let _guard = captured.install();

    let crm = CrmStub::start().await.unwrap();
    crm.always("sub_refused", Answer::status(400));
    let url = crm.leads_url();
    let config = Config::from_lookup(|name| match name {
        "RECEIPTS_TABLE" => Some("receipts".into()),
        "DESTINATION" => Some("http".into()),
        "CRM_URL" => Some(url.clone()),
        "CRM_TOKEN" => Some(TOKEN.into()),
        _ => None,
    })
    .unwrap();
    let Some(HttpConfig {
        url,
        token: TokenSetting::Inline(token),
        ..
    }) = config.destinations.first().settings().cloned()
    else {
        unreachable!("an http configuration with an inline token")
    };
    let ok = receipt("sub_ok");
    let refused = receipt("sub_refused");
    let worker = Worker::new(
        HttpCrm::new(url, Some(token)).unwrap(),
        MemoryLedger::holding([&ok, &refused]),
        8,
    );

    let records = vec![
        stream_event::record("INSERT", &ok, "1"),
        stream_event::record("INSERT", &refused, "2"),
        stream_event::record("MODIFY", &ok, "3"),
    ];
    let event: Event = serde_json::from_value(stream_event::event(records)).unwrap();
    worker
        .handle(event, Instant::now() + Duration::from_secs(30))
        .await;
    assert_eq!(
        crm.lead("sub_ok").unwrap().authorization.as_deref(),
        Some(&*format!("Bearer {TOKEN}"))
    );

    let text = captured.text();
    for leaked in [EMAIL, NAME, MESSAGE, TOKEN, "555-0100"] {
        assert!(!text.contains(leaked), "{leaked:?} leaked into:\n{text}");
    }
    let (metrics, lines): (Vec<&str>, Vec<&str>) =
        text.lines().partition(|line| line.contains("\"_aws\""));
    let lines: Vec<serde_json::Value> = lines
        .into_iter()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let metrics: Vec<serde_json::Value> = metrics
        .into_iter()
        .map(|m| shared::metrics::validate(m).unwrap_or_else(|e| panic!("{e}: {m}")))
        .collect();
    let records_by_outcome = |outcome: &str| {
        metrics
            .iter()
            .filter(|m| m["Records"] == 1.0 && m["Outcome"] == outcome)
            .count()
    };
    assert_eq!(
        (
            records_by_outcome("upserted"),
            records_by_outcome("failed-permanent"),
            records_by_outcome("skipped")
        ),
        (1, 1, 1),
        "one Records metric per record:\n{text}"
    );
    let destination: Vec<&serde_json::Value> = metrics
        .iter()
        .filter(|m| m.get("DestinationAttempts").is_some())
        .collect();
    assert_eq!(destination.len(), 2, "one destination line per delivery");
    for line in destination {
        assert_eq!(line["Destination"], "http");
        assert_eq!(line["DestinationAttempts"], 1.0);
        assert_eq!(line["DestinationAuthErrors"], 0.0);
        assert!(line["DestinationLatency"][0].as_f64().is_some());
    }
    assert_eq!(metrics.len(), 5, "{text}");
    assert_eq!(
        lines.len(),
        4,
        "three records and one batch summary:\n{text}"
    );
    let outcome_of = |id: &str| {
        lines
            .iter()
            .find(|l| l["submission_id"] == id)
            .map(|l| l["outcome"].clone())
    };
    assert_eq!(outcome_of("sub_ok"), Some("upserted".into()));
    assert_eq!(outcome_of("sub_refused"), Some("failed-permanent".into()));
    for line in &lines[..3] {
        assert_eq!(line["destination"], "http", "{line}");
        assert!(line["attempts"].is_u64(), "{line}");
    }
    let summary = &lines[3];
    assert_eq!(
        (
            summary["records"].as_u64(),
            summary["upserted"].as_u64(),
            summary["skipped"].as_u64(),
            summary["failed_permanent"].as_u64()
        ),
        (Some(3), Some(1), Some(1), Some(1))
    );
}

/// The metric lines of `text`, each checked against the EMF rules.
fn metric_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter(|line| line.contains("\"_aws\""))
        .map(|m| shared::metrics::validate(m).unwrap_or_else(|e| panic!("{e}: {m}")))
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn rate_limits_auth_errors_and_a_pass_are_measured() {
    let captured = CapturedLogs::default();
    let _guard = captured.install();
    let crm = CrmStub::start().await.unwrap();
    crm.script("sub_busy", [Answer::retry_after(429, "0")]);
    crm.always("sub_locked_out", Answer::status(403));
    let busy = receipt("sub_busy");
    let locked_out = receipt("sub_locked_out");
    let mut waiting = receipt("sub_waiting");
    waiting.received_at =
        shared::receipt::format_timestamp(SystemTime::now() - Duration::from_secs(3 * 3600));
    let ledger = MemoryLedger::default();
    for receipt in [&busy, &locked_out, &waiting] {
        ledger.insert(receipt.clone());
    }
    let worker = Worker::new(HttpCrm::new(crm.leads_url(), None).unwrap(), ledger, 8).with_metrics(
        shared::metrics::Metrics::new("Acme/Leads", shared::metrics::Observability::Full),
    );

    let records = vec![
        stream_event::record("INSERT", &busy, "1"),
        stream_event::record("INSERT", &locked_out, "2"),
    ];
    let event: Event = serde_json::from_value(stream_event::event(records)).unwrap();
    worker
        .handle(event, Instant::now() + Duration::from_secs(30))
        .await;
    let pass = worker
        .reconcile(Instant::now() + Duration::from_secs(30))
        .await;
    assert_eq!(pass.delivered, 1, "{pass:?}");

    let text = captured.text();
    for leaked in [EMAIL, NAME, MESSAGE] {
        assert!(!text.contains(leaked), "{leaked:?} leaked into:\n{text}");
    }
    let metrics = metric_lines(&text);
    assert!(metrics
        .iter()
        .all(|m| m["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Acme/Leads"));
    let destination_line = |attempts: f64, auth: f64, limited: f64| {
        metrics.iter().any(|m| {
            m["DestinationAttempts"] == attempts
                && m["DestinationAuthErrors"] == auth
                && m["DestinationRateLimited"] == limited
        })
    };
    assert!(destination_line(2.0, 0.0, 1.0), "429 then success:\n{text}");
    assert!(
        destination_line(1.0, 1.0, 0.0),
        "403, never FAILED:\n{text}"
    );
    // What waits, counted before the pass delivers anything: the 403
    // receipt and the three-hour-old one.
    let census_line = metrics
        .iter()
        .find(|m| m.get("PendingReceipts").is_some())
        .expect("a census line");
    assert_eq!(census_line["PendingReceipts"], 1.0 + 1.0);
    assert_eq!(census_line["FailedReceipts"], 0.0);
    assert!(census_line["OldestPendingAgeSeconds"]
        .as_f64()
        .is_some_and(|age| (3.0 * 3600.0 - 60.0..3.0 * 3600.0 + 60.0).contains(&age)));
    let pass_line = metrics
        .iter()
        .find(|m| m.get("Redelivered").is_some())
        .expect("a pass line");
    assert_eq!(pass_line["Redelivered"], 1.0);
    assert_eq!(pass_line["GaveUp"], 0.0);
}
