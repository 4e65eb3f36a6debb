//! `receipts audit` and `import` through the real binaries: the local
//! pipeline (ingest, worker, stream pump, CRM stub) on moto, and a fake of
//! the sender's own submissions API. The sender keeps 5 submissions; 3
//! reached the stack by webhook; the audit finds exactly the other 2, the
//! import stores them, the worker delivers them, and nothing is ever
//! stored or sent twice.

use std::time::{Duration, SystemTime};

use devtools::fakes::sender_api::{webhook_for, Fault, Kept, SenderApiFake};
use devtools::local::DEMO_SIGNING_SECRET;
use integration::pipeline::{leads_once_there, start_pipeline_with, stop};
use integration::{receipts_cli_code, unique_name};
use serde_json::json;
use shared::receipt::format_timestamp;

const FORM: &str = "mexJoq";
/// A token that must never be printed.
const API_TOKEN: &str = "tly-audit-token-4f9c2a77e1";

/// Submission `n`'s id, e-mail and time.
fn kept(n: u64, now: SystemTime) -> Kept {
    Kept {
        id: format!("aud{n}"),
        submitted_at: now - Duration::from_secs(3600 - n * 60),
        name: format!("Person {n}"),
        email: format!("person{n}@example.com"),
        message: "Hello".to_owned(),
        partial: false,
        campaign: None,
    }
}

/// The webhook Tally sends for `kept` (the fake's, as its pages show it),
/// with `event_id` as its delivery's id.
fn webhook_body(kept: &Kept, event_id: &str) -> String {
    let mut webhook = webhook_for(shared::Sender::Tally, FORM, kept);
    webhook["eventId"] = json!(event_id);
    webhook.to_string()
}

async fn send_webhook(http: &reqwest::Client, port: u16, body: String) -> (u16, serde_json::Value) {
    let signed = shared::sender::tally::SIGNATURE.sign(
        DEMO_SIGNING_SECRET.as_bytes(),
        body.as_bytes(),
        SystemTime::now(),
        &[],
    );
    let mut request = http
        .post(format!("http://127.0.0.1:{port}/webhooks/tally"))
        .header("content-type", "application/json");
    for (name, value) in signed {
        request = request.header(name, value);
    }
    let response = request.body(body).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

/// The CLI with the fake's URL and the token in the environment.
async fn cli(env: Vec<(&'static str, String)>, args: &[&str]) -> (Option<i32>, String, String) {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        receipts_cli_code(&env, &args)
    })
    .await
    .unwrap()
}

/// A fresh receipts table on moto, and the CLI's environment to audit it
/// against `fake`.
async fn table_and_env(
    fake: &SenderApiFake,
) -> (
    aws_sdk_dynamodb::Client,
    String,
    Vec<(&'static str, String)>,
) {
    let client =
        integration::ingest_client(&integration::endpoint(integration::DYNAMODB_ENDPOINT)).await;
    let table = integration::create_table(&client, "ReceiptsTable").await;
    let env = cli_env(&table, fake);
    (client, table, env)
}

fn cli_env(table: &str, fake: &SenderApiFake) -> Vec<(&'static str, String)> {
    vec![
        ("RECEIPTS_TABLE", table.to_owned()),
        ("SENDER_API_BASE_URL", fake.base_url()),
        ("SENDER_API_TOKEN", API_TOKEN.to_owned()),
        ("RECEIPT_RETENTION_DAYS", "30".to_owned()),
        ("GATE_KEY", GATE_KEY.to_owned()),
    ]
}

/// The stack's gate key, which keys erasure markers too.
const GATE_KEY: &str = "audit-test-gate-key-0123456789abcdef0123456789";

/// The receipt stored under `key`, and its answers as the worker reads
/// them.
async fn stored_under(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    key: &str,
) -> (shared::Receipt, shared::sender::Answers) {
    let item = integration::scan(client, table)
        .await
        .into_iter()
        .find(|item| integration::text(item, "pk") == key)
        .unwrap_or_else(|| panic!("no receipt under {key}"));
    let receipt: shared::Receipt = serde_dynamo::from_item(item).unwrap();
    let payload: serde_json::Value =
        serde_json::from_str(receipt.payload.as_deref().unwrap()).unwrap();
    let answers = shared::Sender::of_key(key).unwrap().answers(&payload);
    (receipt, answers)
}

/// An invocation's deadline, as the template's worker has.
fn a_minute() -> std::time::Instant {
    std::time::Instant::now() + Duration::from_secs(60)
}

/// The ids listed under `missing (N):`.
fn missing_ids(out: &str) -> Vec<String> {
    out.lines()
        .skip_while(|line| !line.starts_with("missing ("))
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().last().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn the_audit_finds_what_the_sender_kept_and_the_import_delivers_it_once() {
    let now = SystemTime::now();
    let fake = SenderApiFake::start(API_TOKEN).await.unwrap();
    fake.set_page_size(2);
    for n in 1..=5 {
        fake.keep(FORM, kept(n, now));
    }
    let mut partial = kept(6, now);
    partial.partial = true;
    fake.keep(FORM, partial);

    let receipts_table = unique_name("audit-receipts");
    let (pipeline, webhook_port, crm_port, printed) =
        start_pipeline_with("http", &receipts_table, &[("SENDER", "tally")]).await;
    let http = reqwest::Client::new();
    for n in 1..=3 {
        let (status, _) = send_webhook(&http, webhook_port, webhook_body(&kept(n, now), "e")).await;
        assert_eq!(status, 202);
    }
    let leads_url = format!("http://127.0.0.1:{crm_port}/leads");
    let leads = leads_once_there(&http, &leads_url, 3, Duration::from_secs(30)).await;
    assert_eq!(leads["count"], 3, "{leads}");

    let env = cli_env(&receipts_table, &fake);
    let scope = ["--since", "2h", "--form", FORM, "--sender", "tally"];
    let mut printed_by_cli = String::new();

    // One 429 on the way: waited for as its Retry-After says.
    fake.fail_next(Fault {
        status: 429,
        retry_after: Some("1".to_owned()),
        times: Some(1),
    });
    let (code, out, err) = cli(env.clone(), &[&["audit"][..], &scope].concat()).await;
    printed_by_cli.push_str(&(out.clone() + &err));
    assert_eq!(code, Some(4), "{out}\n{err}");
    assert_eq!(missing_ids(&out), vec!["aud4", "aud5"], "{out}");
    // A partial submission is no lead: not at the sender's count, not missing.
    assert!(!out.contains("aud6"), "{out}");
    assert!(err.contains("page 3 read, 5 submissions so far"), "{err}");
    let pages: Vec<(String, u16)> = fake.calls();
    assert_eq!(
        pages.iter().map(|(_, status)| *status).collect::<Vec<_>>(),
        vec![429, 200, 200, 200],
        "{pages:?}"
    );

    let (code, out, err) = cli(env.clone(), &[&["import"][..], &scope].concat()).await;
    printed_by_cli.push_str(&(out.clone() + &err));
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("imported 2;"), "{out}");

    // The card says where an imported receipt came from; a bare id is
    // read as the sender's (SENDER), not as a Static Forms id.
    let mut as_tally = env.clone();
    as_tally.push(("SENDER", "tally".to_owned()));
    let (code, out, err) = cli(as_tally, &["show", "aud4"]).await;
    printed_by_cli.push_str(&(out.clone() + &err));
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains(&format!("{:<14} tally:FORM_RESPONSE:aud4\n", "key"))
            && out.contains(&format!("{:<14} import (", "source")),
        "{out}"
    );

    let leads = leads_once_there(&http, &leads_url, 5, Duration::from_secs(30)).await;
    assert_eq!(leads["count"], 5, "{leads}");
    let emails = leads.to_string();
    for n in 1..=5 {
        assert!(
            emails.contains(&format!("person{n}@example.com")),
            "{leads}"
        );
    }

    let (code, out, err) = cli(env.clone(), &[&["audit"][..], &scope].concat()).await;
    printed_by_cli.push_str(&(out.clone() + &err));
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(missing_ids(&out).is_empty(), "{out}");

    let (code, out, err) = cli(env.clone(), &[&["import"][..], &scope].concat()).await;
    printed_by_cli.push_str(&(out.clone() + &err));
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("imported 0;"), "{out}");

    // The imported submission's webhook, late and with its own bytes: a
    // duplicate, and no second lead.
    let (status, answer) = send_webhook(
        &http,
        webhook_port,
        webhook_body(&kept(4, now), "late-retry"),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["duplicate"], true, "{answer}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let leads = leads_once_there(&http, &leads_url, 5, Duration::from_secs(1)).await;
    assert_eq!(leads["count"], 5, "{leads}");
    assert_eq!(leads["calls"], 5, "each lead written once: {leads}");

    let printed_by_pipeline = printed.lock().unwrap().join("\n");
    for (what, text) in [
        ("the CLI", &printed_by_cli),
        ("the pipeline", &printed_by_pipeline),
    ] {
        assert!(!text.contains(API_TOKEN), "{what} printed the API token");
        assert!(
            !text.contains("person4@example.com"),
            "{what} printed form data"
        );
    }
    stop(pipeline).await;
}

