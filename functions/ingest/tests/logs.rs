//! What the ingest function logs: one JSON line per delivery with the request
//! id, submission id, outcome and status, and never a credential, form data
//! or the body.

mod common;

use common::*;
use devtools::log_capture::CapturedLogs;
use ingest::store::{MemoryReceiptStore, StoreError};
use lambda_http::{Context, RequestExt};

const EMAIL: &str = "grace.hopper@example.com";
const NAME: &str = "Grace Brewster Hopper";
const MESSAGE: &str = "my phone number is 555-0100";
const API_KEY: &str = "sf_live_key_that_must_not_leak";
const WRONG_TOKEN: &str = "attacker-guess-000000000001";

fn sensitive_body(submission_id: &str) -> String {
    serde_json::json!({
        "event": "form.submitted",
        "data": {
            "submissionId": submission_id,
            "apiKey": API_KEY,
            "formData": {"name": NAME, "email": EMAIL, "message": MESSAGE}
        }
    })
    .to_string()
}

fn with_request_id(request: lambda_http::Request, id: &str) -> lambda_http::Request {
    let mut context = Context::default();
    context.request_id = id.to_owned();
    request.with_lambda_context(context)
}

#[tokio::test(flavor = "current_thread")]
async fn logs_one_json_line_per_delivery_without_secrets_or_personal_data() {
    let captured = CapturedLogs::default();
    let _guard = captured.install();

    let bearer = format!("Bearer {TOKEN}");
    let key = "staticforms:form.submitted:sub_log_1";
    let good = || {
        request(
            &[("authorization", &bearer), ("idempotency-key", key)],
            sensitive_body("sub_log_1"),
        )
    };
    let ingest = ingest_with(MemoryReceiptStore::default(), &bearer_config()).await;
    let deliveries = [
        ("req-accepted", good(), 202),
        ("req-duplicate", good(), 200),
        (
            "req-wrong-token",
            request(
                &[
                    ("authorization", &format!("Bearer {WRONG_TOKEN}")),
                    ("idempotency-key", key),
                ],
                sensitive_body("sub_log_1"),
            ),
            401,
        ),
        (
            "req-wrong-key",
            request(
                &[
                    ("authorization", &bearer),
                    ("idempotency-key", "staticforms:form.submitted:x"),
                ],
                sensitive_body("sub_log_1"),
            ),
            400,
        ),
        (
            "req-other-content",
            request(
                &[("authorization", &bearer), ("idempotency-key", key)],
                sensitive_body("sub_log_1").replace(MESSAGE, "changed"),
            ),
            422,
        ),
    ];
    for (request_id, request, status) in deliveries {
        let response = ingest.handle(with_request_id(request, request_id)).await;
        assert_eq!(response.status(), status, "{request_id}");
    }
    let unavailable = ingest_with(
        ScriptedStore::new(Err(StoreError::Unavailable("ThrottlingException".into()))),
        &bearer_config(),
    )
    .await;
    let response = unavailable
        .handle(with_request_id(good(), "req-throttled"))
        .await;
    assert_eq!(response.status(), 503);

    let text = captured.text();
    for secret_or_personal in [
        EMAIL,
        NAME,
        MESSAGE,
        API_KEY,
        TOKEN,
        WRONG_TOKEN,
        "555-0100",
    ] {
        assert!(
            !text.contains(secret_or_personal),
            "{secret_or_personal:?} leaked into:\n{text}"
        );
    }

    let (metrics, lines): (Vec<&str>, Vec<&str>) =
        text.lines().partition(|line| line.contains("\"_aws\""));
    let lines: Vec<serde_json::Value> = lines
        .into_iter()
        .map(|line| serde_json::from_str(line).expect("every log line is one JSON object"))
        .collect();
    assert_eq!(lines.len(), 6, "one line per delivery:\n{text}");
    assert_eq!(metrics.len(), 6, "one metric line per delivery:\n{text}");
    let expected = [
        ("req-accepted", "accepted", 202, "INFO"),
        ("req-duplicate", "duplicate", 200, "INFO"),
        ("req-wrong-token", "unauthorized", 401, "WARN"),
        ("req-wrong-key", "invalid_idempotency_key", 400, "WARN"),
        (
            "req-other-content",
            "key_reused_for_different_payload",
            422,
            "WARN",
        ),
        ("req-throttled", "store_unavailable", 503, "ERROR"),
    ];
    for (metric, (_, outcome, _, _)) in metrics.iter().zip(expected) {
        let metric = shared::metrics::validate(metric).unwrap_or_else(|e| panic!("{e}: {metric}"));
        assert_eq!(metric["Function"], "ingest");
        assert_eq!(metric["Outcome"], outcome, "{metric}");
        assert_eq!(metric["Deliveries"], 1.0);
        assert!(metric["DeliveryDuration"]
            .as_f64()
            .is_some_and(|ms| ms >= 0.0));
    }
    for (line, (request_id, outcome, status, level)) in lines.iter().zip(expected) {
        assert_eq!(line["request_id"], request_id, "{line}");
        assert_eq!(line["outcome"], outcome, "{line}");
        assert_eq!(line["status"], status, "{line}");
        assert_eq!(line["level"], level, "{line}");
        assert!(line["message"].is_string(), "{line}");
        assert!(line["duration_ms"].is_u64(), "{line}");
    }
    // The submission id is logged once the body is parsed, not before.
    assert!(
        lines[2].get("submission_id").is_none(),
        "401 is decided before parsing"
    );
    assert_eq!(lines[0]["submission_id"], "sub_log_1");
    assert_eq!(
        lines[5]["error"],
        "receipt store unavailable (ThrottlingException)"
    );
}

const QUERY_TOKEN: &str = "query-token-that-must-not-leak-01";

