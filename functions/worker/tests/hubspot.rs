//! The `hubspot` destination through the whole worker, against the HubSpot
//! fake on 127.0.0.1 (devtools, built from HubSpot's documented request
//! and answer shapes) and the in-memory receipt ledger.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use devtools::fakes::hubspot::{Fault, HubSpotFake};
use shared::newest::GateSecret;
use shared::{FormSubmission, Receipt, ReceiptStatus};
use worker::destinations::hubspot::{ApiVersion, HubSpot, HubSpotSettings, IdProperty};
use worker::destinations::token::{CrmToken, Source, TokenError};
use worker::ledger::memory::MemoryLedger;
use worker::Worker;

use common::*;

const TOKEN: &str = "pat-na1-hubspot-test-token";

/// A receipt whose sender sent it at `timestamp` (Unix seconds).
fn receipt(submission_id: &str, email: &str, first_name: &str, timestamp: u64) -> Receipt {
    let fields = serde_json::json!({"firstName": first_name, "lastName": "Lovelace", "email": email, "company": "AE", "utm": "x"});
    static_forms_receipt(submission_id, None, fields, Some(timestamp))
}

/// Person `n` of `people`, with an e-mail and nothing else (no company).
fn person_without_company(n: usize) -> Receipt {
    let fields = serde_json::json!({"email": format!("p{n}@example.com")});
    static_forms_receipt(&format!("sub_{n:03}"), None, fields, None)
}

/// Contacts by e-mail, on the current date version (an account's
/// validation rules apply to API writes from 2026-09 on).
fn current_settings(fake: &HubSpotFake) -> HubSpotSettings {
    let mut current = settings(fake, IdProperty::Email);
    current.api_version =
        ApiVersion::parse(worker::destinations::hubspot::DEFAULT_API_VERSION).unwrap();
    current
}

/// `count` receipts from as many people: `sub_000` from `p0@example.com`, …
fn people(count: usize) -> Vec<Receipt> {
    (0..count)
        .map(|n| {
            receipt(
                &format!("sub_{n:03}"),
                &format!("p{n}@example.com"),
                "P",
                1_795_941_500,
            )
        })
        .collect()
}

fn settings(fake: &HubSpotFake, id_property: IdProperty) -> HubSpotSettings {
    HubSpotSettings {
        base_url: fake.base_url(),
        api_version: ApiVersion::parse("2026-03").unwrap(),
        id_property,
        field_map: worker::destinations::hubspot::default_field_map(None),
        gate_key: None,
    }
}

/// The newest-wins gates' key (used for contacts by email only).
fn gate_secret() -> Option<GateSecret> {
    GateSecret::new("a-test-gate-key-of-at-least-32-characters")
}

fn worker(settings: HubSpotSettings, ledger: MemoryLedger) -> Worker<HubSpot, MemoryLedger> {
    let hubspot = HubSpot::new(settings, CrmToken::new(TOKEN), gate_secret()).unwrap();
    Worker::new(hubspot, ledger, 8).with_retry_policy(fast_retries())
}

#[tokio::test]
async fn a_new_contact_then_an_update_of_the_same_person() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    let first = receipt("sub_1", "Ada@Example.com ", "Ada", 1_795_941_500);
    let second = receipt("sub_2", "ada@example.com", "Augusta", 1_795_941_600);
    let worker = worker(
        settings(&fake, IdProperty::Email),
        ledger_of(&[&first, &second]),
    );

    for receipt in [&first, &second] {
        let response = worker.handle(inserts(&[receipt]), in_seconds(30)).await;
        assert!(response.batch_item_failures.is_empty());
        assert_eq!(status_of(&worker, receipt).0, ReceiptStatus::Completed);
    }
    let contacts = fake.contacts();
    assert_eq!(contacts.len(), 1, "one contact per person");
    let contact = &contacts[0];
    assert_eq!(contact.writes, 2);
    assert_eq!(
        contact.properties["email"], "ada@example.com",
        "trimmed and lower-cased"
    );
    assert_eq!(contact.properties["firstname"], "Augusta");
    assert_eq!(contact.properties["company"], "AE");
    assert!(
        !contact.properties.contains_key("utm"),
        "an unmapped field is no property of its own"
    );
    assert_eq!(
        contact.properties["message"], "utm: x",
        "it goes with the message, in HubSpot's message property"
    );
    let calls = fake.calls();
    assert_eq!(calls.len(), 2);
    assert!(calls
        .iter()
        .all(|c| c.path == "/crm/objects/2026-03/contacts/batch/upsert" && c.status == 200));
}

#[tokio::test]
async fn the_same_person_twice_in_one_batch_sends_only_the_newest() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    // The newer submission comes first in the stream.
    let newer = receipt("sub_new", "ada@example.com", "Augusta", 1_795_941_600);
    let older = receipt("sub_old", "ADA@example.com", "Ada", 1_795_941_500);
    let other = receipt("sub_grace", "grace@example.com", "Grace", 1_795_941_500);
    let worker = worker(
        settings(&fake, IdProperty::Email),
        ledger_of(&[&newer, &older, &other]),
    );

    let response = worker
        .handle(inserts(&[&newer, &older, &other]), in_seconds(30))
        .await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(fake.calls().len(), 1);
    assert_eq!(fake.calls()[0].inputs, 2, "one input per contact");
    assert_eq!(fake.contacts().len(), 2);
    let ada = fake.contact_by("email", "ada@example.com").unwrap();
    assert_eq!(
        ada.properties["firstname"], "Augusta",
        "the newest by the sender's time"
    );
    for receipt in [&newer, &older, &other] {
        assert_eq!(status_of(&worker, receipt).0, ReceiptStatus::Completed);
    }
}

