//! The `mailchimp` destination through the whole worker, against the
//! Mailchimp fake on 127.0.0.1 (devtools, built from Mailchimp's documented
//! request and answer shapes, with its refusals and its limit of 10
//! connections at once) and the in-memory receipt ledger and person memory.

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_edge::routes::RoutesInForce;
use devtools::fakes::mailchimp::{KeptAway, Lost, MailchimpFake};
use shared::destination::mailchimp::subscriber_hash;
use shared::newest::{GateKeySetting, GateSecret};
use shared::{Receipt, ReceiptStatus};
use worker::destinations::mailchimp::{
    default_field_map, Mailchimp, MailchimpSettings, MAX_CONNECTIONS,
};
use worker::destinations::memory::in_process::InProcessMemory;
use worker::destinations::slots::in_process::InProcessSlots;
use worker::destinations::slots::AnySlots;
use worker::destinations::token::CrmToken;
use worker::ledger::memory::MemoryLedger;
use worker::Worker;

use common::*;

const KEY: &str = "0123456789abcdef0123456789abcdef-us21";
const LIST: &str = "a1b2c3d4e5";
const GATE_KEY: &str = "a-test-gate-key-of-at-least-32-characters";

/// The newsletter form asks for consent; the contact form does not.
const ROUTES: &str = "[[route]]\nform = \"newsletter_form\"\nname = \"Newsletter\"\n\
    tags = [\"newsletter\", \"website\"]\n\
    [route.consent]\nfield = \"newsletter\"\nmarketing_permission = \"3c9a1b2e5f\"\n";

/// A Static Forms receipt of `form`, sent at `timestamp` (Unix seconds).
fn receipt(
    submission_id: &str,
    form: &str,
    email: &str,
    name: &str,
    extra: serde_json::Value,
    timestamp: u64,
) -> Receipt {
    let mut fields = serde_json::json!({"name": name, "email": email, "message": format!("Message of {submission_id}")});
    if let (Some(fields), Some(extra)) = (fields.as_object_mut(), extra.as_object()) {
        fields.extend(extra.clone());
    }
    static_forms_receipt(submission_id, Some(form), fields, Some(timestamp))
}

fn mailchimp(fake: &MailchimpFake) -> Mailchimp<InProcessMemory> {
    mailchimp_sharing(fake, InProcessSlots::new(MAX_CONNECTIONS))
}

/// A Mailchimp destination whose call slots are `slots` (shared with other
/// "instances", or its own).
fn mailchimp_sharing(fake: &MailchimpFake, slots: InProcessSlots) -> Mailchimp<InProcessMemory> {
    let settings = MailchimpSettings {
        list_id: LIST.into(),
        base_url: Some(fake.base_url()),
        field_map: default_field_map(),
        gate_key: GateKeySetting::Inline(GateSecret::new(GATE_KEY).unwrap()),
    };
    Mailchimp::new(
        settings,
        fake.base_url(),
        CrmToken::new(KEY),
        GateSecret::new(GATE_KEY).unwrap(),
        InProcessMemory::new(),
        AnySlots::InProcess(slots),
    )
    .unwrap()
}

type MailchimpWorker = Worker<Mailchimp<InProcessMemory>, MemoryLedger>;

fn worker(fake: &MailchimpFake, ledger: MemoryLedger) -> MailchimpWorker {
    let routes = RoutesInForce::fixed(Arc::new(shared::routes::parse(ROUTES).unwrap()));
    Worker::new(mailchimp(fake), ledger, 8)
        .with_retry_policy(fast_retries())
        .with_routes(routes)
}

fn calls(fake: &MailchimpFake, method: &str, suffix: &str) -> usize {
    fake.calls()
        .iter()
        .filter(|c| c.method == method && c.path.ends_with(suffix))
        .count()
}

