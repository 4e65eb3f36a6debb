//! A person's data, from arrival to erasure, against a real DynamoDB-protocol
//! server with the real SDK, the real `receipts` binary and an HTTP CRM on
//! loopback: a delivered receipt keeps none, a retry stores none again,
//! `receipts forget` empties every receipt of that person and their rows in
//! the leads table (and `--dry-run` changes nothing), and no later pass
//! delivers anything for them.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

use aws_sdk_dynamodb::types::AttributeValue;
use devtools::crm_stub::{Answer, CrmStub};
use integration::*;
use shared::clock::Adjustable as TestClock;
use shared::delivery::RetryPolicy;
use shared::receipt::Timestamp;
use shared::{FormSubmission, Receipt, ReceiptStatus};
use worker::destinations::http::HttpCrm;
use worker::ledger::dynamodb::DynamoLedger;
use worker::ledger::ReceiptLedger;
use worker::Worker;

type Item = HashMap<String, AttributeValue>;

fn find<'a>(items: &'a [Item], submission_id: &str) -> &'a Item {
    items
        .iter()
        .find(|item| text(item, "pk") == format!("staticforms:form.submitted:{submission_id}"))
        .unwrap_or_else(|| panic!("no receipt {submission_id}"))
}

/// Whether anything of Ada (her address, in any case, or her name) is
/// stored in `items`.
fn holds_ada(items: &[Item]) -> Vec<String> {
    items
        .iter()
        .filter(|item| {
            let stored = format!("{item:?}").to_lowercase();
            stored.contains("ada@example.com") || stored.contains("lovelace")
        })
        .map(|item| text(item, "pk"))
        .collect()
}

fn ada_body(submission_id: &str, email: &str) -> String {
    serde_json::json!({
        "event": "form.submitted",
        "timestamp": 1_795_941_528,
        "data": {
            "submissionId": submission_id,
            "apiKey": "sf_integration_key",
            "formData": {"name": "Ada Lovelace", "email": email, "message": "Call me"}
        }
    })
    .to_string()
}