#[tokio::test]
async fn one_contact_per_submission_with_a_unique_property() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    let a = receipt("sub_a", "ada@example.com", "Ada", 1_795_941_500);
    let b = receipt("sub_b", "ada2@example.com", "Ada", 1_795_941_600);
    let custom = IdProperty::Custom("staticforms_submission_id".into());
    let worker = worker(settings(&fake, custom), ledger_of(&[&a, &b]));
    worker.handle(inserts(&[&a, &b]), in_seconds(30)).await;
    worker.handle(inserts(&[&a]), in_seconds(30)).await;
    let writes = |id| {
        fake.contact_by("staticforms_submission_id", id)
            .unwrap()
            .writes
    };
    assert_eq!(
        writes("sub_a"),
        1,
        "a replayed record finds its receipt settled: no second write"
    );
    // Redriven by an operator: delivered again, to the same contact.
    worker.ledger().insert(a.clone());
    worker.handle(inserts(&[&a]), in_seconds(30)).await;
    assert_eq!(fake.contacts().len(), 2);
    assert_eq!(writes("sub_a"), 2, "a redelivery updates the same contact");
}

#[tokio::test]
async fn no_email_fails_that_lead_only_and_never_blocks_the_shard() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    let without = receipt("sub_none", "  ", "Ada", 1_795_941_500);
    let with = receipt("sub_ok", "ada@example.com", "Ada", 1_795_941_500);
    let worker = worker(
        settings(&fake, IdProperty::Email),
        ledger_of(&[&without, &with]),
    );
    let response = worker
        .handle(inserts(&[&without, &with]), in_seconds(30))
        .await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(
        status_of(&worker, &without),
        (ReceiptStatus::Failed, Some("no-email".into()))
    );
    assert_eq!(status_of(&worker, &with).0, ReceiptStatus::Completed);
    assert_eq!(fake.calls()[0].inputs, 1);
}

#[tokio::test]
async fn an_unknown_property_keeps_the_leads_pending_with_hubspots_reason_in_one_call() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    fake.forget_property("company");
    let a = receipt("sub_a", "ada@example.com", "Ada", 1_795_941_500);
    let b = receipt("sub_b", "grace@example.com", "Grace", 1_795_941_500);
    let worker = worker(settings(&fake, IdProperty::Email), ledger_of(&[&a, &b]));
    worker.handle(inserts(&[&a, &b]), in_seconds(30)).await;
    for receipt in [&a, &b] {
        assert_eq!(
            status_of(&worker, receipt),
            (
                ReceiptStatus::Received,
                Some("PROPERTY_DOESNT_EXIST: company from the default mapping".into())
            ),
            "our configuration, never the lead's: it waits, with an alarm, naming the property and where it came from"
        );
    }
    assert_eq!(
        fake.calls().len(),
        1,
        "a property error is not split per lead"
    );
    assert!(fake.contacts().is_empty());
}

#[tokio::test]
async fn a_207_fails_only_the_invalid_input() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    let bad = receipt("sub_bad", "not-an-email", "Ada", 1_795_941_500);
    let good = receipt("sub_good", "grace@example.com", "Grace", 1_795_941_500);
    let worker = worker(
        settings(&fake, IdProperty::Email),
        ledger_of(&[&bad, &good]),
    );
    worker.handle(inserts(&[&bad, &good]), in_seconds(30)).await;
    assert_eq!(
        status_of(&worker, &bad),
        (ReceiptStatus::Failed, Some("INVALID_EMAIL".into()))
    );
    assert_eq!(status_of(&worker, &good).0, ReceiptStatus::Completed);
    assert_eq!(
        fake.calls().iter().map(|c| c.status).collect::<Vec<_>>(),
        [207]
    );
}

#[tokio::test]
async fn a_whole_request_400_about_one_value_is_narrowed_to_that_lead() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    fake.fail_whole_requests_on_invalid_values();
    let mut receipts = people(8);
    receipts[5] = receipt("sub_005", "bad-email", "P", 1_795_941_500);
    let refs: Vec<&Receipt> = receipts.iter().collect();
    let worker = worker(settings(&fake, IdProperty::Email), ledger_of(&refs));
    worker.handle(inserts(&refs), in_seconds(30)).await;
    for (n, receipt) in receipts.iter().enumerate() {
        let expected = if n == 5 {
            ReceiptStatus::Failed
        } else {
            ReceiptStatus::Completed
        };
        assert_eq!(status_of(&worker, receipt).0, expected, "sub_{n}");
    }
    assert_eq!(fake.contacts().len(), 7);
    // 8 → 4+4 → 2+2 → 1+1: seven calls instead of eight single ones.
    assert!(fake.calls().len() <= 7, "{:?}", fake.calls());
}

/// From date version 2026-09 HubSpot refuses a whole call for one lead
/// that breaks an admin's validation rule (a 400 with a category and a
/// message only). Only that lead fails, with the rule's message as its
/// reason; the others are written.
#[tokio::test]
async fn a_validation_rule_of_the_account_fails_only_the_leads_that_break_it() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    fake.require_property("company");
    let mut receipts = people(8);
    for n in [2, 6] {
        receipts[n] = person_without_company(n);
    }
    let refs: Vec<&Receipt> = receipts.iter().collect();
    let current = current_settings(&fake);
    let current = worker(current, ledger_of(&refs));
    current.handle(inserts(&refs), in_seconds(30)).await;
    for (n, receipt) in receipts.iter().enumerate() {
        let (status, reason) = status_of(&current, receipt);
        if n == 2 || n == 6 {
            assert_eq!(status, ReceiptStatus::Failed, "sub_{n}");
            assert_eq!(reason.as_deref(), Some("VALIDATION_ERROR"), "sub_{n}");
        } else {
            assert_eq!(status, ReceiptStatus::Completed, "sub_{n}");
        }
    }
    assert_eq!(fake.contacts().len(), 6);
    assert!(fake
        .calls()
        .iter()
        .all(|c| c.path == "/crm/objects/2026-09/contacts/batch/upsert"));

    // The same account on 2026-03: the rule is not applied to API writes.
    let older = HubSpotFake::start(TOKEN).await.unwrap();
    older.require_property("company");
    let before = worker(settings(&older, IdProperty::Email), ledger_of(&refs));
    before.handle(inserts(&refs), in_seconds(30)).await;
    assert_eq!(older.contacts().len(), 8);
}

