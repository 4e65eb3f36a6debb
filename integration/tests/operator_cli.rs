//! The `receipts` CLI as an operator meets it: it finds the stack's table
//! through moto's CloudFormation (`--stack`), lists newest first, shows a
//! card without personal data unless `--payload`, and says clearly when
//! the stack does not exist.

use std::time::{Duration, UNIX_EPOCH};

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
