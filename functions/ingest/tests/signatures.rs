//! Standard Webhooks deliveries through the handler, and secrets re-read
//! after a failed delivery. (Signatures from an independent implementation
//! are checked in the integration suite.)

mod common;

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use common::*;
use ingest::auth::{Authenticator, Scheme, SecretError, Source};
use ingest::standard_webhooks::sign;
use ingest::store::MemoryReceiptStore;
use ingest::{Config, Ingest};

const KEY_A: [u8; 32] = [1; 32];
const KEY_B: [u8; 32] = [2; 32];
const NOW: u64 = 1_795_941_528;

fn whsec(key: &[u8]) -> String {
    format!("whsec_{}", STANDARD.encode(key))
}

fn signed_config() -> Config {
    let secrets = format!("{},{}", whsec(&KEY_A), whsec(&KEY_B));
    Config::from_lookup(|name| match name {
        "RECEIPTS_TABLE" => Some("receipts".to_owned()),
        "WEBHOOK_AUTH" => Some("standard-webhooks".to_owned()),
        "WEBHOOK_SECRETS" => Some(secrets.clone()),
        _ => None,
    })
    .unwrap()
}

fn fixed_now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(NOW)
}

async fn signed_ingest() -> Ingest<MemoryReceiptStore> {
    ingest_with(MemoryReceiptStore::default(), &signed_config())
        .await
        .with_clock(std::sync::Arc::new(fixed_now))
}

fn signature(key: &[u8], id: &str, timestamp: u64, body: &str) -> String {
    format!(
        "v1,{}",
        STANDARD.encode(sign(key, id, &timestamp.to_string(), body.as_bytes()))
    )
}

/// A delivery of `sub_1` with the given signature headers.
fn signed_delivery(body: &str, signature_headers: &[(&str, String)]) -> lambda_http::Request {
    let mut headers: Vec<(&str, &str)> = vec![
        ("content-type", "application/json"),
        ("idempotency-key", "staticforms:form.submitted:sub_1"),
    ];
    headers.extend(signature_headers.iter().map(|(n, v)| (*n, v.as_str())));
    request(&headers, body.to_owned())
}

fn headers_for(key: &[u8], timestamp: u64, body: &str) -> Vec<(&'static str, String)> {
    vec![
        ("webhook-id", "msg_1".to_owned()),
        ("webhook-timestamp", timestamp.to_string()),
        (
            "webhook-signature",
            signature(key, "msg_1", timestamp, body),
        ),
    ]
}