#[tokio::test]
async fn a_conflict_is_retried_and_one_conflicting_lead_never_holds_the_others() {
    // Once: two writers creating one contact at the same moment.
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    fake.fail(Fault::status(409).times(1));
    let lead = receipt("sub_c", "ada@example.com", "Ada", 1_795_941_500);
    let single = worker(settings(&fake, IdProperty::Email), ledger_of(&[&lead]));
    single.handle(inserts(&[&lead]), in_seconds(30)).await;
    assert_eq!(status_of(&single, &lead).0, ReceiptStatus::Completed);
    assert_eq!(
        fake.calls().iter().map(|c| c.status).collect::<Vec<_>>(),
        [409, 200]
    );
    assert_eq!(fake.contacts().len(), 1);

    // Lasting, for one lead of eight: the others are written, that one waits.
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    fake.conflict_on("p5@example.com");
    let receipts = people(8);
    let refs: Vec<&Receipt> = receipts.iter().collect();
    let worker = worker(settings(&fake, IdProperty::Email), ledger_of(&refs));
    let response = worker.handle(inserts(&refs), in_seconds(30)).await;
    assert!(
        response.batch_item_failures.is_empty(),
        "never blocks the shard"
    );
    for (n, receipt) in receipts.iter().enumerate() {
        let expected = if n == 5 {
            ReceiptStatus::Received
        } else {
            ReceiptStatus::Completed
        };
        assert_eq!(status_of(&worker, receipt).0, expected, "sub_{n}");
    }
    let stored = worker.ledger().get(&receipts[5].pk).unwrap();
    assert_eq!(stored.last_error.as_deref(), Some("OBJECT_ALREADY_EXISTS"));
    assert!(stored.next_attempt_at.is_some(), "the reconciler owns it");
    assert_eq!(fake.contacts().len(), 7);
    assert!(fake.contacts().iter().all(|c| c.writes == 1));
}

#[tokio::test]
async fn a_migration_in_progress_waits_as_long_as_hubspot_asks() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    fake.fail(Fault {
        retry_after: Some("7200".into()),
        ..Fault::status(477)
    });
    let lead = receipt("sub_m", "ada@example.com", "Ada", 1_795_941_500);
    let worker = worker(settings(&fake, IdProperty::Email), ledger_of(&[&lead]));
    let response = worker.handle(inserts(&[&lead]), in_seconds(30)).await;
    assert!(response.batch_item_failures.is_empty());
    let stored = worker.ledger().get(&lead.pk).unwrap();
    assert_eq!(
        stored.status,
        ReceiptStatus::Received,
        "pending, not FAILED"
    );
    let next =
        shared::receipt::parse_timestamp(stored.next_attempt_at.as_deref().unwrap()).unwrap();
    assert!(next >= SystemTime::now() + Duration::from_secs(7100));
    assert_eq!(fake.calls().len(), 1, "no retry before HubSpot's time");
}

/// One lead through a fake that first answers `fault`: it is COMPLETED, no
/// sooner than `min_wait`. The fake is returned for its calls and contacts.
async fn completes_after(fault: Fault, min_wait: Duration) -> HubSpotFake {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    fake.fail(fault.clone());
    let lead = receipt("sub_t", "ada@example.com", "Ada", 1_795_941_500);
    let worker = worker(settings(&fake, IdProperty::Email), ledger_of(&[&lead]));
    let started = Instant::now();
    worker.handle(inserts(&[&lead]), in_seconds(30)).await;
    assert!(started.elapsed() >= min_wait, "{fault:?}");
    assert_eq!(
        status_of(&worker, &lead).0,
        ReceiptStatus::Completed,
        "{fault:?}"
    );
    fake
}

#[tokio::test]
async fn rate_limits_wait_as_their_policy_says() {
    // TEN_SECONDLY_ROLLING and SECONDLY: retried in the invocation, after
    // the wait (Retry-After when HubSpot sends one).
    for (fault, min_wait) in [
        (
            Fault {
                retry_after: Some("1".into()),
                ..Fault::rate_limited("TEN_SECONDLY_ROLLING")
            },
            Duration::from_secs(1),
        ),
        (Fault::rate_limited("SECONDLY"), Duration::from_secs(1)),
    ] {
        let fake = completes_after(fault.times(1), min_wait).await;
        assert_eq!(
            fake.calls().iter().map(|c| c.status).collect::<Vec<_>>(),
            [429, 200]
        );
    }

    // DAILY: stop; the leads wait for the reconciliation pass.
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    fake.fail(Fault::rate_limited("DAILY"));
    let a = receipt("sub_d1", "ada@example.com", "Ada", 1_795_941_500);
    let b = receipt("sub_d2", "grace@example.com", "Grace", 1_795_941_500);
    let worker = worker(settings(&fake, IdProperty::Email), ledger_of(&[&a, &b]));
    let response = worker.handle(inserts(&[&a, &b]), in_seconds(30)).await;
    assert!(
        response.batch_item_failures.is_empty(),
        "never blocks the shard"
    );
    assert_eq!(fake.calls().len(), 1, "one call, then stop");
    for receipt in [&a, &b] {
        let stored = worker.ledger().get(&receipt.pk).unwrap();
        assert_eq!(stored.status, ReceiptStatus::Received, "pending");
        let next =
            shared::receipt::parse_timestamp(stored.next_attempt_at.as_deref().unwrap()).unwrap();
        assert!(
            next >= SystemTime::now() + Duration::from_secs(3500),
            "an hour later"
        );
    }
}

#[tokio::test]
async fn locked_and_server_errors_are_retried() {
    for (fault, min_wait) in [
        (Fault::status(423).times(1), Duration::from_secs(2)),
        (Fault::status(502).times(2), Duration::ZERO),
    ] {
        let fake = completes_after(fault, min_wait).await;
        assert_eq!(fake.contacts().len(), 1);
    }
}

/// The token from "Secrets Manager", after a rotation.
struct RotatedToken(AtomicUsize);

impl Source<CrmToken, TokenError> for RotatedToken {
    fn fetch(&self) -> Pin<Box<dyn Future<Output = Result<CrmToken, TokenError>> + Send + '_>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(CrmToken::new("pat-na1-rotated-token").unwrap()) })
    }
}