/// Without a token, or for a sender that keeps no list, it says what to do
/// in one line and exits 2, reading nothing.
#[tokio::test]
async fn the_audit_says_what_it_needs() {
    let table = unique_name("audit-usage");
    let rows: [(Option<&str>, &[&str], &str); 5] = [
        (
            None,
            &["--sender", "tally", "--form", FORM],
            "SENDER_API_TOKEN",
        ),
        (
            Some("x"),
            &["--sender", "staticforms", "--form", FORM],
            "keeps no list of submissions",
        ),
        (
            Some("x"),
            &["--sender", "tally", "--form", "../x"],
            "is not a form id",
        ),
        (
            Some("x"),
            &["--sender", "tally", "--form", FORM, "--until", "3h"],
            "--since must be before --until",
        ),
        // With a table alone, how long its receipts are kept is never
        // guessed: a guess longer than the stack's imports what it removed.
        (
            Some("x"),
            &["--sender", "tally", "--form", FORM],
            "give --retention-days N",
        ),
    ];
    for (token, args, said) in rows {
        let mut env = vec![("RECEIPTS_TABLE", table.clone())];
        if !said.contains("--retention-days") {
            env.push(("RECEIPT_RETENTION_DAYS", "30".to_owned()));
        }
        if let Some(token) = token {
            env.push(("SENDER_API_TOKEN", token.to_owned()));
        }
        let args = [&["audit", "--since", "2h"][..], args].concat();
        let (code, out, err) = cli(env, &args).await;
        assert_eq!(code, Some(2), "{args:?}: {out}{err}");
        assert!(err.contains(said), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
}

/// Typeform's listing pages by the last token (`before`), newest first,
/// after one request for the form's questions; what is imported reads as
/// the webhook's lead would, with the Typeform key.
#[tokio::test]
async fn a_typeform_audit_pages_by_token_and_imports_each_response_once() {
    let now = SystemTime::now();
    let fake = SenderApiFake::start(API_TOKEN).await.unwrap();
    fake.set_page_size(2);
    for n in 1..=5 {
        fake.keep("lT4Z3j", kept(n, now));
    }
    let (client, table, env) = table_and_env(&fake).await;
    let scope = ["--since", "2h", "--form", "lT4Z3j", "--sender", "typeform"];

    let (code, out, err) = cli(
        env.clone(),
        &[&["import", "--dry-run"][..], &scope].concat(),
    )
    .await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert_eq!(
        missing_ids(&out),
        ["aud1", "aud2", "aud3", "aud4", "aud5"],
        "{out}"
    );
    assert!(out.contains("would import 5"), "{out}");
    assert!(
        integration::scan(&client, &table).await.is_empty(),
        "a dry run stores nothing"
    );
    let calls: Vec<String> = fake.calls().into_iter().map(|(call, _)| call).collect();
    assert_eq!(calls[0], "/forms/lT4Z3j", "{calls:?}");
    assert!(calls[2].contains("before=aud4"), "{calls:?}");
    assert!(calls[3].contains("before=aud2"), "{calls:?}");
    assert_eq!(calls.len(), 4, "{calls:?}");

    let (code, out, err) = cli(env.clone(), &[&["import"][..], &scope].concat()).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("imported 5;"), "{out}");
    assert_eq!(integration::scan(&client, &table).await.len(), 5);
    let (receipt, answers) = stored_under(&client, &table, "typeform:form_response:aud3").await;
    assert!(receipt.is_imported());
    assert_eq!(answers.fields["email"], "person3@example.com");
    assert_eq!(answers.fields["name"], "Person 3");

    let (code, out, err) = cli(env, &[&["audit"][..], &scope].concat()).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("        5         5          0        0"),
        "{out}"
    );
}