fn ada(submission_id: &str, email: &str) -> lambda_http::Request {
    delivery_with_key(
        ada_body(submission_id, email),
        &format!("staticforms:form.submitted:{submission_id}"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_is_kept_only_until_delivered_and_forget_erases_what_is_left() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let ReceiptsWithIngest {
        client,
        table,
        ingest,
    } = receipts_with_ingest(&moto).await;
    let leads = create_table(&client, "LeadsTable").await;
    let crm = CrmStub::start().await.unwrap();
    crm.always("sub_waiting", Answer::status(503));
    crm.always("sub_refused", Answer::status(422));
    let clock = TestClock::default();
    let worker = Worker::new(
        HttpCrm::new(crm.leads_url(), None).unwrap(),
        DynamoLedger::new(worker_client(&moto).await, &table),
        8,
    )
    .with_retry_policy(RetryPolicy {
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        safety_margin: Duration::from_millis(200),
        max_attempts: 2,
    })
    .with_clock(clock.clock());

    for (id, email) in [
        ("sub_done", "ada@example.com"),
        ("sub_waiting", "ada@example.com"),
        ("sub_refused", " ADA@Example.com"),
    ] {
        assert_eq!(ingest.handle(ada(id, email)).await.status(), 202, "{id}");
    }
    assert_eq!(
        ingest
            .handle(delivery("sub_grace", "grace@example.com"))
            .await
            .status(),
        202
    );
    drain_stream(&moto, &client, &table, &worker).await;

    // Delivered: the receipt keeps its key, fingerprint and times, and no
    // form data.
    let items = scan(&client, &table).await;
    let done = find(&items, "sub_done");
    assert_eq!(text(done, "status"), "COMPLETED");
    assert!(!done.contains_key("payload"), "{done:?}");
    assert!(holds_ada(std::slice::from_ref(done)).is_empty(), "{done:?}");
    assert_eq!(text(done, "payloadFingerprint").len(), 64);
    assert_eq!(text(find(&items, "sub_waiting"), "status"), "RECEIVED");
    assert_eq!(text(find(&items, "sub_refused"), "status"), "FAILED");

    // A retry is still a duplicate, and stores nothing again; other content
    // under the key is still refused.
    let retry = ingest.handle(ada("sub_done", "ada@example.com")).await;
    assert_eq!(retry.status(), 200);
    let changed = ingest.handle(ada("sub_done", "grace@example.com")).await;
    assert_eq!(changed.status(), 422);
    let items = scan(&client, &table).await;
    assert!(!find(&items, "sub_done").contains_key("payload"));

    // A receipt an earlier version completed with its payload, Ada's
    // newest-wins gates (the stack's keyed one, and the unkeyed one an
    // earlier version wrote), Grace's, and Ada's rows in the leads table (one keyed by
    // submission, one by her address), beside Grace's.
    let old_body = ada_body("sub_old", "Ada@Example.com");
    let mut old = Receipt::new(
        &FormSubmission::parse(old_body.as_bytes()).unwrap(),
        SystemTime::now(),
    );
    old.status = ReceiptStatus::Completed;
    old.pending = None;
    old.next_attempt_at = None;
    client
        .put_item()
        .table_name(&table)
        .set_item(Some(serde_dynamo::to_item(&old).unwrap()))
        .send()
        .await
        .unwrap();
    for gate in [
        gate_of("ada@example.com"),
        shared::newest::unkeyed_gate_key("ada@example.com"),
        gate_of("grace@example.com"),
    ] {
        put_gate(
            &client,
            &table,
            &gate,
            "2026-12-01T00:00:00.000Z",
            1900000000,
        )
        .await;
    }
    for (pk, email) in [
        ("submission#sub_done", "Ada@Example.com "),
        ("email#ada@example.com", "ada@example.com"),
        ("submission#sub_grace", "grace@example.com"),
    ] {
        client
            .put_item()
            .table_name(&leads)
            .item("pk", AttributeValue::S(pk.into()))
            .item("email", AttributeValue::S(email.into()))
            .item("name", AttributeValue::S("Ada Lovelace".into()))
            .send()
            .await
            .unwrap();
    }

    let cli = |args: &[&str]| {
        let mut all = vec!["--table", &table];
        all.extend_from_slice(args);
        receipts_cli(
            &[(shared::newest::GATE_KEY, devtools::local::DEMO_GATE_KEY)],
            &all,
        )
    };

    let forget_ada = || {
        cli(&[
            "forget",
            "--email",
            "ada@example.com",
            "--leads-table",
            &leads,
        ])
    };

    // An access request: what is kept of her, as JSON.
    let (ok, out, err) = cli(&["list", "--email", "ADA@example.com", "--payload", "--json"]);
    assert!(ok, "{err}");
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mut ids: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["submissionId"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["sub_old", "sub_refused", "sub_waiting"], "{out}");
    assert_eq!(rows[0]["lead"]["name"], "Ada Lovelace", "{out}");
    // Without --payload nothing personal is read, whatever is stored.
    let (ok, out, err) = cli(&["list", "--json"]);
    assert!(ok, "{err}");
    assert!(!out.to_lowercase().contains("ada@example.com"), "{out}");
    for plain in [
        vec!["stats", "--json"],
        vec!["show", "sub_waiting"],
        vec!["show", "sub_old", "--json"],
        vec!["list", "--status", "failed"],
    ] {
        let (ok, out, err) = cli(&plain);
        assert!(ok, "{plain:?}: {err}");
        let printed = format!("{out}{err}").to_lowercase();
        assert!(
            !printed.contains("ada@example.com") && !printed.contains("lovelace"),
            "{plain:?} reads no form data: {printed}"
        );
    }
    let (ok, out, _) = cli(&["list", "--email", "ada@example.com"]);
    assert!(!ok, "--email needs --payload: {out}");

    // --dry-run says what it would do and changes nothing.
    let receipts_before = scan(&client, &table).await;
    let leads_before = scan(&client, &leads).await;
    let (ok, out, err) = cli(&[
        "forget",
        "--email",
        "Ada@Example.com",
        "--leads-table",
        &leads,
        "--dry-run",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("3 receipt(s) hold form data of this address"),
        "{out}"
    );
    assert!(
        out.contains("newest-wins gate: 2 (would be deleted)"),
        "{out}"
    );
    assert!(out.contains("2 row(s) (would be deleted)"), "{out}");
    assert!(out.contains("dry run: nothing was changed"), "{out}");
    assert_eq!(scan(&client, &table).await, receipts_before);
    assert_eq!(scan(&client, &leads).await, leads_before);
    // Without the stack's gate key, the keyed gate cannot be found: said.
    let dry_run_without_key = |email: &str| {
        receipts_cli(
            &[],
            &["--table", &table, "forget", "--email", email, "--dry-run"],
        )
    };
    let (ok, out, err) = dry_run_without_key("ada@example.com");
    assert!(ok, "{err}");
    assert!(
        out.contains("newest-wins gate: 1 (would be deleted)"),
        "the unkeyed one: {out}"
    );
    let (ok, out, err) = dry_run_without_key("nobody@example.com");
    assert!(ok, "{err}");
    assert!(
        out.contains(
            "the stack's keyed gate was not looked for (give --stack, or set GATE_KEY_SECRET_ARN"
        ),
        "{out}"
    );

    // Forget: no terminal here, so no question.
    let (ok, out, err) = forget_ada();
    assert!(ok, "{err}");
    for said in [
        "erased staticforms:form.submitted:sub_waiting: ERASED, never delivered",
        "erased staticforms:form.submitted:sub_refused: ERASED, never delivered",
        "erased staticforms:form.submitted:sub_old: form data removed",
        "newest-wins gate: deleted",
        "leads table row keyed by this address: deleted",
        "leads table row submission#sub_done: deleted",
        "crm/v3/objects/contacts/gdpr-delete",
        "Salesforce",
    ] {
        assert!(out.contains(said), "{said:?} in {out}");
    }
    let printed = format!("{out}{err}").to_lowercase();
    assert!(
        !printed.contains("ada@example.com") && !printed.contains("lovelace"),
        "forget prints no personal data: {printed}"
    );

    let items = scan(&client, &table).await;
    assert_eq!(holds_ada(&items), Vec::<String>::new(), "{items:?}");
    for id in ["sub_waiting", "sub_refused"] {
        let erased = find(&items, id);
        assert_eq!(text(erased, "status"), "ERASED", "{id}");
        assert!(!erased.contains_key("pending"), "out of every queue: {id}");
        assert!(erased.contains_key("expiresAt"), "TTL removes it: {id}");
        assert_eq!(text(erased, "payloadFingerprint").len(), 64, "{id}");
    }
    let gates: Vec<String> = items
        .iter()
        .map(|item| text(item, "pk"))
        .filter(|pk| pk.starts_with("gate#"))
        .collect();
    assert_eq!(
        gates,
        [gate_of("grace@example.com")],
        "only Grace's gate is left"
    );
    assert_eq!(text(find(&items, "sub_grace"), "status"), "COMPLETED");
    let left: Vec<String> = scan(&client, &leads)
        .await
        .iter()
        .map(|row| text(row, "pk"))
        .collect();
    assert_eq!(left, ["submission#sub_grace"], "only Grace's lead is left");

    // Twice is safe: nothing left to erase but her marker, left again.
    let (ok, out, err) = forget_ada();
    assert!(ok, "{err}");
    assert!(
        out.contains("0 receipt(s)")
            && out.contains("newest-wins gate: none")
            && out.contains("erasure marker: left\n"),
        "{out}"
    );

    // No pass delivers anything for her, even with the CRM well again, and
    // a retry of an erased submission is a duplicate that stores nothing.
    crm.answer_normally("sub_waiting");
    crm.answer_normally("sub_refused");
    let calls_before = crm.calls_for("sub_waiting").len();
    clock.advance(Duration::from_secs(7200));
    let pass = worker
        .reconcile(Instant::now() + Duration::from_secs(30))
        .await;
    assert_eq!(pass.due, 0, "{pass:?}");
    assert_eq!(crm.calls_for("sub_waiting").len(), calls_before);
    assert!(crm.lead("sub_waiting").is_none());
    assert!(crm.lead("sub_refused").is_none());
    let retry = ingest.handle(ada("sub_waiting", "ada@example.com")).await;
    assert_eq!(retry.status(), 200);
    assert_eq!(
        holds_ada(&scan(&client, &table).await),
        Vec::<String>::new()
    );

    // An erased receipt is never redriven.
    let (ok, out, _) = cli(&["redrive", "sub_refused"]);
    assert!(ok);
    assert!(out.contains("ERASED at a person's request"), "{out}");
    let (ok, out, err) = cli(&["show", "sub_waiting"]);
    assert!(ok, "{err}");
    assert!(out.contains("status         ERASED"), "{out}");
    assert!(out.contains("erased "), "{out}");
}

/// No path brings an erased person back (issue 59): after `receipts
/// forget`, a webhook for a submission the person made before it (a
/// sender's late retry) is stored, and the worker settles it `ERASED`
/// before any CRM call, its form data gone.
#[tokio::test]
async fn a_webhook_after_forget_for_an_earlier_submission_is_never_delivered() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let ReceiptsWithIngest {
        client,
        table,
        ingest,
    } = receipts_with_ingest(&moto).await;
    let crm = CrmStub::start().await.unwrap();
    let worker = Worker::new(
        HttpCrm::new(crm.leads_url(), None).unwrap(),
        DynamoLedger::new(worker_client(&moto).await, &table),
        8,
    )
    .with_stack_key(shared::newest::GateSecret::new(
        devtools::local::DEMO_GATE_KEY,
    ));
    let (ok, out, err) = receipts_cli(
        &[(shared::newest::GATE_KEY, devtools::local::DEMO_GATE_KEY)],
        &["--table", &table, "forget", "--email", "ada@example.com"],
    );
    assert!(ok, "{out}{err}");
    // Made on 2026-11-29, before the erasure; it arrives after.
    assert_eq!(
        ingest
            .handle(ada("sub_late", "ada@example.com"))
            .await
            .status(),
        202
    );
    drain_stream(&moto, &client, &table, &worker).await;
    let items = scan(&client, &table).await;
    let late = find(&items, "sub_late");
    assert_eq!(text(late, "status"), "ERASED", "{late:?}");
    assert!(holds_ada(std::slice::from_ref(late)).is_empty(), "{late:?}");
    assert_eq!(crm.writes(), 0, "no CRM call");
}

/// A delivered receipt whose notice still waits keeps the answers its
/// route names and no payload: `receipts forget` finds it by the person's
/// marker key the notice keeps beside them, and removes them (issue 59).
#[tokio::test]
async fn forget_removes_the_answers_a_waiting_notice_keeps() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let client = worker_client(&moto).await;
    let table = create_table(&client, "ReceiptsTable").await;
    let key = shared::newest::GateSecret::new(devtools::local::DEMO_GATE_KEY).unwrap();
    let waiting = |id: &str, email: &str| {
        let mut receipt = Receipt::new(
            &FormSubmission::parse(ada_body(id, email).as_bytes()).unwrap(),
            SystemTime::now(),
        );
        let mut answers = serde_json::Map::new();
        answers.insert("plan".into(), serde_json::Value::from("Pro"));
        receipt.status = ReceiptStatus::Completed;
        receipt.payload = None;
        receipt.pending = None;
        receipt.next_attempt_at = None;
        receipt.notice_fields = Some(
            shared::notice::WaitingAnswers {
                answers,
                person: Some(shared::erasure::marker_key(&key, email)),
            }
            .to_stored(),
        );
        receipt
    };
    for receipt in [
        waiting("sub_ada", "ada@example.com"),
        waiting("sub_bo", "bo@example.com"),
    ] {
        client
            .put_item()
            .table_name(&table)
            .set_item(Some(serde_dynamo::to_item(&receipt).unwrap()))
            .send()
            .await
            .unwrap();
    }
    let (ok, out, err) = receipts_cli(
        &[(shared::newest::GATE_KEY, devtools::local::DEMO_GATE_KEY)],
        &["--table", &table, "forget", "--email", "Ada@Example.com"],
    );
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("1 receipt(s) hold form data of this address"),
        "{out}"
    );
    let items = scan(&client, &table).await;
    assert!(
        !find(&items, "sub_ada").contains_key("noticeFields"),
        "her waiting notice's answers are gone"
    );
    assert!(
        find(&items, "sub_bo").contains_key("noticeFields"),
        "another person's stay"
    );
}

