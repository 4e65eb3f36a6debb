//! Every accepted submission reaches the CRM, or a person is told: the
//! stream defers what it cannot deliver, the reconciliation pass delivers
//! it later, through the same path, against a real DynamoDB-protocol server
//! with the real SDK and a real HTTP CRM on loopback.
//!
//! Time is moved forward with the worker's clock instead of waited out.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use aws_sdk_dynamodb::Client;
use devtools::crm_stub::{Answer, CrmStub};
use devtools::stream_event;
use integration::*;
use shared::delivery::RetryPolicy;
use shared::{FormSubmission, Receipt, ReceiptStatus};
use worker::config::TokenSetting;
use worker::destinations::http::HttpCrm;
use worker::ledger::dynamodb::DynamoLedger;
use worker::ledger::memory::WatchedLedger;
use worker::ledger::ReceiptLedger;
use worker::reconcile::PassReport;
use worker::Worker;

/// A clock that reads the real time plus an offset the test moves.
use shared::clock::Adjustable as TestClock;

fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        safety_margin: Duration::from_millis(200),
        max_attempts: 3,
    }
}

fn in_seconds(seconds: u64) -> Instant {
    Instant::now() + Duration::from_secs(seconds)
}

fn statuses(items: &[HashMap<String, AttributeValue>]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for item in items {
        *counts.entry(text(item, "status")).or_default() += 1;
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crm_outage_longer_than_every_stream_retry_is_delivered_once_by_the_reconciler() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let ReceiptsWithIngest {
        client,
        table,
        ingest,
    } = receipts_with_ingest(&moto).await;
    let crm = CrmStub::start().await.unwrap();
    crm.fail_all(Answer::status(503));
    let clock = TestClock::default();
    let worker = Worker::new(
        HttpCrm::new(crm.leads_url(), None).unwrap(),
        DynamoLedger::new(worker_client(&moto).await, &table),
        8,
    )
    .with_retry_policy(quick_retries())
    .with_clock(clock.clock());

    let ids: Vec<String> = (0..20).map(|n| format!("sub_outage_{n}")).collect();
    for id in &ids {
        assert_eq!(
            ingest
                .handle(delivery(id, "ada@example.com"))
                .await
                .status(),
            202
        );
    }

    // The stream delivers while the CRM is down: every record is deferred
    // to the reconciler, none fails the batch or reaches the dead-letter queue.
    let report = drain_stream(&moto, &client, &table, &worker).await;
    assert!(
        report.given_up.is_empty(),
        "nothing for the dead-letter queue"
    );
    assert_eq!(report.invocations, 1, "no stream retries were needed");
    assert!(crm.calls().len() >= ids.len());
    assert_eq!(crm.lead_count(), 0);
    let items = scan(&client, &table).await;
    assert_eq!(
        statuses(&items),
        HashMap::from([("RECEIVED".into(), ids.len())])
    );
    for item in &items {
        assert_eq!(
            text(item, "pending"),
            "PENDING",
            "in the reconciler's queue"
        );
        assert_eq!(text(item, "lastError"), "HTTP 503");
        assert!(text(item, "nextAttemptAt") > text(item, "receivedAt"));
    }

    // A pass right away finds nothing due: the backoff has not passed.
    assert_eq!(worker.reconcile(in_seconds(30)).await.due, 0);

    // An hour later the CRM is still down: the pass tries, and defers again.
    clock.advance(Duration::from_secs(3600));
    let still_down = worker.reconcile(in_seconds(30)).await;
    assert_eq!(
        (still_down.due, still_down.deferred),
        (ids.len(), ids.len())
    );
    assert_eq!(crm.lead_count(), 0);

    // The CRM recovers; the next due pass delivers every lead once. Six
    // attempts in, the backoff is 32 to 64 minutes.
    crm.recover();
    clock.advance(Duration::from_secs(2 * 3600));
    let recovered = worker.reconcile(in_seconds(30)).await;
    assert_eq!(
        (recovered.due, recovered.delivered, recovered.finished),
        (ids.len(), ids.len(), true),
        "{recovered:?}"
    );
    for id in &ids {
        assert_eq!(crm.lead(id).map(|l| l.writes), Some(1), "{id} written once");
    }
    let items = scan(&client, &table).await;
    assert_eq!(
        statuses(&items),
        HashMap::from([("COMPLETED".into(), ids.len())])
    );
    assert!(
        items.iter().all(|i| !i.contains_key("pending")),
        "the queue is empty"
    );

    // Nothing is left for a later pass.
    clock.advance(Duration::from_secs(86_400));
    let empty = worker.reconcile(in_seconds(30)).await;
    assert_eq!(
        PassReport {
            items_read: 0,
            bytes_read: 0,
            ..empty
        },
        PassReport {
            finished: true,
            pending: Some(0),
            failed_receipts: Some(0),
            census_complete: true,
            ..PassReport::default()
        }
    );
}

#[tokio::test]
async fn a_401_then_a_token_rotated_in_secrets_manager_delivers_and_never_fails_the_lead() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let ReceiptsWithIngest {
        client,
        table,
        ingest,
    } = receipts_with_ingest(&moto).await;
    let secrets = secrets_client(&moto).await;
    let arn = create_secret(&secrets, "crm-token", "crm-token-before-rotation").await;
    let crm = CrmStub::start().await.unwrap();
    // The CRM was given a new token; the secret still holds the old one.
    crm.require_bearer("crm-token-after-rotation");
    let clock = TestClock::default();
    // What main builds; no wait between re-reads so the test need not sleep
    // (the once-a-minute bound is a unit test of the gate).
    let crm_client = worker::destinations::http::build(
        crm.leads_url(),
        TokenSetting::SecretsManager(arn.clone()),
        || secrets.clone(),
        Duration::ZERO,
    )
    .await
    .unwrap();
    let worker = Worker::new(
        crm_client,
        DynamoLedger::new(worker_client(&moto).await, &table),
        8,
    )
    .with_retry_policy(quick_retries())
    .with_clock(clock.clock());

    assert_eq!(
        ingest
            .handle(delivery("sub_rotation", "a@example.com"))
            .await
            .status(),
        202
    );
    drain_stream(&moto, &client, &table, &worker).await;
    let items = scan(&client, &table).await;
    assert_eq!(
        text(&items[0], "status"),
        "RECEIVED",
        "an auth error is never the lead's fault"
    );
    assert_eq!(text(&items[0], "lastError"), "destination-auth");
    assert_eq!(
        items[0].get("lastHttpStatus"),
        Some(&AttributeValue::N("401".into()))
    );

    secrets
        .put_secret_value()
        .secret_id(&arn)
        .secret_string("crm-token-after-rotation")
        .send()
        .await
        .unwrap();
    clock.advance(Duration::from_secs(3600));
    let pass = worker.reconcile(in_seconds(30)).await;
    assert_eq!(pass.delivered, 1, "{pass:?}");
    let lead = crm.lead("sub_rotation").unwrap();
    assert_eq!(
        lead.authorization.as_deref(),
        Some("Bearer crm-token-after-rotation")
    );
    assert_eq!(text(&scan(&client, &table).await[0], "status"), "COMPLETED");
}

