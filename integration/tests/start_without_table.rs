//! The ingest function starts whatever state its table is in: a start-up
//! failure is answered 5xx by the platform itself, which some senders never
//! retry, while the function's own 503 carries `Retry-After` and every
//! sender retries it. The real binary, on a local Runtime API, with its
//! table missing and with DynamoDB unreachable: it starts (no init error)
//! and answers a valid delivery 503 with `Retry-After`.

use std::path::PathBuf;
use std::time::Duration;

use devtools::http_api::event_for;
use devtools::lambda_emulator::LambdaEmulator;
use devtools::local::{self, DEMO_TOKEN};
use integration::{body, endpoint, DYNAMODB_ENDPOINT};

fn bin_dir() -> PathBuf {
    std::env::var("FUNCTION_BIN_DIR")
        .unwrap_or_else(|_| {
            panic!("FUNCTION_BIN_DIR is not set: run the suite with `make test`, which builds the functions first")
        })
        .into()
}

async fn answer_without_a_table(dynamodb_endpoint: &str, table: &str) -> serde_json::Value {
    let runtime = LambdaEmulator::start("ingest").await.unwrap();
    let _function = local::spawn_function(
        &bin_dir(),
        "ingest",
        &runtime,
        &local::function_env(dynamodb_endpoint, table),
        &[
            ("WEBHOOK_AUTH", "bearer".to_owned()),
            ("WEBHOOK_SECRETS", DEMO_TOKEN.to_owned()),
        ],
        local::FunctionOutput::Discarded,
    )
    .unwrap();
    let event = event_for(
        "POST",
        "/webhooks/staticforms",
        "",
        &[
            ("content-type".to_owned(), "application/json".to_owned()),
            ("authorization".to_owned(), format!("Bearer {DEMO_TOKEN}")),
            (
                "idempotency-key".to_owned(),
                "staticforms:form.submitted:sub_no_table".to_owned(),
            ),
        ],
        body("sub_no_table", "ada@example.com").as_bytes(),
        "req-no-table",
    );
    let answer = runtime
        .invoke(event, Duration::from_secs(30))
        .await
        .unwrap_or_else(|error| {
            panic!(
                "the function answered nothing ({error}); init error: {:?}",
                runtime.init_error()
            )
        });
    assert_eq!(runtime.init_error(), None, "it started");
    answer
}

#[tokio::test]
async fn ingest_starts_without_its_table_and_answers_503_with_retry_after() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    for (what, dynamodb, table) in [
        (
            "a missing table",
            endpoint(DYNAMODB_ENDPOINT),
            "NoSuchReceiptsTable",
        ),
        ("DynamoDB unreachable", closed, "ReceiptsTable"),
    ] {
        let answer = answer_without_a_table(&dynamodb, table).await;
        assert_eq!(answer["statusCode"], 503, "{what}: {answer}");
        let headers = answer["headers"].to_string().to_lowercase();
        assert!(headers.contains("retry-after"), "{what}: {answer}");
    }
}