#[test]
fn forget_refuses_what_is_not_an_address_and_changes_nothing() {
    let (ok, _, err) = receipts_cli(
        &[("RECEIPTS_TABLE", "no-such-table")],
        &["forget", "--email", "not an address"],
    );
    assert!(!ok);
    assert!(err.contains("is not an e-mail address"), "{err}");
    assert!(
        !err.contains("not an address"),
        "the input is not echoed: {err}"
    );
}

/// forget decides from the receipt as its erase found it (the update's old
/// image), not from its earlier scan nor the operator's clock: a receipt a
/// delivery claimed is named with when to run again, and forget exits 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_names_a_receipt_a_delivery_holds_and_exits_3() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let ReceiptsWithIngest {
        client,
        table,
        ingest,
    } = receipts_with_ingest(&moto).await;
    assert_eq!(
        ingest
            .handle(ada("sub_held", "ada@example.com"))
            .await
            .status(),
        202
    );
    let items = scan(&client, &table).await;
    let seen = Timestamp::from_stored(text(&items[0], "nextAttemptAt"));
    // A delivery holds it; its claim's end by its own clock, which may be
    // behind the operator's.
    let until = Timestamp::from_stored("2000-01-01T00:00:00.000Z");
    let ledger = DynamoLedger::new(worker_client(&moto).await, &table);
    let key = shared::IdempotencyKey::from_stored("staticforms:form.submitted:sub_held".to_owned());
    assert!(matches!(
        ledger
            .claim(
                &key,
                Some(&seen),
                &until,
                &Timestamp::from_stored("1999-12-31T00:00:00.000Z")
            )
            .await,
        Ok(worker::ledger::Claim::Taken(_))
    ));

    let forget = || {
        receipts_cli_code(
            &[],
            &["--table", &table, "forget", "--email", "ada@example.com"],
        )
    };
    let (code, out, err) = forget();
    assert_eq!(code, Some(3), "{out}\n{err}");
    assert!(
        out.contains("a delivery held sub_held when it was erased, until 2000-01-01T00:00:00.000Z"),
        "{out}"
    );
    assert!(
        err.contains("run forget again after 2000-01-01T00:00:00.000Z"),
        "{err}"
    );
    let items = scan(&client, &table).await;
    assert_eq!(text(&items[0], "status"), "ERASED");
    assert!(!items[0].contains_key("payload"));

    // Run again: nothing is left, nothing is held.
    let (code, out, err) = forget();
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("nothing to erase"), "{out}");
}

