//! One receipt, several destinations, as logic: two scripted destinations
//! (in memory: what each answers, and every call counted) and the in-memory
//! ledger. Each destination of a receipt is delivered exactly once and on
//! its own; the receipt's status follows from its lanes. The same
//! promises through real HTTP fakes and a DynamoDB-protocol server are in
//! integration/tests/several_destinations.rs.

mod common;

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use shared::clock::Adjustable;
use shared::lanes::LaneState;
use shared::record::DeliveredRecord;
use shared::{IdempotencyKey, Lead, Receipt, ReceiptStatus};
use worker::destinations::{Destination, DestinationError, Upserted};
use worker::ledger::memory::{MemoryLedger, WatchedLedger};
use worker::Worker;

use common::{fast_retries, in_seconds, inserts, static_forms_receipt};

/// A destination that answers from a script (then `Written` for ever) and
/// counts its calls per receipt.
struct Scripted {
    name: &'static str,
    script: Mutex<VecDeque<Result<Upserted, DestinationError>>>,
    calls: Mutex<Vec<String>>,
}

impl Scripted {
    fn new(name: &'static str) -> Self {
        Scripted {
            name,
            script: Mutex::new(VecDeque::new()),
            calls: Mutex::new(Vec::new()),
        }
    }

    fn answering(
        self,
        answers: impl IntoIterator<Item = Result<Upserted, DestinationError>>,
    ) -> Self {
        self.script.lock().unwrap().extend(answers);
        self
    }

    fn calls(&self) -> usize {
        self.calls.lock().unwrap().len()
    }
}

impl Destination for Scripted {
    async fn erase(
        &self,
        _person: worker::destinations::Person<'_>,
    ) -> Result<worker::destinations::Forgotten, worker::destinations::DestinationError> {
        Ok(worker::destinations::Forgotten::NotFound)
    }

    fn name(&self) -> &'static str {
        self.name
    }

    async fn upsert(
        &self,
        lead: &Lead,
        _key: &IdempotencyKey,
    ) -> Result<Upserted, DestinationError> {
        self.calls.lock().unwrap().push(lead.external_id.clone());
        let next = self.script.lock().unwrap().pop_front();
        next.unwrap_or_else(|| {
            Ok(Upserted::Written(DeliveredRecord::with_id(&format!(
                "{}-{}",
                self.name, lead.external_id
            ))))
        })
    }
}

fn unavailable() -> Result<Upserted, DestinationError> {
    Err(DestinationError::Retryable {
        status: Some(503),
        retry_after: None,
        reason: "http-503".into(),
    })
}

fn receipt(submission_id: &str) -> Receipt {
    of_form(submission_id, "contact_form")
}

/// A Static Forms receipt of the form whose apiKey is `form`.
fn of_form(submission_id: &str, form: &str) -> Receipt {
    let fields = serde_json::json!({"name": "Ada", "email": "ada@example.com", "message": "Hello"});
    static_forms_receipt(submission_id, Some(form), fields, None)
}

fn worker_of<L: worker::ledger::ReceiptLedger + worker::ledger::PendingQueue>(
    crm: Scripted,
    list: Scripted,
    ledger: L,
    clock: &Adjustable,
) -> Worker<Scripted, L> {
    Worker::new(crm, ledger, 8)
        .also_to([list])
        .with_retry_policy(fast_retries())
        .with_clock(clock.clock())
}

fn stored(worker: &Worker<Scripted, MemoryLedger>, receipt: &Receipt) -> Receipt {
    worker
        .ledger()
        .get(&receipt.pk)
        .expect("the receipt exists")
}

fn lane_states(receipt: &Receipt) -> Vec<(&str, LaneState)> {
    receipt
        .destinations
        .iter()
        .map(|(name, lane)| (name.as_str(), lane.state))
        .collect()
}