/// `count` receipts received an hour ago, written in batches of 25.
async fn write_receipts(client: &Client, table: &str, count: usize, prefix: &str, done: bool) {
    let received = SystemTime::now() - Duration::from_secs(3600);
    let receipts: Vec<Receipt> = (0..count)
        .map(|n| {
            let body = body(&format!("{prefix}{n}"), "x@example.com");
            let submission = FormSubmission::parse(body.as_bytes()).unwrap();
            let mut receipt = Receipt::new(&submission, received);
            if done {
                receipt.status = ReceiptStatus::Completed;
                receipt.pending = None;
                receipt.next_attempt_at = None;
                receipt.attempts = 1;
            }
            receipt
        })
        .collect();
    put_all(client, table, &receipts).await;
}

async fn put_all(client: &Client, table: &str, receipts: &[Receipt]) {
    for chunk in receipts.chunks(25) {
        let mut unprocessed: Vec<WriteRequest> = chunk
            .iter()
            .map(|receipt| {
                WriteRequest::builder()
                    .put_request(
                        PutRequest::builder()
                            .set_item(Some(serde_dynamo::to_item(receipt).unwrap()))
                            .build()
                            .unwrap(),
                    )
                    .build()
            })
            .collect();
        while !unprocessed.is_empty() {
            let output = client
                .batch_write_item()
                .request_items(table, unprocessed)
                .send()
                .await
                .unwrap();
            unprocessed = output
                .unprocessed_items()
                .and_then(|items| items.get(table))
                .cloned()
                .unwrap_or_default();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_reads_the_pending_receipts_not_the_completed_ones() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let client = worker_client(&moto).await;
    let table = create_table(&client, "ReceiptsTable").await;
    write_receipts(&client, &table, 10_000, "sub_done_", true).await;
    write_receipts(&client, &table, 10, "sub_waiting_", false).await;
    assert_eq!(scan(&client, &table).await.len(), 10_010);

    let crm = CrmStub::start().await.unwrap();
    let worker = Worker::new(
        HttpCrm::new(crm.leads_url(), None).unwrap(),
        DynamoLedger::new(client.clone(), &table),
        8,
    );
    let pass = worker.reconcile(in_seconds(60)).await;

    assert_eq!(
        (pass.due, pass.delivered, pass.finished),
        (10, 10, true),
        "{pass:?}"
    );
    assert!(
        pass.items_read <= 100,
        "a pass read {} items: more than 1% of 10,010",
        pass.items_read
    );
    println!(
        "one pass over 10,000 completed and 10 pending receipts read {} items",
        pass.items_read
    );
    assert_eq!(crm.lead_count(), 10);
}

/// The pass pays for what is due, not for the backlog: counting reads the
/// keys-only queue index, and a receipt's payload is read once, by its
/// claim (a write).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_over_a_large_backlog_reads_keys_not_payloads() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let client = worker_client(&moto).await;
    let table = create_table(&client, "ReceiptsTable").await;
    let received = SystemTime::now() - Duration::from_secs(3600);
    let message = "m".repeat(8 * 1024);
    let later = shared::receipt::format_timestamp(SystemTime::now() + Duration::from_secs(3600));
    let receipts: Vec<Receipt> = (0..1_005)
        .map(|n| {
            let body = serde_json::json!({
                "event": "form.submitted",
                "data": {"submissionId": format!("sub_backlog_{n}"), "formData": {"email": "x@example.com", "message": message}}
            });
            let submission = FormSubmission::parse(body.to_string().as_bytes()).unwrap();
            let mut receipt = Receipt::new(&submission, received);
            if n >= 5 {
                // Deferred: waiting, not due.
                receipt.next_attempt_at = Some(later.clone());
            }
            receipt
        })
        .collect();
    put_all(&client, &table, &receipts).await;

    let crm = CrmStub::start().await.unwrap();
    let worker = Worker::new(
        HttpCrm::new(crm.leads_url(), None).unwrap(),
        DynamoLedger::new(client.clone(), &table),
        8,
    );
    let pass = worker.reconcile(in_seconds(60)).await;

    assert_eq!((pass.due, pass.delivered), (5, 5), "{pass:?}");
    assert_eq!(pass.pending, Some(1_005), "counted before delivering");
    assert!(pass.census_complete);
    let payload_bytes: usize = receipts
        .iter()
        .map(|r| r.payload.as_ref().map_or(0, String::len))
        .sum();
    assert!(
        pass.bytes_read <= 1_500_000,
        "a pass read {} bytes of items (the receipts hold {payload_bytes} bytes of payload)",
        pass.bytes_read
    );
    println!(
        "one pass over 1,000 waiting 8 KB receipts and 5 due read {} index entries, {} bytes",
        pass.items_read, pass.bytes_read
    );
    assert_eq!(crm.lead_count(), 5);
}

/// On dynalite: moto takes no lock around a conditional write's check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_racing_a_stream_delivery_leaves_one_lead_and_one_completion() {
    let dynalite = endpoint(DYNALITE_ENDPOINT);
    let client = worker_client(&dynalite).await;
    let table = create_table_key_only(&client, "ReceiptsTable").await;
    write_receipts(&client, &table, 10, "sub_race_", false).await;
    let receipts: Vec<Receipt> = scan(&client, &table)
        .await
        .into_iter()
        .map(|item| serde_dynamo::from_item(item).unwrap())
        .collect();

    let crm = CrmStub::start().await.unwrap();
    // Long enough that both deliveries of a receipt are in flight at once,
    // even on a loaded machine: the pass reads the index well within it.
    crm.set_delay(Duration::from_millis(1000));
    let completed = Arc::new(AtomicUsize::new(0));
    let worker_in = |clock: &TestClock| {
        Worker::new(
            HttpCrm::new(crm.leads_url(), None).unwrap(),
            WatchedLedger::new(DynamoLedger::new(client.clone(), &table))
                .counting_into(Arc::clone(&completed)),
            10,
        )
        .with_clock(clock.clock())
    };
    // Two containers: one handles a late stream batch, one runs a pass.
    let stream_container = worker_in(&TestClock::default());
    let pass_container = worker_in(&TestClock::default());
    let records = receipts
        .iter()
        .enumerate()
        .map(|(n, r)| stream_event::record("INSERT", r, &format!("{}", 100 + n)))
        .collect();
    let batch = serde_json::from_value(stream_event::event(records)).unwrap();

    // The pass starts first and the stream batch arrives while the pass's
    // CRM calls are in flight: each receipt is claimed by one of the two.
    let late_stream = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        stream_container.handle(batch, in_seconds(30)).await
    };
    let (response, pass) = tokio::join!(late_stream, pass_container.reconcile(in_seconds(30)));

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(crm.lead_count(), receipts.len(), "one lead per submission");
    for receipt in &receipts {
        assert_eq!(
            crm.calls_for(&receipt.submission_id).len(),
            1,
            "one of the two claimed it; the other sent nothing"
        );
    }
    assert_eq!(
        pass.delivered + pass.skipped,
        pass.due,
        "the pass delivered what it claimed and skipped the rest: {pass:?}"
    );
    println!(
        "race: the pass delivered {} of {} receipts, the stream the rest",
        pass.delivered,
        receipts.len()
    );
    assert_eq!(
        completed.load(Ordering::SeqCst),
        receipts.len(),
        "each receipt moved to COMPLETED exactly once"
    );
    let items = scan(&client, &table).await;
    assert_eq!(
        statuses(&items),
        HashMap::from([("COMPLETED".into(), receipts.len())])
    );
}

