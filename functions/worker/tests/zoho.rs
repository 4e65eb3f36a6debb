//! The `zoho` destination through the whole worker, against the Zoho fake
//! on 127.0.0.1 (devtools, built from Zoho's documented request and answer
//! shapes, with access tokens that expire) and the in-memory receipt
//! ledger, person memory and token store.

mod common;

use std::time::Duration;

use devtools::fakes::zoho::{Lost, ZohoFake};
use shared::newest::{GateKeySetting, GateSecret};
use shared::refresh::Refreshing;
use shared::{Receipt, ReceiptStatus};
use worker::destinations::memory::in_process::InProcessMemory;
use worker::destinations::shared_token::in_process::InProcessTokenStore;
use worker::destinations::shared_token::AnyTokenStore;
use worker::destinations::zoho::{
    default_field_map, Zoho, ZohoCredentials, ZohoSettings, BY_EMAIL,
};
use worker::ledger::memory::MemoryLedger;
use worker::Worker;

use common::*;

const CLIENT_ID: &str = "1000.TESTCLIENT";
const CLIENT_SECRET: &str = "zoho-test-client-secret";
const REFRESH_TOKEN: &str = "1000.zoho-test-refresh-token";
const GATE_KEY: &str = "a-test-gate-key-of-at-least-32-characters";

type ZohoWorker = Worker<Zoho<InProcessMemory>, MemoryLedger>;

/// The fake's access tokens' life in the expiry test: long enough that the
/// first two rounds end well before a token is due (nine tenths of it),
/// however slow the machine, and short enough to wait out once.
const TOKEN_LIFE: Duration = Duration::from_secs(6);

fn receipt(submission_id: &str, email: &str, name: &str, message: &str, timestamp: u64) -> Receipt {
    let fields = serde_json::json!({"name": name, "email": email, "message": message});
    static_forms_receipt(submission_id, None, fields, Some(timestamp))
}

fn zoho(fake: &ZohoFake, by: &str, store: &InProcessTokenStore) -> Zoho<InProcessMemory> {
    let by_email = by == BY_EMAIL;
    let settings = ZohoSettings {
        accounts_url: fake.base_url(),
        api_url: fake.base_url(),
        module: "Leads".into(),
        duplicate_check_field: by.into(),
        trigger: vec!["workflow".into()],
        field_map: default_field_map(by_email).with_fallbacks(&[("Last_Name", "[not provided]")]),
        gate_key: by_email.then(|| GateKeySetting::Inline(GateSecret::new(GATE_KEY).unwrap())),
        token_key: GateKeySetting::Inline(GateSecret::new(GATE_KEY).unwrap()),
    };
    let credentials = ZohoCredentials::new(CLIENT_ID, CLIENT_SECRET, REFRESH_TOKEN).unwrap();
    Zoho::new(
        settings,
        Refreshing::fixed(credentials, "Zoho credentials"),
        AnyTokenStore::InProcess(store.clone()),
        by_email.then(|| GateSecret::new(GATE_KEY).unwrap()),
        InProcessMemory::new(),
    )
    .unwrap()
}

fn worker(
    fake: &ZohoFake,
    by: &str,
    store: &InProcessTokenStore,
    ledger: MemoryLedger,
) -> ZohoWorker {
    Worker::new(zoho(fake, by, store), ledger, 8).with_retry_policy(fast_retries())
}

/// `count` receipts of distinct people, numbered from `first`.
fn people(first: usize, count: usize) -> Vec<Receipt> {
    (first..first + count)
        .map(|n| {
            receipt(
                &format!("sub_{n}"),
                &format!("person{n}@example.com"),
                "Ada Lovelace",
                "Hello",
                1_795_941_500,
            )
        })
        .collect()
}

/// Four instances deliver `per_instance` people each, at once.
async fn four_at_once(
    fake: &ZohoFake,
    store: &InProcessTokenStore,
    first: usize,
    per_instance: usize,
) -> Vec<(Vec<Receipt>, ZohoWorker)> {
    let instances: Vec<(Vec<Receipt>, ZohoWorker)> = (0..4)
        .map(|i| {
            let receipts = people(first + i * per_instance, per_instance);
            let all: Vec<&Receipt> = receipts.iter().collect();
            let worker = worker(fake, BY_EMAIL, store, ledger_of(&all));
            (receipts, worker)
        })
        .collect();
    futures_util::future::join_all(instances.iter().map(|(receipts, worker)| {
        let all: Vec<&Receipt> = receipts.iter().collect();
        worker.handle(inserts(&all), in_seconds(30))
    }))
    .await;
    for (receipts, worker) in &instances {
        for receipt in receipts {
            assert_eq!(
                status_of(worker, receipt),
                (ReceiptStatus::Completed, None),
                "{}",
                receipt.pk
            );
        }
    }
    instances
}

