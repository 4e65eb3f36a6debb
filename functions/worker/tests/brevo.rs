//! The `brevo` destination through the whole worker, against the Brevo
//! fake on 127.0.0.1 (devtools, built from Brevo's documented request and
//! answer shapes, with its rate limit's 429 and reset header) and the
//! in-memory receipt ledger and person memory.

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_edge::routes::RoutesInForce;
use devtools::fakes::brevo::{BrevoFake, Lost, Throttle};
use shared::newest::{GateKeySetting, GateSecret};
use shared::{Receipt, ReceiptStatus};
use worker::destinations::brevo::{default_field_map, Brevo, BrevoSettings};
use worker::destinations::memory::in_process::InProcessMemory;
use worker::destinations::port::{Destination, Forgotten, Person};
use worker::destinations::token::CrmToken;
use worker::ledger::memory::MemoryLedger;
use worker::Worker;

use common::*;

const KEY: &str = "xkeysib-test-key";
const GATE_KEY: &str = "a-test-gate-key-of-at-least-32-characters";

/// The contact form joins list 2 (no consent box); the newsletter form
/// joins lists 7 and 9 only with its box checked.
const ROUTES: &str = "[[route]]\nform = \"contact_form\"\nlists = [2]\n\
    [route.fields]\nplan = \"PLAN\"\n\n\
    [[route]]\nform = \"newsletter_form\"\nname = \"Newsletter\"\nlists = [7, 9]\n\
    [route.consent]\nfield = \"newsletter\"\n";

/// A Static Forms receipt of `form`, sent at `timestamp` (Unix seconds).
fn receipt(
    submission_id: &str,
    form: &str,
    email: &str,
    name: &str,
    extra: serde_json::Value,
    timestamp: u64,
) -> Receipt {
    let mut fields = serde_json::json!({"name": name, "email": email, "message": format!("Message of {submission_id} <b>&</b>")});
    if let (Some(fields), Some(extra)) = (fields.as_object_mut(), extra.as_object()) {
        fields.extend(extra.clone());
    }
    static_forms_receipt(submission_id, Some(form), fields, Some(timestamp))
}

fn brevo(fake: &BrevoFake) -> Brevo<InProcessMemory> {
    let settings = BrevoSettings {
        base_url: fake.base_url(),
        field_map: default_field_map(),
        gate_key: GateKeySetting::Inline(GateSecret::new(GATE_KEY).unwrap()),
    };
    Brevo::new(
        settings,
        CrmToken::new(KEY),
        GateSecret::new(GATE_KEY).unwrap(),
        InProcessMemory::new(),
    )
    .unwrap()
}

type BrevoWorker = Worker<Brevo<InProcessMemory>, MemoryLedger>;

fn worker(fake: &BrevoFake, ledger: MemoryLedger) -> BrevoWorker {
    let routes = RoutesInForce::fixed(Arc::new(shared::routes::parse(ROUTES).unwrap()));
    Worker::new(brevo(fake), ledger, 8)
        .with_retry_policy(fast_retries())
        .with_routes(routes)
}

fn calls(fake: &BrevoFake, method: &str, path: &str) -> usize {
    fake.calls()
        .iter()
        .filter(|c| c.method == method && c.path.split('?').next() == Some(path))
        .count()
}

/// Issue 62, done when: two submissions of one person, the first note's
/// answer lost and the stream batch replayed, make one contact with two
/// notes, each written once; the newer name wins; attributes and lists as
/// mapped; the receipt keeps the contact's id.
#[tokio::test]
async fn two_submissions_of_one_person_make_one_contact_and_two_notes_each_once() {
    let fake = BrevoFake::start(KEY).await.unwrap();
    let first = receipt(
        "sub_1",
        "contact_form",
        "Ada@Example.com ",
        "Ada Lovelace",
        serde_json::json!({"plan": "Pro"}),
        1_795_941_500,
    );
    let second = receipt(
        "sub_2",
        "contact_form",
        "ada@example.com",
        "Augusta Lovelace",
        serde_json::json!({"guests": "60"}),
        1_795_941_600,
    );
    let later = shared::clock::Adjustable::default();
    let worker = worker(&fake, ledger_of(&[&first, &second])).with_clock(later.clock());
    fake.lose_answer(Lost::NoteCreate);
    fake.lose_answer(Lost::ContactUpsert);

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
    let contacts = fake.contacts();
    assert_eq!(contacts.len(), 1, "one contact: {contacts:?}");
    let contact = &contacts[0];
    assert_eq!(contact.email, "ada@example.com");
    assert_eq!(contact.attributes["FIRSTNAME"], "Augusta", "the newer name");
    assert_eq!(contact.attributes["LASTNAME"], "Lovelace");
    assert_eq!(contact.attributes["PLAN"], "Pro", "the route's field map");
    assert_eq!(
        contact.list_ids,
        [2],
        "the route's list, no consent box asked"
    );
    let notes = fake.notes();
    assert_eq!(notes.len(), 2, "one note per submission: {notes:?}");
    assert_eq!(
        calls(&fake, "POST", "/v3/crm/notes"),
        2,
        "each note created once"
    );
    assert!(notes.iter().all(|note| note.contact_ids == [contact.id]));
    let note_of = |id: &str| {
        notes
            .iter()
            .find(|note| note.text.contains(&format!("submission {id} ")))
            .unwrap_or_else(|| panic!("{id}'s note: {notes:?}"))
    };
    assert!(
        note_of("sub_1")
            .text
            .contains("Message of sub_1 &lt;b&gt;&amp;&lt;/b&gt;<br />"),
        "escaped HTML: {}",
        note_of("sub_1").text
    );
    assert!(note_of("sub_2").text.contains("guests: 60"));
    let stored = worker.ledger().get(&second.pk).unwrap();
    assert_eq!(stored.delivered_to.as_deref(), Some("brevo"));
    assert_eq!(stored.record_id, Some(contact.id.to_string()));
}