/// A worker delivering to `crm` over HTTP, its ledger `table` on `moto`,
/// on the test's clock.
async fn http_worker(
    moto: &str,
    table: &str,
    crm: &CrmStub,
    clock: &TestClock,
) -> Worker<HttpCrm, DynamoLedger> {
    Worker::new(
        HttpCrm::new(crm.leads_url(), None).unwrap(),
        DynamoLedger::new(worker_client(moto).await, table),
        8,
    )
    .with_clock(clock.clock())
}

/// The `receipts` CLI on `table`, found through RECEIPTS_TABLE.
fn receipts_on(table: &str, args: &[&str]) -> (bool, String, String) {
    receipts_cli(&[("RECEIPTS_TABLE", table)], args)
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// A receipt received longer ago than newest-wins gates are kept may
/// overwrite a newer lead of its person whose gate expired: redrive names it
/// with a warning (also with --dry-run), and names no younger one.
#[tokio::test]
async fn redrive_warns_before_redriving_a_receipt_older_than_the_gates() {
    let client = worker_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let table = create_table(&client, "ReceiptsTable").await;
    for (id, age_days) in [("sub_old", 40), ("sub_young", 2)] {
        let body = format!(
            r#"{{"event":"form.submitted","data":{{"submissionId":"{id}","formData":{{"email":"ada@example.com"}}}}}}"#
        );
        let mut receipt = Receipt::new(
            &FormSubmission::parse(body.as_bytes()).unwrap(),
            SystemTime::now() - Duration::from_secs(age_days * 86_400),
        );
        receipt.status = ReceiptStatus::Failed;
        receipt.pending = None;
        receipt.next_attempt_at = None;
        client
            .put_item()
            .table_name(&table)
            .set_item(Some(serde_dynamo::to_item(&receipt).unwrap()))
            .send()
            .await
            .unwrap();
    }
    for args in [
        vec!["redrive", "--status", "failed", "--dry-run"],
        vec!["redrive", "sub_old", "sub_young"],
    ] {
        let (ok, out, err) = receipts_on(&table, &args);
        assert!(ok, "{args:?}: {err}");
        assert!(
            out.contains(
                "warning: staticforms:form.submitted:sub_old was received more than 30 days ago, \
                 longer than newest-wins gates are kept"
            ),
            "{args:?}: {out}"
        );
        assert!(!out.contains("sub_young was received"), "{args:?}: {out}");
        assert!(out.contains(" 2, skipped 0, of 2"), "{args:?}: {out}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_receipt_redriven_with_the_cli_is_delivered_once_at_the_next_pass() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let ReceiptsWithIngest {
        client,
        table,
        ingest,
    } = receipts_with_ingest(&moto).await;
    let crm = CrmStub::start().await.unwrap();
    crm.always("sub_refused", Answer::status(422));
    let clock = TestClock::default();
    let worker = http_worker(&moto, &table, &crm, &clock).await;
    for id in ["sub_refused", "sub_fine"] {
        assert_eq!(
            ingest
                .handle(delivery(id, "ada@example.com"))
                .await
                .status(),
            202
        );
    }
    drain_stream(&moto, &client, &table, &worker).await;
    // A newest-wins gate shares the table: never listed, never "unreadable".
    put_gate(
        &client,
        &table,
        &gate_of("ada@example.com"),
        "2026-12-01T00:00:00.000Z",
        1800000000,
    )
    .await;

    let (ok, out, err) = receipts_on(&table, &["list", "--json"]);
    assert!(ok, "{err}");
    assert_eq!(json(&out).as_array().map(Vec::len), Some(2), "{out}");
    assert!(!err.contains("did not read as receipts"), "{err}");
    let (ok, out, err) = receipts_on(&table, &["list", "--status", "failed", "--json"]);
    assert!(ok, "{err}");
    let failed = json(&out);
    assert_eq!(failed.as_array().map(Vec::len), Some(1), "{out}");
    assert_eq!(failed[0]["submissionId"], "sub_refused");
    assert_eq!(failed[0]["failureReason"], "HTTP 422");
    assert!(
        !out.contains("ada@example.com"),
        "no form data without --payload"
    );

    let before = scan(&client, &table).await;
    let (ok, out, err) = receipts_on(&table, &["redrive", "--status", "failed", "--dry-run"]);
    assert!(ok, "{err}");
    assert!(out.contains("would redrive 1, skipped 0, of 1"), "{out}");
    assert_eq!(
        scan(&client, &table).await,
        before,
        "--dry-run changes nothing"
    );

    // The operator fixes the cause, then redrives.
    crm.answer_normally("sub_refused");
    let (ok, out, err) = receipts_on(&table, &["redrive", "--status", "failed"]);
    assert!(ok, "{err}");
    assert!(out.contains("redriven 1, skipped 0, of 1"), "{out}");
    // While a delivery holds it (claimed), it is not redriven again.
    let key =
        shared::IdempotencyKey::from_stored("staticforms:form.submitted:sub_refused".to_owned());
    let items = scan(&client, &table).await;
    let redriven = items
        .iter()
        .find(|item| text(item, "pk") == key.as_str())
        .unwrap();
    let seen = shared::receipt::Timestamp::from_stored(text(redriven, "nextAttemptAt"));
    let until = shared::receipt::Timestamp::at(SystemTime::now() + Duration::from_secs(600));
    assert!(matches!(
        worker
            .ledger()
            .claim(
                &key,
                Some(&seen),
                &until,
                &shared::receipt::Timestamp::at(SystemTime::now())
            )
            .await,
        Ok(worker::ledger::Claim::Taken(_))
    ));
    let (ok, out, _) = receipts_on(&table, &["redrive", "sub_refused"]);
    assert!(ok);
    assert!(
        out.contains("skipped staticforms:form.submitted:sub_refused: RECEIVED and not due before"),
        "{out}"
    );
    let (ok, out, _) = receipts_on(&table, &["redrive", "sub_fine"]);
    assert!(ok);
    assert!(
        out.contains("skipped staticforms:form.submitted:sub_fine: COMPLETED"),
        "{out}"
    );

    let (ok, out, err) = receipts_on(&table, &["stats", "--json"]);
    assert!(ok, "{err}");
    let stats = json(&out);
    assert_eq!(stats["byStatus"]["RECEIVED"], 1, "{out}");
    assert_eq!(stats["byStatus"]["COMPLETED"], 1, "{out}");
    assert_eq!(stats["byStatus"]["FAILED"], 0, "{out}");

    // The next pass (the stream has had its time) delivers it, once.
    clock.advance(Duration::from_secs(3600));
    let pass = worker.reconcile(in_seconds(30)).await;
    assert_eq!((pass.due, pass.delivered), (1, 1), "{pass:?}");
    assert_eq!(crm.lead("sub_refused").map(|l| l.writes), Some(1));
    assert_eq!(
        crm.calls_for("sub_refused").len(),
        2,
        "refused once, delivered once"
    );
    assert_eq!(worker.reconcile(in_seconds(30)).await.due, 0);

    let (ok, out, err) = receipts_on(&table, &["show", "sub_refused", "--json"]);
    assert!(ok, "{err}");
    let shown = json(&out);
    assert_eq!(shown["status"], "COMPLETED", "{out}");
    assert_eq!(shown["attempts"], 1, "attempts were reset by the redrive");
    assert!(shown.get("failureReason").is_none(), "{out}");
    assert!(shown.get("redrivenAt").is_some(), "{out}");
    // Where the lead went: the destination and the id the CRM answered.
    let record = crm.lead("sub_refused").unwrap().id;
    assert_eq!(shown["deliveredTo"], "http", "{out}");
    assert_eq!(shown["recordId"], record.as_str(), "{out}");
    let (ok, out, _) = receipts_on(&table, &["show", "sub_refused"]);
    assert!(ok);
    let line = format!("delivered to   Your CRM (http), record {record}\n");
    assert!(out.contains(&line), "{out}");

    let (ok, out, _) = receipts_on(&table, &["list"]);
    assert!(ok);
    assert!(out.starts_with("SUBMISSION ID"), "{out}");
    assert_eq!(out.lines().count(), 3, "{out}");
    let (ok, _, err) = receipts_on(&table, &["show", "sub_never"]);
    assert!(!ok);
    assert!(
        err.contains("no receipt staticforms:form.submitted:sub_never"),
        "{err}"
    );
}

/// A receipt a spam rule held back, stored as ingest stores it: the stream
/// and the pass never deliver it; `list --status quarantined` and `show`
/// name its rule; two releases at once release it once; the next pass
/// delivers it once; releasing again, or releasing what was never
/// quarantined, changes nothing and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quarantined_receipt_is_delivered_only_once_released_and_then_once() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let ReceiptsWithIngest {
        client,
        table,
        ingest,
    } = receipts_with_ingest(&moto).await;
    let crm = CrmStub::start().await.unwrap();
    let clock = TestClock::default();
    let worker = http_worker(&moto, &table, &crm, &clock).await;
    assert_eq!(
        ingest
            .handle(delivery("sub_fine", "ada@example.com"))
            .await
            .status(),
        202
    );
    let held = FormSubmission::parse(body("sub_held", "bot@mailinator.com").as_bytes()).unwrap();
    let quarantined = Receipt::quarantined(
        &held,
        SystemTime::now(),
        &shared::spam::SpamRule::BlockedDomain,
        shared::Retention::default(),
    );
    client
        .put_item()
        .table_name(&table)
        .set_item(Some(serde_dynamo::to_item(&quarantined).unwrap()))
        .send()
        .await
        .unwrap();

    drain_stream(&moto, &client, &table, &worker).await;
    clock.advance(Duration::from_secs(3600));
    assert_eq!(worker.reconcile(in_seconds(30)).await.due, 0);
    assert!(crm.lead("sub_fine").is_some());
    assert_eq!(
        crm.lead("sub_held"),
        None,
        "held back from the stream and the pass"
    );

    let (ok, out, err) = receipts_on(&table, &["list", "--status", "quarantined", "--json"]);
    assert!(ok, "{err}");
    let listed = json(&out);
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{out}");
    assert_eq!(listed[0]["submissionId"], "sub_held");
    assert_eq!(listed[0]["quarantineRule"], "blocked-domain");
    let (ok, out, _) = receipts_on(&table, &["show", "sub_held"]);
    assert!(ok);
    assert!(out.contains("spam rule      blocked-domain\n"), "{out}");
    assert!(!out.contains("mailinator"), "no personal data: {out}");

    // Two operators release it at once: one releases, the other is told.
    let racing: Vec<_> = (0..2)
        .map(|_| {
            let table = table.clone();
            std::thread::spawn(move || receipts_on(&table, &["release", "sub_held"]))
        })
        .collect();
    let answers: Vec<(bool, String, String)> =
        racing.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(
        answers.iter().all(|(ok, _, err)| *ok && err.is_empty()),
        "{answers:?}"
    );
    let released_now = answers
        .iter()
        .filter(|(_, out, _)| out.contains(": released; RECEIVED and due now"))
        .count();
    assert_eq!(released_now, 1, "{answers:?}");
    assert!(
        answers
            .iter()
            .any(|(_, out, _)| out.contains(": released already at ")),
        "{answers:?}"
    );

    let pass = worker.reconcile(in_seconds(30)).await;
    assert_eq!((pass.due, pass.delivered), (1, 1), "{pass:?}");
    assert_eq!(crm.lead("sub_held").map(|lead| lead.writes), Some(1));
    assert_eq!(worker.reconcile(in_seconds(30)).await.due, 0);

    let (ok, out, _) = receipts_on(&table, &["release", "sub_held"]);
    assert!(ok);
    assert!(out.contains("released already at "), "{out}");
    assert_eq!(crm.calls_for("sub_held").len(), 1, "delivered once");

    let (ok, out, err) = receipts_on(&table, &["release", "sub_fine", "sub_never"]);
    assert!(!ok);
    assert!(
        out.contains("sub_fine: COMPLETED and not quarantined; nothing changed"),
        "{out}"
    );
    assert!(out.contains("sub_never: no such receipt"), "{out}");
    assert!(
        err.contains("2 of 2 receipt(s) could not be released"),
        "{err}"
    );
}