#[tokio::test]
async fn a_receipt_goes_to_each_destination_once_and_keeps_no_personal_data() {
    let clock = Adjustable::default();
    let a = receipt("sub_a");
    let worker = worker_of(
        Scripted::new("crm"),
        Scripted::new("list"),
        MemoryLedger::holding([&a]),
        &clock,
    );

    let response = worker.handle(inserts(&[&a]), in_seconds(30)).await;
    assert!(response.batch_item_failures.is_empty());
    let again = worker.handle(inserts(&[&a]), in_seconds(30)).await;
    assert!(again.batch_item_failures.is_empty());

    let [crm, list] = worker.destinations() else {
        panic!("two destinations")
    };
    assert_eq!(
        (crm.calls(), list.calls()),
        (1, 1),
        "once each, a replay writes nothing"
    );
    let after = stored(&worker, &a);
    assert_eq!(after.status, ReceiptStatus::Completed);
    assert_eq!(
        lane_states(&after),
        [("crm", LaneState::Written), ("list", LaneState::Written)]
    );
    assert_eq!(
        after.destinations["crm"].record_id.as_deref(),
        Some("crm-sub_a")
    );
    assert_eq!(after.destinations["list"].attempts, 1);
    assert_eq!(after.delivered_to.as_deref(), Some("crm,list"));
    assert_eq!(
        after.payload, None,
        "no personal data once every destination has it"
    );
    assert_eq!((after.pending, after.claimed_until), (None, None));
}

#[tokio::test]
async fn a_destination_that_is_down_holds_back_no_other_and_is_written_once_it_recovers() {
    let clock = Adjustable::default();
    let a = receipt("sub_down");
    let worker = worker_of(
        Scripted::new("crm"),
        Scripted::new("list").answering([unavailable(), unavailable(), unavailable()]),
        MemoryLedger::holding([&a]),
        &clock,
    );

    worker.handle(inserts(&[&a]), in_seconds(30)).await;

    let [crm, list] = worker.destinations() else {
        panic!("two destinations")
    };
    assert_eq!(crm.calls(), 1, "written at once");
    let waiting = stored(&worker, &a);
    assert_eq!(waiting.status, ReceiptStatus::Received);
    assert_eq!(
        lane_states(&waiting),
        [("crm", LaneState::Written), ("list", LaneState::Pending)]
    );
    let list_lane = &waiting.destinations["list"];
    assert_eq!(list_lane.last_error.as_deref(), Some("http-503"));
    assert!(list_lane.next_attempt_at.is_some());
    assert_eq!(
        waiting.next_attempt_at, list_lane.next_attempt_at,
        "due when the list is"
    );
    assert!(
        waiting.payload.is_some(),
        "kept until every destination has it"
    );

    // An hour on, a pass: the list recovered; the CRM is not called again.
    clock.advance(Duration::from_secs(3600));
    let pass = worker.reconcile(in_seconds(30)).await;
    assert_eq!(pass.due, 1, "{pass:?}");
    assert_eq!((crm.calls(), list.calls()), (1, 4));
    let done = stored(&worker, &a);
    assert_eq!(done.status, ReceiptStatus::Completed);
    assert_eq!(
        lane_states(&done),
        [("crm", LaneState::Written), ("list", LaneState::Written)]
    );
    assert_eq!(done.destinations["list"].attempts, 4);
    assert_eq!(done.destinations["list"].last_error, None);
}

#[tokio::test]
async fn a_refusal_beside_a_write_completes_the_receipt_and_every_refusal_refuses_it() {
    let clock = Adjustable::default();
    let refused = || {
        Err(DestinationError::Refused {
            status: Some(400),
            code: "Member In Compliance State".into(),
        })
    };
    let (one, both) = (receipt("sub_one"), receipt("sub_both"));
    let worker = worker_of(
        Scripted::new("crm"),
        Scripted::new("list").answering([refused()]),
        MemoryLedger::holding([&one]),
        &clock,
    );
    worker.handle(inserts(&[&one]), in_seconds(30)).await;
    let after = stored(&worker, &one);
    assert_eq!(after.status, ReceiptStatus::Completed);
    assert_eq!(
        lane_states(&after),
        [("crm", LaneState::Written), ("list", LaneState::Refused)]
    );
    assert_eq!(
        after.destinations["list"].last_error.as_deref(),
        Some("Member In Compliance State")
    );
    assert_eq!(after.delivered_to.as_deref(), Some("crm"));

    let worker = worker_of(
        Scripted::new("crm").answering([refused()]),
        Scripted::new("list").answering([refused()]),
        MemoryLedger::holding([&both]),
        &clock,
    );
    worker.handle(inserts(&[&both]), in_seconds(30)).await;
    let after = stored(&worker, &both);
    assert_eq!(after.status, ReceiptStatus::Refused);
    assert_eq!(after.refusal.as_deref(), Some("Member In Compliance State"));
    assert_eq!(after.payload, None);
}