/// Issue 59, done when: through the `receipts` binary, with a HubSpot fake
/// holding Ada's contact (written by the worker) and a Typeform fake
/// holding her two responses, `forget --everywhere --yes` erases her from
/// the stack, HubSpot and Typeform; HubSpot's first GDPR delete answers
/// 503, so the first run exits 3 naming HubSpot as pending, and the second
/// deletes there once and exits 0 without deleting at Typeform again. The
/// record names each place and holds no address.
#[tokio::test]
async fn forget_everywhere_erases_at_the_crm_and_the_sender_and_resumes_where_it_stopped() {
    use devtools::fakes::hubspot::{Fault, HubSpotFake, DEMO_HUBSPOT_TOKEN};
    use devtools::fakes::sender_api::{Kept, SenderApiFake};
    const TYPEFORM_TOKEN: &str = "tfp_local_test_token";
    const FORM: &str = "form1";

    let moto = endpoint(DYNAMODB_ENDPOINT);
    let client = worker_client(&moto).await;
    let table = create_table(&client, "ReceiptsTable").await;
    let hubspot = HubSpotFake::start(DEMO_HUBSPOT_TOKEN).await.unwrap();
    let typeform = SenderApiFake::start(TYPEFORM_TOKEN).await.unwrap();
    let worker_env: HashMap<&str, String> = HashMap::from([
        ("RECEIPTS_TABLE", table.clone()),
        ("DESTINATION", "hubspot".to_owned()),
        ("GATE_KEY", devtools::local::DEMO_GATE_KEY.to_owned()),
        ("CRM_ALLOW_HTTP", "true".to_owned()),
        ("HUBSPOT_TOKEN", DEMO_HUBSPOT_TOKEN.to_owned()),
        ("HUBSPOT_BASE_URL", hubspot.base_url()),
    ]);
    let config = worker::Config::from_lookup(|name| worker_env.get(name).cloned()).unwrap();
    let sdk = worker_sdk_config(&moto).await;
    let destination = config
        .destinations
        .build(&table, &sdk, &client)
        .await
        .unwrap()
        .remove(0);
    let worker = Worker::new(destination, DynamoLedger::new(client.clone(), &table), 8);

    // Two responses of Ada's and one of Bo's: at Typeform, and delivered.
    let now = SystemTime::now();
    let people = [
        ("respAda1", "Ada Lovelace", "ada@example.com", 3_600),
        ("respAda2", "Ada Lovelace", "Ada@Example.com", 1_800),
        ("respBo1", "Bo Diddley", "bo@example.com", 900),
    ];
    for (id, name, email, ago) in people {
        let at = now - Duration::from_secs(ago);
        typeform.keep(
            FORM,
            Kept {
                id: id.to_owned(),
                submitted_at: at,
                name: name.to_owned(),
                email: email.to_owned(),
                message: "Call me".to_owned(),
                partial: false,
                campaign: None,
            },
        );
        let body = (shared::Sender::Typeform.profile().sample)(&shared::sender::Sample {
            id,
            at,
            name,
            email,
            message: "Call me",
            form_key: None,
        });
        let submission = shared::Sender::Typeform
            .parse_submission(body.to_string().as_bytes())
            .unwrap();
        let receipt = Receipt::new(&submission, at);
        client
            .put_item()
            .table_name(&table)
            .set_item(Some(serde_dynamo::to_item(&receipt).unwrap()))
            .send()
            .await
            .unwrap();
    }
    drain_stream(&moto, &client, &table, &worker).await;
    let emails = |hubspot: &HubSpotFake| -> Vec<String> {
        let mut emails: Vec<String> = hubspot
            .contacts()
            .iter()
            .filter_map(|c| c.properties.get("email")?.as_str().map(str::to_owned))
            .collect();
        emails.sort();
        emails
    };
    assert_eq!(emails(&hubspot), ["ada@example.com", "bo@example.com"]);

    let env = [
        (shared::newest::GATE_KEY, devtools::local::DEMO_GATE_KEY),
        ("DESTINATION", "hubspot"),
        ("CRM_ALLOW_HTTP", "true"),
        ("HUBSPOT_TOKEN", DEMO_HUBSPOT_TOKEN),
        ("HUBSPOT_BASE_URL", &hubspot.base_url()),
        ("SENDER", "typeform"),
        ("SENDER_API_TOKEN", TYPEFORM_TOKEN),
        ("SENDER_API_BASE_URL", &typeform.base_url()),
    ];
    // The fakes answer on this test's runtime: the CLI runs beside it.
    let forget_args = [
        "--table",
        &table,
        "forget",
        "--email",
        "ADA@example.com",
        "--everywhere",
        "--yes",
        "--form",
        FORM,
    ];

    // HubSpot answers 503 once: the first run stops there.
    hubspot.fail(Fault::status(503).times(1));
    let (code, out, err) = receipts_cli_beside(&env, &forget_args).await;
    assert_eq!(code, Some(3), "{out}{err}");
    assert!(
        out.contains("  destination hubspot: pending: HubSpot: destination unavailable"),
        "{out}"
    );
    assert!(err.contains("is not finished: 1 step(s) open"), "{err}");
    assert!(out.contains("sender typeform: deleted (2)"), "{out}");
    assert_eq!(typeform.kept_ids(FORM), ["respBo1"], "both of hers, only");
    assert_eq!(typeform.deletions().len(), 1, "{:?}", typeform.deletions());
    assert_eq!(emails(&hubspot), ["ada@example.com", "bo@example.com"]);

    // Run again: HubSpot's delete, once; Typeform's is not repeated.
    let (code, again, err) = receipts_cli_beside(&env, &forget_args).await;
    assert_eq!(code, Some(0), "{again}{err}");
    assert_eq!(emails(&hubspot), ["bo@example.com"]);
    assert_eq!(
        hubspot.gdpr_deletes(),
        2,
        "the 503, then the one that deleted"
    );
    assert_eq!(typeform.deletions().len(), 1, "not again");
    assert!(again.contains("every step is done"), "{again}");
    for printed in [&out, &again] {
        assert!(
            !printed.to_lowercase().contains("ada@example.com"),
            "no address in the output: {printed}"
        );
    }

    // The record: each place, what it answered, no personal data; and no
    // receipt or item of the table holds her data.
    let id_line = again
        .lines()
        .find_map(|line| line.split("(forget --record ").nth(1))
        .and_then(|rest| rest.split(')').next())
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no erasure id printed: {again}"));
    let (ok, record, err) =
        receipts_cli(&env, &["--table", &table, "forget", "--record", &id_line]);
    assert!(ok, "{record}{err}");
    assert!(record.contains("stack: deleted"), "{record}");
    assert!(
        record.contains("destination hubspot: deleted (1)"),
        "{record}"
    );
    assert!(record.contains("sender typeform: deleted (2)"), "{record}");
    let (ok, json, err) = receipts_cli(
        &env,
        &["--table", &table, "forget", "--record", &id_line, "--json"],
    );
    assert!(ok, "{json}{err}");
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(json["finishedAt"].is_string(), "{json}");
    assert_eq!(json["steps"].as_array().map(Vec::len), Some(3), "{json}");
    let items = scan(&client, &table).await;
    assert!(holds_ada(&items).is_empty(), "{:?}", holds_ada(&items));
    let (ok, status, err) = receipts_cli(
        &env,
        &[
            "--table",
            &table,
            "forget",
            "--status",
            "--email",
            "ada@example.com",
        ],
    );
    assert!(ok, "{status}{err}");
    assert!(status.contains("finished 20"), "{status}");
}