/// The worker's scheduled audit, on moto with the token in Secrets
/// Manager: the window from one period back to 15 minutes ago (a younger
/// submission is left to its webhook), `MissingSubmissions` per form, the
/// import with `AUDIT_ACTION=import`, and where it ended stored, so the
/// next audit starts there and finds nothing missing.
#[tokio::test(flavor = "current_thread")]
async fn the_scheduled_audit_emits_missing_submissions_and_imports_them() {
    use worker::audit::{AuditAction, AuditSettings, Auditor};
    let captured = devtools::log_capture::CapturedLogs::default();
    let _guard = captured.install();

    let now = SystemTime::now();
    let fake = SenderApiFake::start(API_TOKEN).await.unwrap();
    let at = |minutes_ago: u64| Kept {
        submitted_at: now - Duration::from_secs(minutes_ago * 60),
        ..kept(minutes_ago, now)
    };
    for minutes_ago in [50, 40, 30, 5] {
        fake.keep(FORM, at(minutes_ago));
    }
    let endpoint = integration::endpoint(integration::DYNAMODB_ENDPOINT);
    let client = integration::worker_client(&endpoint).await;
    let table = integration::create_table(&client, "ReceiptsTable").await;
    // The one submitted 50 minutes ago reached the stack by its webhook.
    let webhook = shared::sender::tally::parse(webhook_body(&at(50), "e").as_bytes()).unwrap();
    let stored: std::collections::HashMap<_, _> =
        serde_dynamo::to_item(shared::Receipt::new(&webhook, now)).unwrap();
    client
        .put_item()
        .table_name(&table)
        .set_item(Some(stored))
        .send()
        .await
        .unwrap();
    let secrets = integration::secrets_client(&endpoint).await;
    let arn = integration::create_secret(&secrets, "tally-api-token", API_TOKEN).await;
    let gate_key =
        integration::create_secret(&secrets, "gate-key", devtools::local::DEMO_GATE_KEY).await;
    let settings = AuditSettings {
        sender: shared::Sender::Tally,
        token_secret_arn: arn,
        every: Duration::from_secs(3600),
        action: AuditAction::Import,
        forms: vec![FORM.to_owned()],
        base_url: Some(fake.base_url()),
        retention: shared::Retention::default(),
        erasure_key_secret_arn: None,
    };
    // Without the erasure key it imports nothing, and says why.
    let blind = Auditor::new(
        settings.clone(),
        client.clone(),
        &table,
        secrets.clone(),
        shared::metrics::Metrics::default(),
    );
    let refused = blind.run(now, a_minute()).await.unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("the audit imports nothing: without ERASURE_KEY_SECRET_ARN"),
        "says why: {refused}"
    );
    assert_eq!(
        integration::scan(&client, &table).await.len(),
        1,
        "nothing imported, no window marked done"
    );
    let settings = AuditSettings {
        erasure_key_secret_arn: Some(gate_key),
        ..settings
    };
    let auditor = Auditor::new(
        settings,
        client.clone(),
        &table,
        secrets,
        shared::metrics::Metrics::default(),
    );

    let report = auditor.run(now, a_minute()).await.unwrap();
    assert_eq!(
        (report.at_sender, report.missing, report.imported),
        (3, 2, 2),
        "{report:?}"
    );
    let missing_metric = |lines: &[serde_json::Value]| -> Vec<(f64, String)> {
        lines
            .iter()
            .filter(|line| line.get("MissingSubmissions").is_some())
            .map(|line| {
                (
                    line["MissingSubmissions"].as_f64().unwrap(),
                    line["form"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    };
    let lines = captured.json_lines().unwrap();
    assert_eq!(missing_metric(&lines), [(2.0, FORM.to_owned())]);
    let items = integration::scan(&client, &table).await;
    let keys: Vec<String> = items
        .iter()
        .map(|item| integration::text(item, "pk"))
        .collect();
    for id in ["aud50", "aud40", "aud30"] {
        assert!(
            keys.contains(&format!("tally:FORM_RESPONSE:{id}")),
            "{keys:?}"
        );
    }
    assert!(
        !keys.iter().any(|key| key.ends_with("aud5")),
        "too young: {keys:?}"
    );
    let state = items
        .iter()
        .find(|item| integration::text(item, "pk") == shared::audit::AUDIT_STATE_KEY)
        .expect("where the audit ended");
    assert_eq!(integration::text(state, "auditedUntil"), report.until);

    // An hour later: from where it ended, so only the young one is read,
    // and its webhook never came either.
    let later = auditor
        .run(now + Duration::from_secs(3600), a_minute())
        .await
        .unwrap();
    assert_eq!(later.since, report.until);
    assert_eq!(
        (later.at_sender, later.missing, later.imported),
        (1, 1, 1),
        "{later:?}"
    );
    let lines = captured.json_lines().unwrap();
    assert_eq!(
        missing_metric(&lines),
        [(2.0, FORM.to_owned()), (1.0, FORM.to_owned())]
    );
    // Nothing new since: nothing read, nothing emitted.
    let again = auditor
        .run(now + Duration::from_secs(3600), a_minute())
        .await
        .unwrap();
    assert_eq!(again.forms, 0, "{again:?}");
    // Every run says how far behind it is, the one with nothing to read
    // too: an audit that stops reporting is what its alarm sees.
    let lines = captured.json_lines().unwrap();
    let behind: Vec<f64> = lines
        .iter()
        .filter_map(|line| line.get("AuditBehindPeriods").and_then(|v| v.as_f64()))
        .collect();
    assert_eq!(
        behind.len(),
        4,
        "the refused run without the erasure key too: {behind:?}"
    );
    assert!(behind.iter().all(|periods| *periods < 1.0), "{behind:?}");
    // A reconciliation pass reports it too, from the stored progress: two
    // periods and a half later, with no audit run between, it is behind.
    let later = now + Duration::from_secs(3600) + Duration::from_secs(2 * 3600 + 1800);
    auditor.report_progress(later).await;
    let lines = captured.json_lines().unwrap();
    let reported = lines
        .iter()
        .filter_map(|line| line.get("AuditBehindPeriods").and_then(|v| v.as_f64()))
        .next_back()
        .unwrap();
    assert!(reported > 2.0, "{reported}");
    assert!(!captured.text().contains(API_TOKEN), "the token was logged");

    // A progress stored in the future fails the run, and counts as far
    // behind, so the audit's own alarm fires too.
    let before = now + Duration::from_secs(3600) - Duration::from_secs(30 * 86_400);
    assert!(auditor.run(before, a_minute()).await.is_err());
    let lines = captured.json_lines().unwrap();
    let last = lines
        .iter()
        .filter_map(|line| line.get("AuditBehindPeriods").and_then(|v| v.as_f64()))
        .next_back();
    assert_eq!(last, Some(worker::audit::FUTURE_PROGRESS_BEHIND));
}

/// Webflow's listing: the token's one site first, then the form's pages by
/// offset, with no date filter (the window is applied here); what is
/// imported reads as the webhook's lead would.
#[tokio::test]
async fn a_webflow_audit_reads_the_sites_form_by_offset_and_applies_the_window() {
    let now = SystemTime::now();
    let fake = SenderApiFake::start(API_TOKEN).await.unwrap();
    fake.set_page_size(2);
    let form = "65429eadebe8a9f3a30f62d0";
    for n in 1..=4 {
        fake.keep(form, kept(n, now));
    }
    // Outside the window: listed by Webflow, neither counted nor imported.
    fake.keep(
        form,
        Kept {
            submitted_at: now - Duration::from_secs(5 * 3600),
            ..kept(9, now)
        },
    );
    let (client, table, env) = table_and_env(&fake).await;
    let scope = ["--since", "2h", "--form", form, "--sender", "webflow"];
    let (code, out, err) = cli(env.clone(), &[&["import"][..], &scope].concat()).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert_eq!(missing_ids(&out), ["aud1", "aud2", "aud3", "aud4"], "{out}");
    assert!(out.contains("imported 4;"), "{out}");
    let calls: Vec<String> = fake.calls().into_iter().map(|(call, _)| call).collect();
    assert_eq!(calls[0], "/v2/sites", "{calls:?}");
    assert!(
        calls[3].ends_with("/submissions?limit=100&offset=4"),
        "{calls:?}"
    );
    let (receipt, answers) = stored_under(&client, &table, "webflow:form_submission:aud2").await;
    assert!(receipt.is_imported());
    assert_eq!(answers.fields["email"], "person2@example.com");
    let (code, out, err) = cli(env, &[&["audit"][..], &scope].concat()).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
}

/// The worker binary, configured as the template configures it with
/// `SenderApiTokenSecretArn` and `AuditAction=import`, answers the audit's
/// schedule (`{"audit": true}`) with its counts, the token read from
/// Secrets Manager on moto; without the token, the same event is an error.
#[tokio::test]
async fn the_worker_binary_runs_an_audit_when_its_schedule_asks() {
    use devtools::lambda_emulator::LambdaEmulator;
    use devtools::local;
    let now = SystemTime::now();
    let fake = SenderApiFake::start(API_TOKEN).await.unwrap();
    for minutes_ago in [40, 30] {
        fake.keep(
            FORM,
            Kept {
                submitted_at: now - Duration::from_secs(minutes_ago * 60),
                ..kept(minutes_ago, now)
            },
        );
    }
    let endpoint = integration::endpoint(integration::DYNAMODB_ENDPOINT);
    let client = integration::worker_client(&endpoint).await;
    let table = integration::create_table(&client, "ReceiptsTable").await;
    let secrets = integration::secrets_client(&endpoint).await;
    let arn = integration::create_secret(&secrets, "audit-token", API_TOKEN).await;
    // As the template gives an auditing stack: the key erasures are found by.
    let gate_key_arn =
        integration::create_secret(&secrets, "audit-gate-key", devtools::local::DEMO_GATE_KEY)
            .await;
    let bin_dir = std::path::PathBuf::from(std::env::var("FUNCTION_BIN_DIR").unwrap_or_else(|_| {
        panic!("FUNCTION_BIN_DIR is not set: run the suite with `make test`, which builds the functions first")
    }));
    let worker_env = |audit: bool| {
        let mut env = vec![
            ("DESTINATION", "http".to_owned()),
            (
                "CRM_URL",
                "https://crm.example.com/leads/{externalId}".to_owned(),
            ),
            ("AWS_ENDPOINT_URL_SECRETS_MANAGER", endpoint.clone()),
        ];
        if audit {
            env.extend([
                ("SENDER", "tally".to_owned()),
                ("SENDER_API_TOKEN_SECRET_ARN", arn.clone()),
                ("AUDIT_ACTION", "import".to_owned()),
                ("AUDIT_FORMS", FORM.to_owned()),
                ("SENDER_API_BASE_URL", fake.base_url()),
                ("ERASURE_KEY_SECRET_ARN", gate_key_arn.clone()),
            ]);
        }
        env
    };
    for audit in [true, false] {
        let runtime = LambdaEmulator::start("worker").await.unwrap();
        let _worker = local::spawn_function(
            &bin_dir,
            "worker",
            &runtime,
            &local::function_env(&endpoint, &table),
            &worker_env(audit),
            local::FunctionOutput::Discarded,
        )
        .unwrap();
        let answer = runtime
            .invoke(json!({"audit": true}), Duration::from_secs(30))
            .await;
        if audit {
            let report = answer
                .unwrap_or_else(|error| panic!("{error}; init error: {:?}", runtime.init_error()));
            assert_eq!(report["atSender"], 2, "{report}");
            assert_eq!(report["missing"], 2, "{report}");
            assert_eq!(report["imported"], 2, "{report}");
        } else {
            let error = answer.expect_err("no audit is configured");
            assert!(error.contains("SENDER_API_TOKEN_SECRET_ARN"), "{error}");
        }
    }
    let keys: Vec<String> = integration::scan(&client, &table)
        .await
        .iter()
        .map(|item| integration::text(item, "pk"))
        .collect();
    assert!(
        keys.contains(&"tally:FORM_RESPONSE:aud40".to_owned()),
        "{keys:?}"
    );
}

/// The worker binary configured as the template configures an importing
/// audit of `FORM` against `fake`, on its own local Runtime API.
struct AuditWorker {
    runtime: devtools::lambda_emulator::LambdaEmulator,
    _process: tokio::process::Child,
    client: aws_sdk_dynamodb::Client,
    table: String,
}

impl AuditWorker {
    async fn start(fake: &SenderApiFake, settings: &[(&'static str, &str)]) -> AuditWorker {
        use devtools::lambda_emulator::LambdaEmulator;
        use devtools::local;
        let endpoint = integration::endpoint(integration::DYNAMODB_ENDPOINT);
        let client = integration::worker_client(&endpoint).await;
        let table = integration::create_table(&client, "ReceiptsTable").await;
        let secrets = integration::secrets_client(&endpoint).await;
        let arn =
            integration::create_secret(&secrets, &unique_name("audit-token"), API_TOKEN).await;
        let gate_key_arn =
            integration::create_secret(&secrets, &unique_name("gate-key"), GATE_KEY).await;
        let bin_dir = std::path::PathBuf::from(std::env::var("FUNCTION_BIN_DIR").unwrap_or_else(|_| {
            panic!("FUNCTION_BIN_DIR is not set: run the suite with `make test`, which builds the functions first")
        }));
        let mut env = vec![
            ("DESTINATION", "http".to_owned()),
            (
                "CRM_URL",
                "https://crm.example.com/leads/{externalId}".to_owned(),
            ),
            ("AWS_ENDPOINT_URL_SECRETS_MANAGER", endpoint.clone()),
            ("SENDER", "tally".to_owned()),
            ("SENDER_API_TOKEN_SECRET_ARN", arn),
            ("AUDIT_ACTION", "import".to_owned()),
            ("AUDIT_FORMS", FORM.to_owned()),
            ("SENDER_API_BASE_URL", fake.base_url()),
            ("ERASURE_KEY_SECRET_ARN", gate_key_arn),
        ];
        env.extend(
            settings
                .iter()
                .map(|(name, value)| (*name, (*value).to_owned())),
        );
        let runtime = LambdaEmulator::start("worker").await.unwrap();
        let process = local::spawn_function(
            &bin_dir,
            "worker",
            &runtime,
            &local::function_env(&endpoint, &table),
            &env,
            local::FunctionOutput::Discarded,
        )
        .unwrap();
        AuditWorker {
            runtime,
            _process: process,
            client,
            table,
        }
    }

    /// The audit's schedule, with `time` for the invocation: its answer.
    async fn audit(&self, time: Duration) -> Result<serde_json::Value, String> {
        self.runtime
            .invoke(json!({"audit": true}), time)
            .await
            .map_err(|error| format!("{error}; init error: {:?}", self.runtime.init_error()))
    }

    async fn store_audited_until(&self, at: SystemTime) {
        self.client
            .put_item()
            .table_name(&self.table)
            .item(
                "pk",
                aws_sdk_dynamodb::types::AttributeValue::S(
                    shared::audit::AUDIT_STATE_KEY.to_owned(),
                ),
            )
            .item(
                shared::audit::AUDITED_UNTIL,
                aws_sdk_dynamodb::types::AttributeValue::S(format_timestamp(at)),
            )
            .send()
            .await
            .unwrap();
    }

    /// The receipts' submission ids, sorted.
    async fn receipt_ids(&self) -> Vec<String> {
        receipt_ids(&self.client, &self.table).await
    }
}

async fn receipt_ids(client: &aws_sdk_dynamodb::Client, table: &str) -> Vec<String> {
    let mut ids: Vec<String> = integration::scan(client, table)
        .await
        .iter()
        .map(|item| integration::text(item, "pk"))
        .filter(|key| shared::receipt::is_receipt_key(key))
        .filter_map(|key| key.rsplit(':').next().map(str::to_owned))
        .collect();
    ids.sort();
    ids
}

const DAY: u64 = 86_400;

/// Submitted `seconds` ago.
fn kept_ago(id: &str, seconds: u64, now: SystemTime) -> Kept {
    Kept {
        id: id.to_owned(),
        submitted_at: now - Duration::from_secs(seconds),
        ..kept(1, now)
    }
}

/// Receipts are removed on purpose a retention after their delivery,
/// erasure or arrival. After that, the sender still lists those
/// submissions, and no receipt is under their keys: the import must take
/// them for delivered, erased or spam, never for missing, or it delivers
/// again what was settled on purpose.
#[tokio::test]
async fn an_import_never_reaches_further_back_than_the_receipts_remember() {
    let now = SystemTime::now();
    let fake = SenderApiFake::start(API_TOKEN).await.unwrap();
    for (id, age) in [
        ("delivered", 35 * DAY),
        ("erased", 33 * DAY),
        ("spam", 30 * DAY + 3600 * 6),
        ("recent", 2 * DAY),
    ] {
        fake.keep(FORM, kept_ago(id, age, now));
    }
    let (client, table, env) = table_and_env(&fake).await;
    let scope = ["--since", "40d", "--form", FORM, "--sender", "tally"];
    let (code, out, err) = cli(env.clone(), &[&["import"][..], &scope].concat()).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert_eq!(missing_ids(&out), ["recent"], "{out}");
    assert!(out.contains("imported 1;"), "{out}");
    assert!(out.contains("3 expired"), "{out}");
    assert_eq!(receipt_ids(&client, &table).await, ["recent"]);
}

/// The scheduled audit after a 40-day pause reads no further back than
/// the receipts remember (30 days), so what was settled and removed
/// before is not imported again; what is within is.
#[tokio::test]
async fn the_scheduled_audit_after_a_long_pause_imports_only_what_the_receipts_remember() {
    let now = SystemTime::now();
    let fake = SenderApiFake::start(API_TOKEN).await.unwrap();
    fake.keep(FORM, kept_ago("settled", 30 * DAY + 6 * 3600, now));
    fake.keep(FORM, kept_ago("recent", 2 * 3600, now));
    let worker = AuditWorker::start(
        &fake,
        &[
            ("AUDIT_EVERY_HOURS", "168"),
            ("RECEIPT_RETENTION_DAYS", "30"),
        ],
    )
    .await;
    worker
        .store_audited_until(now - Duration::from_secs(40 * DAY))
        .await;
    let report = worker.audit(Duration::from_secs(60)).await.unwrap();
    assert_eq!(report["imported"], 1, "{report}");
    assert_eq!(report["caughtUp"], true, "{report}");
    assert_eq!(worker.receipt_ids().await, ["recent"]);
}

/// A backlog whose listing does not fit in one invocation (four days of
/// five submissions, one page each: 20 pages at Tally's 600 ms pace, 12 s,
/// against a 10-second function) drains over a few runs, each answering
/// before its deadline with its progress stored.
#[tokio::test]
async fn an_audit_that_does_not_fit_in_one_invocation_completes_within_a_few_runs() {
    let now = SystemTime::now();
    let fake = SenderApiFake::start(API_TOKEN).await.unwrap();
    fake.set_page_size(1);
    let mut expected = Vec::new();
    for day in 0..4 {
        for n in 0..5 {
            let id = format!("d{day}n{n}");
            fake.keep(FORM, kept_ago(&id, (day + 1) * DAY - n * 3600, now));
            expected.push(id);
        }
    }
    expected.sort();
    let worker = AuditWorker::start(&fake, &[("AUDIT_EVERY_HOURS", "24")]).await;
    worker
        .store_audited_until(now - Duration::from_secs(4 * DAY + 3600))
        .await;
    let mut runs = 0;
    loop {
        runs += 1;
        let report = worker
            .audit(Duration::from_secs(10))
            .await
            .unwrap_or_else(|error| {
                panic!("run {runs} did not answer before its deadline: {error}")
            });
        assert!(
            report["windows"].as_u64().unwrap() >= 1,
            "run {runs}: {report}"
        );
        if report["caughtUp"] == true {
            break;
        }
        assert!(runs < 8, "still behind after {runs} runs: {report}");
    }
    assert!(runs > 1, "the backlog was meant not to fit in one run");
    eprintln!("the backlog drained in {runs} runs");
    assert_eq!(worker.receipt_ids().await, expected);
}

/// A submission too large to store (its webhook was answered 413, so the
/// sender lists it) is counted and named, and the one listed after it is
/// imported; an id listed twice and a form named twice audit normally.
#[tokio::test]
async fn one_bad_or_repeated_submission_never_blocks_the_rest() {
    let now = SystemTime::now();
    let fake = SenderApiFake::start(API_TOKEN).await.unwrap();
    let mut large = kept_ago("large", 600, now);
    large.message = "x".repeat(420 * 1024);
    fake.keep(FORM, large);
    fake.keep(FORM, kept_ago("after", 300, now));
    fake.keep(FORM, kept_ago("twice", 200, now));
    fake.keep(FORM, kept_ago("twice", 200, now));
    let (client, table, env) = table_and_env(&fake).await;
    let scope = [
        "--since", "2h", "--form", FORM, "--form", FORM, "--sender", "tally",
    ];
    let (code, out, err) = cli(env.clone(), &[&["audit"][..], &scope].concat()).await;
    assert_eq!(code, Some(4), "{out}\n{err}");
    assert_eq!(missing_ids(&out), ["large", "after", "twice"], "{out}");
    let (code, out, err) = cli(env, &[&["import"][..], &scope].concat()).await;
    assert_ne!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("imported 2;"), "{out}");
    assert!(
        out.contains(&format!("unimportable: {FORM} \"large\": too large")),
        "{out}"
    );
    assert!(
        err.contains("1 listed submissions cannot be stored"),
        "{err}"
    );
    assert!(
        !out.contains("xxxx") && !err.contains("xxxx"),
        "form data printed"
    );
    assert_eq!(receipt_ids(&client, &table).await, ["after", "twice"]);
}

/// A page without the sender's documented end marker could end the
/// listing early and the window be taken as read: an error, never a
/// silently short window.
#[tokio::test]
async fn a_page_without_its_end_marker_is_an_error_not_a_short_window() {
    let now = SystemTime::now();
    let fake = SenderApiFake::start(API_TOKEN).await.unwrap();
    fake.set_page_size(1);
    fake.keep(FORM, kept_ago("a", 600, now));
    fake.keep(FORM, kept_ago("b", 300, now));
    fake.drop_end_marker();
    let (client, table, env) = table_and_env(&fake).await;
    let scope = ["--since", "2h", "--form", FORM, "--sender", "tally"];
    let (code, out, err) = cli(env, &[&["import"][..], &scope].concat()).await;
    assert_ne!(code, Some(0), "{out}\n{err}");
    assert!(err.contains("hasMore"), "{err}");
    assert!(receipt_ids(&client, &table).await.is_empty());
}

/// An `auditedUntil` in the future would make every audit an empty
/// success until then: no listing, no metric, no alarm. It is an error.
#[tokio::test]
async fn an_audited_until_in_the_future_fails_the_audit() {
    let fake = SenderApiFake::start(API_TOKEN).await.unwrap();
    fake.keep(FORM, kept_ago("a", 3600, SystemTime::now()));
    let worker = AuditWorker::start(&fake, &[]).await;
    worker
        .store_audited_until(SystemTime::now() + Duration::from_secs(30 * DAY))
        .await;
    let error = worker.audit(Duration::from_secs(30)).await.unwrap_err();
    assert!(error.contains("later than now"), "{error}");
}

/// A person `receipts forget` erased stays erased: their submissions the
/// sender still lists (made before the erasure, their webhooks never came)
/// are counted erased and never imported, by `receipts import` and by the
/// scheduled audit alike; forget says to delete them at the sender too.
#[tokio::test]
async fn no_import_brings_back_a_person_forget_erased() {
    let now = SystemTime::now();
    let fake = SenderApiFake::start(API_TOKEN).await.unwrap();
    let person = |id: &str, email: &str, ago: u64| Kept {
        email: email.to_owned(),
        ..kept_ago(id, ago, now)
    };
    fake.keep(FORM, person("ada1", "ada@example.com", 50 * 60));
    fake.keep(FORM, person("ada2", "ADA@example.com ", 40 * 60));
    fake.keep(FORM, person("bob", "bob@example.com", 30 * 60));
    let worker = AuditWorker::start(&fake, &[("AUDIT_EVERY_HOURS", "1")]).await;
    let mut env = cli_env(&worker.table, &fake);
    env.push(("SENDER", "tally".to_owned()));

    let (code, out, err) = cli(
        env.clone(),
        &["forget", "--email", "Ada@example.com", "--yes"],
    )
    .await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("erasure marker: left"), "{out}");
    assert!(
        out.contains("Tally still keeps this person's submissions: delete them there too"),
        "{out}"
    );
    assert!(
        !out.contains("ada@example.com"),
        "the address printed: {out}"
    );

    // The scheduled audit: Bob's is imported, Ada's two are not.
    let report = worker.audit(Duration::from_secs(60)).await.unwrap();
    assert_eq!(report["erased"], 2, "{report}");
    assert_eq!(report["imported"], 1, "{report}");
    assert_eq!(worker.receipt_ids().await, ["bob"]);

    // receipts import, by the same key.
    let scope = ["--since", "2h", "--form", FORM, "--sender", "tally"];
    let (code, out, err) = cli(env.clone(), &[&["import"][..], &scope].concat()).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("2 erased"), "{out}");
    assert!(out.contains("imported 0;"), "{out}");
    assert_eq!(worker.receipt_ids().await, ["bob"]);

    // Without the key an import cannot tell, so it refuses.
    let without_key: Vec<_> = env
        .into_iter()
        .filter(|(name, _)| *name != "GATE_KEY")
        .collect();
    let (code, _, err) = cli(without_key, &[&["import"][..], &scope].concat()).await;
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("gate key"), "{err}");
}

/// An import is a delivery by another door: a listed submission that
/// breaks a spam rule in force is stored held back (QUARANTINED, never
/// delivered unless released), as its webhook would have been.
#[tokio::test]
async fn an_import_holds_back_what_a_spam_rule_holds_back() {
    let now = SystemTime::now();
    let fake = SenderApiFake::start(API_TOKEN).await.unwrap();
    fake.keep(FORM, kept_ago("person", 600, now));
    fake.keep(
        FORM,
        Kept {
            email: "bot@Mail.Mailinator.com".to_owned(),
            ..kept_ago("bot", 300, now)
        },
    );
    let (client, table, env) = table_and_env(&fake).await;
    let file = std::env::temp_dir().join(format!("{}.toml", unique_name("spam-routes")));
    std::fs::write(
        &file,
        "[spam]\nblock_email_domains = [\"mailinator.com\"]\n",
    )
    .unwrap();
    let (code, out, err) = cli(env.clone(), &["routes", "apply", file.to_str().unwrap()]).await;
    std::fs::remove_file(&file).unwrap();
    assert_eq!(code, Some(0), "{out}\n{err}");

    let scope = ["--since", "2h", "--form", FORM, "--sender", "tally"];
    let (code, out, err) = cli(env, &[&["import"][..], &scope].concat()).await;
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("imported 2;"), "{out}");
    assert!(out.contains("1 of those break a spam rule"), "{out}");
    let status = |id: &str| {
        let key = format!("tally:FORM_RESPONSE:{id}");
        let client = client.clone();
        let table = table.clone();
        async move {
            let items = integration::scan(&client, &table).await;
            let item = items
                .iter()
                .find(|item| integration::text(item, "pk") == key)
                .unwrap_or_else(|| panic!("no receipt under {key}"));
            integration::text(item, "status")
        }
    };
    assert_eq!(status("bot").await, "QUARANTINED");
    assert_eq!(status("person").await, "RECEIVED");
}

