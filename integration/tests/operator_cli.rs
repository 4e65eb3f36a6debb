//! The `receipts` CLI as an operator meets it: it finds the stack's table
//! through moto's CloudFormation (`--stack`), lists newest first, shows a
//! card without personal data unless `--payload`, and says clearly when
//! the stack does not exist.

use std::time::{Duration, Instant, UNIX_EPOCH};

use aws_sdk_dynamodb::Client;
use integration::*;
use shared::{FormSubmission, Receipt};

/// A receipt for `id` received at `received` (Unix seconds), as ingest
/// stores it.
async fn put_receipt(client: &Client, table: &str, id: &str, received: u64) {
    let body = body(id, &format!("{id}@example.com"));
    let submission = FormSubmission::parse(body.as_bytes()).unwrap();
    let receipt = Receipt::new(&submission, UNIX_EPOCH + Duration::from_secs(received));
    client
        .put_item()
        .table_name(table)
        .set_item(Some(serde_dynamo::to_item(&receipt).unwrap()))
        .send()
        .await
        .expect("moto stores the receipt");
}

#[tokio::test(flavor = "multi_thread")]
async fn receipts_finds_the_table_through_the_stack() {
    let endpoint = endpoint(DYNAMODB_ENDPOINT);
    let client = ingest_client(&endpoint).await;
    let table = create_table(&client, "ReceiptsTable").await;
    // Stored out of order: the list must sort, not follow the scan.
    for (id, received) in [
        ("sub_middle", 1_800_000_100),
        ("sub_newest", 1_800_000_200),
        ("sub_oldest", 1_800_000_000),
    ] {
        put_receipt(&client, &table, id, received).await;
    }
    let stack = unique_name("crm-stack");
    create_stack(
        &endpoint,
        &stack,
        &[("WebhookAuth", "bearer")],
        &[("ReceiptsTableName", &table)],
    )
    .await;

    let (ok, out, err) = receipts_cli(&[], &["--stack", &stack, "list", "--limit", "2", "--json"]);
    assert!(ok, "{err}");
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ids: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["submissionId"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["sub_newest", "sub_middle"],
        "newest first, then --limit"
    );

    // The flag may come after the subcommand too (global), and RECEIPTS_TABLE
    // pointing elsewhere does not win over --stack.
    let (ok, out, err) = receipts_cli(
        &[("RECEIPTS_TABLE", "not-this-table")],
        &["show", "sub_oldest", "--stack", &stack],
    );
    assert!(ok, "{err}");
    assert!(out.contains("status         RECEIVED\n"), "{out}");
    assert!(
        out.contains("received       2027-01-15 08:00:00 UTC ("),
        "{out}"
    );
    assert!(
        !out.contains("@example.com"),
        "no personal data without --payload: {out}"
    );
    let (ok, out, _) = receipts_cli(&[], &["show", "sub_oldest", "--stack", &stack, "--payload"]);
    assert!(ok && out.contains("sub_oldest@example.com"), "{out}");

    let (ok, _, err) = receipts_cli(&[], &["--stack", "no-such-stack", "stats"]);
    assert!(!ok);
    assert!(err.contains("no stack \"no-such-stack\""), "{err}");

    // A stack without the output (not ours, or half-deployed) is named.
    let other = unique_name("other-stack");
    create_stack(
        &endpoint,
        &other,
        &[("Anything", "x")],
        &[("Elsewhere", "y")],
    )
    .await;
    let (ok, _, err) = receipts_cli(&[], &["--stack", &other, "stats"]);
    assert!(!ok);
    assert!(err.contains("has no output ReceiptsTableName"), "{err}");
}

#[test]
fn receipts_says_its_version_and_refuses_a_bad_command_with_exit_2() {
    let (ok, out, _) = receipts_cli(&[], &["--version"]);
    assert!(ok && out.starts_with("receipts "), "{out}");
    let bin_dir = std::env::var("FUNCTION_BIN_DIR").expect("FUNCTION_BIN_DIR (make test)");
    let status = std::process::Command::new(format!("{bin_dir}/receipts"))
        .args(["list", "--status", "done"])
        .output()
        .unwrap()
        .status;
    assert_eq!(status.code(), Some(2));
}