/// The worker dies after one destination settled and before the receipt's
/// last write: the next delivery calls only the destination whose answer
/// was never recorded. The crash is injected at the receipt's completion
/// (always the last write of a receipt both destinations write), so which
/// destination landed first does not matter.
#[tokio::test]
async fn a_crash_between_two_destinations_never_calls_the_settled_one_again() {
    let clock = Adjustable::default();
    let a = receipt("sub_crash");
    let worker = worker_of(
        Scripted::new("crm"),
        Scripted::new("list"),
        WatchedLedger::new(MemoryLedger::holding([&a])).failing_first(1),
        &clock,
    );

    let response = worker.handle(inserts(&[&a]), in_seconds(30)).await;
    assert_eq!(
        response.batch_item_failures.len(),
        1,
        "nothing final recorded"
    );
    let saved = worker.ledger().inner.get(&a.pk).unwrap();
    assert_eq!(saved.status, ReceiptStatus::Received);
    let settled: Vec<&str> = saved
        .destinations
        .iter()
        .filter(|(_, lane)| lane.state == LaneState::Written)
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(settled.len(), 1, "the first to land was saved: {saved:?}");

    // Its claim lapses; a pass delivers what is still open.
    clock.advance(Duration::from_secs(3600));
    worker.reconcile(in_seconds(30)).await;
    let [crm, list] = worker.destinations() else {
        panic!("two destinations")
    };
    let calls = |name: &str| {
        if name == "crm" {
            crm.calls()
        } else {
            list.calls()
        }
    };
    assert_eq!(
        calls(settled[0]),
        1,
        "the saved destination is never called again"
    );
    assert_eq!(crm.calls() + list.calls(), 3);
    let done = worker.ledger().inner.get(&a.pk).unwrap();
    assert_eq!(done.status, ReceiptStatus::Completed);
}

/// A destination failing for good leaves the receipt FAILED once nothing
/// is pending; a redrive retries only the failed destination.
#[tokio::test]
async fn a_redriven_receipt_calls_only_its_failed_destination() {
    let clock = Adjustable::default();
    let a = receipt("sub_failed");
    let worker = worker_of(
        Scripted::new("crm"),
        Scripted::new("list").answering([Err(DestinationError::Permanent {
            status: Some(400),
            reason: "http-400".into(),
        })]),
        MemoryLedger::holding([&a]),
        &clock,
    );
    worker.handle(inserts(&[&a]), in_seconds(30)).await;
    let failed = stored(&worker, &a);
    assert_eq!(failed.status, ReceiptStatus::Failed);
    assert_eq!(failed.failure_reason.as_deref(), Some("http-400"));
    assert_eq!(
        lane_states(&failed),
        [("crm", LaneState::Written), ("list", LaneState::Failed)]
    );

    // What `receipts redrive` does: RECEIVED again, due now.
    let now = shared::receipt::format_timestamp(clock.clock()());
    worker.ledger().insert(Receipt {
        status: ReceiptStatus::Received,
        pending: Some(shared::receipt::PENDING.into()),
        next_attempt_at: Some(now),
        received_at: shared::receipt::format_timestamp(
            SystemTime::now() - Duration::from_secs(3600),
        ),
        ..failed
    });
    clock.advance(Duration::from_secs(60));
    worker.reconcile(in_seconds(30)).await;
    let [crm, list] = worker.destinations() else {
        panic!("two destinations")
    };
    assert_eq!(
        (crm.calls(), list.calls()),
        (1, 2),
        "the CRM is not written again"
    );
    let done = stored(&worker, &a);
    assert_eq!(done.status, ReceiptStatus::Completed);
    assert_eq!(
        lane_states(&done),
        [("crm", LaneState::Written), ("list", LaneState::Written)]
    );
}