/// Every sender that keeps its submissions (its `Profile::api`), each
/// through the fake of its own API: of 4 a form kept, 2 came by webhook
/// (signed as each signs, or with the secret in its URL; sent as each
/// sends it); the audit names exactly the other 2 by the stable ids their
/// webhooks would have had, the import stores them, the worker delivers
/// each once, and a second import and a late webhook add nothing.
#[tokio::test]
async fn every_audited_senders_audit_finds_what_never_came_and_imports_it_once() {
    let audited = shared::Sender::ALL
        .into_iter()
        .filter(|s| s.api().is_some());
    for sender in audited {
        let name = sender.name();
        let now = SystemTime::now();
        let fake = SenderApiFake::start(API_TOKEN).await.unwrap();
        fake.set_page_size(2);
        let form = "f5ec8a79ff1c2d3";
        for n in 1..=4 {
            fake.keep(form, kept(n, now));
        }
        let receipts_table = unique_name("audit-receipts");
        let (pipeline, webhook_port, crm_port, _printed) =
            start_pipeline_with("http", &receipts_table, &[("SENDER", name)]).await;
        let http = reqwest::Client::new();
        let post = |webhook: serde_json::Value| {
            let (content_type, body) = sender.sent_request(&webhook);
            // make run's unsigned sender: the secret in the URL.
            let secret = match sender.signature() {
                Some(_) => String::new(),
                None => format!("?token={}", devtools::local::DEMO_TOKEN),
            };
            let mut request = http
                .post(format!(
                    "http://127.0.0.1:{webhook_port}/webhooks/{name}{secret}"
                ))
                .header("content-type", content_type);
            if let Some(signature) = sender.signature() {
                let signed = signature.sign(
                    DEMO_SIGNING_SECRET.as_bytes(),
                    body.as_bytes(),
                    SystemTime::now(),
                    &[],
                );
                for (header, value) in signed {
                    request = request.header(header, value);
                }
            }
            request.body(body).send()
        };
        for n in 1..=2 {
            let answer = post(webhook_for(sender, form, &kept(n, now)))
                .await
                .unwrap();
            let status = answer.status().as_u16();
            let accepted = sender.accepted_status();
            assert_eq!(status, accepted, "{name}: {}", answer.text().await.unwrap());
        }
        let leads_url = format!("http://127.0.0.1:{crm_port}/leads");
        let leads = leads_once_there(&http, &leads_url, 2, Duration::from_secs(30)).await;
        assert_eq!(leads["count"], 2, "{name}: {leads}");

        let env = cli_env(&receipts_table, &fake);
        let scope = ["--since", "2h", "--form", form, "--sender", name];
        let (code, out, err) = cli(env.clone(), &[&["audit"][..], &scope].concat()).await;
        assert_eq!(code, Some(4), "{name}: {out}\n{err}");
        // The stable ids their webhooks would have had.
        let expected: Vec<String> = [3, 4]
            .into_iter()
            .map(|n| {
                let webhook = webhook_for(sender, form, &kept(n, now));
                let submission = sender.parse_submission(webhook.to_string().as_bytes());
                submission.unwrap().submission_id.as_str().to_owned()
            })
            .collect();
        let mut missing = missing_ids(&out);
        missing.sort();
        assert_eq!(missing, expected, "{name}: {out}");

        let (code, out, err) = cli(env.clone(), &[&["import"][..], &scope].concat()).await;
        assert_eq!(code, Some(0), "{name}: {out}\n{err}");
        assert!(out.contains("imported 2;"), "{name}: {out}");
        let key = format!("{name}:{}:{}", sender.event_name(), expected[0]);
        let (receipt, answers) = stored_under(
            &integration::ingest_client(&integration::endpoint(integration::DYNAMODB_ENDPOINT))
                .await,
            &receipts_table,
            &key,
        )
        .await;
        assert!(receipt.is_imported(), "{name}");
        assert_eq!(answers.fields["email"], "person3@example.com", "{name}");
        let leads = leads_once_there(&http, &leads_url, 4, Duration::from_secs(30)).await;
        assert_eq!(leads["count"], 4, "{name}: {leads}");

        let (code, out, err) = cli(env.clone(), &[&["import"][..], &scope].concat()).await;
        assert_eq!(code, Some(0), "{name}: {out}\n{err}");
        assert!(out.contains("imported 0;"), "{name}: {out}");
        // The imported one's webhook, late: a duplicate, no second lead.
        let late = post(webhook_for(sender, form, &kept(4, now)))
            .await
            .unwrap();
        assert_eq!(late.status().as_u16(), 200, "{name}");
        tokio::time::sleep(Duration::from_secs(2)).await;
        let leads = leads_once_there(&http, &leads_url, 4, Duration::from_secs(1)).await;
        assert_eq!(leads["calls"], 4, "{name}: each lead written once: {leads}");
        stop(pipeline).await;
    }
}

