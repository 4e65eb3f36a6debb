//! The ingest rules for real senders, against real servers: receipts in a
//! table on moto's DynamoDB, secrets in moto's Secrets Manager, through the
//! real SDKs. Each case checks what the sender is told and what is stored.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use ingest::dynamo::DynamoReceiptStore;
use ingest::startup::authenticator_for;
use ingest::{Config, Ingest};
use integration::*;
use lambda_http::{Body, Request};

/// `ingest_config` with these variables added or replaced.
fn config_with(table: &str, extra: &[(&str, &str)]) -> Config {
    let mut env: HashMap<String, String> = [
        ("RECEIPTS_TABLE", table),
        ("WEBHOOK_AUTH", "bearer"),
        ("WEBHOOK_SECRETS", TOKEN),
    ]
    .into_iter()
    .chain(extra.iter().copied())
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    env.retain(|_, v| !v.is_empty());
    Config::from_lookup(|name| env.get(name).cloned()).expect("a valid configuration")
}

/// A fresh receipts table on moto and the ingest handler over it.
async fn ingest_on_moto(
    extra: &[(&str, &str)],
) -> (Ingest<DynamoReceiptStore>, aws_sdk_dynamodb::Client, String) {
    let client = ingest_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let table = create_table(&client, "ReceiptsTable").await;
    let config = config_with(&table, extra);
    let ingest = ingest_over(DynamoReceiptStore::new(client.clone(), &table), &config).await;
    (ingest, client, table)
}

fn post(uri: &str, headers: &[(&str, &str)], body: String) -> Request {
    let mut builder = http::Request::builder().method("POST").uri(uri);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Body::from(body)).unwrap()
}

fn key_for(submission_id: &str) -> String {
    format!("staticforms:form.submitted:{submission_id}")
}

#[tokio::test]
async fn a_query_token_stores_the_receipt_and_a_wrong_one_stores_nothing() {
    const QUERY_TOKEN: &str = "query-token-on-moto-0001";
    let (ingest, client, table) = ingest_on_moto(&[
        ("WEBHOOK_AUTH", "query:token"),
        ("WEBHOOK_SECRETS", QUERY_TOKEN),
    ])
    .await;
    let rows = [
        (
            "sub_q1",
            format!("/webhooks/staticforms?token={QUERY_TOKEN}"),
            202,
        ),
        (
            "sub_q2",
            "/webhooks/staticforms?token=guess-guess-0000001".to_owned(),
            401,
        ),
        ("sub_q3", "/webhooks/staticforms".to_owned(), 401),
    ];
    for (id, uri, status) in rows {
        let response = ingest
            .handle(post(
                &uri,
                &[("idempotency-key", &key_for(id))],
                body(id, "a@example.com"),
            ))
            .await;
        assert_eq!(response.status(), status, "{uri}");
    }
    let items = scan(&client, &table).await;
    assert_eq!(items.len(), 1);
    assert_eq!(text(&items[0], "submissionId"), "sub_q1");
    assert!(
        !format!("{items:?}").contains(QUERY_TOKEN),
        "the token is not stored"
    );
}

#[tokio::test]
async fn an_unknown_form_key_is_403_and_nothing_is_stored() {
    let (ingest, client, table) =
        ingest_on_moto(&[("WEBHOOK_API_KEYS", "sf_integration_key,sf_other_form")]).await;
    let listed = ingest.handle(delivery("sub_f1", "a@example.com")).await;
    assert_eq!(listed.status(), 202);

    let unknown = body("sub_f2", "a@example.com").replace("sf_integration_key", "sf_unknown");
    let response = ingest
        .handle(delivery_with_key(unknown, &key_for("sub_f2")))
        .await;
    assert_eq!(response.status(), 403);
    let json: serde_json::Value = serde_json::from_slice(response.body().as_ref()).unwrap();
    assert_eq!(json["error"], "unknown_form");

    let items = scan(&client, &table).await;
    assert_eq!(items.len(), 1, "only the listed form's receipt");
    assert!(
        !format!("{items:?}").contains("sf_integration_key"),
        "a form key is never stored"
    );
}

#[tokio::test]
async fn derive_stores_a_delivery_without_the_header_under_the_key_from_its_body() {
    let (ingest, client, table) = ingest_on_moto(&[("IDEMPOTENCY_KEY", "derive")]).await;
    let bearer = format!("Bearer {TOKEN}");
    let without = |id: &str| {
        post(
            "/webhooks/staticforms",
            &[("authorization", &bearer)],
            body(id, "a@example.com"),
        )
    };
    assert_eq!(ingest.handle(without("sub_d1")).await.status(), 202);
    assert_eq!(
        ingest
            .handle(delivery("sub_d1", "a@example.com"))
            .await
            .status(),
        200,
        "with the header, the same receipt"
    );
    let mismatch = delivery_with_key(body("sub_d2", "a@example.com"), &key_for("sub_d3"));
    assert_eq!(ingest.handle(mismatch).await.status(), 400);

    let items = scan(&client, &table).await;
    assert_eq!(items.len(), 1);
    assert_eq!(text(&items[0], "pk"), key_for("sub_d1"));

    // IDEMPOTENCY_KEY=required refuses it (derive is the default).
    let (required, _, _) = ingest_on_moto(&[("IDEMPOTENCY_KEY", "required")]).await;
    assert_eq!(required.handle(without("sub_d4")).await.status(), 400);
}