/// The routes choose: a route's `destinations`, else the file's, else
/// every destination; a route that chooses one destination gives its
/// receipt that one lane.
#[tokio::test]
async fn routes_choose_each_forms_destinations() {
    let clock = Adjustable::default();
    // A file names catalog destinations; the scripted ones are `crm`
    // and `list`: the parsed routes are renamed to them.
    let mut routes = shared::routes::parse(
        "destinations = [\"http\"]\n\
         [[route]]\nform = \"newsletter_form\"\nname = \"Newsletter\"\ndestinations = [\"dynamodb\"]\n\
         [[route]]\nform = \"contact_form\"\nname = \"Contact\"\ndestinations = [\"http\", \"dynamodb\"]\n",
    )
    .unwrap();
    let rename = |names: &mut Vec<String>| {
        for name in names.iter_mut() {
            *name = if name == "http" {
                "crm".into()
            } else {
                "list".into()
            };
        }
    };
    rename(&mut routes.destinations);
    for route in &mut routes.routes {
        rename(&mut route.destinations);
    }
    let (contact, newsletter, other) = (
        of_form("sub_contact", "contact_form"),
        of_form("sub_news", "newsletter_form"),
        of_form("sub_other", "other_form"),
    );
    let worker = worker_of(
        Scripted::new("crm"),
        Scripted::new("list"),
        MemoryLedger::holding([&contact, &newsletter, &other]),
        &clock,
    )
    .with_routes(aws_edge::routes::RoutesInForce::fixed(std::sync::Arc::new(
        routes,
    )));

    let response = worker
        .handle(inserts(&[&contact, &newsletter, &other]), in_seconds(30))
        .await;
    assert!(response.batch_item_failures.is_empty());

    let [crm, list] = worker.destinations() else {
        panic!("two destinations")
    };
    let mut crm_calls = crm.calls.lock().unwrap().clone();
    let mut list_calls = list.calls.lock().unwrap().clone();
    crm_calls.sort();
    list_calls.sort();
    assert_eq!(crm_calls, ["sub_contact", "sub_other"]);
    assert_eq!(list_calls, ["sub_contact", "sub_news"]);
    let news = stored(&worker, &newsletter);
    assert_eq!(news.status, ReceiptStatus::Completed);
    assert_eq!(lane_states(&news), [("list", LaneState::Written)]);
    assert_eq!(news.delivered_to.as_deref(), Some("list"));
    assert_eq!(
        news.destinations["list"].record_id.as_deref(),
        Some("list-sub_news")
    );
    assert_eq!(
        lane_states(&stored(&worker, &contact)),
        [("crm", LaneState::Written), ("list", LaneState::Written)]
    );
    assert_eq!(stored(&worker, &other).delivered_to.as_deref(), Some("crm"));
}

