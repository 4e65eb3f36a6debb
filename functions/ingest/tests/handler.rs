//! The ingest handler over an in-memory store that enforces the conditional
//! write: the decision table, the seed's tests, and every event in events/.

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::*;
use ingest::store::{MemoryReceiptStore, PutOutcome, StoreError};
use ingest::Ingest;
use shared::ReceiptStatus;

async fn memory_ingest() -> Ingest<MemoryReceiptStore> {
    ingest_with(MemoryReceiptStore::default(), &bearer_config()).await
}

#[tokio::test]
async fn seed_test_1_stores_one_receipt_and_acknowledges_a_retry() {
    let ingest = memory_ingest().await;

    let first = ingest.handle(delivery("sub_123")).await;
    let retry = ingest.handle(delivery("sub_123")).await;

    assert_eq!(first.status(), 202);
    assert_eq!(
        json_body(&first),
        serde_json::json!({"accepted": true, "duplicate": false})
    );
    assert_eq!(retry.status(), 200);
    assert_eq!(
        json_body(&retry),
        serde_json::json!({"accepted": true, "duplicate": true})
    );
    assert_eq!(ingest.store().receipts().len(), 1);
}

#[tokio::test]
async fn seed_test_2_a_mismatched_key_never_reaches_the_store() {
    let store = ScriptedStore::new(Ok(PutOutcome::Stored));
    let ingest = ingest_with(store, &bearer_config()).await;
    let request = common::request(
        &[
            ("authorization", &format!("Bearer {TOKEN}")),
            ("idempotency-key", "wrong"),
        ],
        body_json("sub_123", "ada@example.com"),
    );

    let response = ingest.handle(request).await;

    assert_eq!(response.status(), 400);
    assert_eq!(json_body(&response)["error"], "invalid_idempotency_key");
    assert_eq!(ingest.store().calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_concurrent_identical_deliveries_give_one_202_and_fifteen_200s() {
    let ingest = Arc::new(memory_ingest().await);
    let deliveries: Vec<_> = (0..16)
        .map(|_| {
            let ingest = Arc::clone(&ingest);
            tokio::spawn(async move { ingest.handle(delivery("sub_race")).await.status() })
        })
        .collect();

    let mut statuses = Vec::new();
    for delivery in deliveries {
        statuses.push(delivery.await.expect("delivery task").as_u16());
    }

    assert_eq!(
        statuses.iter().filter(|s| **s == 202).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        15,
        "{statuses:?}"
    );
    assert_eq!(ingest.store().receipts().len(), 1);
}

/// A case name, the headers, the body, the status and the error code.
type RefusalCase<'a> = (&'a str, Vec<(&'a str, &'a str)>, String, u16, &'a str);

/// Each row of the issue's decision table, through the whole handler.
#[tokio::test]
async fn every_refusal_answers_its_status_and_writes_nothing() {
    let bearer = format!("Bearer {TOKEN}");
    let good_body = body_json("sub_1", "ada@example.com");
    let huge_body = format!("{{\"pad\":\"{}\"}}", "x".repeat(300 * 1024));
    let cases: Vec<RefusalCase> = vec![
        (
            "no credentials",
            vec![("idempotency-key", KEY)],
            good_body.clone(),
            401,
            "unauthorized",
        ),
        (
            "wrong token",
            vec![
                ("authorization", "Bearer nope-nope-nope-nope"),
                ("idempotency-key", KEY),
            ],
            good_body.clone(),
            401,
            "unauthorized",
        ),
        (
            "credentials checked before the body is parsed",
            vec![("authorization", "Bearer nope")],
            "{not json".to_owned(),
            401,
            "unauthorized",
        ),
        (
            "body over the limit",
            vec![("authorization", &bearer)],
            huge_body,
            413,
            "payload_too_large",
        ),
        (
            "form-encoded body",
            vec![
                ("authorization", &bearer),
                ("content-type", "application/x-www-form-urlencoded"),
            ],
            good_body.clone(),
            415,
            "unsupported_media_type",
        ),
        (
            "not JSON",
            vec![
                ("authorization", &bearer),
                ("content-type", "application/json"),
            ],
            "{\"event\":".to_owned(),
            400,
            "malformed_json",
        ),
        (
            "empty body",
            vec![("authorization", &bearer)],
            String::new(),
            400,
            "malformed_json",
        ),
        (
            "other event",
            vec![("authorization", &bearer)],
            r#"{"event":"form.deleted","data":{"submissionId":"s"}}"#.to_owned(),
            400,
            "invalid_envelope",
        ),
        (
            "no submission id",
            vec![("authorization", &bearer)],
            r#"{"event":"form.submitted","data":{}}"#.to_owned(),
            400,
            "invalid_envelope",
        ),
        (
            "a dot-segment submission id",
            vec![
                ("authorization", &bearer),
                ("idempotency-key", "staticforms:form.submitted:.."),
            ],
            r#"{"event":"form.submitted","data":{"submissionId":".."}}"#.to_owned(),
            400,
            "invalid_envelope",
        ),
        (
            "key of another submission",
            vec![
                ("authorization", &bearer),
                ("idempotency-key", "staticforms:form.submitted:sub_2"),
            ],
            good_body.clone(),
            400,
            "invalid_idempotency_key",
        ),
    ];
    for (name, headers, body, status, code) in cases {
        let ingest = memory_ingest().await;
        let response = ingest.handle(request(&headers, body)).await;
        assert_eq!(response.status(), status, "case {name}");
        let json = json_body(&response);
        assert_eq!(json["accepted"], false, "case {name}");
        assert_eq!(json["error"], code, "case {name}");
        assert!(
            json["message"].as_str().is_some_and(|m| !m.is_empty()),
            "case {name}"
        );
        if name.contains("dot-segment") {
            assert!(
                json["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("data.submissionId")),
                "{json}"
            );
        }
        assert!(
            ingest.store().receipts().is_empty(),
            "case {name}: nothing written"
        );
    }
}

#[tokio::test]
async fn bearer_refusal_carries_a_challenge() {
    let response = memory_ingest().await.handle(request(&[], "{}")).await;
    assert_eq!(response.status(), 401);
    assert_eq!(
        response.headers()["www-authenticate"],
        "Bearer realm=\"webhooks\""
    );
}

#[tokio::test]
async fn a_rotated_secret_is_accepted_alongside_the_current_one() {
    let ingest = memory_ingest().await;
    let request = common::request(
        &[
            ("authorization", "Bearer rotated-token-000000001"),
            ("idempotency-key", "staticforms:form.submitted:sub_rot"),
        ],
        body_json("sub_rot", "ada@example.com"),
    );
    assert_eq!(ingest.handle(request).await.status(), 202);
}

#[tokio::test]
async fn the_same_key_with_different_content_is_422_and_keeps_the_original() {
    let ingest = memory_ingest().await;
    assert_eq!(ingest.handle(delivery("sub_1")).await.status(), 202);
    let original = ingest.store().receipts();

    let other_content = request(
        &[
            ("authorization", &format!("Bearer {TOKEN}")),
            ("idempotency-key", "staticforms:form.submitted:sub_1"),
        ],
        body_json("sub_1", "someone.else@example.com"),
    );
    let response = ingest.handle(other_content).await;

    assert_eq!(response.status(), 422);
    assert_eq!(
        json_body(&response)["error"],
        "key_reused_for_different_payload"
    );
    assert_eq!(ingest.store().receipts(), original);
}

#[tokio::test]
async fn a_retry_with_reordered_keys_and_a_new_timestamp_is_a_duplicate() {
    let ingest = memory_ingest().await;
    assert_eq!(ingest.handle(delivery("sub_1")).await.status(), 202);
    let reformatted = r#"{
        "timestamp": 1795999999,
        "data": {"apiKey": "sf_live_api_key_0000001",
                 "formData": {"message": "Call me", "email": "ada@example.com", "name": "Ada Lovelace"},
                 "submissionId": "sub_1"},
        "event": "form.submitted"
    }"#;
    let retry = request(
        &[
            ("authorization", &format!("Bearer {TOKEN}")),
            ("Idempotency-Key", "staticforms:form.submitted:sub_1"),
        ],
        reformatted,
    );
    assert_eq!(ingest.handle(retry).await.status(), 200);
}

#[tokio::test]
async fn store_failures_never_answer_2xx() {
    let cases = [
        (
            StoreError::Unavailable("ThrottlingException".into()),
            503,
            "store_unavailable",
            Some("2"),
        ),
        (
            StoreError::Unavailable("Timeout".into()),
            503,
            "store_unavailable",
            Some("2"),
        ),
        // A missing table or a denial: nothing the sender can fix, and no
        // receipt, so the sender must retry (Typeform retries 503, not 500).
        (
            StoreError::Failed("ResourceNotFoundException".into()),
            503,
            "store_failed",
            Some("2"),
        ),
        (
            StoreError::Failed("AccessDeniedException".into()),
            503,
            "store_failed",
            Some("2"),
        ),
    ];
    for (error, status, code, retry_after) in cases {
        let ingest = ingest_with(ScriptedStore::new(Err(error.clone())), &bearer_config()).await;
        let response = ingest.handle(delivery("sub_1")).await;
        assert_eq!(response.status(), status, "{error:?}");
        assert_eq!(json_body(&response)["error"], code);
        assert_eq!(
            response
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap()),
            retry_after
        );
        // The store's internal error code is for our logs, not the sender.
        let text = String::from_utf8_lossy(response.body().as_ref()).to_string();
        assert!(!text.contains("Exception"), "{text}");
        assert_eq!(ingest.store().calls(), 1);
    }
}

#[tokio::test]
async fn a_receipt_too_large_to_store_is_413_naming_the_limit() {
    let too_large = StoreError::TooLarge {
        bytes: 410_000,
        limit: 409_600,
    };
    let ingest = ingest_with(ScriptedStore::new(Err(too_large)), &bearer_config()).await;
    let response = ingest.handle(delivery("sub_1")).await;
    assert_eq!(response.status(), 413);
    assert!(response.headers().get("retry-after").is_none());
    let body = json_body(&response);
    assert_eq!(body["error"], "payload_too_large");
    assert!(
        body["message"].as_str().unwrap().contains("409600 bytes"),
        "{body}"
    );
}

/// Fails closed: 2xx means "this content is stored", which a receipt with
/// no fingerprint cannot show.
#[tokio::test]
async fn an_existing_receipt_without_fingerprint_is_not_acknowledged() {
    let store = ScriptedStore::new(Ok(PutOutcome::AlreadyExists {
        payload_fingerprint: None,
        imported: false,
    }));
    let ingest = ingest_with(store, &bearer_config()).await;
    let response = ingest.handle(delivery("sub_1")).await;
    assert_eq!(response.status(), 422);
    assert_eq!(json_body(&response)["error"], "receipt_without_fingerprint");
}

fn config_with(extra: &[(&'static str, &'static str)]) -> ingest::Config {
    let extra = extra.to_vec();
    ingest::Config::from_lookup(move |name| {
        extra
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.to_string())
            .or_else(|| match name {
                "RECEIPTS_TABLE" => Some("receipts".to_owned()),
                "WEBHOOK_AUTH" => Some("bearer".to_owned()),
                "WEBHOOK_SECRETS" => Some(TOKEN.to_owned()),
                _ => None,
            })
    })
    .unwrap()
}