#[tokio::test]
async fn fifty_leads_by_four_instances_across_expiries_refresh_once_per_expiry() {
    let fake = ZohoFake::start(CLIENT_ID, CLIENT_SECRET, REFRESH_TOKEN, TOKEN_LIFE)
        .await
        .unwrap();
    let store = InProcessTokenStore::new();

    four_at_once(&fake, &store, 0, 6).await;
    assert_eq!(fake.refreshes(), 1, "one token for every instance");

    // Zoho ends the token early (as an hour's end would): the answers say
    // INVALID_TOKEN at every instance, and one of them refreshes it.
    fake.expire_tokens();
    four_at_once(&fake, &store, 24, 6).await;
    assert_eq!(fake.refreshes(), 2, "one refresh for the refused token");

    // Past the token's life (refreshed a tenth of it early): one more.
    tokio::time::sleep(TOKEN_LIFE + Duration::from_millis(200)).await;
    let last: Vec<Receipt> = people(48, 2);
    let all: Vec<&Receipt> = last.iter().collect();
    let (a, b) = (
        worker(&fake, BY_EMAIL, &store, ledger_of(&all[..1])),
        worker(&fake, BY_EMAIL, &store, ledger_of(&all[1..])),
    );
    tokio::join!(
        a.handle(inserts(&all[..1]), in_seconds(30)),
        b.handle(inserts(&all[1..]), in_seconds(30))
    );
    assert_eq!(fake.refreshes(), 3, "one refresh per expiry");
    assert_eq!(fake.records().len(), 50);
    assert!(
        fake.triggers()
            .iter()
            .all(|t| *t == serde_json::json!(["workflow"])),
        "{:?}",
        fake.triggers()
    );
}

#[tokio::test]
async fn two_submissions_of_one_person_are_one_lead_by_email_with_each_note_once() {
    let fake = ZohoFake::start(
        CLIENT_ID,
        CLIENT_SECRET,
        REFRESH_TOKEN,
        Duration::from_secs(3600),
    )
    .await
    .unwrap();
    let store = InProcessTokenStore::new();
    let first = receipt(
        "sub_1",
        "Ada@Example.com",
        "Ada Lovelace",
        "First: catering for 40",
        1_795_941_500,
    );
    let second = receipt(
        "sub_2",
        "ada@example.com",
        "Augusta Lovelace",
        "Second: make it 60",
        1_795_941_600,
    );
    let later = shared::clock::Adjustable::default();
    let worker =
        worker(&fake, BY_EMAIL, &store, ledger_of(&[&first, &second])).with_clock(later.clock());
    fake.lose_answer(Lost::NoteCreate);

    worker
        .handle(inserts(&[&first, &second]), in_seconds(30))
        .await;
    worker
        .handle(inserts(&[&second, &first]), in_seconds(30))
        .await;
    later.advance(Duration::from_secs(3 * 3600));
    worker.reconcile(in_seconds(30)).await;

    for receipt in [&first, &second] {
        assert_eq!(
            status_of(&worker, receipt),
            (ReceiptStatus::Completed, None)
        );
    }
    let records = fake.records();
    assert_eq!(records.len(), 1, "one Lead: {records:?}");
    assert_eq!(records[0].fields["First_Name"], "Augusta", "the newer name");
    assert_eq!(records[0].fields["Email"], "ada@example.com");
    let notes = fake.notes();
    assert_eq!(notes.len(), 2, "one note per submission: {notes:?}");
    assert!(notes.iter().all(|n| n.record == records[0].id));
    assert!(notes[0].content.contains("First: catering for 40"));
    assert!(notes[1].content.contains("Second: make it 60"));
}

#[tokio::test]
async fn by_submission_each_submission_is_its_own_lead_with_its_message() {
    let fake = ZohoFake::start(
        CLIENT_ID,
        CLIENT_SECRET,
        REFRESH_TOKEN,
        Duration::from_secs(3600),
    )
    .await
    .unwrap();
    let store = InProcessTokenStore::new();
    let first = receipt(
        "sub_1",
        "ada@example.com",
        "Ada Lovelace",
        "First",
        1_795_941_500,
    );
    let second = receipt(
        "sub_2",
        "ada@example.com",
        "Ada Lovelace",
        "Second",
        1_795_941_600,
    );
    let worker = worker(
        &fake,
        "Submission_Id",
        &store,
        ledger_of(&[&first, &second]),
    );
    fake.lose_answer(Lost::Upsert);

    worker
        .handle(inserts(&[&first, &second]), in_seconds(30))
        .await;
    worker
        .handle(inserts(&[&first, &second]), in_seconds(30))
        .await;

    let records = fake.records();
    assert_eq!(records.len(), 2, "{records:?}");
    for (record, (id, message)) in records
        .iter()
        .zip([("sub_1", "First"), ("sub_2", "Second")])
    {
        assert_eq!(record.fields["Submission_Id"], id);
        assert!(record.fields["Description"]
            .as_str()
            .unwrap()
            .contains(message));
    }
    assert!(fake.notes().is_empty(), "the message is on the record");
}