#[tokio::test]
async fn a_401_rereads_the_token_once_and_delivers() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    fake.rotate_token("pat-na1-rotated-token");
    let source = Arc::new(RotatedToken(AtomicUsize::new(0)));
    let hubspot = HubSpot::new(
        settings(&fake, IdProperty::Email),
        CrmToken::new(TOKEN),
        gate_secret(),
    )
    .unwrap()
    .refreshing_from(source.clone(), Duration::ZERO);
    let a = receipt("sub_a", "ada@example.com", "Ada", 1_795_941_500);
    let b = receipt("sub_b", "grace@example.com", "Grace", 1_795_941_500);
    let worker = Worker::new(hubspot, ledger_of(&[&a, &b]), 8).with_retry_policy(fast_retries());
    worker.handle(inserts(&[&a, &b]), in_seconds(30)).await;
    assert_eq!(
        source.0.load(Ordering::SeqCst),
        1,
        "one re-read for the batch"
    );
    assert_eq!(
        fake.calls().iter().map(|c| c.status).collect::<Vec<_>>(),
        [401, 200]
    );
    for receipt in [&a, &b] {
        assert_eq!(status_of(&worker, receipt).0, ReceiptStatus::Completed);
    }
}

#[tokio::test]
async fn configuration_faults_keep_leads_pending_and_never_fail_them() {
    for fault in [
        Fault::status(401),
        Fault {
            category: Some("MISSING_SCOPES".into()),
            ..Fault::status(403)
        },
    ] {
        let fake = HubSpotFake::start(TOKEN).await.unwrap();
        fake.fail(fault.clone());
        let lead = receipt("sub_cfg", "ada@example.com", "Ada", 1_795_941_500);
        let worker = worker(settings(&fake, IdProperty::Email), ledger_of(&[&lead]));
        let response = worker.handle(inserts(&[&lead]), in_seconds(30)).await;
        assert!(response.batch_item_failures.is_empty());
        assert_eq!(
            status_of(&worker, &lead),
            (ReceiptStatus::Received, Some("destination-auth".into())),
            "{fault:?}"
        );
    }
}

/// The performance bar: a stream batch of 100 distinct receipts costs at
/// most 2 HubSpot calls (it costs 1); 150 receipts (a pass page and more)
/// cost 2.
#[tokio::test]
async fn a_hundred_receipts_cost_at_most_two_calls() {
    for (count, calls) in [(100, 1), (150, 2)] {
        let fake = HubSpotFake::start(TOKEN).await.unwrap();
        let receipts = people(count);
        let refs: Vec<&Receipt> = receipts.iter().collect();
        let worker = worker(settings(&fake, IdProperty::Email), ledger_of(&refs));
        let response = worker.handle(inserts(&refs), in_seconds(30)).await;
        assert!(response.batch_item_failures.is_empty());
        assert_eq!(fake.calls().len(), calls, "{count} receipts");
        assert!(fake.calls().len() <= 2);
        assert!(fake.calls().iter().all(|c| c.inputs <= 100));
        assert_eq!(fake.contacts().len(), count);
        assert!(receipts
            .iter()
            .all(|r| status_of(&worker, r).0 == ReceiptStatus::Completed));
    }
}

#[tokio::test]
async fn the_v3_path_works_too() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    let lead = receipt("sub_v3", "ada@example.com", "Ada", 1_795_941_500);
    let mut settings = settings(&fake, IdProperty::Email);
    settings.api_version = ApiVersion::V3;
    let worker = worker(settings, ledger_of(&[&lead]));
    worker.handle(inserts(&[&lead]), in_seconds(30)).await;
    assert_eq!(
        fake.calls()[0].path,
        "/crm/v3/objects/contacts/batch/upsert"
    );
    assert_eq!(status_of(&worker, &lead).0, ReceiptStatus::Completed);
}

/// Newest wins across calls: an older submission that waited out an outage
/// never overwrites a newer one of the same person written meanwhile.
#[tokio::test]
async fn an_older_submission_delivered_late_never_overwrites_a_newer_one() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    let older = receipt("sub_old", "ada@example.com", "Ada", 1_795_941_500);
    let newer = receipt("sub_new", "ada@example.com", "Augusta", 1_795_941_600);
    let later = shared::clock::Adjustable::default();
    let worker = worker(
        settings(&fake, IdProperty::Email),
        ledger_of(&[&older, &newer]),
    )
    .with_clock(later.clock());

    // The older one arrives during an outage and waits.
    fake.fail(Fault::status(503));
    worker.handle(inserts(&[&older]), in_seconds(30)).await;
    assert_eq!(status_of(&worker, &older).0, ReceiptStatus::Received);
    // The newer one arrives once HubSpot is back, and is written.
    fake.recover();
    worker.handle(inserts(&[&newer]), in_seconds(30)).await;
    assert_eq!(status_of(&worker, &newer).0, ReceiptStatus::Completed);
    let calls_before = fake.calls().len();

    // A pass delivers the older one later: stale, and nothing is sent.
    later.advance(std::time::Duration::from_secs(3 * 3600));
    let pass = worker.reconcile(in_seconds(30)).await;
    assert_eq!(pass.delivered, 1, "settled, as stale: {pass:?}");
    assert_eq!(status_of(&worker, &older), (ReceiptStatus::Completed, None));
    assert_eq!(fake.calls().len(), calls_before, "no call for a stale lead");
    let contacts = fake.contacts();
    assert_eq!(contacts.len(), 1);
    assert_eq!(
        contacts[0].properties["firstname"], "Augusta",
        "the newer submission's values stay"
    );
}

/// With contacts keyed by submission, a repeat submitter's new submission
/// conflicts on its e-mail for good: FAILED at once, saying what to do, and
/// the others of the batch are written.
#[tokio::test]
async fn a_lasting_conflict_by_submission_id_fails_at_once_and_says_why() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    let receipts = people(8);
    fake.conflict_on(&receipts[5].submission_id);
    let refs: Vec<&Receipt> = receipts.iter().collect();
    let custom = IdProperty::Custom("staticforms_submission_id".into());
    let worker = worker(settings(&fake, custom), ledger_of(&refs));
    let response = worker.handle(inserts(&refs), in_seconds(30)).await;
    assert!(response.batch_item_failures.is_empty());
    for (n, receipt) in receipts.iter().enumerate() {
        let (status, reason) = status_of(&worker, receipt);
        if n == 5 {
            assert_eq!(status, ReceiptStatus::Failed);
            let reason = reason.unwrap();
            assert!(
                reason.starts_with("email-on-another-contact")
                    && reason.contains("HUBSPOT_ID_PROPERTY=email"),
                "{reason}"
            );
        } else {
            assert_eq!(status, ReceiptStatus::Completed, "lead {n}");
        }
    }
}

