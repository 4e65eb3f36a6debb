//! Signed deliveries and secrets in Secrets Manager, against independent
//! parts: signatures made by the Standard Webhooks reference implementation
//! (the `standardwebhooks` package from PyPI), and secrets served by moto's
//! Secrets Manager over HTTP with the real SDK.

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ingest::auth::Authenticator;
use ingest::config::{Config, WEBHOOK_SECRETS_ARN};
use ingest::startup::authenticator_for;
use ingest::store::MemoryReceiptStore;
use ingest::Ingest;
use integration::*;

const SECRET_A: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SECRET_B: &str = "whsec_C2FtcGxlLXNlY3JldC1iLTAxMjM0NTY3ODk=";

/// Python with the reference package, installed by the test command.
fn python() -> String {
    std::env::var("STANDARDWEBHOOKS_PYTHON").unwrap_or_else(|_| {
        panic!("STANDARDWEBHOOKS_PYTHON is not set: run the suite with `make test`, which installs the standardwebhooks package into .tools/venv")
    })
}

/// The `webhook-signature` value the reference implementation produces.
fn reference_signature(secret: &str, msg_id: &str, timestamp: u64, body: &str) -> String {
    let script = "import sys, datetime\nfrom standardwebhooks.webhooks import Webhook\n\
                  secret, msg_id, ts, body = sys.argv[1:5]\n\
                  at = datetime.datetime.fromtimestamp(int(ts), tz=datetime.timezone.utc)\n\
                  print(Webhook(secret).sign(msg_id, at, body))";
    let output = Command::new(python())
        .args(["-c", script, secret, msg_id, &timestamp.to_string(), body])
        .output()
        .expect("python runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn signed_request(
    body: &str,
    submission_id: &str,
    headers: &[(&str, String)],
) -> lambda_http::Request {
    let mut builder = http::Request::builder()
        .method("POST")
        .uri("/webhooks/staticforms")
        .header("content-type", "application/json")
        .header(
            "idempotency-key",
            format!("staticforms:form.submitted:{submission_id}"),
        );
    for (name, value) in headers {
        builder = builder.header(*name, value);
    }
    builder
        .body(lambda_http::Body::from(body.to_owned()))
        .unwrap()
}

fn signature_headers(secret: &str, timestamp: u64, body: &str) -> Vec<(&'static str, String)> {
    vec![
        ("webhook-id", "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W".to_owned()),
        ("webhook-timestamp", timestamp.to_string()),
        (
            "webhook-signature",
            reference_signature(secret, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", timestamp, body),
        ),
    ]
}

async fn signed_ingest() -> Ingest<MemoryReceiptStore> {
    let config = Config::from_lookup(|name| match name {
        "RECEIPTS_TABLE" => Some("receipts".into()),
        "WEBHOOK_AUTH" => Some("standard-webhooks".into()),
        "WEBHOOK_SECRETS" => Some(format!("{SECRET_A},{SECRET_B}")),
        _ => None,
    })
    .unwrap();
    ingest_over(MemoryReceiptStore::default(), &config).await
}

/// A case name, the body, the signature headers and the expected status.
type DeliveryCase<'a> = (&'a str, String, Vec<(&'a str, String)>, u16);

#[tokio::test]
async fn signatures_from_the_reference_implementation_are_accepted_and_tampering_is_not() {
    let body = body("sub_signed", "ada@example.com");
    // Signing takes a Python start per case: the out-of-tolerance cases are
    // 100 s past the 300 s edge so the seconds this test takes cannot matter
    // (the exact edge is unit-tested with a fixed clock).
    let at = now();
    let good = signature_headers(SECRET_A, at, &body);
    let replace = |name: &'static str, value: String| {
        let mut headers: Vec<(&str, String)> =
            good.iter().filter(|(n, _)| *n != name).cloned().collect();
        headers.push((name, value));
        headers
    };
    let mut changed = body.clone().into_bytes();
    let position = changed.iter().position(|b| *b == b'A').unwrap();
    changed[position] = b'B';
    let changed = String::from_utf8(changed).unwrap();
    let good_signature = good[2].1.clone();

    let cases: Vec<DeliveryCase> = vec![
        ("signed with secret A", body.clone(), good.clone(), 202),
        (
            "signed with secret B (rotation)",
            body.clone(),
            signature_headers(SECRET_B, at, &body),
            202,
        ),
        (
            "a bad signature before the good one",
            body.clone(),
            replace(
                "webhook-signature",
                format!("v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= {good_signature}"),
            ),
            202,
        ),
        ("one byte of the body changed", changed, good.clone(), 401),
        (
            "a secret not accepted",
            body.clone(),
            signature_headers("whsec_d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldC0wMQ==", at, &body),
            401,
        ),
        (
            "stale timestamp",
            body.clone(),
            signature_headers(SECRET_A, at - 400, &body),
            401,
        ),
        (
            "future timestamp",
            body.clone(),
            signature_headers(SECRET_A, at + 400, &body),
            401,
        ),
        (
            "missing webhook-id",
            body.clone(),
            good.iter()
                .filter(|(n, _)| *n != "webhook-id")
                .cloned()
                .collect(),
            401,
        ),
        (
            "malformed signature list",
            body.clone(),
            replace(
                "webhook-signature",
                good_signature.replacen("v1,", "v1 ", 1),
            ),
            401,
        ),
    ];
    for (name, body, headers, status) in cases {
        let ingest = signed_ingest().await;
        let response = ingest
            .handle(signed_request(&body, "sub_signed", &headers))
            .await;
        assert_eq!(response.status(), status, "case {name}");
        let stored = ingest.store().receipts().len();
        assert_eq!(
            stored,
            usize::from(status == 202),
            "case {name}: written only when accepted"
        );
    }
}

fn arn_config(arn: &str, refresh_seconds: &str) -> Config {
    let (arn, refresh) = (arn.to_owned(), refresh_seconds.to_owned());
    Config::from_lookup(move |name| match name {
        "RECEIPTS_TABLE" => Some("receipts".into()),
        "WEBHOOK_AUTH" => Some("bearer".into()),
        "WEBHOOK_SECRETS_ARN" => Some(arn.clone()),
        "WEBHOOK_SECRETS_REFRESH_SECONDS" => Some(refresh.clone()),
        _ => None,
    })
    .unwrap()
}

/// What main does: `authenticator_for`, with a client for moto.
async fn start_with_secret(
    client: aws_sdk_secretsmanager::Client,
    config: &Config,
) -> Result<Authenticator, ingest::config::ConfigError> {
    authenticator_for(config, async || client).await
}

fn bearer(token: &str, submission_id: &str) -> lambda_http::Request {
    let mut request = delivery(submission_id, "ada@example.com");
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    request
}

#[tokio::test]
async fn the_function_starts_from_secrets_manager_and_picks_up_a_rotated_secret() {
    let client = secrets_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let arn = create_secret(&client, "webhook-secret", "first-token-0000001").await;
    let config = arn_config(&arn, "1");
    let ingest = Ingest::new(
        MemoryReceiptStore::default(),
        start_with_secret(client.clone(), &config).await.unwrap(),
        &config,
    );

    assert_eq!(
        ingest
            .handle(bearer("first-token-0000001", "sub_a"))
            .await
            .status(),
        202
    );

    // Rotation: the secret now holds the new token only.
    client
        .put_secret_value()
        .secret_id(&arn)
        .secret_string("second-token-000002")
        .send()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        ingest
            .handle(bearer("second-token-000002", "sub_b"))
            .await
            .status(),
        202,
        "picked up without a restart"
    );
    assert_eq!(
        ingest
            .handle(bearer("first-token-0000001", "sub_c"))
            .await
            .status(),
        401,
        "the old token is gone"
    );
}

#[tokio::test]
async fn a_flood_of_bad_tokens_does_not_flood_secrets_manager() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let proxy = devtools::fault_proxy::FaultProxy::start(&moto)
        .await
        .unwrap();
    let client = secrets_client(&proxy.url()).await;
    let arn = create_secret(&client, "webhook-secret", "first-token-0000001").await;
    let config = arn_config(&arn, "60");
    let ingest = Ingest::new(
        MemoryReceiptStore::default(),
        start_with_secret(client, &config).await.unwrap(),
        &config,
    );
    let before = proxy.requests();

    for n in 0..30 {
        assert_eq!(
            ingest
                .handle(bearer("guess-guess-guess-0001", &format!("sub_{n}")))
                .await
                .status(),
            401
        );
    }
    assert_eq!(proxy.requests(), before, "no re-read within the interval");
}