#[tokio::test]
async fn a_second_submission_updates_the_same_member_and_each_note_is_written_once() {
    let fake = MailchimpFake::start(KEY, LIST).await.unwrap();
    let first = receipt(
        "sub_1",
        "contact_form",
        "Ada@Example.com ",
        "Ada Lovelace",
        serde_json::json!({}),
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
    // The first note is written, and its answer lost.
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
    let members = fake.members();
    assert_eq!(members.len(), 1, "one member: {members:?}");
    let member = &members[0];
    assert_eq!(member.hash, subscriber_hash("ada@example.com"));
    assert_eq!(member.merge_fields["FNAME"], "Augusta", "the newer name");
    assert_eq!(member.merge_fields["LNAME"], "Lovelace");
    assert_eq!(
        member.status, "transactional",
        "no consent asked: no campaign"
    );
    assert!(
        !member.sent_status,
        "an existing member's status is never sent"
    );
    let notes = fake.notes();
    assert_eq!(notes.len(), 2, "one note per submission: {notes:?}");
    assert_eq!(calls(&fake, "POST", "/notes"), 2, "each note created once");
    assert!(
        notes[0].note.contains("Message of sub_1"),
        "{}",
        notes[0].note
    );
    assert!(notes[1].note.contains("guests: 60"), "{}", notes[1].note);
    let stored = worker.ledger().get(&second.pk).unwrap();
    assert_eq!(stored.delivered_to.as_deref(), Some("mailchimp"));
    assert_eq!(stored.record_id, Some(member.web_id.to_string()));
}

/// A ticked box makes a fresh submission's new member `pending` with the
/// route's marketing permission; an unticked or missing box, or a ticked
/// one on a submission made two days before its delivery (a redrive, an
/// import: the person may have opted out since), makes it `transactional`
/// without the permission.
#[tokio::test]
async fn a_checked_consent_box_makes_a_new_member_pending_and_anything_else_transactional() {
    let fake = MailchimpFake::start(KEY, LIST).await.unwrap();
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let rows = [
        (
            "sub_yes",
            "yes@example.com",
            serde_json::json!({"newsletter": "on"}),
            "pending",
        ),
        (
            "sub_old",
            "old@example.com",
            serde_json::json!({"newsletter": "on"}),
            "transactional",
        ),
        (
            "sub_no",
            "no@example.com",
            serde_json::json!({"newsletter": ""}),
            "transactional",
        ),
        (
            "sub_missing",
            "missing@example.com",
            serde_json::json!({}),
            "transactional",
        ),
    ];
    let receipts: Vec<Receipt> = rows
        .iter()
        .map(|(id, email, extra, _)| {
            let made = if *id == "sub_old" {
                now - 2 * 86_400
            } else {
                now - 60
            };
            receipt(
                id,
                "newsletter_form",
                email,
                "Ada Lovelace",
                extra.clone(),
                made,
            )
        })
        .collect();
    let all: Vec<&Receipt> = receipts.iter().collect();
    let worker = worker(&fake, ledger_of(&all));

    worker.handle(inserts(&all), in_seconds(30)).await;

    let members = fake.members();
    for (_, email, _, status) in rows {
        let member = members.iter().find(|m| m.email == email).expect(email);
        assert_eq!(member.status, status, "{email}");
        assert!(!member.sent_status);
        assert_eq!(
            member.tags,
            ["newsletter", "website"],
            "the route's tags, whatever the box"
        );
        let permitted = status == "pending";
        assert_eq!(
            member.permissions == ["3c9a1b2e5f"],
            permitted,
            "the marketing permission only with a checked box: {email}"
        );
    }
}

#[tokio::test]
async fn a_forgotten_person_is_refused_after_one_call_and_never_called_again() {
    let fake = MailchimpFake::start(KEY, LIST).await.unwrap();
    fake.keep_away("gone@example.com", KeptAway::Forgotten);
    fake.keep_away("unsubscribed@example.com", KeptAway::Compliance);
    let forgotten = receipt(
        "sub_gone",
        "contact_form",
        "gone@example.com",
        "Ada",
        serde_json::json!({}),
        1_795_941_500,
    );
    let compliance = receipt(
        "sub_unsub",
        "contact_form",
        "unsubscribed@example.com",
        "Ada",
        serde_json::json!({}),
        1_795_941_500,
    );
    let later = shared::clock::Adjustable::default();
    let worker = worker(&fake, ledger_of(&[&forgotten, &compliance])).with_clock(later.clock());

    worker
        .handle(inserts(&[&forgotten, &compliance]), in_seconds(30))
        .await;
    assert_eq!(
        calls(&fake, "PUT", &subscriber_hash("gone@example.com")),
        1,
        "one call"
    );
    later.advance(Duration::from_secs(3 * 3600));
    let pass = worker.reconcile(in_seconds(30)).await;
    worker.handle(inserts(&[&forgotten]), in_seconds(30)).await;

    for (receipt, code) in [
        (&forgotten, "Forgotten Email Not Subscribed"),
        (&compliance, "Member In Compliance State"),
    ] {
        let stored = worker.ledger().get(&receipt.pk).unwrap();
        assert_eq!(stored.status, ReceiptStatus::Refused);
        assert_eq!(stored.refusal.as_deref(), Some(code));
        assert_eq!(stored.payload, None, "no personal data kept");
        assert_eq!(stored.pending, None, "out of every queue");
        assert!(stored.expires_at.is_some(), "expires as a delivered one");
    }
    assert_eq!(pass.failed_receipts, Some(0), "no FAILED alarm");
    assert_eq!(pass.due, 0, "nothing due");
    assert_eq!(
        fake.calls().len(),
        2,
        "never called again: {:?}",
        fake.calls()
    );
    assert!(fake.members().is_empty() && fake.notes().is_empty());
}

/// Four instances of the worker, each delivering a stream batch of ten
/// persons with 8 calls at once, against an account that allows 10: with
/// the slots shared (as every instance shares the receipts table), never
/// more than 10 in flight and every lead delivered; with each instance
/// counting only its own, more than 10 (what the slots prevent).
#[tokio::test]
async fn four_instances_never_hold_more_than_ten_connections_at_once() {
    for shared_slots in [true, false] {
        let fake = MailchimpFake::start(KEY, LIST).await.unwrap();
        fake.set_delay(Duration::from_millis(100));
        let slots = InProcessSlots::new(MAX_CONNECTIONS);
        let instances: Vec<(Vec<Receipt>, MailchimpWorker)> = (0..4)
            .map(|instance| {
                let receipts: Vec<Receipt> = (0..10)
                    .map(|n| {
                        receipt(
                            &format!("sub_{instance}_{n}"),
                            "contact_form",
                            &format!("person{instance}x{n}@example.com"),
                            "Ada Lovelace",
                            serde_json::json!({}),
                            1_795_941_500,
                        )
                    })
                    .collect();
                let all: Vec<&Receipt> = receipts.iter().collect();
                let own = if shared_slots {
                    slots.clone()
                } else {
                    InProcessSlots::new(MAX_CONNECTIONS)
                };
                let worker = Worker::new(mailchimp_sharing(&fake, own), ledger_of(&all), 8)
                    .with_retry_policy(fast_retries());
                (receipts, worker)
            })
            .collect();

        futures_util::future::join_all(instances.iter().map(|(receipts, worker)| {
            let all: Vec<&Receipt> = receipts.iter().collect();
            // Without shared slots the calls past 10 are refused (429) and
            // wait seconds: a short invocation leaves them to a pass.
            worker.handle(inserts(&all), in_seconds(if shared_slots { 60 } else { 3 }))
        }))
        .await;

        if shared_slots {
            assert!(
                fake.most_in_flight() <= 10,
                "at most 10 at once: {}",
                fake.most_in_flight()
            );
            assert!(
                fake.calls().iter().all(|c| c.status != 429),
                "never refused as too many"
            );
            for (receipts, worker) in &instances {
                for receipt in receipts {
                    assert_eq!(status_of(worker, receipt), (ReceiptStatus::Completed, None));
                }
            }
            assert_eq!(fake.members().len(), 40);
        } else {
            assert!(
                fake.most_in_flight() > 10,
                "the limit is the slots' doing: {}",
                fake.most_in_flight()
            );
        }
    }
}

/// A late, older submission of a person Mailchimp refused for good: no
/// member to keep its note on, so it is written as a new submission would
/// be, and refused the same way (REFUSED, not a retry until it gives up).
#[tokio::test]
async fn an_older_submission_of_a_refused_person_delivered_late_is_refused_too() {
    let fake = MailchimpFake::start(KEY, LIST).await.unwrap();
    fake.keep_away("gone@example.com", KeptAway::Forgotten);
    let newer = receipt(
        "sub_new",
        "contact_form",
        "gone@example.com",
        "Ada",
        serde_json::json!({}),
        1_795_941_600,
    );
    let older = receipt(
        "sub_old",
        "contact_form",
        "gone@example.com",
        "Ada",
        serde_json::json!({}),
        1_795_941_500,
    );
    let worker = worker(&fake, ledger_of(&[&newer, &older]));

    worker.handle(inserts(&[&newer]), in_seconds(30)).await;
    worker.handle(inserts(&[&older]), in_seconds(30)).await;

    for receipt in [&newer, &older] {
        let stored = worker.ledger().get(&receipt.pk).unwrap();
        assert_eq!(stored.status, ReceiptStatus::Refused, "{}", receipt.pk);
        assert_eq!(
            stored.refusal.as_deref(),
            Some("Forgotten Email Not Subscribed")
        );
    }
}