/// The senders' deletions (`forget --everywhere`), by each API's own
/// request: Typeform's names several responses at once, Tally's,
/// Netlify's, Webflow's and Jotform's (its key in an `APIKEY` header) one
/// each; an id already gone (404) is no error and no
/// deletion; a refusal names what the token needs to delete.
#[tokio::test]
async fn each_sender_deletes_by_its_own_request_and_a_refusal_names_the_scope() {
    use sender_audit::sender_api::SenderApiClient;
    use shared::Sender;
    let now = SystemTime::now();
    let deleting = Sender::ALL
        .into_iter()
        .filter(|s| s.api().is_some_and(|api| api.delete.is_some()));
    for sender in deleting {
        // Three ids: one request, or one each (Typeform names several).
        let per_request = sender.api().unwrap().delete.unwrap().per_request;
        let expected_requests = 3_usize.div_ceil(per_request);
        let fake = SenderApiFake::start(API_TOKEN).await.unwrap();
        for n in 1..=3 {
            fake.keep(FORM, kept(n, now));
        }
        let api = sender.api().unwrap();
        let mut client =
            SenderApiClient::new(sender, api, Some(fake.base_url()), API_TOKEN.to_owned());
        let ids = ["aud1".to_owned(), "aud2".to_owned(), "gone9".to_owned()];
        let mut gone = Vec::new();
        client
            .delete(FORM, &ids, |chunk, deleted| {
                gone.extend(chunk.iter().map(|id| (id.clone(), deleted)))
            })
            .await
            .unwrap_or_else(|error| panic!("{}: {error}", sender.name()));
        assert_eq!(fake.kept_ids(FORM), ["aud3"], "{}", sender.name());
        assert_eq!(
            fake.deletions().len(),
            expected_requests,
            "{}: {:?}",
            sender.name(),
            fake.deletions()
        );
        if expected_requests == 3 {
            assert_eq!(
                gone,
                [
                    ("aud1".to_owned(), true),
                    ("aud2".to_owned(), true),
                    ("gone9".to_owned(), false)
                ],
                "{}",
                sender.name()
            );
        }

        fake.fail_next(Fault {
            status: 403,
            retry_after: None,
            times: Some(1),
        });
        let refused = client
            .delete(FORM, &["aud3".to_owned()], |_, _| {})
            .await
            .unwrap_err()
            .to_string();
        let needs = api.delete.unwrap().token_help;
        assert!(refused.contains(needs), "{}: {refused}", sender.name());
    }
    assert!(Sender::Typeform
        .api()
        .unwrap()
        .delete
        .unwrap()
        .token_help
        .contains("responses:write"));
}