/// Issue 59, done when: a person delivered to Pipedrive, Zoho, Mailchimp,
/// Salesforce, Brevo and Attio at once is deleted at each by its vendor's
/// deletion, her notes first, found by the record id the stack kept
/// (Pipedrive's and Zoho's person memories, the Salesforce lead's id on
/// the receipt, Mailchimp's member by the address's hash) with no search,
/// or by her address where the vendor finds by it (Brevo's contact,
/// Attio's person); the sender (Static Forms) deletes nothing by API, and
/// the output says what to do there.
#[tokio::test]
async fn forget_everywhere_deletes_at_each_crm_by_the_id_the_stack_kept() {
    use devtools::fakes::attio::{AttioFake, DEMO_ATTIO_API_TOKEN};
    use devtools::fakes::brevo::{BrevoFake, DEMO_BREVO_API_KEY};
    use devtools::fakes::mailchimp::{
        MailchimpFake, DEMO_MAILCHIMP_API_KEY, DEMO_MAILCHIMP_LIST_ID,
    };
    use devtools::fakes::pipedrive::{PipedriveFake, DEMO_PIPEDRIVE_TOKEN};
    use devtools::fakes::salesforce::{
        SalesforceFake, DEMO_SALESFORCE_CLIENT_ID, DEMO_SALESFORCE_CLIENT_SECRET,
    };
    use devtools::fakes::zoho::{
        ZohoFake, DEMO_ZOHO_CLIENT_ID, DEMO_ZOHO_CLIENT_SECRET, DEMO_ZOHO_REFRESH_TOKEN,
    };
    use devtools::fakes::LocalDestination;
    use std::sync::Arc;

    let moto = endpoint(DYNAMODB_ENDPOINT);
    let client = worker_client(&moto).await;
    let table = create_table(&client, "ReceiptsTable").await;
    let pipedrive = Arc::new(
        PipedriveFake::start(DEMO_PIPEDRIVE_TOKEN, Duration::from_secs(1))
            .await
            .unwrap(),
    );
    let zoho = Arc::new(
        ZohoFake::start(
            DEMO_ZOHO_CLIENT_ID,
            DEMO_ZOHO_CLIENT_SECRET,
            DEMO_ZOHO_REFRESH_TOKEN,
            Duration::from_secs(3600),
        )
        .await
        .unwrap(),
    );
    let mailchimp = Arc::new(
        MailchimpFake::start(DEMO_MAILCHIMP_API_KEY, DEMO_MAILCHIMP_LIST_ID)
            .await
            .unwrap(),
    );
    let salesforce = Arc::new(
        SalesforceFake::start(DEMO_SALESFORCE_CLIENT_ID, DEMO_SALESFORCE_CLIENT_SECRET)
            .await
            .unwrap(),
    );
    let brevo = Arc::new(BrevoFake::start(DEMO_BREVO_API_KEY).await.unwrap());
    let attio = Arc::new(AttioFake::start(DEMO_ATTIO_API_TOKEN).await.unwrap());
    let mut env: Vec<(&str, String)> = vec![
        (
            "DESTINATION",
            "pipedrive,zoho,mailchimp,salesforce,brevo,attio".to_owned(),
        ),
        ("GATE_KEY", devtools::local::DEMO_GATE_KEY.to_owned()),
        ("CRM_ALLOW_HTTP", "true".to_owned()),
    ];
    env.extend(pipedrive.worker_env());
    env.extend(zoho.worker_env());
    env.extend(mailchimp.worker_env());
    env.extend(salesforce.worker_env());
    env.extend(brevo.worker_env());
    env.extend(attio.worker_env());

    // Delivered by the worker, its receipt keeping its form data
    // (KEEP_PAYLOAD_AFTER_DELIVERY), so the lead's Salesforce id is found.
    let mut worker_env: HashMap<&str, String> = env.iter().cloned().collect();
    worker_env.insert("RECEIPTS_TABLE", table.clone());
    worker_env.insert("KEEP_PAYLOAD_AFTER_DELIVERY", "true".to_owned());
    let config = worker::Config::from_lookup(|name| worker_env.get(name).cloned()).unwrap();
    let sdk = worker_sdk_config(&moto).await;
    let delivery = config.delivery;
    let mut built = config
        .destinations
        .build(&table, &sdk, &client)
        .await
        .unwrap();
    let first = built.remove(0);
    let worker = Worker::new(first, DynamoLedger::new(client.clone(), &table), 8)
        .also_to(built)
        .with_delivery_rules(delivery);
    let submission =
        FormSubmission::parse(ada_body("sub_all", "ada@example.com").as_bytes()).unwrap();
    let receipt = Receipt::new(&submission, SystemTime::now());
    client
        .put_item()
        .table_name(&table)
        .set_item(Some(serde_dynamo::to_item(&receipt).unwrap()))
        .send()
        .await
        .unwrap();
    drain_stream(&moto, &client, &table, &worker).await;
    let items = scan(&client, &table).await;
    assert_eq!(
        text(find(&items, "sub_all"), "status"),
        "COMPLETED",
        "{items:?}"
    );
    assert_eq!(pipedrive.persons().len(), 1);
    assert_eq!(pipedrive.notes().len(), 1, "the submission's note");
    assert_eq!(zoho.records().len(), 1);
    assert_eq!(mailchimp.members().len(), 1);
    assert_eq!(salesforce.records().len(), 1);
    assert_eq!((brevo.contacts().len(), brevo.notes().len()), (1, 1));
    assert_eq!((attio.people().len(), attio.notes().len()), (1, 1));
    let searches = |calls: Vec<(String, String)>| {
        calls
            .into_iter()
            .filter(|(method, path)| method == "GET" && path.contains("search"))
            .count()
    };
    let pipedrive_calls = || {
        pipedrive
            .calls()
            .into_iter()
            .map(|c| (c.method, c.path))
            .collect::<Vec<_>>()
    };
    let zoho_calls = || {
        zoho.calls()
            .into_iter()
            .map(|c| (c.method, c.path))
            .collect::<Vec<_>>()
    };
    let searched = (searches(pipedrive_calls()), searches(zoho_calls()));

    let cli_env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (code, out, err) = receipts_cli_beside(
        &cli_env,
        &[
            "--table",
            &table,
            "forget",
            "--email",
            "ada@example.com",
            "--everywhere",
            "--yes",
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{out}{err}");
    for place in ["pipedrive", "zoho", "mailchimp", "salesforce"] {
        assert!(
            out.contains(&format!("destination {place}: deleted (1)")),
            "{place}: {out}"
        );
    }
    // Brevo's and Attio's count her note and her record.
    for place in ["brevo", "attio"] {
        assert!(
            out.contains(&format!("destination {place}: deleted (2)")),
            "{place}: {out}"
        );
    }
    assert!(
        out.contains("destination pipedrive: 1 record(s) the stack kept")
            && out.contains("destination zoho: 1 record(s) the stack kept")
            && out.contains("destination salesforce: 1 record(s) the stack kept"),
        "{out}"
    );
    assert!(
        out.contains(
            "sender staticforms: cannot delete here: do it by hand, in Static Forms' dashboard"
        ),
        "{out}"
    );
    assert!(pipedrive.persons().is_empty());
    assert!(
        pipedrive.notes().is_empty(),
        "her notes first: {:?}",
        pipedrive.notes()
    );
    assert!(zoho.records().is_empty());
    assert!(zoho.notes().is_empty());
    assert!(mailchimp.members().is_empty());
    assert!(mailchimp.notes().is_empty());
    assert!(salesforce.records().is_empty());
    assert!(brevo.contacts().is_empty() && brevo.notes().is_empty());
    assert!(attio.people().is_empty() && attio.notes().is_empty());
    assert_eq!(
        (searches(pipedrive_calls()), searches(zoho_calls())),
        searched,
        "found by the ids the memories kept, not searched"
    );
    assert!(
        pipedrive_calls()
            .iter()
            .any(|(method, path)| method == "DELETE" && path.starts_with("/api/v2/persons/")),
        "{:?}",
        pipedrive_calls()
    );
    assert!(
        !salesforce
            .calls()
            .iter()
            .any(|c| c.path.ends_with("/query")),
        "the lead's id from its receipt, no query"
    );
    assert!(holds_ada(&scan(&client, &table).await).is_empty());
}

/// The `http` destination erases a person only where the operator said
/// how (`CRM_ERASE_URL`): `DELETE` with the address, a 404 on a repeat no
/// error; without it, the record says to do it by hand.
#[tokio::test]
async fn forget_everywhere_deletes_at_an_http_crm_only_at_its_erase_url() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let client = worker_client(&moto).await;
    let table = create_table(&client, "ReceiptsTable").await;
    let crm = CrmStub::start().await.unwrap();
    let worker = Worker::new(
        HttpCrm::new(crm.leads_url(), None).unwrap(),
        DynamoLedger::new(client.clone(), &table),
        8,
    );
    for (id, email) in [("sub_h1", "ada@example.com"), ("sub_h2", "bo@example.com")] {
        let submission = FormSubmission::parse(ada_body(id, email).as_bytes()).unwrap();
        client
            .put_item()
            .table_name(&table)
            .set_item(Some(
                serde_dynamo::to_item(Receipt::new(&submission, SystemTime::now())).unwrap(),
            ))
            .send()
            .await
            .unwrap();
    }
    drain_stream(&moto, &client, &table, &worker).await;
    assert_eq!(crm.lead_count(), 2);

    let run = |erase_url: Option<String>, email: &'static str, dry_run: bool| {
        let mut env = vec![
            (
                shared::newest::GATE_KEY.to_owned(),
                devtools::local::DEMO_GATE_KEY.to_owned(),
            ),
            ("DESTINATION".to_owned(), "http".to_owned()),
            ("CRM_URL".to_owned(), crm.leads_url()),
        ];
        env.extend(erase_url.map(|url| ("CRM_ERASE_URL".to_owned(), url)));
        let table = table.clone();
        async move {
            let env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let mut args = vec![
                "--table",
                &table,
                "forget",
                "--email",
                email,
                "--everywhere",
                "--yes",
            ];
            if dry_run {
                args.push("--dry-run");
            }
            receipts_cli_beside(&env, &args).await
        }
    };
    let (code, out, err) = run(Some(crm.erase_url()), "ada@example.com", true).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("dry run: nothing was changed"), "{out}");
    assert_eq!(crm.lead_count(), 2, "a dry run deletes nothing");
    assert!(
        !scan(&client, &table)
            .await
            .iter()
            .any(|item| text(item, "pk").starts_with("forget#")),
        "and records nothing"
    );
    let (code, out, err) = run(None, "bo@example.com", false).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains(
            "destination http: cannot delete here: do it by hand, in the service at CRM_URL"
        ),
        "{out}"
    );
    assert_eq!(crm.lead_count(), 2, "nothing deleted there");

    let (code, out, err) = run(Some(crm.erase_url()), "ada@example.com", false).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("destination http: deleted (1)"), "{out}");
    assert_eq!(crm.lead_count(), 1, "hers only");
    // A new round for the same person: nothing left there, a 404, done.
    let (code, out, err) = run(Some(crm.erase_url()), "ada@example.com", false).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("destination http: not found"), "{out}");
    assert!(out.contains("forget --record "), "{out}");
    assert!(out.contains("-2):"), "a second round: {out}");
}