/// Two submissions of one person in one batch: only the newer is sent. When
/// HubSpot refuses the newer one's own data, the older one does not fail
/// with it: it is sent on its own, and written.
#[tokio::test]
async fn a_held_back_older_submission_gets_its_own_outcome() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    fake.require_property("company");
    let older = receipt("sub_older", "ada@example.com", "Ada", 1_795_941_500);
    let body = serde_json::json!({
        "event": "form.submitted",
        "timestamp": 1_795_941_600,
        "data": {"submissionId": "sub_newer", "formData": {"firstName": "Augusta", "email": "ada@example.com"}}
    });
    let newer = Receipt::new(
        &FormSubmission::parse(body.to_string().as_bytes()).unwrap(),
        SystemTime::now(),
    );
    let current = current_settings(&fake);
    let worker = worker(current, ledger_of(&[&older, &newer]));

    worker
        .handle(inserts(&[&older, &newer]), in_seconds(30))
        .await;

    assert_eq!(
        status_of(&worker, &newer).0,
        ReceiptStatus::Failed,
        "no company"
    );
    assert_eq!(
        status_of(&worker, &older),
        (ReceiptStatus::Completed, None),
        "its own data is fine"
    );
    let contacts = fake.contacts();
    assert_eq!(contacts.len(), 1);
    assert_eq!(contacts[0].properties["firstname"], "Ada");
}

/// Narrowing is bounded: with half of 100 leads breaking an account's rule,
/// one chunk takes at most 25 calls; no lead that keeps the rule fails, and
/// those still grouped with a bad one wait for the next attempt.
#[tokio::test]
async fn narrowing_a_batch_with_many_bad_leads_is_bounded() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    fake.require_property("company");
    let mut receipts = people(100);
    for n in (0..100).step_by(2) {
        receipts[n] = person_without_company(n);
    }
    let refs: Vec<&Receipt> = receipts.iter().collect();
    let current = current_settings(&fake);
    let hubspot = HubSpot::new(current, CrmToken::new(TOKEN), gate_secret()).unwrap();
    // One attempt: this test counts the calls of one.
    let worker = Worker::new(hubspot, ledger_of(&refs), 8).with_retry_policy(
        shared::delivery::RetryPolicy {
            max_attempts: 1,
            ..fast_retries()
        },
    );
    worker.handle(inserts(&refs), in_seconds(30)).await;

    assert!(fake.calls().len() <= 25, "{} calls", fake.calls().len());
    for (n, receipt) in receipts.iter().enumerate() {
        let (status, _) = status_of(&worker, receipt);
        if n % 2 == 1 {
            assert_ne!(status, ReceiptStatus::Failed, "lead {n} keeps the rule");
        }
    }
    println!(
        "100 leads, 50 breaking a rule: {} calls, {} written",
        fake.calls().len(),
        fake.contacts().len()
    );
}

/// A sender's clock in the future (or a date planted by whoever holds the
/// webhook's URL) never closes a person's gate: the planted stamp is
/// bounded by its arrival, so a genuine later submission is written.
#[tokio::test]
async fn a_planted_future_time_never_closes_the_persons_gate() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    // 9999-12-31, sent today.
    let planted = receipt("sub_planted", "ada@example.com", "Mallory", 253_402_214_400);
    let now_seconds = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // A minute ahead: within the skew a sender's clock is allowed.
    let genuine = receipt("sub_genuine", "ada@example.com", "Ada", now_seconds + 60);
    let worker = worker(
        settings(&fake, IdProperty::Email),
        ledger_of(&[&planted, &genuine]),
    );

    worker.handle(inserts(&[&planted]), in_seconds(30)).await;
    assert_eq!(status_of(&worker, &planted).0, ReceiptStatus::Completed);
    worker.handle(inserts(&[&genuine]), in_seconds(30)).await;

    assert_eq!(
        status_of(&worker, &genuine),
        (ReceiptStatus::Completed, None)
    );
    let contacts = fake.contacts();
    assert_eq!(contacts.len(), 1);
    assert_eq!(
        contacts[0].properties["firstname"], "Ada",
        "the genuine later submission wins"
    );
}

/// Newest wins inside an invocation too: an older lead that met a 429 is
/// gated again before its retry, so a newer lead of the same person written
/// meanwhile by another invocation is never overwritten.
#[tokio::test]
async fn an_older_lead_retried_after_a_429_never_overwrites_a_newer_one_written_meanwhile() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    fake.fail(
        Fault {
            retry_after: Some("1".into()),
            ..Fault::rate_limited("TEN_SECONDLY_ROLLING")
        }
        .times(1),
    );
    let older = receipt("sub_old", "ada@example.com", "Ada", 1_795_941_500);
    let newer = receipt("sub_new", "ada@example.com", "Augusta", 1_795_941_600);
    let worker = worker(
        settings(&fake, IdProperty::Email),
        ledger_of(&[&older, &newer]),
    );

    let first = worker.handle(inserts(&[&older]), in_seconds(30));
    let second = async {
        // The older one has met its 429 and waits out HubSpot's second.
        tokio::time::sleep(Duration::from_millis(300)).await;
        worker.handle(inserts(&[&newer]), in_seconds(30)).await
    };
    tokio::join!(first, second);

    assert_eq!(status_of(&worker, &newer), (ReceiptStatus::Completed, None));
    assert_eq!(status_of(&worker, &older), (ReceiptStatus::Completed, None));
    assert_eq!(
        fake.calls().iter().map(|c| c.status).collect::<Vec<_>>(),
        [429, 200],
        "the older lead is not sent again"
    );
    let contacts = fake.contacts();
    assert_eq!(contacts.len(), 1);
    assert_eq!(
        contacts[0].properties["firstname"], "Augusta",
        "the newer submission's values stay"
    );
}

