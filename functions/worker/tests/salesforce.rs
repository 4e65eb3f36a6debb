//! The `salesforce` destination through the whole worker, against the
//! Salesforce fake on 127.0.0.1 (devtools, built from Salesforce's
//! documented token endpoint, upsert forms and answers) and the in-memory
//! receipt ledger.

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use devtools::fakes::salesforce::{Fault, SalesforceFake, EXTERNAL_ID_FIELD};
use shared::field_map::FieldMap;
use shared::refresh::Source;
use shared::{Receipt, ReceiptStatus};
use worker::destinations::salesforce::{ClientCredentials, Salesforce, SalesforceSettings};
use worker::destinations::token::TokenError;
use worker::ledger::memory::MemoryLedger;
use worker::Worker;

use common::*;

const CLIENT_ID: &str = "3MVG9fake.client.id";
const CLIENT_SECRET: &str = "fake-client-secret-0001";

fn receipt_with(submission_id: &str, form: serde_json::Value) -> Receipt {
    static_forms_receipt(submission_id, None, form, None)
}

fn receipt(submission_id: &str) -> Receipt {
    receipt_with(
        submission_id,
        serde_json::json!({"name": "Ada Lovelace", "email": "ada@example.com", "company": "AE", "message": "Call me", "utm": "x"}),
    )
}

fn salesforce(fake: &SalesforceFake, secret: &str) -> Salesforce {
    let settings = SalesforceSettings {
        login_url: fake.login_url(),
        api_version: "v67.0".into(),
        object: "Lead".into(),
        external_id_field: EXTERNAL_ID_FIELD.into(),
        field_map: worker::destinations::salesforce::with_lead_requirements(
            worker::destinations::salesforce::default_field_map(),
        ),
        auto_assign: false,
    };
    Salesforce::new(settings, ClientCredentials::new(CLIENT_ID, secret).unwrap()).unwrap()
}

fn worker_for(fake: &SalesforceFake, receipts: &[&Receipt]) -> Worker<Salesforce, MemoryLedger> {
    let ledger = MemoryLedger::holding(receipts.iter().copied());
    Worker::new(salesforce(fake, CLIENT_SECRET), ledger, 8).with_retry_policy(fast_retries())
}