fn body_with_form_key(submission_id: &str, api_key: serde_json::Value) -> String {
    serde_json::json!({
        "event": "form.submitted",
        "data": {"submissionId": submission_id, "apiKey": api_key, "formData": {"email": "a@example.com"}}
    })
    .to_string()
}

/// `WEBHOOK_API_KEYS`: after authentication and parsing, before the store.
#[tokio::test]
async fn only_listed_forms_are_stored_when_form_keys_are_set() {
    let config = config_with(&[("WEBHOOK_API_KEYS", "sf_form_one,sf_form_two")]);
    let bearer = format!("Bearer {TOKEN}");
    let key = |id: &str| format!("staticforms:form.submitted:{id}");
    let rows: [(&str, serde_json::Value, u16, &str); 6] = [
        ("a listed form", "sf_form_two".into(), 202, ""),
        (
            "an unknown form",
            "sf_form_three".into(),
            403,
            "unknown_form",
        ),
        (
            "a prefix of a listed key",
            "sf_form".into(),
            403,
            "unknown_form",
        ),
        ("no key", serde_json::Value::Null, 403, "unknown_form"),
        ("a key that is not text", 7.into(), 403, "unknown_form"),
        ("case differs", "SF_FORM_ONE".into(), 403, "unknown_form"),
    ];
    for (n, (name, api_key, status, code)) in rows.into_iter().enumerate() {
        let ingest = ingest_with(ScriptedStore::new(Ok(PutOutcome::Stored)), &config).await;
        let id = format!("sub_{n}");
        let body = if api_key.is_null() {
            body_json(&id, "a@example.com").replace("\"apiKey\":\"sf_live_api_key_0000001\",", "")
        } else {
            body_with_form_key(&id, api_key)
        };
        let response = ingest
            .handle(request(
                &[("authorization", &bearer), ("idempotency-key", &key(&id))],
                body,
            ))
            .await;
        assert_eq!(response.status(), status, "case {name}");
        if status == 403 {
            assert_eq!(json_body(&response)["error"], code, "case {name}");
            assert_eq!(
                ingest.store().calls(),
                0,
                "case {name}: the store is not called"
            );
        }
    }
    // Authentication still comes first.
    let ingest = ingest_with(ScriptedStore::new(Ok(PutOutcome::Stored)), &config).await;
    let response = ingest
        .handle(request(
            &[],
            body_with_form_key("sub_x", "sf_form_one".into()),
        ))
        .await;
    assert_eq!(response.status(), 401);
}

