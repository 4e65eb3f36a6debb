//! The `attio` destination through the whole worker, against the Attio
//! fake on 127.0.0.1 (devtools, built from Attio's documented request and
//! answer shapes, with its rate limit's 429 and HTTP-date `Retry-After`)
//! and the in-memory receipt ledger and person memory.

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_edge::routes::RoutesInForce;
use devtools::fakes::attio::{AttioFake, Lost, Throttle};
use shared::newest::{GateKeySetting, GateSecret};
use shared::{Receipt, ReceiptStatus};
use worker::destinations::attio::{default_field_map, Attio, AttioSettings};
use worker::destinations::memory::in_process::InProcessMemory;
use worker::destinations::port::{Destination, Forgotten, Person};
use worker::destinations::token::CrmToken;
use worker::ledger::memory::MemoryLedger;
use worker::Worker;

use common::*;

const TOKEN: &str = "attio-test-token";
const GATE_KEY: &str = "a-test-gate-key-of-at-least-32-characters";

/// The contact form maps its `role` field to the person's job title.
const ROUTES: &str = "[[route]]\nform = \"contact_form\"\n[route.fields]\nrole = \"job_title\"\n";

/// A Static Forms receipt of `form`, sent at `timestamp` (Unix seconds).
fn receipt(
    submission_id: &str,
    email: &str,
    name: &str,
    extra: serde_json::Value,
    timestamp: u64,
) -> Receipt {
    let mut fields = serde_json::json!({"name": name, "email": email, "message": format!("Message of {submission_id}")});
    if let (Some(fields), Some(extra)) = (fields.as_object_mut(), extra.as_object()) {
        fields.extend(extra.clone());
    }
    static_forms_receipt(submission_id, Some("contact_form"), fields, Some(timestamp))
}

fn attio(fake: &AttioFake) -> Attio<InProcessMemory> {
    let settings = AttioSettings {
        base_url: fake.base_url(),
        field_map: default_field_map(),
        gate_key: GateKeySetting::Inline(GateSecret::new(GATE_KEY).unwrap()),
    };
    Attio::new(
        settings,
        CrmToken::new(TOKEN),
        GateSecret::new(GATE_KEY).unwrap(),
        InProcessMemory::new(),
    )
    .unwrap()
}

type AttioWorker = Worker<Attio<InProcessMemory>, MemoryLedger>;

fn worker(fake: &AttioFake, ledger: MemoryLedger) -> AttioWorker {
    let routes = RoutesInForce::fixed(Arc::new(shared::routes::parse(ROUTES).unwrap()));
    Worker::new(attio(fake), ledger, 8)
        .with_retry_policy(fast_retries())
        .with_routes(routes)
}

fn calls(fake: &AttioFake, method: &str, path: &str) -> usize {
    fake.calls()
        .iter()
        .filter(|c| c.method == method && c.path.split('?').next() == Some(path))
        .count()
}

/// Issue 62, done when: two submissions of one person, the assert's and
/// the first note's answers lost and the stream batch replayed, make one
/// person record with two notes, each written once; the newer name wins;
/// attributes as mapped; the receipt keeps the record's id and link.
#[tokio::test]
async fn two_submissions_of_one_person_make_one_record_and_two_notes_each_once() {
    let fake = AttioFake::start(TOKEN).await.unwrap();
    let first = receipt(
        "sub_1",
        "Ada@Example.com ",
        "Ada Lovelace",
        serde_json::json!({"role": "Analyst"}),
        1_795_941_500,
    );
    let second = receipt(
        "sub_2",
        "ada@example.com",
        "Augusta Lovelace",
        serde_json::json!({"guests": "60"}),
        1_795_941_600,
    );
    let later = shared::clock::Adjustable::default();
    let worker = worker(&fake, ledger_of(&[&first, &second])).with_clock(later.clock());
    fake.lose_answer(Lost::NoteCreate);
    fake.lose_answer(Lost::PersonAssert);

    worker
        .handle(inserts(&[&first, &second]), in_seconds(30))
        .await;
    // The stream delivers the batch again.
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
    let people = fake.people();
    assert_eq!(people.len(), 1, "one person record: {people:?}");
    let person = &people[0];
    assert_eq!(person.email_addresses, ["ada@example.com"]);
    assert_eq!(
        person.values["name"],
        serde_json::json!([{"first_name": "Augusta", "last_name": "Lovelace", "full_name": "Augusta Lovelace"}]),
        "the newer name"
    );
    assert_eq!(
        person.values["job_title"], "Analyst",
        "the route's field map"
    );
    let notes = fake.notes();
    assert_eq!(notes.len(), 2, "one note per submission: {notes:?}");
    assert_eq!(
        calls(&fake, "POST", "/v2/notes"),
        2,
        "each note created once"
    );
    assert!(notes.iter().all(|note| note.parent_record_id == person.id));
    let note_of = |id: &str| {
        notes
            .iter()
            .find(|note| note.content.contains(&format!("submission {id} ")))
            .unwrap_or_else(|| panic!("{id}'s note: {notes:?}"))
    };
    assert!(note_of("sub_1").content.starts_with("Message of sub_1\n"));
    assert!(note_of("sub_2").content.contains("guests: 60"));
    let stored = worker.ledger().get(&second.pk).unwrap();
    assert_eq!(stored.delivered_to.as_deref(), Some("attio"));
    assert_eq!(stored.record_id.as_deref(), Some(person.id.as_str()));
    assert_eq!(
        stored.record_url,
        Some(format!("https://app.attio.com/local/person/{}", person.id)),
        "the record's link"
    );
}