/// `routes apply` stores the routes once under the reserved key, says what
/// changed by route name (never a form id), refuses a bad file without
/// storing anything, and the routes item is never listed nor counted as a
/// receipt.
#[tokio::test(flavor = "multi_thread")]
async fn routes_are_applied_shown_by_name_and_never_taken_for_receipts() {
    let endpoint = endpoint(DYNAMODB_ENDPOINT);
    let client = ingest_client(&endpoint).await;
    let table = create_table(&client, "ReceiptsTable").await;
    put_receipt(&client, &table, "sub_only", 1_800_000_000).await;
    let dir = std::env::temp_dir().join(unique_name("routes"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("routes.toml");
    let example = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../routes.example.toml"),
    )
    .unwrap();
    std::fs::write(&file, &example).unwrap();
    let path = file.to_str().unwrap();
    let at = |args: &[&str]| {
        let mut all = vec!["--table", table.as_str()];
        all.extend_from_slice(args);
        receipts_cli_code(&[], &all)
    };

    let (code, out, err) = at(&["routes", "show"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("no routes stored"), "{out}");

    let (code, out, err) = at(&["routes", "apply", path, "--dry-run"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("+ route \"Pricing page\"") && out.contains("dry run"),
        "{out}"
    );
    let (_, out, _) = at(&["routes", "show"]);
    assert!(
        out.starts_with("no routes stored"),
        "a dry run stores nothing: {out}"
    );

    let (code, out, err) = at(&["routes", "apply", path]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("+ route \"Newsletter\""), "{out}");
    assert!(out.contains("stored as version 1"), "{out}");
    assert!(
        !out.contains("VwbNEw") && !out.contains("lT4Z3j"),
        "no form id: {out}"
    );

    let (code, out, _) = at(&["routes", "apply", path]);
    assert_eq!(code, Some(0));
    assert!(out.starts_with("no change"), "{out}");

    std::fs::write(
        &file,
        example.replace("hs_lead_status = \"OPEN\"", "hs_lead_status = \"NEW\""),
    )
    .unwrap();
    let (code, out, err) = at(&["routes", "apply", path]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("~ route \"Newsletter\": set\n"), "{out}");
    assert!(out.contains("stored as version 2"), "{out}");

    std::fs::write(&file, "[[route]]\nform = \"\"\n").unwrap();
    let (code, _, err) = at(&["routes", "apply", path]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("[[route]] #1: form: is empty"), "{err}");
    let (_, out, _) = at(&["routes", "show"]);
    assert!(
        out.starts_with("version 2, applied "),
        "a bad file stores nothing: {out}"
    );
    assert!(
        out.contains(
            "route \"Pricing page\": fields [company_size -> numemployees], set [hs_lead_status]"
        ),
        "{out}"
    );

    // The routes item is in the table, and never a receipt.
    let (code, out, err) = at(&["list", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 1, "{out}");
    assert!(
        !err.contains("did not read as receipts"),
        "the routes item is no receipt: {err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Routes read back from the table are held to `routes check`'s rules: an
/// item written some other way (a route sending a constant to the person's
/// own e-mail field) is refused when read, with its problem named, the
/// last good routes stay in force, and `RoutesRefused` is counted.
#[tokio::test(flavor = "current_thread")]
async fn stored_routes_that_break_the_rules_are_refused_and_the_last_good_kept() {
    use aws_edge::routes::StoredRoutes;
    use aws_sdk_dynamodb::types::AttributeValue;
    let captured = devtools::log_capture::CapturedLogs::default();
    let _guard = captured.install();
    let client = ingest_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let table = create_table(&client, "ReceiptsTable").await;
    let good = shared::routes::parse(
        "[[route]]\nform = \"f1\"\nname = \"Contact\"\n[route.set]\nlead_source = \"web\"\n",
    )
    .unwrap();
    let store = |routes: serde_json::Value| {
        let client = client.clone();
        let table = table.clone();
        async move {
            client
                .put_item()
                .table_name(&table)
                .item(
                    "pk",
                    AttributeValue::S(shared::routes::ROUTES_KEY.to_owned()),
                )
                .item("routes", AttributeValue::S(routes.to_string()))
                .send()
                .await
                .unwrap();
        }
    };
    store(serde_json::to_value(&good).unwrap()).await;
    let stored = StoredRoutes::new(client.clone(), &table)
        .with_metrics(shared::metrics::Metrics::default(), "worker");
    let in_force = StoredRoutes::new(client.clone(), &table)
        .into_force(Duration::ZERO)
        .await;
    assert_eq!(*in_force.now().await.unwrap(), good);

    let mut bad = serde_json::to_value(&good).unwrap();
    bad["routes"][0]["set"]["email"] = serde_json::json!("everyone@example.com");
    store(bad).await;
    let refused = stored.read().await.unwrap_err().to_string();
    assert!(
        refused.contains("[[route]] #1 \"Contact\": set.email: is the person's own field"),
        "{refused}"
    );
    assert!(!refused.contains("everyone@example.com"), "{refused}");
    assert_eq!(
        *in_force.now().await.unwrap(),
        good,
        "the last good routes stay in force"
    );
    let counted = captured
        .json_lines()
        .unwrap()
        .iter()
        .filter(|line| line.get("RoutesRefused").is_some())
        .count();
    assert_eq!(counted, 1);
}

/// `receipts console` in a real browser (issue 60): against a table with a
/// delivered, a failed and a quarantined receipt, headless Chromium lists
/// them, filters, opens a card, releases the quarantined one and redrives
/// the failed one from the page (each then delivered once by a pass), sees
/// a new receipt appear without a reload, and draws the chart; the page
/// loads nothing from any other host, and no answer holds an address
/// unless the card asked for its form data. Without the token, from
/// another origin, or on another address, the console refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_a_browser_lists_releases_redrives_and_updates_live() {
    use devtools::crm_stub::{Answer, CrmStub};
    use integration::browser::Browser;
    use shared::ReceiptStatus;
    use worker::destinations::http::HttpCrm;
    use worker::ledger::dynamodb::DynamoLedger;

    let moto = endpoint(DYNAMODB_ENDPOINT);
    let client = worker_client(&moto).await;
    let table = create_table(&client, "ReceiptsTable").await;
    let crm = CrmStub::start().await.unwrap();
    let clock = shared::clock::Adjustable::default();
    let worker = worker::Worker::new(
        HttpCrm::new(crm.leads_url(), None).unwrap(),
        DynamoLedger::new(client.clone(), &table),
        8,
    )
    .with_clock(clock.clock());
    let store = |receipt: Receipt| {
        let client = client.clone();
        let table = table.clone();
        async move { store_receipt(&client, &table, &receipt).await }
    };
    let receipt_of = |id: &str| {
        let body = body(id, &format!("{id}@example.com"));
        Receipt::new(
            &FormSubmission::parse(body.as_bytes()).unwrap(),
            std::time::SystemTime::now(),
        )
    };
    // Delivered; refused by the CRM for good (FAILED); held by a spam rule.
    store(receipt_of("sub_done")).await;
    store(receipt_of("sub_bad")).await;
    crm.always("sub_bad", Answer::status(400));
    drain_stream(&moto, &client, &table, &worker).await;
    let mut held = receipt_of("sub_held");
    held.status = ReceiptStatus::Quarantined;
    held.quarantine_rule = Some("honeypot:fax".to_owned());
    held.pending = None;
    held.next_attempt_at = None;
    store(held).await;
    assert_eq!(crm.lead_count(), 1);

    client
        .put_item()
        .table_name(&table)
        .item(
            "pk",
            aws_sdk_dynamodb::types::AttributeValue::S(shared::audit::AUDIT_STATE_KEY.to_owned()),
        )
        .item(
            shared::audit::AUDITED_UNTIL,
            aws_sdk_dynamodb::types::AttributeValue::S("2026-12-01T10:00:00.000Z".to_owned()),
        )
        .send()
        .await
        .unwrap();

    let (mut console, url, token, origin) = start_console(&moto, &table);
    let bin = std::env::var("FUNCTION_BIN_DIR").expect("FUNCTION_BIN_DIR: run make test");

    // The refusals, and no address in any answer unless asked.
    let http = reqwest::Client::new();
    let get = |path: &str, token: Option<&str>, from: Option<&str>| {
        let mut request = http.get(format!("{origin}{path}"));
        if let Some(token) = token {
            request = request.header("x-console-token", token);
        }
        if let Some(from) = from {
            request = request.header("origin", from);
        }
        request.send()
    };
    assert_eq!(
        get("/api/receipts", None, None).await.unwrap().status(),
        401
    );
    assert_eq!(get("/", None, None).await.unwrap().status(), 401);
    let foreign = get("/api/receipts", Some(&token), Some("https://evil.example"));
    assert_eq!(foreign.await.unwrap().status(), 403);
    let listed = get("/api/receipts?since=24h", Some(&token), None)
        .await
        .unwrap();
    assert_eq!(listed.status(), 200);
    let listed = listed.text().await.unwrap();
    assert!(
        listed.contains("sub_held") && !listed.contains("@example.com"),
        "{listed}"
    );
    let card = get(
        "/api/receipt?id=staticforms:form.submitted:sub_held",
        Some(&token),
        None,
    );
    let card = card.await.unwrap().text().await.unwrap();
    assert!(!card.contains("@example.com"), "{card}");
    let asked = get(
        "/api/receipt?id=staticforms:form.submitted:sub_held&payload=1",
        Some(&token),
        None,
    );
    assert!(asked
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
        .contains("sub_held@example.com"));
    let elsewhere = std::process::Command::new(format!("{bin}/receipts"))
        .args([
            "--table",
            &table,
            "console",
            "--no-open",
            "--bind",
            "0.0.0.0",
        ])
        .output()
        .unwrap();
    assert_eq!(elsewhere.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&elsewhere.stderr).contains("127.0.0.1 only"));

    // The page, in Chromium.
    let browser = Browser::start().await;
    browser.open(&url).await;
    let rows = "return document.querySelectorAll('#inbox tbody tr').length";
    browser
        .until(
            Duration::from_secs(10),
            "the inbox lists 3",
            &format!("{rows} === 3"),
        )
        .await;
    // Filtering by status.
    browser
        .run("const s = document.querySelector('#status'); s.value = 'failed'; s.dispatchEvent(new Event('change')); return true")
        .await;
    browser
        .until(
            Duration::from_secs(10),
            "only the failed one",
            "const r = [...document.querySelectorAll('#inbox tbody tr')]; return r.length === 1 && r[0].dataset.id.endsWith('sub_bad')",
        )
        .await;
    // Its card, and a redrive, once the CRM takes it.
    crm.answer_normally("sub_bad");
    browser.click("#inbox tbody tr").await;
    browser
        .until(
            Duration::from_secs(10),
            "the card",
            "return !document.querySelector('#redrive').hidden",
        )
        .await;
    let card_text = browser
        .run("return document.querySelector('#card').textContent")
        .await;
    assert!(
        card_text.as_str().unwrap_or("").contains("sub_bad"),
        "{card_text}"
    );
    browser.click("#redrive").await;
    browser.accept().await;
    browser
        .until(
            Duration::from_secs(10),
            "redriven",
            "return document.querySelector('#said').textContent.includes('redriven 1')",
        )
        .await;
    // The quarantine, and a release.
    browser
        .run("const s = document.querySelector('#status'); s.value = ''; s.dispatchEvent(new Event('change')); return true")
        .await;
    browser
        .until(
            Duration::from_secs(10),
            "the quarantine lists it",
            "return document.querySelector('#quarantine').textContent.includes('honeypot:fax')",
        )
        .await;
    browser.click("#quarantine button").await;
    browser
        .until(
            Duration::from_secs(10),
            "its card",
            "return !document.querySelector('#release').hidden",
        )
        .await;
    browser.click("#release").await;
    browser.accept().await;
    browser
        .until(
            Duration::from_secs(10),
            "released",
            "return document.querySelector('#said').textContent.includes('released')",
        )
        .await;
    // A pass, once the stream's grace is over.
    clock.advance(Duration::from_secs(3600));
    worker
        .reconcile(Instant::now() + Duration::from_secs(30))
        .await;
    assert_eq!(
        crm.lead_count(),
        3,
        "the redriven and the released, each delivered"
    );
    assert_eq!(crm.lead("sub_held").unwrap().writes, 1, "once");
    assert_eq!(crm.lead("sub_bad").unwrap().writes, 1, "once");
    // Live: a new receipt appears without a reload.
    store(receipt_of("sub_new")).await;
    browser
        .until(
            Duration::from_secs(10),
            "the new receipt, live",
            "return [...document.querySelectorAll('#inbox tbody tr')].some(r => r.dataset.id.endsWith('sub_new'))",
        )
        .await;
    // The audit's state, as the scheduled audit stored it.
    browser
        .until(
            Duration::from_secs(10),
            "the audit's state",
            "return document.querySelector('#audit').textContent.includes('up to 2026-12-01T10:00:00.000Z')",
        )
        .await;
    // The period's counts follow what changed, and what waits now.
    browser
        .until(
            Duration::from_secs(20),
            "the counts, three delivered",
            "return [...document.querySelectorAll('#counts tr')].some(r => r.textContent === 'COMPLETED3') \
             && document.querySelector('#counts').textContent.includes('notices waiting')",
        )
        .await;
    // The chart, and nothing from another host.
    let bars = browser
        .run("return document.querySelectorAll('#chart rect').length")
        .await;
    assert!(bars.as_u64().unwrap_or(0) >= 1, "{bars}");
    let foreign = browser
        .run(&format!("return performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith('{origin}/'))"))
        .await;
    assert_eq!(foreign, serde_json::json!([]), "only the console's own");
    let page = browser
        .run("return document.documentElement.outerHTML")
        .await;
    assert!(
        !page.as_str().unwrap_or("").contains("@example.com"),
        "no address unasked"
    );
    browser
        .run("document.querySelector('#close').click(); window.scrollTo(0, 0); return true")
        .await;
    let shot = browser.screenshot().await;
    assert!(shot.starts_with(b"\x89PNG"), "a PNG");
    if std::env::var("CONSOLE_SCREENSHOT").is_ok() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        std::fs::write(root.join("docs/images/console.png"), &shot).unwrap();
    }
    let _ = console.kill();
    let _ = console.wait();
}

/// `receipts console` on a free port of `table`: the process, the URL it
/// printed, its token and its origin.
fn start_console(moto: &str, table: &str) -> (std::process::Child, String, String, String) {
    let port = integration::pipeline::two_free_ports().0;
    let bin = std::env::var("FUNCTION_BIN_DIR").expect("FUNCTION_BIN_DIR: run make test");
    let mut console = std::process::Command::new(format!("{bin}/receipts"))
        .args([
            "--table",
            table,
            "console",
            "--no-open",
            "--port",
            &port.to_string(),
        ])
        .env("AWS_ENDPOINT_URL", moto)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(console.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    let url = first
        .trim()
        .strip_prefix("receipts console: ")
        .unwrap_or_else(|| panic!("no URL printed: {first}"))
        .to_owned();
    let token = url.split("token=").nth(1).unwrap().to_owned();
    (console, url, token, format!("http://127.0.0.1:{port}"))
}

/// `receipts` against moto's table, its standard output.
fn receipts_run(moto: &str, args: &[&str]) -> String {
    let bin = std::env::var("FUNCTION_BIN_DIR").expect("FUNCTION_BIN_DIR: run make test");
    let output = std::process::Command::new(format!("{bin}/receipts"))
        .args(args)
        .env("AWS_ENDPOINT_URL", moto)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// The console's inbox pages through the day index newest first, across
/// days, with where the next page starts, and filters as the CLI does; its
/// counts are a period's. A receipt stored before the index (no day) is in
/// neither, which shows neither reads the table itself, until `receipts
/// reindex` gives it its day, once.
#[tokio::test(flavor = "multi_thread")]
async fn the_console_pages_newest_first_through_the_day_index_and_reindex_adds_old_receipts() {
    const DAY: u64 = 86_400;
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let client = ingest_client(&moto).await;
    let table = create_table(&client, "ReceiptsTable").await;
    let now = std::time::SystemTime::now();
    let store = |id: String, ago: u64, failed: bool, indexed: bool| {
        let client = client.clone();
        let table = table.clone();
        async move {
            let body = body(&id, &format!("{id}@example.com"));
            let submission = FormSubmission::parse(body.as_bytes()).unwrap();
            let mut receipt = Receipt::new(&submission, now - Duration::from_secs(ago));
            if failed {
                receipt.status = shared::ReceiptStatus::Failed;
                receipt.pending = Some(shared::receipt::FAILED.to_owned());
            }
            if !indexed {
                receipt.received_day = None;
            }
            store_receipt(&client, &table, &receipt).await
        }
    };
    // 60 in the last hour, 40 a day or more ago, 20 three days ago.
    for n in 0..120u64 {
        let ago = match n {
            0..60 => n * 30,
            60..100 => DAY + n * 60,
            _ => 3 * DAY + n * 60,
        };
        store(format!("sub_{n:03}"), ago, n % 10 == 0, true).await;
    }
    for n in 0..2 {
        store(format!("old_{n}"), 2 * DAY + n, false, false).await;
    }
    let (mut console, _url, token, origin) = start_console(&moto, &table);
    let http = reqwest::Client::new();
    let get = |query: String| {
        let request = http
            .get(format!("{origin}/api/{query}"))
            .header("x-console-token", &token);
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.json::<serde_json::Value>().await.unwrap())
        }
    };
    let walk = |filter: &'static str| {
        let get = &get;
        async move {
            let mut pages: Vec<Vec<String>> = Vec::new();
            let mut query = format!("receipts?since=7d{filter}");
            loop {
                let (status, page) = get(query.clone()).await;
                assert_eq!(status, 200, "{page}");
                pages.push(
                    page["receipts"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|r| r["submissionId"].as_str().unwrap().to_owned())
                        .collect(),
                );
                let older = &page["older"];
                if older.is_null() {
                    return pages;
                }
                query = format!(
                    "receipts?since=7d{filter}&olderAt={}&olderAfter={}",
                    older["at"].as_str().unwrap(),
                    older["after"].as_str().unwrap_or_default()
                );
            }
        }
    };
    let pages = walk("").await;
    let sizes: Vec<usize> = pages.iter().map(Vec::len).collect();
    assert_eq!(&sizes[..3], [50, 50, 20], "{sizes:?}");
    assert!(sizes[3..].iter().all(|n| *n == 0), "{sizes:?}");
    let expected: Vec<String> = (0..120).map(|n| format!("sub_{n:03}")).collect();
    assert_eq!(
        pages.concat(),
        expected,
        "newest first, each once, across days; none stored before the index"
    );
    let failed: Vec<String> = walk("&status=failed").await.concat();
    let every_tenth: Vec<String> = (0..12).map(|n| format!("sub_{:03}", n * 10)).collect();
    assert_eq!(failed, every_tenth);
    let (status, before) = get(format!(
        "receipts?since=1h&olderAt={}",
        shared::receipt::format_timestamp(now - Duration::from_secs(2 * DAY))
    ))
    .await;
    assert_eq!(status, 200, "a position before the period: {before}");
    assert_eq!(before["receipts"], serde_json::json!([]));
    assert!(before["older"].is_null());
    let (status, _) = get("receipts?olderAt=yesterday".to_owned()).await;
    assert_eq!(status, 400, "a position the inbox never gave");
    let (status, _) = get("receipts?since=1y".to_owned()).await;
    assert_eq!(status, 400, "a period the console does not show");

    let counted = |counts: &serde_json::Value| -> u64 {
        let by_status = counts["byStatus"].as_object().unwrap();
        by_status.values().map(|n| n.as_u64().unwrap()).sum()
    };
    let (_, day) = get("counts?since=24h".to_owned()).await;
    assert_eq!(counted(&day), 60, "{day}");
    assert_eq!(day["byStatus"]["FAILED"], 6, "{day}");
    assert_eq!(day["buckets"].as_array().unwrap().len(), 24);
    assert_eq!(
        day["waiting"]["failed"], 12,
        "the queue index's census: {day}"
    );
    assert_eq!(
        day["waiting"]["pending"], 110,
        "the queue index's census: {day}"
    );
    let (_, week) = get("counts?since=7d".to_owned()).await;
    assert_eq!(counted(&week), 120, "{week}");

    // The receipts from before the index, given their day once.
    let reindex = |dry: &'static [&'static str]| {
        let mut args = vec!["--table", table.as_str(), "reindex"];
        args.extend(dry);
        receipts_run(&moto, &args)
    };
    let said = reindex(&["--dry-run"]);
    assert!(said.contains("2 receipt(s) without a day"), "{said}");
    assert_eq!(
        walk("").await.concat().len(),
        120,
        "a dry run changes nothing"
    );
    let said = reindex(&[]);
    assert!(said.contains("indexed 2;"), "{said}");
    let after: Vec<String> = walk("").await.concat();
    assert_eq!(after.len(), 122);
    assert_eq!(
        &after[100..102],
        ["old_0", "old_1"],
        "in their place by time"
    );
    let said = reindex(&[]);
    assert!(said.contains("0 receipt(s) without a day"), "{said}");
    let _ = console.kill();
    let _ = console.wait();
}
