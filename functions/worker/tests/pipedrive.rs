//! The `pipedrive` destination through the whole worker, against the
//! Pipedrive fake on 127.0.0.1 (devtools, built from Pipedrive's documented
//! request and answer shapes, with a search that lags behind its writes)
//! and the in-memory receipt ledger and person memory.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use devtools::fakes::pipedrive::{Fault, Lost, PipedriveFake, COMPANY_FIELD_KEY};
use shared::newest::{GateKeySetting, GateSecret};
use shared::{Receipt, ReceiptStatus};
use worker::destinations::memory::in_process::InProcessMemory;
use worker::destinations::pipedrive::{default_field_map, Pipedrive, PipedriveSettings};
use worker::destinations::token::{CrmToken, Source, TokenError};
use worker::ledger::memory::MemoryLedger;
use worker::Worker;

use common::*;

const TOKEN: &str = "pipedrive-test-token";
const GATE_KEY: &str = "a-test-gate-key-of-at-least-32-characters";

/// How far the fake's search lags behind its writes, and the lag the
/// worker allows for (longer, as an operator's setting should be).
const FAKE_LAG: Duration = Duration::from_millis(1200);
const WORKER_LAG: Duration = Duration::from_secs(2);

/// A receipt from `name` whose sender sent it at `timestamp` (Unix seconds).
fn receipt(submission_id: &str, email: &str, name: &str, message: &str, timestamp: u64) -> Receipt {
    let fields = serde_json::json!({"name": name, "email": email, "message": message, "phone": "+44 20 7946 0000", "guests": "40"});
    static_forms_receipt(submission_id, None, fields, Some(timestamp))
}

fn settings(fake: &PipedriveFake) -> PipedriveSettings {
    PipedriveSettings {
        base_url: fake.base_url(),
        search_lag: WORKER_LAG,
        field_map: default_field_map(),
        gate_key: GateKeySetting::Inline(GateSecret::new(GATE_KEY).unwrap()),
    }
}

fn pipedrive(settings: PipedriveSettings) -> Pipedrive<InProcessMemory> {
    Pipedrive::new(
        settings,
        CrmToken::new(TOKEN),
        GateSecret::new(GATE_KEY).unwrap(),
        InProcessMemory::new(),
    )
    .unwrap()
}

fn worker(
    settings: PipedriveSettings,
    ledger: MemoryLedger,
) -> Worker<Pipedrive<InProcessMemory>, MemoryLedger> {
    Worker::new(pipedrive(settings), ledger, 8).with_retry_policy(fast_retries())
}

fn creates(fake: &PipedriveFake, path: &str) -> usize {
    fake.calls()
        .iter()
        .filter(|c| c.method == "POST" && c.path == path)
        .count()
}