/// A route with a consent box adds a contact to its lists only when a
/// fresh submission's box is checked; unchecked, missing, or checked two
/// days before delivery, the contact is kept off them.
#[tokio::test]
async fn a_consent_route_adds_to_its_lists_only_with_the_box_checked() {
    let fake = BrevoFake::start(KEY).await.unwrap();
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let rows = [
        (
            "sub_yes",
            "yes@example.com",
            serde_json::json!({"newsletter": "on"}),
            now - 60,
            vec![7, 9],
        ),
        (
            "sub_old",
            "old@example.com",
            serde_json::json!({"newsletter": "on"}),
            now - 2 * 86_400,
            vec![],
        ),
        (
            "sub_no",
            "no@example.com",
            serde_json::json!({"newsletter": ""}),
            now - 60,
            vec![],
        ),
        (
            "sub_missing",
            "missing@example.com",
            serde_json::json!({}),
            now - 60,
            vec![],
        ),
    ];
    let receipts: Vec<Receipt> = rows
        .iter()
        .map(|(id, email, extra, made, _)| {
            receipt(
                id,
                "newsletter_form",
                email,
                "Ada Lovelace",
                extra.clone(),
                *made,
            )
        })
        .collect();
    let all: Vec<&Receipt> = receipts.iter().collect();
    let worker = worker(&fake, ledger_of(&all));

    worker.handle(inserts(&all), in_seconds(30)).await;

    let contacts = fake.contacts();
    for (_, email, _, _, lists) in rows {
        let contact = contacts.iter().find(|c| c.email == email).expect(email);
        assert_eq!(contact.list_ids, lists, "{email}");
    }
}

/// A 429 waits the seconds its `x-sib-ratelimit-reset` says: a short one
/// within the invocation, a long one as the receipt's next attempt.
#[tokio::test]
async fn a_429_waits_its_reset() {
    let fake = BrevoFake::start(KEY).await.unwrap();
    let soon = receipt(
        "sub_soon",
        "contact_form",
        "soon@example.com",
        "Ada",
        serde_json::json!({}),
        1_795_941_500,
    );
    let worker = worker(&fake, ledger_of(&[&soon]));
    fake.throttle(Throttle {
        calls: 1,
        reset_seconds: 1,
    });
    worker.handle(inserts(&[&soon]), in_seconds(30)).await;
    assert_eq!(status_of(&worker, &soon), (ReceiptStatus::Completed, None));
    assert_eq!(fake.calls()[0].status, 429);

    let late = receipt(
        "sub_late",
        "contact_form",
        "late@example.com",
        "Ada",
        serde_json::json!({}),
        1_795_941_500,
    );
    let worker = self::worker(&fake, ledger_of(&[&late]));
    fake.throttle(Throttle {
        calls: 1,
        reset_seconds: 600,
    });
    let before = SystemTime::now();
    worker.handle(inserts(&[&late]), in_seconds(30)).await;
    let waiting = worker.ledger().get(&late.pk).unwrap();
    assert_eq!(waiting.status, ReceiptStatus::Received, "waiting");
    let next =
        shared::receipt::parse_timestamp(waiting.next_attempt_at.as_deref().unwrap()).unwrap();
    assert!(
        next >= before + Duration::from_secs(600),
        "the reset honoured"
    );
    assert!(next < before + Duration::from_secs(700));
    assert!(fake
        .contacts()
        .iter()
        .all(|c| c.email != "late@example.com"));
}

/// A rotated key: the 401 re-reads nothing here (no source), so the lead
/// waits as ours to fix, never FAILED; and an erased person's notes go
/// before the contact, a second erasure finding nothing.
#[tokio::test]
async fn a_person_is_erased_with_their_notes_and_a_repeat_finds_nothing() {
    let fake = BrevoFake::start(KEY).await.unwrap();
    let first = receipt(
        "sub_1",
        "contact_form",
        "ada@example.com",
        "Ada",
        serde_json::json!({}),
        1_795_941_500,
    );
    let other = receipt(
        "sub_2",
        "contact_form",
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

    let destination = brevo(&fake);
    let person = Person {
        email: "ada@example.com",
        record_ids: &[],
    };
    assert_eq!(destination.erase(person).await, Ok(Forgotten::Deleted(2)));
    assert_eq!(destination.erase(person).await, Ok(Forgotten::NotFound));
    assert_eq!(fake.contacts().len(), 1, "Bob stays");
    assert_eq!(fake.notes().len(), 1, "Bob's note stays");

    fake.rotate_key("xkeysib-another");
    let third = receipt(
        "sub_3",
        "contact_form",
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
        "a refused key is ours to fix"
    );
    assert_ne!(status, ReceiptStatus::Completed);
}
