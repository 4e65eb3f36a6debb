//! Metrics survive every log level the template allows. Lambda drops each
//! line below the function's ApplicationLogLevel, and the EMF metric lines
//! are INFO: the alarms are built on them. For each allowed `LogLevel`, both
//! functions handle real work under the level and environment the template
//! gives them, and Lambda's documented filter must keep every metric line
//! (and still honour the level chosen for the other lines).

use std::time::{Duration, Instant, SystemTime};

use aws_lambda_events::event::dynamodb::Event;
use devtools::crm_stub::CrmStub;
use devtools::log_capture::{lambda_keeps, CapturedLogs};
use devtools::stream_event;
use devtools::template::{self, Evaluator};
use ingest::store::MemoryReceiptStore;
use integration::{delivery, ingest_config, ingest_over};
use shared::{FormSubmission, Receipt};
use worker::destinations::http::HttpCrm;
use worker::ledger::memory::MemoryLedger;
use worker::Worker;

/// What Lambda and the function are told for one `LogLevel`: Lambda's
/// filter (ApplicationLogLevel) and the level the function applies itself.
fn levels_for(template: &serde_norway::Value, log_level: &str) -> (String, String) {
    let evaluator = Evaluator::new(template, &[("LogLevel", log_level)]);
    let application = evaluator
        .evaluate(&template["Globals"]["Function"]["LoggingConfig"]["ApplicationLogLevel"])
        .and_then(|value| value.as_str().map(str::to_owned))
        .expect("an ApplicationLogLevel");
    let environment = evaluator.environment("IngestFunction");
    let function_level = shared::logging::level_setting(|name| match name {
        // Lambda sets it from the LoggingConfig.
        "AWS_LAMBDA_LOG_LEVEL" => Some(application.clone()),
        other => environment.get(other).cloned(),
    });
    (application, function_level)
}

fn receipt(submission_id: &str) -> Receipt {
    let body = serde_json::json!({
        "event": "form.submitted",
        "data": {"submissionId": submission_id, "formData": {"email": "ada@example.com"}}
    });
    Receipt::new(
        &FormSubmission::parse(body.to_string().as_bytes()).unwrap(),
        SystemTime::now(),
    )
}

#[tokio::test(flavor = "current_thread")]
async fn every_allowed_log_level_keeps_every_metric_line() {
    let template = template::load(&template::workspace_template()).unwrap();
    let allowed: Vec<String> = template["Parameters"]["LogLevel"]["AllowedValues"]
        .as_sequence()
        .expect("LogLevel lists its allowed values")
        .iter()
        .map(|value| value.as_str().unwrap().to_owned())
        .collect();
    assert!(allowed.iter().any(|level| level == "ERROR"), "{allowed:?}");
    let crm = CrmStub::start().await.unwrap();

    for log_level in &allowed {
        let (application, function_level) = levels_for(&template, log_level);
        let captured = CapturedLogs::default();
        let guard = captured.install_at(&function_level);

        // Ingest: one new receipt, one refused delivery (a WARN line).
        let ingest = ingest_over(MemoryReceiptStore::default(), &ingest_config("receipts")).await;
        assert_eq!(
            ingest
                .handle(delivery("sub_levels", "ada@example.com"))
                .await
                .status(),
            202
        );
        let mut refused = delivery("sub_refused", "ada@example.com");
        refused.headers_mut().remove("authorization");
        assert_eq!(ingest.handle(refused).await.status(), 401);

        // Worker: one lead to the CRM.
        let lead = receipt(&format!("sub_{log_level}"));
        let worker = Worker::new(
            HttpCrm::new(crm.leads_url(), None).unwrap(),
            MemoryLedger::holding([&lead]),
            4,
        );
        let event: Event = serde_json::from_value(stream_event::event(vec![stream_event::record(
            "INSERT", &lead, "1",
        )]))
        .unwrap();
        worker
            .handle(event, Instant::now() + Duration::from_secs(30))
            .await;
        drop(guard);

        let text = captured.text();
        let (metrics, others): (Vec<&str>, Vec<&str>) =
            text.lines().partition(|line| line.contains("\"_aws\""));
        assert!(
            metrics.len() >= 3,
            "LogLevel={log_level}: both functions emitted metrics:\n{text}"
        );
        for line in &metrics {
            assert!(
                lambda_keeps(line, &application),
                "LogLevel={log_level}: Lambda (ApplicationLogLevel={application}) drops a metric line: {line}"
            );
        }
        // The chosen level still holds for the other lines.
        let kept: Vec<&&str> = others
            .iter()
            .filter(|line| lambda_keeps(line, &application))
            .collect();
        assert!(
            kept.iter().all(|line| lambda_keeps(line, log_level)),
            "LogLevel={log_level}: a line below it was kept:\n{kept:?}"
        );
        if ["WARN", "ERROR"].contains(&log_level.as_str()) {
            assert!(
                !kept.iter().any(|line| line.contains("\"level\":\"INFO\"")),
                "LogLevel={log_level}: INFO lines are not logged"
            );
        }
    }
}

#[test]
fn lambdas_filter_as_documented() {
    for (line, level, kept) in [
        (r#"{"level":"INFO","message":"m"}"#, "INFO", true),
        (r#"{"level":"INFO","message":"m"}"#, "WARN", false),
        (r#"{"level":"ERROR","message":"m"}"#, "WARN", true),
        (r#"{"_aws":{}}"#, "INFO", true),
        (r#"{"_aws":{}}"#, "WARN", false),
        ("not json", "INFO", true),
        ("not json", "ERROR", false),
        (r#"{"level":"DEBUG"}"#, "TRACE", true),
    ] {
        assert_eq!(lambda_keeps(line, level), kept, "{line} at {level}");
    }
}