/// A case name, the body, the signature headers and the expected status.
type DeliveryCase<'a> = (&'a str, String, Vec<(&'a str, String)>, u16);

#[tokio::test]
async fn signed_deliveries_pass_and_every_tampering_is_refused_before_anything_is_written() {
    let body = body_json("sub_1", "ada@example.com");
    let mut tampered = body.clone().into_bytes();
    tampered[10] ^= 1;
    let tampered = String::from_utf8(tampered).unwrap();
    let good = headers_for(&KEY_A, NOW, &body);
    let without = |name: &str| {
        good.iter()
            .filter(|(n, _)| *n != name)
            .cloned()
            .collect::<Vec<_>>()
    };
    let with_signature = |value: String| {
        let mut headers = without("webhook-signature");
        headers.push(("webhook-signature", value));
        headers
    };

    let cases: Vec<DeliveryCase> = vec![
        (
            "signed with the current secret",
            body.clone(),
            good.clone(),
            202,
        ),
        (
            "signed with the other accepted secret",
            body.clone(),
            headers_for(&KEY_B, NOW, &body),
            202,
        ),
        (
            "svix- header names",
            body.clone(),
            good.iter()
                .map(|(n, v)| {
                    (
                        if *n == "webhook-id" {
                            "svix-id"
                        } else if *n == "webhook-timestamp" {
                            "svix-timestamp"
                        } else {
                            "svix-signature"
                        },
                        v.clone(),
                    )
                })
                .collect(),
            202,
        ),
        (
            "a bad signature and a good one",
            body.clone(),
            with_signature(format!(
                "v1,{} {}",
                STANDARD.encode([0u8; 32]),
                signature(&KEY_A, "msg_1", NOW, &body)
            )),
            202,
        ),
        (
            "at the edge of the tolerance",
            body.clone(),
            headers_for(&KEY_A, NOW - 300, &body),
            202,
        ),
        ("one byte of the body changed", tampered, good.clone(), 401),
        (
            "a secret not accepted",
            body.clone(),
            headers_for(&[3; 32], NOW, &body),
            401,
        ),
        (
            "stale timestamp",
            body.clone(),
            headers_for(&KEY_A, NOW - 301, &body),
            401,
        ),
        (
            "timestamp from the future",
            body.clone(),
            headers_for(&KEY_A, NOW + 301, &body),
            401,
        ),
        (
            "no webhook-signature",
            body.clone(),
            without("webhook-signature"),
            401,
        ),
        (
            "no webhook-timestamp",
            body.clone(),
            without("webhook-timestamp"),
            401,
        ),
        ("no webhook-id", body.clone(), without("webhook-id"), 401),
        (
            "malformed signature list",
            body.clone(),
            with_signature("v1 g0hM9SsE".to_owned()),
            401,
        ),
        (
            "signature without version",
            body.clone(),
            with_signature(STANDARD.encode(sign(
                &KEY_A,
                "msg_1",
                &NOW.to_string(),
                body.as_bytes(),
            ))),
            401,
        ),
    ];
    for (name, body, headers, status) in cases {
        let ingest = signed_ingest().await;
        let response = ingest.handle(signed_delivery(&body, &headers)).await;
        assert_eq!(response.status(), status, "case {name}");
        if status == 401 {
            assert!(
                ingest.store().receipts().is_empty(),
                "case {name}: nothing written"
            );
            assert!(
                response.headers().get("www-authenticate").is_none(),
                "case {name}"
            );
        }
    }
}

#[tokio::test]
async fn the_envelope_and_key_rules_still_apply_to_signed_deliveries() {
    let body = body_json("sub_2", "ada@example.com");
    let ingest = signed_ingest().await;
    // Signed correctly, but the key names another submission.
    let response = ingest
        .handle(signed_delivery(&body, &headers_for(&KEY_A, NOW, &body)))
        .await;
    assert_eq!(response.status(), 400);
    assert!(ingest.store().receipts().is_empty());
}

/// A secret store in memory that counts its reads, and fails on demand.
struct RotatingSecret {
    value: Mutex<String>,
    reads: AtomicUsize,
    failure: Mutex<Option<SecretError>>,
}

impl Source<String, SecretError> for RotatingSecret {
    fn fetch(
        &self,
    ) -> Pin<Box<dyn std::future::Future<Output = Result<String, SecretError>> + Send + '_>> {
        Box::pin(async move {
            self.reads.fetch_add(1, Ordering::SeqCst);
            match self.failure.lock().unwrap().clone() {
                Some(failure) => Err(failure),
                None => Ok(self.value.lock().unwrap().clone()),
            }
        })
    }
}

async fn refreshing_ingest(
    source: Arc<RotatingSecret>,
    interval: Duration,
) -> Ingest<MemoryReceiptStore> {
    refreshing_ingest_stale_after(source, interval, Duration::from_secs(3600)).await
}

async fn refreshing_ingest_stale_after(
    source: Arc<RotatingSecret>,
    interval: Duration,
    max_stale: Duration,
) -> Ingest<MemoryReceiptStore> {
    let scheme = Scheme::StandardWebhooks {
        tolerance: Duration::from_secs(300),
    };
    let auth = Authenticator::from_source(source, scheme, interval, max_stale)
        .await
        .unwrap();
    Ingest::new(MemoryReceiptStore::default(), auth, &signed_config())
        .with_clock(std::sync::Arc::new(fixed_now))
}