#[tokio::test]
async fn with_derive_a_missing_key_header_is_derived_and_a_sent_one_must_match() {
    let derive = config_with(&[("IDEMPOTENCY_KEY", "derive")]);
    let bearer = format!("Bearer {TOKEN}");
    let body = body_json(SUBMISSION_ID, "ada@example.com");
    let rows: [(&str, KeyHeaderCase, u16); 8] = [
        ("required, sent", (false, Some(KEY)), 202),
        ("required, missing", (false, None), 400),
        (
            "required, other key",
            (false, Some("staticforms:form.submitted:sub_2")),
            400,
        ),
        ("derive, missing", (true, None), 202),
        ("derive, sent", (true, Some(KEY)), 202),
        (
            "derive, other key",
            (true, Some("staticforms:form.submitted:sub_2")),
            400,
        ),
        ("derive, bare id", (true, Some(SUBMISSION_ID)), 400),
        ("derive, empty", (true, Some("")), 400),
    ];
    for (name, (derived, sent), status) in rows {
        let config = if derived {
            derive.clone()
        } else {
            config_with(&[("IDEMPOTENCY_KEY", "required")])
        };
        let ingest = ingest_with(MemoryReceiptStore::default(), &config).await;
        let mut headers = vec![("authorization", bearer.as_str())];
        if let Some(sent) = sent {
            headers.push(("idempotency-key", sent));
        }
        let response = ingest.handle(request(&headers, body.clone())).await;
        assert_eq!(response.status(), status, "case {name}");
        assert_eq!(
            ingest.store().receipts().len(),
            usize::from(status == 202),
            "case {name}"
        );
        if status == 202 {
            let receipt = &ingest.store().receipts()[0];
            assert_eq!(receipt.pk, KEY, "case {name}: the key from the body");
        }
    }
    // Derived or sent, the same submission is one receipt.
    let ingest = ingest_with(MemoryReceiptStore::default(), &derive).await;
    let sent = ingest
        .handle(request(
            &[("authorization", &bearer), ("idempotency-key", KEY)],
            body.clone(),
        ))
        .await;
    let derived = ingest
        .handle(request(&[("authorization", &bearer)], body))
        .await;
    assert_eq!(
        (sent.status().as_u16(), derived.status().as_u16()),
        (202, 200)
    );
}