/// Spam rules stored with `receipts routes apply` (read back by ingest's
/// DynamoDB adapter, as at init) hold a bot back: answered exactly as a
/// person is, stored QUARANTINED with its rule, a retry a duplicate, never
/// delivered by the stream or a pass. A route's own rules apply to its form
/// only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_spam_rules_hold_bots_back_and_answer_them_as_people() {
    use aws_edge::routes::StoredRoutes;

    let moto = endpoint(DYNAMODB_ENDPOINT);
    let ReceiptsWithIngest {
        client,
        table,
        ingest,
    } = receipts_with_ingest(&moto).await;
    let file = std::env::temp_dir().join(format!("routes-{}.toml", unique_name("spam")));
    std::fs::write(
        &file,
        "[spam]\nhoneypot = [\"website_url\"]\nblock_email_domains = [\"mailinator.com\"]\n\n\
         [[route]]\nform = \"sf_integration_key\"\nname = \"Contact\"\n[route.spam]\nhoneypot = [\"fax\"]\n\n\
         [[route]]\nform = \"another_form\"\n[route.spam]\nhoneypot = [\"message\"]\n",
    )
    .unwrap();
    let (ok, out, err) = receipts_on(&table, &["routes", "apply", file.to_str().unwrap()]);
    std::fs::remove_file(&file).unwrap();
    assert!(ok, "{err}");
    assert!(out.contains("stored as version 1"), "{out}");
    let routes = StoredRoutes::new(client.clone(), &table);
    routes.read().await.expect("the stored routes are readable");
    let ingest = ingest.with_routes(routes.into_force(shared::routes::ROUTES_REREAD).await);

    let with_fields = |id: &str, extra: serde_json::Value| {
        let mut body: serde_json::Value =
            serde_json::from_str(&body(id, "ada@example.com")).unwrap();
        for (name, value) in extra.as_object().unwrap() {
            body["data"]["formData"][name] = value.clone();
        }
        delivery_with_key(
            body.to_string(),
            &format!("staticforms:form.submitted:{id}"),
        )
    };
    let answer = |response: lambda_http::Response<lambda_http::Body>| {
        let status = response.status().as_u16();
        (status, String::from_utf8(response.body().to_vec()).unwrap())
    };
    let person = answer(
        ingest
            .handle(delivery("sub_person", "ada@example.com"))
            .await,
    );
    let cases = [
        (
            "sub_domain",
            ingest
                .handle(delivery("sub_domain", "bot@Mail.Mailinator.com"))
                .await,
        ),
        (
            "sub_honeypot",
            ingest
                .handle(with_fields(
                    "sub_honeypot",
                    serde_json::json!({"website_url": "http://x"}),
                ))
                .await,
        ),
        (
            "sub_fax",
            ingest
                .handle(with_fields("sub_fax", serde_json::json!({"fax": "1"})))
                .await,
        ),
    ];
    for (id, response) in cases {
        assert_eq!(answer(response), person, "{id}: a bot learns nothing");
    }
    // Another form's rule (a message is a honeypot there) is not this form's.
    assert_eq!(person.0, 202);

    let (ok, out, err) = receipts_on(&table, &["list", "--status", "quarantined", "--json"]);
    assert!(ok, "{err}");
    let mut held: Vec<(String, String)> = json(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["submissionId"].as_str().unwrap().to_owned(),
                r["quarantineRule"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    held.sort();
    assert_eq!(
        held,
        [
            ("sub_domain".to_owned(), "blocked-domain".to_owned()),
            ("sub_fax".to_owned(), "honeypot:fax".to_owned()),
            ("sub_honeypot".to_owned(), "honeypot:website_url".to_owned()),
        ]
    );
    let retry = answer(
        ingest
            .handle(delivery("sub_domain", "bot@Mail.Mailinator.com"))
            .await,
    );
    assert_eq!(
        retry.0, 200,
        "a retry of a held submission is a duplicate: {retry:?}"
    );
    // The card names the route the receipt's form reference points to, by
    // its name: never the form id, a Static Forms apiKey.
    let (ok, out, err) = receipts_on(&table, &["show", "sub_fax"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("form           delivered by route \"Contact\"\n")
            && out.contains("spam rule      honeypot:fax\n")
            && !out.contains("sf_integration_key"),
        "{out}"
    );

    let crm = CrmStub::start().await.unwrap();
    let clock = TestClock::default();
    let worker = http_worker(&moto, &table, &crm, &clock).await;
    drain_stream(&moto, &client, &table, &worker).await;
    clock.advance(Duration::from_secs(3600));
    worker.reconcile(in_seconds(30)).await;
    assert_eq!(crm.lead_count(), 1, "only the person's lead");
    assert!(crm.lead("sub_person").is_some());
}