/// A person someone keeps in Attio with two addresses is updated by id,
/// never asserted: an assert would replace their addresses with one.
#[tokio::test]
async fn a_known_person_keeps_every_address_they_have() {
    let fake = AttioFake::start(TOKEN).await.unwrap();
    let id = fake.add_person(&["ada@work.example", "ada@example.com"]);
    let lead = receipt(
        "sub_1",
        "ada@example.com",
        "Ada Lovelace",
        serde_json::json!({}),
        1_795_941_500,
    );
    let worker = worker(&fake, ledger_of(&[&lead]));
    worker.handle(inserts(&[&lead]), in_seconds(30)).await;

    assert_eq!(status_of(&worker, &lead), (ReceiptStatus::Completed, None));
    let people = fake.people();
    assert_eq!(people.len(), 1);
    assert_eq!(people[0].id, id);
    assert_eq!(
        people[0].email_addresses,
        ["ada@work.example", "ada@example.com"]
    );
    assert_eq!(
        calls(&fake, "PUT", "/v2/objects/people/records"),
        0,
        "no assert"
    );
    assert_eq!(fake.notes().len(), 1);
}

/// A 429 waits the date its `Retry-After` names: a short one within the
/// invocation, a long one as the receipt's next attempt.
#[tokio::test]
async fn a_429_waits_its_retry_after_date() {
    let fake = AttioFake::start(TOKEN).await.unwrap();
    let soon = receipt(
        "sub_soon",
        "soon@example.com",
        "Ada",
        serde_json::json!({}),
        1_795_941_500,
    );
    let worker = worker(&fake, ledger_of(&[&soon]));
    fake.throttle(Throttle {
        calls: 1,
        retry_after_seconds: 1,
    });
    worker.handle(inserts(&[&soon]), in_seconds(30)).await;
    assert_eq!(status_of(&worker, &soon), (ReceiptStatus::Completed, None));
    assert_eq!(fake.calls()[0].status, 429);

    let late = receipt(
        "sub_late",
        "late@example.com",
        "Ada",
        serde_json::json!({}),
        1_795_941_500,
    );
    let worker = self::worker(&fake, ledger_of(&[&late]));
    fake.throttle(Throttle {
        calls: 1,
        retry_after_seconds: 600,
    });
    let before = SystemTime::now();
    worker.handle(inserts(&[&late]), in_seconds(30)).await;
    let waiting = worker.ledger().get(&late.pk).unwrap();
    assert_eq!(waiting.status, ReceiptStatus::Received, "waiting");
    let next =
        shared::receipt::parse_timestamp(waiting.next_attempt_at.as_deref().unwrap()).unwrap();
    // The date has whole seconds: a second less may be asked.
    assert!(
        next >= before + Duration::from_secs(598),
        "the Retry-After date honoured"
    );
    assert!(next < before + Duration::from_secs(700));
    assert!(fake
        .people()
        .iter()
        .all(|p| !p.email_addresses.contains(&"late@example.com".to_owned())));
}

/// An erased person's notes go before their record, a second erasure
/// finding nothing; and a rotated token leaves a lead waiting as ours to
/// fix, never FAILED.
#[tokio::test]
async fn a_person_is_erased_with_their_notes_and_a_repeat_finds_nothing() {
    let fake = AttioFake::start(TOKEN).await.unwrap();
    let first = receipt(
        "sub_1",
        "ada@example.com",
        "Ada",
        serde_json::json!({}),
        1_795_941_500,
    );
    let other = receipt(
        "sub_2",
        "bob@example.com",
        "Bob",
        serde_json::json!({}),
        1_795_941_500,
    );
    let worker = worker(&fake, ledger_of(&[&first, &other]));
    worker
        .handle(inserts(&[&first, &other]), in_seconds(30))
        .await;
    assert_eq!(fake.notes().len(), 2);

    let destination = attio(&fake);
    let person = Person {
        email: "ada@example.com",
        record_ids: &[],
    };
    assert_eq!(destination.erase(person).await, Ok(Forgotten::Deleted(2)));
    assert_eq!(destination.erase(person).await, Ok(Forgotten::NotFound));
    assert_eq!(fake.people().len(), 1, "Bob stays");
    assert_eq!(fake.notes().len(), 1, "Bob's note stays");

    fake.rotate_token("attio-another");
    let third = receipt(
        "sub_3",
        "bob@example.com",
        "Bob",
        serde_json::json!({}),
        1_795_941_600,
    );
    let worker = self::worker(&fake, ledger_of(&[&third]));
    worker.handle(inserts(&[&third]), in_seconds(30)).await;
    let (status, _) = status_of(&worker, &third);
    assert_ne!(
        status,
        ReceiptStatus::Failed,
        "a refused token is ours to fix"
    );
    assert_ne!(status, ReceiptStatus::Completed);
}