/// A form's route adds to the stack's field map for that form's contacts
/// only: its `fields` map a form field to a property, its `set` gives a
/// constant, and neither is repeated in the message.
#[tokio::test]
async fn a_forms_route_adds_properties_to_its_contacts_only() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    for custom in ["utm_source", "lead_source"] {
        fake.create_property(custom);
    }
    let from_form = |id: &str, form: &str, email: &str| {
        let body = serde_json::json!({
            "event": "form.submitted",
            "data": {
                "submissionId": id,
                "apiKey": form,
                "formData": {"firstName": "Ada", "email": email, "utm": "newsletter"}
            }
        });
        Receipt::new(
            &FormSubmission::parse(body.to_string().as_bytes()).unwrap(),
            SystemTime::now(),
        )
    };
    let pricing = from_form("sub_pricing", "pricing_form", "ada@example.com");
    let contact = from_form("sub_contact", "contact_form", "grace@example.com");
    let routes = shared::routes::parse(
        "[[route]]\nform = \"pricing_form\"\n[route.fields]\nutm = \"utm_source\"\n\
         [route.set]\nlead_source = \"Pricing page\"\n",
    )
    .unwrap();
    let worker = worker(
        settings(&fake, IdProperty::Email),
        ledger_of(&[&pricing, &contact]),
    )
    .with_routes(aws_edge::routes::RoutesInForce::fixed(Arc::new(routes)));

    let response = worker
        .handle(inserts(&[&pricing, &contact]), in_seconds(30))
        .await;

    assert!(response.batch_item_failures.is_empty());
    let routed = fake.contact_by("email", "ada@example.com").unwrap();
    assert_eq!(routed.properties["utm_source"], "newsletter");
    assert_eq!(routed.properties["lead_source"], "Pricing page");
    assert!(
        !routed.properties.contains_key("message"),
        "nothing left for the message: {:?}",
        routed.properties
    );
    let other = fake.contact_by("email", "grace@example.com").unwrap();
    assert!(!other.properties.contains_key("utm_source"));
    assert!(!other.properties.contains_key("lead_source"));
    assert_eq!(other.properties["message"], "utm: newsletter");
}

/// Contacts by email keep every submission: each a note on the contact,
/// exactly once, with the contact's `message` holding the newest.
fn keeping_notes(settings: HubSpotSettings, ledger: MemoryLedger) -> Worker<HubSpot, MemoryLedger> {
    let hubspot = HubSpot::new(settings, CrmToken::new(TOKEN), gate_secret())
        .unwrap()
        .keeping_notes(
            worker::destinations::memory::AnyMemory::InProcess(
                worker::destinations::memory::in_process::InProcessMemory::new(),
            ),
            Duration::from_secs(1),
        );
    Worker::new(hubspot, ledger, 8).with_retry_policy(fast_retries())
}

/// A busy contact (issue 58): with 600 notes already on it, more than one
/// page of its associations, a note whose answer was lost is still found
/// (every page read, newest first) and never written twice.
#[tokio::test]
async fn a_lost_note_on_a_contact_with_hundreds_of_notes_is_found_not_written_again() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    let first = receipt("sub_1", "ada@example.com", "Ada", 1_795_941_500);
    let second = receipt("sub_2", "ada@example.com", "Augusta", 1_795_941_600);
    let later = shared::clock::Adjustable::default();
    let worker = keeping_notes(
        settings(&fake, IdProperty::Email),
        ledger_of(&[&first, &second]),
    )
    .with_clock(later.clock());
    worker.handle(inserts(&[&first]), in_seconds(30)).await;
    let contact = fake.contacts()[0].id.clone();
    fake.add_notes(&contact, 600);
    // The second note's create is done, its answer lost.
    fake.lose_note_answers(1);
    worker.handle(inserts(&[&second]), in_seconds(30)).await;
    later.advance(Duration::from_secs(3 * 3600));
    worker.reconcile(in_seconds(30)).await;
    assert_eq!(
        status_of(&worker, &second),
        (ReceiptStatus::Completed, None)
    );
    let ours: Vec<_> = fake
        .notes()
        .into_iter()
        .filter(|n| n.body.contains("submission sub_2"))
        .collect();
    assert_eq!(ours.len(), 1, "found among 602 notes, not written again");
    let listings = fake
        .calls()
        .iter()
        .filter(|c| c.path.contains("/associations/notes"))
        .count();
    assert!(listings >= 2, "every page of associations read: {listings}");
}

#[tokio::test]
async fn two_submissions_by_email_are_two_notes_on_one_contact_whatever_answers_are_lost() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    let first = receipt("sub_1", "ada@example.com", "Ada", 1_795_941_500);
    let second = receipt("sub_2", "ada@example.com", "Augusta", 1_795_941_600);
    let later = shared::clock::Adjustable::default();
    let worker = keeping_notes(
        settings(&fake, IdProperty::Email),
        ledger_of(&[&first, &second]),
    )
    .with_clock(later.clock());
    // The first note's create is done, its answer lost.
    fake.lose_note_answers(1);

    worker.handle(inserts(&[&first]), in_seconds(30)).await;
    worker.handle(inserts(&[&second]), in_seconds(30)).await;
    // The stream delivers both again; a pass comes round later.
    worker
        .handle(inserts(&[&first, &second]), in_seconds(30))
        .await;
    later.advance(Duration::from_secs(3 * 3600));
    worker.reconcile(in_seconds(30)).await;

    for receipt in [&first, &second] {
        assert_eq!(
            status_of(&worker, receipt),
            (ReceiptStatus::Completed, None)
        );
    }
    let contacts = fake.contacts();
    assert_eq!(contacts.len(), 1);
    assert_eq!(
        contacts[0].properties["firstname"], "Augusta",
        "the newest wins"
    );
    let notes = fake.notes();
    assert_eq!(notes.len(), 2, "one note per submission: {notes:?}");
    assert!(notes.iter().all(|n| n.contact_id == contacts[0].id));
    assert!(
        notes[0].body.contains("submission sub_1"),
        "{}",
        notes[0].body
    );
    assert!(
        notes[1].body.contains("submission sub_2"),
        "{}",
        notes[1].body
    );
    let creates = fake
        .calls()
        .iter()
        .filter(|c| c.path.ends_with("/notes") && !c.path.contains("/associations/"))
        .count();
    assert_eq!(creates, 2, "each note created once");
}