/// Whether the key is derived, and the header sent if any.
type KeyHeaderCase = (bool, Option<&'static str>);

#[tokio::test]
async fn the_older_static_forms_format_is_a_400_that_says_how_to_fix_it() {
    let ingest = memory_ingest().await;
    let older = serde_json::json!({
        "apiKey": "sf_live_api_key_0000001",
        "submittedAt": "2026-11-30T08:00:00.000Z",
        "formData": {"name": "Ada", "email": "ada@example.com"},
        "userAgent": "Mozilla/5.0",
        "ipAddress": "192.0.2.1"
    });
    let response = ingest
        .handle(request(
            &[
                ("authorization", &format!("Bearer {TOKEN}")),
                ("idempotency-key", KEY),
            ],
            older.to_string(),
        ))
        .await;
    assert_eq!(response.status(), 400);
    let json = json_body(&response);
    assert_eq!(json["error"], "invalid_envelope");
    let message = json["message"].as_str().unwrap();
    for needed in [
        "older webhook format",
        "`event`",
        "`data.submissionId`",
        "switch the webhook to the current format",
    ] {
        assert!(message.contains(needed), "{needed:?} not in {message:?}");
    }
    assert!(!message.contains("sf_live"), "{message}");
    assert!(ingest.store().receipts().is_empty());
}

#[tokio::test]
async fn the_receipt_holds_what_the_worker_needs_and_no_credential() {
    fn fixed_clock() -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(1_795_941_528_250)
    }
    let ingest = memory_ingest()
        .await
        .with_clock(std::sync::Arc::new(fixed_clock));
    assert_eq!(
        ingest.handle(event("ingest-valid.json")).await.status(),
        202
    );

    let receipts = ingest.store().receipts();
    let receipt = &receipts[0];
    assert_eq!(receipt.pk, KEY);
    assert_eq!(receipt.submission_id, SUBMISSION_ID);
    assert_eq!(receipt.event, "form.submitted");
    assert_eq!(receipt.status, ReceiptStatus::Received);
    assert_eq!(receipt.received_at, "2026-11-29T08:38:48.250Z");
    assert_eq!(
        receipt.expires_at, None,
        "no expiry until delivered: TTL must never delete a waiting lead"
    );
    assert_eq!(receipt.payload_fingerprint.len(), 64);
    assert!(
        !receipt
            .payload
            .as_deref()
            .unwrap()
            .contains("sf_demo_api_key"),
        "apiKey is removed"
    );
    let payload: serde_json::Value =
        serde_json::from_str(receipt.payload.as_deref().unwrap()).unwrap();
    assert_eq!(payload["data"]["formData"]["email"], "ada@example.com");
}