#[tokio::test]
async fn two_submissions_of_one_person_end_as_one_person_and_two_notes_whatever_answers_are_lost() {
    let fake = PipedriveFake::start(TOKEN, FAKE_LAG).await.unwrap();
    let first = receipt(
        "sub_1",
        "Ada@Example.com ",
        "Ada Lovelace",
        "First inquiry: catering for 40",
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
    let worker = worker(settings(&fake), ledger_of(&[&first, &second])).with_clock(later.clock());
    // Both arrive in one batch, in flight at once; the person's create is
    // done but its answer lost, and so is the first note's.
    fake.lose_answer(Lost::PersonCreate);
    fake.lose_answer(Lost::NoteCreate);

    let response = worker
        .handle(inserts(&[&first, &second]), in_seconds(30))
        .await;
    assert!(response.batch_item_failures.is_empty());
    // The stream delivers both again, and a pass comes round later.
    worker
        .handle(inserts(&[&second, &first]), in_seconds(30))
        .await;
    later.advance(Duration::from_secs(3 * 3600));
    worker.reconcile(in_seconds(30)).await;
    worker.reconcile(in_seconds(30)).await;

    for receipt in [&first, &second] {
        assert_eq!(
            status_of(&worker, receipt),
            (ReceiptStatus::Completed, None)
        );
    }
    let persons = fake.persons();
    assert_eq!(persons.len(), 1, "one person: {persons:?}");
    assert_eq!(creates(&fake, "/api/v2/persons"), 1, "created once");
    let person = &persons[0];
    assert_eq!(
        person.name, "Augusta Lovelace",
        "the newer submission's name"
    );
    assert_eq!(person.emails, ["ada@example.com"]);
    assert_eq!(person.phones, ["+44 20 7946 0000"]);
    let notes = fake.notes();
    assert_eq!(notes.len(), 2, "one note per submission: {notes:?}");
    assert_eq!(creates(&fake, "/api/v1/notes"), 2, "each note created once");
    for (note, message) in notes
        .iter()
        .zip(["First inquiry: catering for 40", "Second: make it 60"])
    {
        assert_eq!(note.person_id, person.id);
        assert!(note.content.contains(message), "{}", note.content);
        assert!(
            note.content.contains("guests: 40"),
            "an unmapped field goes to the note"
        );
        assert!(
            !note.content.contains("+44"),
            "a mapped field stays on the person"
        );
    }
    let stored = worker.ledger().get(&second.pk).unwrap();
    assert_eq!(
        stored.record_id.as_deref(),
        Some(person.id.to_string().as_str())
    );
}

/// A busy person (issue 58): a note whose answer was lost, then 600 notes
/// made on the person by others before the retry, more than a page of
/// the newest: the lookup reads page after page, finds it, and writes no
/// second one.
#[tokio::test]
async fn a_lost_note_behind_hundreds_of_newer_notes_is_found_not_written_again() {
    let fake = PipedriveFake::start(TOKEN, Duration::ZERO).await.unwrap();
    let first = receipt(
        "sub_1",
        "ada@example.com",
        "Ada Lovelace",
        "Hello",
        1_795_941_500,
    );
    let second = receipt(
        "sub_2",
        "ada@example.com",
        "Ada Lovelace",
        "Again",
        1_795_941_600,
    );
    let later = shared::clock::Adjustable::default();
    let worker = worker(settings(&fake), ledger_of(&[&first, &second])).with_clock(later.clock());
    worker.handle(inserts(&[&first]), in_seconds(30)).await;
    fake.lose_answer(Lost::NoteCreate);
    fake.bury_lost_note_under(600);
    worker.handle(inserts(&[&second]), in_seconds(30)).await;
    later.advance(Duration::from_secs(3 * 3600));
    worker.reconcile(in_seconds(30)).await;
    assert_eq!(
        status_of(&worker, &second),
        (ReceiptStatus::Completed, None)
    );
    let ours = fake
        .notes()
        .iter()
        .filter(|note| note.content.contains("Again"))
        .count();
    assert_eq!(ours, 1, "found behind 600 newer notes, not written again");
    assert_eq!(creates(&fake, "/api/v1/notes"), 2, "each note created once");
}

/// A stale submission whose person was deleted in Pipedrive since the
/// newer one was written (issue 58): it settles stale at once, with no
/// note and no person made again from older data, instead of retrying
/// until the age limit; the deleted person is forgotten.
#[tokio::test]
async fn an_older_submission_whose_person_was_deleted_settles_stale_at_once() {
    let fake = PipedriveFake::start(TOKEN, Duration::ZERO).await.unwrap();
    let older = receipt("sub_old", "ada@example.com", "Ada", "older", 1_795_941_500);
    let newer = receipt("sub_new", "ada@example.com", "Ada", "newer", 1_795_941_600);
    let worker = worker(settings(&fake), ledger_of(&[&older, &newer]));
    worker.handle(inserts(&[&newer]), in_seconds(30)).await;
    let person = fake.persons()[0].id;
    let deleted = reqwest::Client::new()
        .delete(format!("{}/api/v2/persons/{person}", fake.base_url()))
        .header("x-api-token", TOKEN)
        .send()
        .await
        .unwrap();
    assert!(deleted.status().is_success(), "{}", deleted.status());
    worker.handle(inserts(&[&older]), in_seconds(30)).await;
    let stored = worker.ledger().get(&older.pk).unwrap();
    assert_eq!(
        stored.status,
        ReceiptStatus::Completed,
        "settled in one delivery"
    );
    assert!(
        fake.persons().is_empty(),
        "no person made again from older data"
    );
    assert_eq!(fake.notes().len(), 1, "the newer one's note alone");
}

#[tokio::test]
async fn an_older_submission_delivered_late_keeps_its_note_and_never_overwrites_the_person() {
    let fake = PipedriveFake::start(TOKEN, Duration::ZERO).await.unwrap();
    let older = receipt(
        "sub_old",
        "ada@example.com",
        "Ada Lovelace",
        "older message",
        1_795_941_500,
    );
    let newer = receipt(
        "sub_new",
        "ada@example.com",
        "Augusta Lovelace",
        "newer message",
        1_795_941_600,
    );
    let worker = worker(settings(&fake), ledger_of(&[&older, &newer]));

    let calls = |fake: &PipedriveFake| -> Vec<String> {
        fake.calls()
            .iter()
            .map(|c| format!("{} {}", c.method, c.path))
            .collect()
    };
    worker.handle(inserts(&[&newer]), in_seconds(30)).await;
    assert_eq!(
        calls(&fake),
        [
            "GET /api/v2/persons/search",
            "POST /api/v2/persons",
            "POST /api/v1/notes"
        ],
        "a new person: three calls (docs/cost.md)"
    );
    worker.handle(inserts(&[&older]), in_seconds(30)).await;
    let person = fake.persons()[0].id;
    assert_eq!(
        calls(&fake)[3..],
        [
            format!("GET /api/v2/persons/{person}"),
            "POST /api/v1/notes".to_owned()
        ],
        "a stale submission of a known person: the person still there, then its note alone"
    );

    assert_eq!(status_of(&worker, &older), (ReceiptStatus::Completed, None));
    let persons = fake.persons();
    assert_eq!(persons.len(), 1);
    assert_eq!(persons[0].name, "Augusta Lovelace", "the newer values stay");
    assert_eq!(persons[0].writes, 1, "the older one wrote no field");
    let notes = fake.notes();
    assert_eq!(notes.len(), 2, "the older submission is on the record too");
    assert!(notes[1].content.contains("older message"));
}

#[tokio::test]
async fn a_429_waits_as_pipedrive_says() {
    let fake = PipedriveFake::start(TOKEN, Duration::ZERO).await.unwrap();
    fake.fail(Fault::rate_limited("1").times(1));
    let lead = receipt(
        "sub_1",
        "ada@example.com",
        "Ada Lovelace",
        "hello",
        1_795_941_500,
    );
    let worker = worker(settings(&fake), ledger_of(&[&lead]));
    let started = Instant::now();
    worker.handle(inserts(&[&lead]), in_seconds(30)).await;
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited as asked"
    );
    assert_eq!(status_of(&worker, &lead), (ReceiptStatus::Completed, None));
    assert_eq!(fake.calls()[0].status, 429);
    assert_eq!(fake.persons().len(), 1);
}