fn query_config() -> ingest::Config {
    ingest::Config::from_lookup(|name| match name {
        "RECEIPTS_TABLE" => Some("receipts".to_owned()),
        "WEBHOOK_AUTH" => Some("query:token".to_owned()),
        "WEBHOOK_SECRETS" => Some(QUERY_TOKEN.to_owned()),
        _ => None,
    })
    .unwrap()
}

/// A sample event from events/ as API Gateway sends it with `?<query>`,
/// parsed by the runtime's own code: HTTP API (v2) or REST API (v1).
fn event_with_query(file: &str, query: &str) -> lambda_http::Request {
    let text = std::fs::read_to_string(events_dir().join(file)).unwrap();
    let mut event: serde_json::Value = serde_json::from_str(&text).unwrap();
    event["headers"]
        .as_object_mut()
        .unwrap()
        .remove("authorization");
    let pairs: serde_json::Map<String, serde_json::Value> = query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.into()))
        .collect();
    if event["version"] == "2.0" {
        event["rawQueryString"] = query.into();
    } else {
        let multi: serde_json::Map<String, serde_json::Value> = pairs
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::json!([v])))
            .collect();
        event["multiValueQueryStringParameters"] = multi.into();
    }
    event["queryStringParameters"] = pairs.into();
    lambda_http::request::from_str(&event.to_string()).expect("a Lambda HTTP event")
}

#[tokio::test(flavor = "current_thread")]
async fn a_query_token_is_accepted_and_never_reaches_a_log() {
    let captured = CapturedLogs::default();
    let _guard = captured.install();
    // What lambda_runtime logs of each raw event, under its own target: held
    // at WARN by our filter whatever the level, so never written.
    tracing::trace!(
        target: "lambda_runtime::layers::api_response",
        body = %format!("{{\"rawQueryString\":\"token={QUERY_TOKEN}\"}}"),
        "raw JSON event received from Lambda"
    );

    let ingest = ingest_with(MemoryReceiptStore::default(), &query_config()).await;
    let rows = [
        (
            "ingest-valid.json",
            format!("token={QUERY_TOKEN}&utm_source=site"),
            202,
        ),
        (
            "ingest-rest-api-v1.json",
            format!("utm_source=site&token={QUERY_TOKEN}"),
            200,
        ),
        (
            "ingest-valid.json",
            "token=guess-guess-guess-0001".to_owned(),
            401,
        ),
        (
            "ingest-valid.json",
            format!("token={QUERY_TOKEN}&token=x"),
            401,
        ),
        ("ingest-valid.json", "utm_source=site".to_owned(), 401),
    ];
    for (file, query, status) in rows {
        let response = ingest.handle(event_with_query(file, &query)).await;
        assert_eq!(response.status(), status, "{file} ?{query}");
    }

    let text = captured.text();
    assert!(
        !text.contains(QUERY_TOKEN),
        "the token leaked into:\n{text}"
    );
    assert!(
        !text.contains("guess-guess"),
        "a guess leaked into:\n{text}"
    );
    assert!(
        !text.contains("utm_source"),
        "the query string leaked into:\n{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("webhook delivery"))
            .count(),
        5,
        "one line per delivery:\n{text}"
    );
}

/// A submission held back by a spam rule: answered 202 like any other, one
/// log line (outcome `quarantined`), its `Deliveries` line, and a
/// `Quarantined` line by the rule's kind; neither the honeypot's value nor
/// the form's data anywhere.
#[tokio::test(flavor = "current_thread")]
async fn a_held_back_submission_is_logged_and_counted_by_its_rule_kind_only() {
    use std::sync::Arc;

    let captured = CapturedLogs::default();
    let _guard = captured.install();
    let routes = shared::routes::parse("[spam]\nhoneypot = [\"website_url\"]\n").unwrap();
    let ingest = ingest_with(MemoryReceiptStore::default(), &bearer_config())
        .await
        .with_routes(aws_edge::routes::RoutesInForce::fixed(Arc::new(routes)));
    let bearer = format!("Bearer {TOKEN}");
    let mut body: serde_json::Value = serde_json::from_str(&sensitive_body("sub_bot")).unwrap();
    body["data"]["formData"]["website_url"] = "http://bot-value.example".into();
    let response = ingest
        .handle(with_request_id(
            request(
                &[
                    ("authorization", &bearer),
                    ("idempotency-key", "staticforms:form.submitted:sub_bot"),
                ],
                body.to_string(),
            ),
            "req-bot",
        ))
        .await;
    assert_eq!(response.status(), 202);

    let text = captured.text();
    for hidden in ["bot-value", EMAIL, NAME, MESSAGE, API_KEY] {
        assert!(!text.contains(hidden), "{hidden:?} leaked into:\n{text}");
    }
    let (metrics, lines): (Vec<&str>, Vec<&str>) =
        text.lines().partition(|line| line.contains("\"_aws\""));
    assert_eq!(lines.len(), 1, "one line per delivery:\n{text}");
    let line: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(line["outcome"], "quarantined", "{line}");
    assert_eq!(line["status"], 202, "{line}");
    let metrics: Vec<serde_json::Value> = metrics
        .iter()
        .map(|m| shared::metrics::validate(m).unwrap_or_else(|e| panic!("{e}: {m}")))
        .collect();
    assert_eq!(metrics.len(), 2, "{text}");
    let held = metrics
        .iter()
        .find(|m| m.get("Quarantined").is_some())
        .unwrap_or_else(|| panic!("no Quarantined line:\n{text}"));
    assert_eq!(held["Rule"], "honeypot", "{held}");
    assert_eq!(held["Function"], "ingest");
    assert!(
        metrics.iter().any(|m| m["Outcome"] == "quarantined"),
        "{text}"
    );
}