/// Every ingest event file, through the handler, so the files and the code
/// cannot drift apart. A new file must be added to this table.
#[tokio::test]
async fn every_ingest_event_in_events_is_handled() {
    // Fed in this order to one handler: the duplicate follows the original.
    let in_sequence = [
        ("ingest-valid.json", 202),
        ("ingest-duplicate.json", 200),
        ("ingest-wrong-key.json", 400),
        ("ingest-unauthorized.json", 401),
    ];
    let ingest = memory_ingest().await;
    for (file, status) in in_sequence {
        assert_eq!(ingest.handle(event(file)).await.status(), status, "{file}");
    }
    assert_eq!(ingest.store().receipts().len(), 1);
    let reference = ingest.store().receipts().remove(0);

    // The same delivery behind each other front door, some base64-encoded.
    let front_doors = [
        "ingest-rest-api-v1.json",
        "ingest-alb-base64.json",
        "ingest-function-url-base64.json",
    ];
    for file in front_doors {
        let ingest = memory_ingest().await;
        assert_eq!(ingest.handle(event(file)).await.status(), 202, "{file}");
        let receipt = ingest.store().receipts().remove(0);
        assert_eq!(receipt.pk, reference.pk, "{file}");
        assert_eq!(receipt.payload, reference.payload, "{file}");
        assert_eq!(
            receipt.payload_fingerprint, reference.payload_fingerprint,
            "{file}"
        );
    }

    // Each other sender's sample, written and signed as its vendor does
    // (with the demo secret), through a handler configured for that sender;
    // Webflow's signature holds a time, so the clock is the sample's.
    fn sample_time() -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(1_795_941_528_250)
    }
    /// The page a browser-posted sample comes from (its `Origin`).
    const SAMPLE_PAGE_ORIGIN: &str = "https://example.com";
    // Every other sender (Static Forms' sample is ingest-valid.json,
    // above): its sample is events/ingest-<name>.json; one that signs
    // nothing has the secret in its URL, as the template's default.
    let senders: Vec<(String, shared::Sender)> = shared::Sender::ALL
        .into_iter()
        .filter(|sender| *sender != shared::Sender::StaticForms)
        .map(|sender| (format!("ingest-{}.json", sender.name()), sender))
        .collect();
    // A form a browser posts is checked by Turnstile: its fake, with the
    // test secret that passes the widget's dummy token, and the sample's page.
    let turnstile = devtools::fakes::turnstile::TurnstileFake::start(
        devtools::fakes::turnstile::ALWAYS_PASSES_SECRET,
    )
    .await
    .unwrap();
    for (file, sender) in &senders {
        let browser = sender.profile().browser;
        let config = ingest::Config::from_lookup(|name| match name {
            "RECEIPTS_TABLE" => Some("receipts".to_owned()),
            "SENDER" => Some(sender.name().to_owned()),
            "WEBHOOK_SECRETS" if !browser => Some(DEMO_SIGNING_SECRET.to_owned()),
            "WEBHOOK_AUTH" if sender.signature().is_none() && !browser => {
                Some("query:token".to_owned())
            }
            "ALLOWED_ORIGINS" if browser => Some(SAMPLE_PAGE_ORIGIN.to_owned()),
            "TURNSTILE_SECRET" if browser => {
                Some(devtools::fakes::turnstile::ALWAYS_PASSES_SECRET.to_owned())
            }
            "TURNSTILE_VERIFY_URL" if browser => Some(turnstile.verify_url()),
            _ => None,
        })
        .unwrap();
        let ingest = ingest_with(MemoryReceiptStore::default(), &config)
            .await
            .with_clock(Arc::new(sample_time));
        let status = ingest.handle(event(file)).await.status();
        assert_eq!(status, sender.accepted_status(), "{file}");
        let key = ingest.store().receipts()[0].pk.clone();
        let id = key
            .strip_prefix(&format!("{}:{}:", sender.name(), sender.event_name()))
            .unwrap_or_else(|| panic!("{file}: {key} is not under its sender and event"));
        assert!(!id.is_empty(), "{file}: {key}");
        let again = ingest.handle(event(file)).await;
        assert_eq!(again.status(), 200, "{file}: a duplicate");
        assert_eq!(ingest.store().receipts().len(), 1, "{file}");
    }

    let mut listed: Vec<&str> = in_sequence.iter().map(|(f, _)| *f).collect();
    listed.extend(front_doors);
    listed.extend(senders.iter().map(|(file, _)| file.as_str()));
    listed.sort();
    let mut on_disk: Vec<String> = std::fs::read_dir(events_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("ingest-"))
        .collect();
    on_disk.sort();
    assert_eq!(on_disk, listed, "every ingest event in events/ is tested");
}