#[tokio::test]
async fn a_missing_secret_fails_init_with_a_clear_message() {
    let client = secrets_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let config = arn_config(
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:does-not-exist-AbCdEf",
        "60",
    );
    let error = start_with_secret(client, &config)
        .await
        .err()
        .expect("init fails");
    let message = error.to_string();
    assert!(message.starts_with(WEBHOOK_SECRETS_ARN), "{message}");
    assert!(message.contains("ResourceNotFoundException"), "{message}");
}

#[tokio::test]
async fn the_worker_reads_its_crm_token_from_secrets_manager() {
    let client = secrets_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let arn = create_secret(&client, "crm-token", "crm-token-from-secrets").await;
    let (token, source) = worker::secrets::token_and_source(
        worker::config::TokenSetting::SecretsManager(arn),
        worker::destinations::http::CRM_TOKEN_SECRET_ARN,
        || client.clone(),
    )
    .await
    .unwrap();
    assert!(
        source.is_some(),
        "a token in a secret is read again when refused"
    );
    assert_eq!(
        token.map(|t| t.expose().to_owned()),
        Some("crm-token-from-secrets".to_owned())
    );

    let missing = worker::config::TokenSetting::SecretsManager(
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:nope-AbCdEf".into(),
    );
    let error = worker::secrets::token_and_source(
        missing,
        worker::destinations::http::CRM_TOKEN_SECRET_ARN,
        || client.clone(),
    )
    .await
    .err()
    .expect("a missing secret stops init")
    .to_string();
    assert!(error.starts_with("CRM_TOKEN_SECRET_ARN"), "{error}");
}