#[tokio::test]
async fn an_older_submission_by_email_delivered_late_is_a_note_and_never_overwrites_the_contact() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    let older = receipt("sub_old", "ada@example.com", "Ada", 1_795_941_500);
    let newer = receipt("sub_new", "ada@example.com", "Augusta", 1_795_941_600);
    let worker = keeping_notes(
        settings(&fake, IdProperty::Email),
        ledger_of(&[&older, &newer]),
    );
    worker.handle(inserts(&[&newer]), in_seconds(30)).await;
    worker.handle(inserts(&[&older]), in_seconds(30)).await;
    assert_eq!(status_of(&worker, &older), (ReceiptStatus::Completed, None));
    let contacts = fake.contacts();
    assert_eq!(contacts[0].properties["firstname"], "Augusta");
    assert_eq!(contacts[0].writes, 1, "the older one wrote no property");
    let notes = fake.notes();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[1].body.contains("submission sub_old"));
}

/// A stale submission whose contact was deleted in HubSpot since the
/// newer one was written (issue 58): tried again, its contact still
/// missing, it settles stale without its note instead of retrying
/// `contact-not-found-for-note` until the age limit; no contact is made
/// from its older data.
#[tokio::test]
async fn an_older_submission_whose_contact_is_gone_settles_stale() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    let older = receipt("sub_old", "ada@example.com", "Ada", 1_795_941_500);
    let newer = receipt("sub_new", "ada@example.com", "Augusta", 1_795_941_600);
    let worker = keeping_notes(
        settings(&fake, IdProperty::Email),
        ledger_of(&[&older, &newer]),
    );
    worker.handle(inserts(&[&newer]), in_seconds(30)).await;
    let contact = fake.contacts()[0].id.clone();
    fake.delete_contact(&contact);
    worker.handle(inserts(&[&older]), in_seconds(30)).await;
    assert_eq!(
        status_of(&worker, &older).0,
        ReceiptStatus::Completed,
        "settled, not retried until the age limit"
    );
    assert!(fake.contacts().is_empty(), "no contact from older data");
    assert_eq!(fake.notes().len(), 1, "the newer one's note alone");
}

/// No path brings an erased person back (issue 59): a submission made
/// before `receipts forget` erased its person, arriving after (a late
/// webhook), is settled ERASED with its form data gone and no HubSpot
/// call; one the person made after the erasure is a new lead.
#[tokio::test]
async fn a_submission_made_before_its_persons_erasure_is_settled_erased_uncalled() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    let before = receipt("sub_before", "Ada@Example.com", "Ada", 1_795_941_500);
    let after = receipt("sub_after", "ada@example.com", "Ada", 1_795_941_700);
    let key = gate_secret().unwrap();
    let ledger = ledger_of(&[&before, &after]);
    // Between the two: 1_795_941_600.
    ledger.mark_erased(
        &shared::erasure::marker_key(&key, "ada@example.com"),
        &shared::time::format_timestamp(
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_941_600),
        ),
    );
    let worker = worker(settings(&fake, IdProperty::Email), ledger).with_stack_key(Some(key));
    worker.handle(inserts(&[&before]), in_seconds(30)).await;
    let erased = worker.ledger().get(&before.pk).unwrap();
    assert_eq!(erased.status, ReceiptStatus::Erased);
    assert!(erased.payload.is_none(), "its form data is gone");
    assert!(
        fake.calls().is_empty(),
        "no HubSpot call: {:?}",
        fake.calls()
    );
    worker.handle(inserts(&[&after]), in_seconds(30)).await;
    assert_eq!(status_of(&worker, &after).0, ReceiptStatus::Completed);
    assert_eq!(
        fake.contacts().len(),
        1,
        "a submission after the erasure is a lead"
    );
}

/// A notice still waiting when its person is erased (issue 59) carries
/// none of their answers: the route names `plan` for the notice, the first
/// send is refused, `receipts forget` erases the person, and the next send
/// goes without the plan.
#[tokio::test]
async fn a_waiting_notice_carries_none_of_an_erased_persons_answers() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    let endpoint = devtools::notice_endpoint::NoticeEndpoint::start(1)
        .await
        .unwrap();
    let body = serde_json::json!({"event": "form.submitted",
        "data": {"submissionId": "sub_plan", "apiKey": "pricing_form",
                 "formData": {"firstName": "Ada", "email": "ada@example.com", "plan": "Pro"}}});
    let lead = Receipt::new(
        &FormSubmission::parse(body.to_string().as_bytes()).unwrap(),
        SystemTime::now(),
    );
    let routes = Arc::new(
        shared::routes::parse("[[route]]\nform = \"pricing_form\"\nnotify_fields = [\"plan\"]\n")
            .unwrap(),
    );
    let key = gate_secret().unwrap();
    let clock = shared::clock::Adjustable::default();
    let worker = worker(settings(&fake, IdProperty::Email), ledger_of(&[&lead]))
        .with_stack_key(Some(key.clone()))
        .with_routes(aws_edge::routes::RoutesInForce::fixed(routes))
        .with_notifier(Some(worker::notice::Notifier::new(endpoint.url()).unwrap()))
        .with_clock(clock.clock());
    worker.handle(inserts(&[&lead]), in_seconds(30)).await;
    assert_eq!(status_of(&worker, &lead).0, ReceiptStatus::Completed);
    assert!(endpoint.accepted().is_empty(), "the first send was refused");
    // Erased after its delivery, while its notice waits.
    clock.advance(Duration::from_secs(60));
    worker.ledger().mark_erased(
        &shared::erasure::marker_key(&key, "ada@example.com"),
        &shared::time::format_timestamp(clock.clock()()),
    );
    clock.advance(Duration::from_secs(3600));
    worker.reconcile(in_seconds(30)).await;
    let accepted = endpoint.accepted();
    assert_eq!(accepted.len(), 1, "{accepted:?}");
    assert!(
        !accepted[0].to_string().contains("Pro"),
        "none of the erased person's answers: {}",
        accepted[0]
    );
}