/// The token from "Secrets Manager", after a rotation.
struct RotatedToken(AtomicUsize);

impl Source<CrmToken, TokenError> for RotatedToken {
    fn fetch(&self) -> Pin<Box<dyn Future<Output = Result<CrmToken, TokenError>> + Send + '_>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(CrmToken::new("pipedrive-rotated-token").unwrap()) })
    }
}

#[tokio::test]
async fn a_401_rereads_the_token_once_and_delivers() {
    let fake = PipedriveFake::start(TOKEN, Duration::ZERO).await.unwrap();
    fake.rotate_token("pipedrive-rotated-token");
    let source = Arc::new(RotatedToken(AtomicUsize::new(0)));
    let pipedrive = pipedrive(settings(&fake)).refreshing_from(source.clone(), Duration::ZERO);
    let lead = receipt(
        "sub_1",
        "ada@example.com",
        "Ada Lovelace",
        "hello",
        1_795_941_500,
    );
    let worker = Worker::new(pipedrive, ledger_of(&[&lead]), 8).with_retry_policy(fast_retries());
    worker.handle(inserts(&[&lead]), in_seconds(30)).await;
    assert_eq!(source.0.load(Ordering::SeqCst), 1, "one re-read");
    assert_eq!(status_of(&worker, &lead), (ReceiptStatus::Completed, None));
    assert_eq!(fake.calls()[0].status, 401);
}