/// The CRM destinations as `main` builds them from Secrets Manager (moto),
/// each writing one lead to its fake: HubSpot's token, Salesforce's client
/// credentials; and a malformed credentials secret stopping init by name.
#[tokio::test]
async fn the_crm_destinations_read_their_credentials_from_secrets_manager() {
    use devtools::fakes::hubspot::HubSpotFake;
    use devtools::fakes::salesforce::{SalesforceFake, EXTERNAL_ID_FIELD};
    use worker::config::TokenSetting;
    use worker::destinations::salesforce::CredentialsSetting;
    use worker::destinations::{Destination, Upserted};

    let client = secrets_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let body = serde_json::json!({
        "event": "form.submitted",
        "data": {"submissionId": "sub_secret", "formData": {"name": "Ada Lovelace", "email": "ada@example.com"}}
    });
    let receipt = shared::Receipt::new(
        &shared::FormSubmission::parse(body.to_string().as_bytes()).unwrap(),
        SystemTime::now(),
    );
    let lead = shared::Lead::from_receipt(&receipt).unwrap();
    let key = receipt.key();

    let hubspot_fake = HubSpotFake::start("pat-from-secrets-manager")
        .await
        .unwrap();
    let arn = create_secret(&client, "hubspot-token", "pat-from-secrets-manager").await;
    let gate_key_text = "a-generated-gate-key-0123456789abcdefghijklmnopqrstuvwxyz";
    let gate_arn = create_secret(&client, "gate-key", gate_key_text).await;
    let hubspot = worker::destinations::hubspot::build::connect(
        worker::destinations::hubspot::HubSpotSettings {
            base_url: hubspot_fake.base_url(),
            api_version: worker::destinations::hubspot::ApiVersion::V3,
            id_property: worker::destinations::hubspot::IdProperty::Email,
            field_map: worker::destinations::hubspot::default_field_map(None),
            gate_key: Some(shared::newest::GateKeySetting::SecretsManager(gate_arn)),
        },
        TokenSetting::SecretsManager(arn),
        || client.clone(),
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    let written = hubspot.upsert(&lead, &key).await;
    assert_eq!(
        hubspot.newest_gates(),
        shared::newest::GateSecret::new(gate_key_text).as_ref(),
        "the gates' key is the secret's"
    );
    assert_eq!(hubspot_fake.contacts().len(), 1);
    let contact = shared::record::DeliveredRecord::with_id(&hubspot_fake.contacts()[0].id);
    assert_eq!(written, Ok(Upserted::Written(contact)), "names the contact");

    let salesforce_fake = SalesforceFake::start("3MVG9secrets", "secret-from-secrets-manager")
        .await
        .unwrap();
    let settings = worker::destinations::salesforce::SalesforceSettings {
        login_url: salesforce_fake.login_url(),
        api_version: "v67.0".into(),
        object: "Lead".into(),
        external_id_field: EXTERNAL_ID_FIELD.into(),
        field_map: worker::destinations::salesforce::with_lead_requirements(
            worker::destinations::salesforce::default_field_map(),
        ),
        auto_assign: false,
    };
    let arn = create_secret(
        &client,
        "salesforce-app",
        r#"{"client_id":"3MVG9secrets","client_secret":"secret-from-secrets-manager"}"#,
    )
    .await;
    let salesforce = worker::destinations::salesforce::build::connect(
        settings.clone(),
        CredentialsSetting::SecretsManager(arn),
        || client.clone(),
        Duration::from_secs(60),
    )
    .await
    .unwrap();
    let written = salesforce.upsert(&lead, &key).await;
    let record = salesforce_fake.record("sub_secret").expect("the Lead");
    // The fake's instance is plain http: the id is kept, the link is not.
    let lead_record = shared::record::DeliveredRecord::with_id(&record.id);
    assert_eq!(
        written,
        Ok(Upserted::Written(lead_record)),
        "names the Lead"
    );

    let malformed = create_secret(
        &client,
        "salesforce-app",
        "client_id=x&client_secret=visible-value",
    )
    .await;
    let error = worker::destinations::salesforce::build::connect(
        settings,
        CredentialsSetting::SecretsManager(malformed),
        || client.clone(),
        Duration::from_secs(60),
    )
    .await
    .err()
    .expect("init fails")
    .to_string();
    assert!(
        error.starts_with("SALESFORCE_CREDENTIALS_SECRET_ARN"),
        "{error}"
    );
    assert!(!error.contains("visible-value"), "{error}");
}