#[tokio::test]
async fn a_rotated_secret_is_picked_up_once_the_interval_has_passed() {
    let source = Arc::new(RotatingSecret {
        value: Mutex::new(whsec(&KEY_A)),
        reads: AtomicUsize::new(0),
        failure: Mutex::new(None),
    });
    let ingest = refreshing_ingest(Arc::clone(&source), Duration::ZERO).await;
    assert_eq!(source.reads.load(Ordering::SeqCst), 1, "read once at init");

    *source.value.lock().unwrap() = whsec(&KEY_B);
    let body = body_json("sub_1", "ada@example.com");
    let response = ingest
        .handle(signed_delivery(&body, &headers_for(&KEY_B, NOW, &body)))
        .await;

    assert_eq!(
        response.status(),
        202,
        "the new secret was read and accepted"
    );
    assert_eq!(source.reads.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_flood_of_bad_deliveries_reads_the_secret_at_most_once_per_interval() {
    let source = Arc::new(RotatingSecret {
        value: Mutex::new(whsec(&KEY_A)),
        reads: AtomicUsize::new(0),
        failure: Mutex::new(None),
    });
    let ingest = Arc::new(refreshing_ingest(Arc::clone(&source), Duration::from_secs(60)).await);
    let body = body_json("sub_1", "ada@example.com");

    let mut tasks = Vec::new();
    for _ in 0..50 {
        let ingest = Arc::clone(&ingest);
        let request = signed_delivery(&body, &headers_for(&[9; 32], NOW, &body));
        tasks.push(tokio::spawn(async move {
            ingest.handle(request).await.status()
        }));
    }
    for task in tasks {
        assert_eq!(task.await.unwrap(), 401);
    }
    assert_eq!(
        source.reads.load(Ordering::SeqCst),
        1,
        "only the init read: the interval has not passed"
    );
}

#[tokio::test]
async fn after_the_interval_only_one_of_many_failures_reads_the_secret() {
    let source = Arc::new(RotatingSecret {
        value: Mutex::new(whsec(&KEY_A)),
        reads: AtomicUsize::new(0),
        failure: Mutex::new(None),
    });
    let ingest = Arc::new(refreshing_ingest(Arc::clone(&source), Duration::from_millis(50)).await);
    tokio::time::sleep(Duration::from_millis(60)).await;
    let body = body_json("sub_1", "ada@example.com");

    let mut tasks = Vec::new();
    for _ in 0..20 {
        let ingest = Arc::clone(&ingest);
        let request = signed_delivery(&body, &headers_for(&[9; 32], NOW, &body));
        tasks.push(tokio::spawn(async move {
            ingest.handle(request).await.status()
        }));
    }
    for task in tasks {
        assert_eq!(task.await.unwrap(), 401);
    }
    assert_eq!(
        source.reads.load(Ordering::SeqCst),
        2,
        "init, then one re-read for the whole burst"
    );
}

/// Secrets fail closed: a deleted secret refuses every delivery with 503
/// (the sender retries) once it is re-read, and a good value restores them.
#[tokio::test]
async fn a_deleted_secret_refuses_deliveries_until_it_is_restored() {
    let source = Arc::new(RotatingSecret {
        value: Mutex::new(whsec(&KEY_A)),
        reads: AtomicUsize::new(0),
        failure: Mutex::new(None),
    });
    let ingest = refreshing_ingest(Arc::clone(&source), Duration::ZERO).await;
    let body = body_json("sub_1", "ada@example.com");
    let delivery = || signed_delivery(&body, &headers_for(&KEY_A, NOW, &body));

    *source.failure.lock().unwrap() = Some(SecretError::Unreadable(
        "ResourceNotFoundException".to_owned(),
    ));
    for _ in 0..3 {
        let response = ingest.handle(delivery()).await;
        assert_eq!(response.status(), 503, "the old secret is never accepted");
        assert_eq!(response.headers()["retry-after"], "2");
        assert_eq!(json_body(&response)["error"], "secrets_unavailable");
    }
    assert!(ingest.store().receipts().is_empty());

    // A throttled read keeps nothing open that was withdrawn.
    *source.failure.lock().unwrap() =
        Some(SecretError::Unreadable("ThrottlingException".to_owned()));
    assert_eq!(ingest.handle(delivery()).await.status(), 503);

    *source.failure.lock().unwrap() = None;
    assert_eq!(ingest.handle(delivery()).await.status(), 202, "restored");
}

#[tokio::test]
async fn a_malformed_secret_refuses_and_a_throttled_one_is_kept_until_max_stale() {
    let source = Arc::new(RotatingSecret {
        value: Mutex::new(whsec(&KEY_A)),
        reads: AtomicUsize::new(0),
        failure: Mutex::new(None),
    });
    let ingest = refreshing_ingest_stale_after(
        Arc::clone(&source),
        Duration::ZERO,
        Duration::from_millis(200),
    )
    .await;
    let body = body_json("sub_1", "ada@example.com");
    let delivery = || signed_delivery(&body, &headers_for(&KEY_A, NOW, &body));

    *source.failure.lock().unwrap() =
        Some(SecretError::Unreadable("ThrottlingException".to_owned()));
    assert_eq!(
        ingest.handle(delivery()).await.status(),
        202,
        "a passing failure keeps the last good set"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        ingest.handle(delivery()).await.status(),
        503,
        "but not past its max staleness"
    );

    *source.failure.lock().unwrap() = None;
    *source.value.lock().unwrap() = "not-a-whsec-secret".to_owned();
    assert_eq!(
        ingest.handle(delivery()).await.status(),
        503,
        "malformed text withdraws the set"
    );
}