#[tokio::test]
async fn the_older_static_forms_format_is_400_and_stores_nothing() {
    let (ingest, client, table) = ingest_on_moto(&[]).await;
    let older = serde_json::json!({
        "apiKey": "sf_integration_key",
        "submittedAt": "2026-11-30T08:00:00.000Z",
        "formData": {"email": "a@example.com"},
        "userAgent": "Mozilla/5.0",
        "ipAddress": "192.0.2.1"
    });
    let response = ingest
        .handle(delivery_with_key(older.to_string(), &key_for("sub_old")))
        .await;
    assert_eq!(response.status(), 400);
    let json: serde_json::Value = serde_json::from_slice(response.body().as_ref()).unwrap();
    assert!(json["message"]
        .as_str()
        .unwrap()
        .contains("switch the webhook to the current format"));
    assert!(scan(&client, &table).await.is_empty());
}

/// Fails closed: a receipt this code did not write (no fingerprint) is not
/// taken as proof that the content is stored, and stays as it is.
#[tokio::test]
async fn a_receipt_without_fingerprint_is_422_and_stays_untouched() {
    let (ingest, client, table) = ingest_on_moto(&[]).await;
    let key = key_for("sub_nofp");
    client
        .put_item()
        .table_name(&table)
        .item("pk", AttributeValue::S(key.clone()))
        .item("status", AttributeValue::S("COMPLETED".into()))
        .send()
        .await
        .unwrap();
    let response = ingest.handle(delivery("sub_nofp", "a@example.com")).await;
    assert_eq!(response.status(), 422);
    let json: serde_json::Value = serde_json::from_slice(response.body().as_ref()).unwrap();
    assert_eq!(json["error"], "receipt_without_fingerprint");
    let items = scan(&client, &table).await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].len(), 2, "untouched: {:?}", items[0]);
}

/// A secret revoked in Secrets Manager stops being accepted within
/// WEBHOOK_SECRETS_REFRESH_SECONDS although every delivery succeeds; the
/// reads are counted on the wire.
#[tokio::test]
async fn a_revoked_secret_stops_working_within_the_refresh_interval() {
    const OLD: &str = "old-secret-on-moto-0001";
    const NEW: &str = "new-secret-on-moto-0002";
    let proxy = devtools::fault_proxy::FaultProxy::start(&endpoint(DYNAMODB_ENDPOINT))
        .await
        .unwrap();
    let secrets = secrets_client(&proxy.url()).await;
    let arn = create_secret(&secrets, "revoked", &format!("{OLD},{NEW}")).await;
    let client = ingest_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let table = create_table(&client, "ReceiptsTable").await;
    let config = config_with(
        &table,
        &[
            ("WEBHOOK_SECRETS", ""),
            ("WEBHOOK_SECRETS_ARN", &arn),
            ("WEBHOOK_SECRETS_REFRESH_SECONDS", "1"),
        ],
    );
    let before_init = proxy.requests();
    let auth = authenticator_for(&config, async || secrets.clone())
        .await
        .unwrap();
    let ingest = Ingest::new(DynamoReceiptStore::new(client, &table), auth, &config);
    assert_eq!(proxy.requests() - before_init, 1, "one read at init");

    let with = |secret: &str, id: &str| {
        post(
            "/webhooks/staticforms",
            &[
                ("authorization", &format!("Bearer {secret}")),
                ("idempotency-key", &key_for(id)),
            ],
            body(id, "a@example.com"),
        )
    };
    assert_eq!(ingest.handle(with(OLD, "sub_r1")).await.status(), 202);

    // Revoke OLD at the source.
    secrets
        .put_secret_value()
        .secret_id(&arn)
        .secret_string(NEW)
        .send()
        .await
        .unwrap();
    let after_revoke = proxy.requests();
    assert_eq!(ingest.handle(with(NEW, "sub_r2")).await.status(), 202);
    assert_eq!(
        proxy.requests(),
        after_revoke,
        "no read within the interval while deliveries succeed"
    );

    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        ingest.handle(with(OLD, "sub_r3")).await.status(),
        401,
        "revoked within the interval"
    );
    assert_eq!(ingest.handle(with(NEW, "sub_r4")).await.status(), 202);
    assert_eq!(
        proxy.requests() - after_revoke,
        1,
        "one read for the interval; the refusal read nothing more"
    );
}
