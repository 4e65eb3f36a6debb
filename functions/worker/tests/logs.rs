//! What the worker logs: one JSON line per record (submission id,
//! destination, outcome, attempts, duration) plus a batch summary, and never
//! form data, names, emails, messages or the CRM token.

use std::time::{Duration, Instant, SystemTime};

use aws_lambda_events::event::dynamodb::Event;
use devtools::crm_stub::{Answer, CrmStub};
use devtools::log_capture::CapturedLogs;
use devtools::stream_event;
use shared::{FormSubmission, Receipt, Retention};
use worker::config::{DestinationConfig, TokenSetting};
use worker::http_crm::HttpCrm;
use worker::ledger::MemoryLedger;
use worker::{Config, Worker};

const EMAIL: &str = "grace.hopper@example.com";
const NAME: &str = "Grace Brewster Hopper";
const MESSAGE: &str = "call me on 555-0100";
const TOKEN: &str = "crm-token-that-must-not-leak";

fn receipt(submission_id: &str) -> Receipt {
    let body = serde_json::json!({
        "event": "form.submitted",
        "data": {"submissionId": submission_id, "formData": {"name": NAME, "email": EMAIL, "message": MESSAGE}}
    });
    Receipt::new(
        &FormSubmission::parse(body.to_string().as_bytes()).unwrap(),
        SystemTime::now(),
        Retention::default(),
    )
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
    let DestinationConfig::Http {
        url,
        token: TokenSetting::Inline(token),
    } = config.destination
    else {
        unreachable!("an http configuration with an inline token")
    };
    let ok = receipt("sub_ok");
    let refused = receipt("sub_refused");
    let worker = Worker::new(
        HttpCrm::new(url, Some(token)).unwrap(),
        MemoryLedger::with_received([ok.pk.as_str(), refused.pk.as_str()]),
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
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
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