async fn fake() -> SalesforceFake {
    SalesforceFake::start(CLIENT_ID, CLIENT_SECRET)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_new_lead_then_an_update() {
    let fake = fake().await;
    let lead = receipt("sub_1");
    let worker = worker_for(&fake, &[&lead]);
    for _ in 0..2 {
        // The second time as if an operator had redriven the receipt: a
        // settled one is never written again.
        worker.ledger().insert(lead.clone());
        let response = worker.handle(inserts(&[&lead]), in_seconds(30)).await;
        assert!(response.batch_item_failures.is_empty());
    }
    let record = fake.record("sub_1").unwrap();
    assert_eq!(record.writes, 2, "the redelivery updated the same Lead");
    assert_eq!(fake.records().len(), 1);
    assert_eq!(record.fields["LastName"], "Lovelace");
    assert_eq!(record.fields["FirstName"], "Ada");
    assert_eq!(record.fields["Email"], "ada@example.com");
    assert_eq!(record.fields["Company"], "AE");
    assert_eq!(
        record.fields["Description"], "Call me\n\nutm: x",
        "the message, then every field the map does not name"
    );
    assert!(
        !record.fields.contains_key("utm"),
        "an unmapped field is no field of its own"
    );
    assert_eq!(status_of(&worker, &lead).0, ReceiptStatus::Completed);
    assert_eq!(
        fake.auto_assign_headers(),
        [Some("FALSE".to_owned()), Some("FALSE".to_owned())],
        "no assignment rule reassigns a lead on its redelivery"
    );
    assert_eq!(fake.tokens_issued(), 1, "the token is cached");
    assert!(fake
        .calls()
        .iter()
        .all(|c| c.path == "/composite/sobjects/Lead/StaticForms_Submission_Id__c"));
}

#[tokio::test]
async fn an_upsert_that_loses_a_race_updates_the_winners_lead() {
    // The stream and a reconciliation pass may upsert one new submission at
    // once; the loser is answered DUPLICATE_VALUE.
    let fake = fake().await;
    let lead = receipt("sub_race");
    fake.lose_race("sub_race");
    let worker = worker_for(&fake, &[&lead]);
    let response = worker.handle(inserts(&[&lead]), in_seconds(30)).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(status_of(&worker, &lead).0, ReceiptStatus::Completed);
    assert_eq!(fake.records().len(), 1, "one Lead, never two");
    assert_eq!(
        fake.record("sub_race").unwrap().writes,
        2,
        "the retry updated the winner's Lead"
    );
    assert_eq!(fake.calls().len(), 2);
}

#[tokio::test]
async fn a_batch_of_150_is_one_call() {
    let fake = fake().await;
    let receipts: Vec<Receipt> = (0..150).map(|n| receipt(&format!("sub_{n:03}"))).collect();
    let refs: Vec<&Receipt> = receipts.iter().collect();
    let worker = worker_for(&fake, &refs);
    let response = worker.handle(inserts(&refs), in_seconds(30)).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(fake.calls().len(), 1);
    assert_eq!(fake.calls()[0].records, 150);
    assert_eq!(fake.records().len(), 150);
    assert!(receipts
        .iter()
        .all(|r| status_of(&worker, r).0 == ReceiptStatus::Completed));
}

#[tokio::test]
async fn each_record_answer_does_what_the_table_says() {
    let fake = fake().await;
    let codes = [
        (
            "REQUIRED_FIELD_MISSING",
            ReceiptStatus::Failed,
            Some("REQUIRED_FIELD_MISSING"),
        ),
        (
            "INVALID_FIELD",
            ReceiptStatus::Failed,
            Some("INVALID_FIELD"),
        ),
        (
            "FIELD_CUSTOM_VALIDATION_EXCEPTION",
            ReceiptStatus::Failed,
            Some("FIELD_CUSTOM_VALIDATION_EXCEPTION"),
        ),
        (
            "DUPLICATES_DETECTED",
            ReceiptStatus::Failed,
            Some("DUPLICATES_DETECTED"),
        ),
        (
            "STRING_TOO_LONG",
            ReceiptStatus::Failed,
            Some("STRING_TOO_LONG"),
        ),
        (
            "INVALID_EMAIL_ADDRESS",
            ReceiptStatus::Failed,
            Some("INVALID_EMAIL_ADDRESS"),
        ),
        // Converted: done, for this pipeline.
        (
            "CANNOT_UPDATE_CONVERTED_LEAD",
            ReceiptStatus::Completed,
            None,
        ),
        // Retried in the invocation; the second attempt succeeds.
        ("UNABLE_TO_LOCK_ROW", ReceiptStatus::Completed, None),
    ];
    let receipts: Vec<Receipt> = codes
        .iter()
        .map(|(code, _, _)| receipt(&format!("sub_{code}")))
        .collect();
    for (code, _, _) in &codes {
        fake.fail_record(&format!("sub_{code}"), code);
    }
    let ambiguous = receipt("sub_ambiguous");
    fake.make_ambiguous("sub_ambiguous");
    let mut refs: Vec<&Receipt> = receipts.iter().collect();
    refs.push(&ambiguous);
    let worker = worker_for(&fake, &refs);
    let response = worker.handle(inserts(&refs), in_seconds(30)).await;
    assert!(
        response.batch_item_failures.is_empty(),
        "never blocks the shard"
    );
    for ((code, status, reason), receipt) in codes.iter().zip(&receipts) {
        let (got_status, got_reason) = status_of(&worker, receipt);
        assert_eq!(got_status, *status, "{code}");
        if let Some(reason) = reason {
            assert_eq!(got_reason.as_deref(), Some(*reason), "{code}");
        }
    }
    assert_eq!(
        status_of(&worker, &ambiguous),
        (ReceiptStatus::Failed, Some("external-id-not-unique".into()))
    );
    assert_eq!(
        fake.calls().len(),
        2,
        "one call, and one retry for the locked row only"
    );
    assert_eq!(fake.calls()[1].records, 1);
}

#[tokio::test]
async fn request_limits_and_configuration_faults_keep_leads_pending() {
    // REQUEST_LIMIT_EXCEEDED: an hour later, by the reconciliation pass.
    let fake = fake().await;
    fake.fail(Fault::status(403, "REQUEST_LIMIT_EXCEEDED"));
    let lead = receipt("sub_limit");
    let worker = worker_for(&fake, &[&lead]);
    worker.handle(inserts(&[&lead]), in_seconds(30)).await;
    let stored = worker.ledger().get(&lead.pk).unwrap();
    assert_eq!(stored.status, ReceiptStatus::Received);
    let next =
        shared::receipt::parse_timestamp(stored.next_attempt_at.as_deref().unwrap()).unwrap();
    assert!(next >= SystemTime::now() + Duration::from_secs(3500));
    assert_eq!(fake.calls().len(), 1, "no retry into the limit");

    // Another 403, a 404 (wrong object, field or version): configuration.
    for fault in [
        Fault::status(403, "INSUFFICIENT_ACCESS_OR_READONLY"),
        Fault::status(404, "NOT_FOUND"),
    ] {
        let fake = fake_with(fault.clone()).await;
        let lead = receipt("sub_config");
        let worker = worker_for(&fake, &[&lead]);
        worker.handle(inserts(&[&lead]), in_seconds(30)).await;
        assert_eq!(
            status_of(&worker, &lead),
            (ReceiptStatus::Received, Some("destination-auth".into())),
            "{fault:?}"
        );
    }

    // 5xx: retried in the invocation.
    let fake = fake_with(Fault::status(503, "SERVER_UNAVAILABLE").times(2)).await;
    let lead = receipt("sub_5xx");
    let worker = worker_for(&fake, &[&lead]);
    worker.handle(inserts(&[&lead]), in_seconds(30)).await;
    assert_eq!(status_of(&worker, &lead).0, ReceiptStatus::Completed);
    assert_eq!(fake.calls().len(), 3);
}

async fn fake_with(fault: Fault) -> SalesforceFake {
    let fake = fake().await;
    fake.fail(fault);
    fake
}

#[tokio::test]
async fn wrong_credentials_keep_leads_pending_never_failed() {
    let fake = fake().await;
    let lead = receipt("sub_creds");
    let ledger = MemoryLedger::holding([&lead]);
    let worker = Worker::new(salesforce(&fake, "wrong-secret-000000"), ledger, 8)
        .with_retry_policy(fast_retries());
    let response = worker.handle(inserts(&[&lead]), in_seconds(30)).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(
        status_of(&worker, &lead),
        (ReceiptStatus::Received, Some("destination-auth".into()))
    );
    assert!(fake.calls().is_empty(), "no API call without a session");
}

#[tokio::test]
async fn a_token_that_expires_in_the_middle_of_a_batch_is_renewed_once() {
    let fake = fake().await;
    // 250 receipts: two calls (200 + 50); the token dies after the first.
    let receipts: Vec<Receipt> = (0..250).map(|n| receipt(&format!("sub_{n:03}"))).collect();
    let refs: Vec<&Receipt> = receipts.iter().collect();
    let worker = worker_for(&fake, &refs);
    fake.expire_tokens_after_calls(1);
    let response = worker.handle(inserts(&refs), in_seconds(30)).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(fake.tokens_issued(), 2, "one renewal");
    assert_eq!(
        fake.calls()
            .iter()
            .map(|c| (c.records, c.status))
            .collect::<Vec<_>>(),
        [(200, 200), (50, 401), (50, 200)]
    );
    assert_eq!(fake.records().len(), 250);
    assert!(
        fake.records().iter().all(|r| r.writes == 1),
        "no duplicate, no double write"
    );
    assert!(receipts
        .iter()
        .all(|r| status_of(&worker, r).0 == ReceiptStatus::Completed));
}

#[tokio::test]
async fn concurrent_callers_share_one_renewal() {
    let fake = fake().await;
    let first = receipt("sub_first");
    let receipts: Vec<Receipt> = (0..40).map(|n| receipt(&format!("sub_c{n:02}"))).collect();
    let mut all: Vec<&Receipt> = receipts.iter().collect();
    all.push(&first);
    let worker = Arc::new(worker_for(&fake, &all));
    worker.handle(inserts(&[&first]), in_seconds(30)).await;
    assert_eq!(fake.tokens_issued(), 1);
    fake.expire_tokens();
    let batches: Vec<_> = receipts
        .chunks(10)
        .map(|chunk| {
            let worker = Arc::clone(&worker);
            let event = inserts(&chunk.iter().collect::<Vec<_>>());
            tokio::spawn(async move { worker.handle(event, in_seconds(30)).await })
        })
        .collect();
    for batch in batches {
        assert!(batch.await.unwrap().batch_item_failures.is_empty());
    }
    assert_eq!(
        fake.tokens_issued(),
        2,
        "four batches found the token expired; one renewal"
    );
    assert_eq!(fake.records().len(), 41);
}

#[tokio::test]
async fn a_lead_with_no_name_and_no_company_still_arrives() {
    let fake = fake().await;
    let lead = receipt_with("sub_anon", serde_json::json!({"email": "anon@example.com"}));
    let worker = worker_for(&fake, &[&lead]);
    worker.handle(inserts(&[&lead]), in_seconds(30)).await;
    let record = fake.record("sub_anon").unwrap();
    assert_eq!(record.fields["LastName"], "Unknown");
    assert_eq!(record.fields["Company"], "[not provided]");
    assert!(!record.fields.contains_key("FirstName"));
    assert_eq!(status_of(&worker, &lead).0, ReceiptStatus::Completed);
}

/// The client secret as "Secrets Manager" holds it after a rotation.
struct RotatedSecret(std::sync::atomic::AtomicUsize);

impl Source<ClientCredentials, TokenError> for RotatedSecret {
    fn fetch(
        &self,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<ClientCredentials, TokenError>> + Send + '_>,
    > {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async { Ok(ClientCredentials::new(CLIENT_ID, "rotated-client-secret").unwrap()) })
    }
}

#[tokio::test]
async fn a_rotated_client_secret_is_read_again_when_the_old_one_is_refused() {
    let fake = fake().await;
    fake.rotate_client_secret("rotated-client-secret");
    let source = Arc::new(RotatedSecret(std::sync::atomic::AtomicUsize::new(0)));
    let salesforce = salesforce(&fake, CLIENT_SECRET)
        .refreshing_credentials_from(source.clone(), Duration::ZERO);
    let lead = receipt("sub_rotated");
    let worker = Worker::new(salesforce, ledger_of(&[&lead]), 8).with_retry_policy(fast_retries());
    worker.handle(inserts(&[&lead]), in_seconds(30)).await;
    assert_eq!(
        source.0.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "read once"
    );
    assert_eq!(fake.tokens_issued(), 1);
    assert_eq!(status_of(&worker, &lead).0, ReceiptStatus::Completed);
}

/// Whole-request 400s are narrowed before they are classified: the leads
/// that do not cause one complete.
#[tokio::test]
async fn a_whole_request_400_refuses_only_the_leads_that_cause_it() {
    let fake = fake().await;
    let map = worker::destinations::salesforce::with_lead_requirements(
        FieldMap::parse(
            r#"{"LastName":"name","Email":"email","Company":"company","Bogus__c":"bogus","NumberOfEmployees":"employees"}"#,
        )
        .unwrap(),
    );
    let settings = SalesforceSettings {
        login_url: fake.login_url(),
        api_version: "v67.0".into(),
        object: "Lead".into(),
        external_id_field: EXTERNAL_ID_FIELD.into(),
        field_map: map,
        auto_assign: false,
    };
    let leads: Vec<Receipt> = (0..10)
        .map(|n| {
            let mut form = serde_json::json!({"name": format!("Lead {n}"), "email": format!("l{n}@example.com"), "company": "AE", "employees": "12"});
            // Two carry a field the org does not have (a FIELD_MAP typo);
            // one has a value the org cannot read as a number.
            if n == 2 || n == 7 {
                form["bogus"] = "x".into();
            }
            if n == 5 {
                form["employees"] = "many".into();
            }
            receipt_with(&format!("sub_narrow_{n}"), form)
        })
        .collect();
    let refs: Vec<&Receipt> = leads.iter().collect();
    let worker = Worker::new(
        Salesforce::new(
            settings,
            ClientCredentials::new(CLIENT_ID, CLIENT_SECRET).unwrap(),
        )
        .unwrap(),
        MemoryLedger::holding(refs.iter().copied()),
        8,
    )
    .with_retry_policy(fast_retries());

    let response = worker.handle(inserts(&refs), in_seconds(30)).await;

    assert!(response.batch_item_failures.is_empty());
    for (n, lead) in leads.iter().enumerate() {
        let status = status_of(&worker, lead);
        let expected = match n {
            2 | 7 => (
                ReceiptStatus::Received,
                Some("INVALID_FIELD: Bogus__c from FIELD_MAP".to_owned()),
            ),
            5 => (ReceiptStatus::Failed, Some("JSON_PARSER_ERROR".to_owned())),
            _ => (ReceiptStatus::Completed, None),
        };
        assert_eq!(status, expected, "lead {n}");
    }
    assert_eq!(
        fake.records().len(),
        7,
        "every lead without a fault is written"
    );
    let upserts = fake
        .calls()
        .iter()
        .filter(|call| call.path.contains("composite"))
        .count();
    assert!(
        upserts <= 10,
        "{upserts} calls to isolate three leads of ten"
    );
    println!("narrowing 3 bad leads of 10 took {upserts} upsert calls");
}