#[tokio::test]
async fn a_refused_field_names_the_field_and_where_it_came_from_and_keeps_the_lead_pending() {
    let fake = PipedriveFake::start(TOKEN, Duration::ZERO).await.unwrap();
    let unknown = "0123456789abcdef0123456789abcdef01234567";
    let mut with_map = settings(&fake);
    with_map.field_map = shared::field_map::FieldMap::parse(&format!(
        r#"{{"name":"name","{COMPANY_FIELD_KEY}":"guests","{unknown}":"message"}}"#
    ))
    .unwrap();
    let lead = receipt(
        "sub_1",
        "ada@example.com",
        "Ada Lovelace",
        "hello",
        1_795_941_500,
    );
    let worker = worker(with_map, ledger_of(&[&lead]));
    worker.handle(inserts(&[&lead]), in_seconds(30)).await;
    assert_eq!(
        status_of(&worker, &lead),
        (
            ReceiptStatus::Received,
            Some(format!("FIELD_REFUSED: {unknown} from FIELD_MAP"))
        ),
        "ours to fix: pending, never FAILED, and no lead data in the reason"
    );
    assert!(fake.persons().is_empty());
}

#[tokio::test]
async fn an_erased_person_is_never_written_back() {
    let fake = PipedriveFake::start(TOKEN, Duration::ZERO).await.unwrap();
    let memory = InProcessMemory::new();
    let gate = GateSecret::new(GATE_KEY)
        .unwrap()
        .gate_key("ada@example.com");
    memory.erase(&gate);
    let pipedrive = Pipedrive::new(
        settings(&fake),
        CrmToken::new(TOKEN),
        GateSecret::new(GATE_KEY).unwrap(),
        memory.clone(),
    )
    .unwrap();
    let lead = receipt(
        "sub_1",
        "ada@example.com",
        "Ada Lovelace",
        "hello",
        1_795_941_500,
    );
    let worker = Worker::new(pipedrive, ledger_of(&[&lead]), 8).with_retry_policy(fast_retries());
    worker.handle(inserts(&[&lead]), in_seconds(30)).await;
    assert!(
        fake.persons().is_empty(),
        "nothing created for an erased person"
    );
    assert_eq!(memory.get(&gate), None, "and nothing recorded");
}

/// A route with `lead = true`: each of its form's submissions also a
/// Pipedrive lead on its person, exactly once, even when the answer to its
/// create is lost; the route's name and the person's in its title.
#[tokio::test]
async fn a_route_asks_for_a_lead_per_submission_and_gets_each_once() {
    let fake = PipedriveFake::start(TOKEN, Duration::ZERO).await.unwrap();
    fake.lose_answer(Lost::LeadCreate);
    let routes =
        shared::routes::parse("[[route]]\nform = \"f\"\nname = \"Pricing page\"\nlead = true\n")
            .unwrap();
    let route = Arc::new(routes.routes[0].clone());
    let pipedrive = pipedrive(settings(&fake));
    let first = receipt(
        "sub_1",
        "ada@example.com",
        "Ada Lovelace",
        "hello",
        1_795_941_500,
    );
    let second = receipt(
        "sub_2",
        "ada@example.com",
        "Ada Lovelace",
        "again",
        1_795_941_600,
    );
    for (receipt, lead) in [(&first, "sub_1"), (&second, "sub_2")] {
        let mut lead_of = shared::Lead::from_receipt(receipt).unwrap();
        lead_of.follow(Arc::clone(&route));
        let key = receipt.key();
        let mut answer = Err(worker::destinations::DestinationError::NotSent);
        for _ in 0..3 {
            answer = worker::destinations::Destination::upsert(&pipedrive, &lead_of, &key).await;
            if answer.is_ok() {
                break;
            }
        }
        assert!(answer.is_ok(), "{lead}: {answer:?}");
    }
    let leads = fake.leads();
    assert_eq!(leads.len(), 2, "one lead per submission: {leads:?}");
    assert!(
        leads[0]
            .title
            .starts_with("Pricing page: Ada Lovelace (ref "),
        "{}",
        leads[0].title
    );
    assert_ne!(leads[0].title, leads[1].title);
    assert_eq!(fake.notes().len(), 2);
    let lead_creates = fake
        .calls()
        .iter()
        .filter(|c| c.method == "POST" && c.path == "/api/v1/leads")
        .count();
    assert_eq!(lead_creates, 2, "the lost one found, not created again");
}