#[tokio::test]
async fn a_revoked_refresh_token_is_our_credentials_refused_and_the_lead_waits() {
    let fake = ZohoFake::start(
        CLIENT_ID,
        CLIENT_SECRET,
        REFRESH_TOKEN,
        Duration::from_secs(3600),
    )
    .await
    .unwrap();
    fake.revoke_refresh_token();
    let store = InProcessTokenStore::new();
    let lead = receipt(
        "sub_1",
        "ada@example.com",
        "Ada Lovelace",
        "Hello",
        1_795_941_500,
    );
    let worker = worker(&fake, BY_EMAIL, &store, ledger_of(&[&lead]));

    worker.handle(inserts(&[&lead]), in_seconds(30)).await;

    assert_eq!(
        status_of(&worker, &lead),
        (ReceiptStatus::Received, Some("destination-auth".into()))
    );
    assert!(fake.records().is_empty());
}

/// A late, older submission whose record was deleted in Zoho meanwhile:
/// its note has nowhere to go, so the record is written again, as a new
/// submission's would be, and the note kept on it (not retried until it
/// gives up).
#[tokio::test]
async fn a_late_submission_whose_record_was_deleted_writes_it_again_with_its_note() {
    let fake = ZohoFake::start(
        CLIENT_ID,
        CLIENT_SECRET,
        REFRESH_TOKEN,
        Duration::from_secs(3600),
    )
    .await
    .unwrap();
    let store = InProcessTokenStore::new();
    let newer = receipt(
        "sub_new",
        "ada@example.com",
        "Augusta Lovelace",
        "Newer",
        1_795_941_600,
    );
    let older = receipt(
        "sub_old",
        "ada@example.com",
        "Ada Lovelace",
        "Older",
        1_795_941_500,
    );
    let later = shared::clock::Adjustable::default();
    let lag = Duration::from_secs(1);
    let worker = Worker::new(
        zoho(&fake, BY_EMAIL, &store).with_note_lag(lag),
        ledger_of(&[&newer, &older]),
        8,
    )
    .with_retry_policy(fast_retries())
    .with_clock(later.clock());

    worker.handle(inserts(&[&newer]), in_seconds(30)).await;
    fake.delete_records();
    worker.handle(inserts(&[&older]), in_seconds(30)).await;
    // Its note's create was started on the deleted record: none starts
    // again within the lag, then a pass writes it.
    tokio::time::sleep(lag + Duration::from_millis(1_100)).await;
    later.advance(Duration::from_secs(3 * 3600));
    worker.reconcile(in_seconds(30)).await;

    assert_eq!(status_of(&worker, &older), (ReceiptStatus::Completed, None));
    let records = fake.records();
    assert_eq!(records.len(), 1, "{records:?}");
    let notes = fake.notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].record, records[0].id);
    assert!(notes[0].content.contains("Older"));
}

/// An accounts server slower than the invocation: the token is fetched
/// within the invocation's deadline too, so the lead waits for a later
/// attempt and the invocation still records it.
#[tokio::test]
async fn a_slow_accounts_server_never_outlasts_the_invocation() {
    let fake = ZohoFake::start(
        CLIENT_ID,
        CLIENT_SECRET,
        REFRESH_TOKEN,
        Duration::from_secs(3600),
    )
    .await
    .unwrap();
    fake.set_token_delay(Duration::from_secs(30));
    let store = InProcessTokenStore::new();
    let lead = receipt(
        "sub_1",
        "ada@example.com",
        "Ada Lovelace",
        "Hello",
        1_795_941_500,
    );
    let worker = worker(&fake, BY_EMAIL, &store, ledger_of(&[&lead]));

    let started = std::time::Instant::now();
    let answer = worker.handle(inserts(&[&lead]), in_seconds(3)).await;

    assert!(
        started.elapsed() < Duration::from_secs(8),
        "ended by its deadline, not the HTTP client's 20 s: {:?}",
        started.elapsed()
    );

    assert!(
        answer.batch_item_failures.is_empty(),
        "its outcome is recorded"
    );
    let (status, _) = status_of(&worker, &lead);
    assert_eq!(status, ReceiptStatus::Received, "waits for a later attempt");
    assert!(fake.records().is_empty());
}