/// events/worker-insert.json is the stream record of the receipt this
/// function stores for events/ingest-valid.json: the two fixtures agree.
#[tokio::test]
async fn the_worker_fixture_holds_the_receipt_ingest_stores() {
    fn fixture_clock() -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(1_795_941_528_250)
    }
    let ingest = memory_ingest()
        .await
        .with_clock(std::sync::Arc::new(fixture_clock));
    assert_eq!(
        ingest.handle(event("ingest-valid.json")).await.status(),
        202
    );
    let stored = ingest.store().receipts().remove(0);

    let text = std::fs::read_to_string(events_dir().join("worker-insert.json")).unwrap();
    let stream: serde_json::Value = serde_json::from_str(&text).unwrap();
    let image: serde_dynamo::Item =
        serde_json::from_value(stream["Records"][0]["dynamodb"]["NewImage"].clone()).unwrap();
    let in_fixture: shared::Receipt = serde_dynamo::from_item(image).unwrap();
    assert_eq!(in_fixture, stored);
}

/// `receipts import` stored what the sender's API listed, which is not
/// its webhook's bytes: the webhook, arriving late, is a duplicate (200),
/// never a reused key (422), and the imported receipt stays as it was.
#[tokio::test]
async fn a_webhook_for_an_imported_submission_is_a_duplicate_whatever_its_bytes() {
    let listed =
        shared::FormSubmission::parse(body_json("sub_imported", "listed@example.com").as_bytes())
            .unwrap();
    let imported = shared::Receipt::imported(&listed, SystemTime::now());
    let ingest = ingest_with(
        MemoryReceiptStore::holding(imported.clone()),
        &bearer_config(),
    )
    .await;

    let late = ingest.handle(delivery("sub_imported")).await;

    assert_eq!(late.status(), 200);
    assert_eq!(
        json_body(&late),
        serde_json::json!({"accepted": true, "duplicate": true})
    );
    assert_eq!(ingest.store().receipts(), vec![imported]);
    // A receipt a webhook stored keeps the rule: other bytes are a reused key.
    let webhook = shared::Receipt::new(&listed, SystemTime::now());
    let ingest = ingest_with(MemoryReceiptStore::holding(webhook), &bearer_config()).await;
    assert_eq!(ingest.handle(delivery("sub_imported")).await.status(), 422);
}