#[tokio::test]
async fn contacts_by_submission_keep_no_notes() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    let custom = IdProperty::Custom("staticforms_submission_id".into());
    let lead = receipt("sub_1", "ada@example.com", "Ada", 1_795_941_500);
    let worker = keeping_notes(settings(&fake, custom), ledger_of(&[&lead]));
    worker.handle(inserts(&[&lead]), in_seconds(30)).await;
    assert_eq!(status_of(&worker, &lead).0, ReceiptStatus::Completed);
    assert!(fake.notes().is_empty(), "its own contact holds its message");
}

/// A route's consent checkbox, recorded where marketing reads it: a checked
/// box sets the contact's subscription status once, with the route's legal
/// basis and explanation; the same submission delivered again (its settle
/// lost) calls again and HubSpot changes nothing; an unchecked box makes no
/// call at all.
#[tokio::test]
async fn a_checked_consent_box_sets_one_subscription_status_with_its_legal_basis() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    let from_form = |id: &str, email: &str, newsletter: Option<&str>| {
        let mut form = serde_json::json!({"firstName": "Ada", "email": email});
        if let Some(ticked) = newsletter {
            form["newsletter"] = serde_json::json!(ticked);
        }
        let body = serde_json::json!({"event": "form.submitted",
            "data": {"submissionId": id, "apiKey": "pricing_form", "formData": form}});
        Receipt::new(
            &FormSubmission::parse(body.to_string().as_bytes()).unwrap(),
            SystemTime::now(),
        )
    };
    let ticked = from_form("sub_ticked", "ada@example.com", Some("on"));
    let unticked = from_form("sub_unticked", "grace@example.com", None);
    let routes = Arc::new(
        shared::routes::parse(
            "[[route]]\nform = \"pricing_form\"\n[route.consent]\nfield = \"newsletter\"\n\
             subscription_id = \"12345\"\nlegal_basis = \"LEGITIMATE_INTEREST_CLIENT\"\n\
             explanation = \"Ticked 'Send me news' on the pricing form\"\n",
        )
        .unwrap(),
    );
    let deliver = |receipts: &[&Receipt]| {
        let worker = worker(settings(&fake, IdProperty::Email), ledger_of(receipts))
            .with_routes(aws_edge::routes::RoutesInForce::fixed(Arc::clone(&routes)));
        let records = inserts(receipts);
        async move { worker.handle(records, in_seconds(30)).await }
    };

    let response = deliver(&[&ticked, &unticked]).await;
    assert!(response.batch_item_failures.is_empty());
    let events = fake.status_events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].subscriber, "ada@example.com");
    assert_eq!(events[0].subscription_id, 12345);
    assert_eq!(events[0].state, "SUBSCRIBED");
    assert_eq!(events[0].legal_basis, "LEGITIMATE_INTEREST_CLIENT");
    assert_eq!(
        events[0].explanation.as_deref(),
        Some("Ticked 'Send me news' on the pricing form")
    );
    assert_eq!(fake.status_calls(), 1, "none for the unticked box");

    // The ticked one again, as after a lost settle: a second call, no
    // second subscription event.
    let response = deliver(&[&ticked]).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(fake.status_calls(), 2);
    assert_eq!(fake.status_events().len(), 1, "nothing changed");
}

/// No consent from an old submission (issue 58): a ticked box on a stale
/// submission (an older one delivered after a newer one) is kept in its
/// note and sets no subscription status; neither does a ticked box on a
/// submission made two days before its delivery (a redrive, an import), for
/// the person may have opted out since. The newest, fresh one does.
#[tokio::test]
async fn only_the_newest_fresh_submission_grants_consent() {
    let fake = HubSpotFake::start(TOKEN).await.unwrap();
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let from_form = |id: &str, email: &str, made: u64| {
        let form = serde_json::json!({"firstName": "Ada", "email": email, "newsletter": "on"});
        let body = serde_json::json!({"event": "form.submitted", "timestamp": made,
            "data": {"submissionId": id, "apiKey": "pricing_form", "formData": form}});
        Receipt::new(
            &FormSubmission::parse(body.to_string().as_bytes()).unwrap(),
            SystemTime::now(),
        )
    };
    let newer = from_form("sub_newer", "ada@example.com", now - 60);
    let stale = from_form("sub_stale", "ada@example.com", now - 120);
    let old = from_form("sub_old", "grace@example.com", now - 2 * 86_400);
    let routes = Arc::new(
        shared::routes::parse(
            "[[route]]\nform = \"pricing_form\"\n[route.consent]\nfield = \"newsletter\"\n\
             subscription_id = \"12345\"\n",
        )
        .unwrap(),
    );
    let worker = keeping_notes(
        settings(&fake, IdProperty::Email),
        ledger_of(&[&newer, &stale, &old]),
    )
    .with_routes(aws_edge::routes::RoutesInForce::fixed(Arc::clone(&routes)));
    worker.handle(inserts(&[&newer]), in_seconds(30)).await;
    assert_eq!(
        fake.status_calls(),
        1,
        "the newest, fresh submission grants it"
    );
    worker.handle(inserts(&[&stale]), in_seconds(30)).await;
    assert_eq!(status_of(&worker, &stale).0, ReceiptStatus::Completed);
    worker.handle(inserts(&[&old]), in_seconds(30)).await;
    assert_eq!(status_of(&worker, &old).0, ReceiptStatus::Completed);
    assert_eq!(
        fake.status_calls(),
        1,
        "neither the stale nor the two-day-old submission sets a status"
    );
    let notes = fake.notes();
    assert_eq!(notes.len(), 3, "each is still kept as a note: {notes:?}");
    assert!(
        notes.iter().all(|note| note.body.contains("newsletter")),
        "the note records the box: {notes:?}"
    );
}
