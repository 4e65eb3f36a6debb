//! Every worker event in events/ through the handler, so the files that
//! `sam local invoke` and `cargo lambda invoke` use cannot drift from the code.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use devtools::crm_stub::CrmStub;
use serde_json::Value;
use shared::{FormSubmission, Receipt, ReceiptStatus};
use worker::destinations::http::HttpCrm;
use worker::ledger::memory::MemoryLedger;
use worker::Worker;

const DEMO_KEY: &str = "staticforms:form.submitted:sub_01JDEMO00000000000000000001";

fn events_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../events")
}

fn event(file: &str) -> Value {
    let text = std::fs::read_to_string(events_dir().join(file)).expect("event file exists");
    serde_json::from_str(&text).expect("JSON")
}

/// The receipt in a stream event's first record: what ingest stored.
fn insert_image(file: &str) -> Receipt {
    let image: serde_dynamo::Item =
        serde_json::from_value(event(file)["Records"][0]["dynamodb"]["NewImage"].clone())
            .expect("a NewImage");
    serde_dynamo::from_item(image).expect("a receipt")
}

#[tokio::test]
async fn every_stream_event_in_events_is_handled() {
    let crm = CrmStub::start().await.unwrap();
    let worker = Worker::new(
        HttpCrm::new(crm.leads_url(), None).unwrap(),
        MemoryLedger::holding([&insert_image("worker-insert.json")]),
        8,
    );
    let deadline = || Instant::now() + Duration::from_secs(30);

    // The INSERT of the receipt that ingest stores for events/ingest-valid.json.
    let response = worker
        .invoke(event("worker-insert.json"), deadline())
        .await
        .unwrap();
    assert_eq!(response, serde_json::json!({"batchItemFailures": []}));
    let lead = crm
        .lead("sub_01JDEMO00000000000000000001")
        .expect("the demo lead");
    assert_eq!(lead.body["name"], "Ada Lovelace");
    assert_eq!(lead.body["email"], "ada@example.com");
    assert_eq!(lead.body["fields"]["company"], "Analytical Engines Ltd");
    assert_eq!(
        worker.ledger().get(DEMO_KEY).unwrap().status,
        ReceiptStatus::Completed
    );

    // `sam local generate-event dynamodb update`: INSERT, MODIFY and REMOVE
    // of an item that is not a receipt. It parses, and nothing is done.
    let response = worker
        .invoke(event("dynamodb-update-sample.json"), deadline())
        .await
        .unwrap();
    assert_eq!(response, serde_json::json!({"batchItemFailures": []}));
    assert_eq!(
        crm.calls().len(),
        1,
        "only the receipt's INSERT reached the CRM"
    );

    // The schedule's event starts a reconciliation pass: a receipt received
    // an hour ago and never delivered is delivered now.
    let body = serde_json::json!({
        "event": "form.submitted",
        "data": {"submissionId": "sub_waiting", "formData": {"email": "b@example.com"}}
    });
    let waiting = Receipt::new(
        &FormSubmission::parse(body.to_string().as_bytes()).unwrap(),
        SystemTime::now() - Duration::from_secs(3600),
    );
    worker.ledger().insert(waiting.clone());
    let report = worker
        .invoke(event("worker-reconcile.json"), deadline())
        .await
        .unwrap();
    assert_eq!(report["due"], 1, "{report}");
    assert_eq!(report["delivered"], 1, "{report}");
    assert!(crm.lead("sub_waiting").is_some());
    assert_eq!(
        worker.ledger().get(&waiting.pk).unwrap().status,
        ReceiptStatus::Completed
    );

    let mut on_disk: Vec<String> = std::fs::read_dir(events_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with("ingest-") && name != "local-env.json")
        .collect();
    on_disk.sort();
    assert_eq!(
        on_disk,
        [
            "dynamodb-update-sample.json",
            "worker-insert.json",
            "worker-reconcile.json"
        ],
        "every worker event in events/ is tested"
    );
}