/// The new-lead notice of a receipt of several destinations is sent once,
/// when every destination settled, naming each that has the lead and its
/// record; a destination still waiting holds it back.
#[tokio::test]
async fn one_notice_once_every_destination_settled_naming_each() {
    let clock = Adjustable::default();
    let endpoint = devtools::notice_endpoint::NoticeEndpoint::start(0)
        .await
        .unwrap();
    let a = receipt("sub_notice");
    let worker = worker_of(
        Scripted::new("crm"),
        Scripted::new("list").answering([unavailable(), unavailable(), unavailable()]),
        MemoryLedger::holding([&a]),
        &clock,
    )
    .with_notifier(Some(worker::notice::Notifier::new(endpoint.url()).unwrap()));

    worker.handle(inserts(&[&a]), in_seconds(30)).await;
    assert_eq!(endpoint.calls(), 0, "the list has not settled");

    clock.advance(Duration::from_secs(3600));
    worker.reconcile(in_seconds(30)).await;
    worker.reconcile(in_seconds(30)).await;
    let accepted = endpoint.accepted();
    assert_eq!(accepted.len(), 1, "once: {accepted:?}");
    let places: Vec<(&str, &str)> = accepted[0]["lead"]["destinations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["destination"].as_str().unwrap(),
                d["recordId"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        places,
        [("crm", "crm-sub_notice"), ("list", "list-sub_notice")]
    );
    let text = accepted[0]["text"].as_str().unwrap();
    assert!(
        text.contains("in crm (record crm-sub_notice) and list (record list-sub_notice)."),
        "{text}"
    );
}

/// A receipt the stack deferred while it had one destination (no lanes:
/// its attempts and last error on the receipt), delivered after the stack
/// gained a second: each destination once, its lanes written with the
/// status, and its earlier attempts kept.
#[tokio::test]
async fn a_receipt_deferred_before_a_second_destination_goes_to_both_once() {
    let clock = Adjustable::default();
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let mut deferred = receipt("sub_before");
    deferred.received_at = shared::receipt::format_timestamp(hour_ago);
    deferred.attempts = 2;
    deferred.last_error = Some("http-503".into());
    deferred.last_http_status = Some(503);
    deferred.next_attempt_at = Some(shared::receipt::format_timestamp(hour_ago));
    let worker = worker_of(
        Scripted::new("crm"),
        Scripted::new("list"),
        MemoryLedger::holding([&deferred]),
        &clock,
    );

    let pass = worker.reconcile(in_seconds(30)).await;
    assert_eq!((pass.due, pass.delivered), (1, 1), "{pass:?}");
    worker.reconcile(in_seconds(30)).await;

    let [crm, list] = worker.destinations() else {
        panic!("two destinations")
    };
    assert_eq!((crm.calls(), list.calls()), (1, 1));
    let done = stored(&worker, &deferred);
    assert_eq!(done.status, ReceiptStatus::Completed);
    assert_eq!(
        lane_states(&done),
        [("crm", LaneState::Written), ("list", LaneState::Written)]
    );
    assert_eq!(done.attempts, 4, "the earlier two and one per destination");
}

/// A lane for a destination the stack no longer has cannot be delivered:
/// it is FAILED (`destination-not-in-stack`), so the receipt ends FAILED
/// for a person instead of waiting for ever, and no other destination is
/// called again.
#[tokio::test]
async fn a_lane_of_a_destination_the_stack_no_longer_has_fails_for_a_person() {
    use shared::lanes::Lane;
    let clock = Adjustable::default();
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let mut waiting = receipt("sub_gone");
    waiting.received_at = shared::receipt::format_timestamp(hour_ago);
    waiting.next_attempt_at = Some(shared::receipt::format_timestamp(hour_ago));
    waiting.destinations.insert(
        "crm".into(),
        Lane {
            state: LaneState::Written,
            attempts: 1,
            ..Lane::pending()
        },
    );
    waiting
        .destinations
        .insert("zapier".into(), Lane::pending());
    let worker = worker_of(
        Scripted::new("crm"),
        Scripted::new("list"),
        MemoryLedger::holding([&waiting]),
        &clock,
    );

    let pass = worker.reconcile(in_seconds(30)).await;
    assert_eq!(pass.due, 1, "{pass:?}");
    let [crm, list] = worker.destinations() else {
        panic!("two destinations")
    };
    assert_eq!((crm.calls(), list.calls()), (0, 0));
    let failed = stored(&worker, &waiting);
    assert_eq!(failed.status, ReceiptStatus::Failed);
    assert_eq!(
        failed.failure_reason.as_deref(),
        Some(shared::lanes::DESTINATION_NOT_IN_STACK)
    );
    assert_eq!(
        lane_states(&failed),
        [("crm", LaneState::Written), ("zapier", LaneState::Failed)]
    );
}
