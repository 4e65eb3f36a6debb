//! Each lead by its form's route: the route's constants and field map reach
//! the CRM for its form's leads only, and a receipt that names a form is not
//! delivered by a guess while the routes cannot be read. A real HTTP CRM on
//! 127.0.0.1 (the devtools stub) and the in-memory ledger.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_edge::routes::{RoutesInForce, RoutesUnreadable};
use devtools::crm_stub::CrmStub;
use shared::refresh::Source;
use shared::routes::Routes;
use shared::{Receipt, ReceiptStatus};
use worker::destinations::http::HttpCrm;
use worker::ledger::memory::MemoryLedger;
use worker::Worker;

use common::{fast_retries, in_seconds, inserts, static_forms_receipt, status_of};

/// A Static Forms receipt of the form whose apiKey is `form`.
fn receipt(submission_id: &str, form: &str) -> Receipt {
    let fields =
        serde_json::json!({"name": "Ada", "email": "ada@example.com", "lead_source": "typed"});
    static_forms_receipt(submission_id, Some(form), fields, None)
}

const ROUTES: &str = "[[route]]\nform = \"pricing_form\"\nname = \"Pricing\"\n\
    [route.set]\nlead_source = \"Pricing page\"\nscore = 10\n";

/// Routes read from a script: each read takes the next answer.
struct Scripted(Mutex<Vec<Result<Routes, &'static str>>>);

impl Source<Arc<Routes>, RoutesUnreadable> for Scripted {
    fn fetch(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<Arc<Routes>, RoutesUnreadable>> + Send + '_>> {
        let answer = self.0.lock().unwrap().remove(0);
        Box::pin(async move {
            answer
                .map(Arc::new)
                .map_err(|code| RoutesUnreadable(code.to_owned()))
        })
    }
}

fn worker(
    crm: &CrmStub,
    ledger: MemoryLedger,
    routes: RoutesInForce,
    clock: &shared::clock::Adjustable,
) -> Worker<HttpCrm, MemoryLedger> {
    let destination = HttpCrm::new(crm.leads_url(), None).unwrap();
    Worker::new(destination, ledger, 8)
        .with_retry_policy(fast_retries())
        .with_routes(routes)
        .with_clock(clock.clock())
}

#[tokio::test]
async fn a_routes_constants_reach_the_crm_for_its_form_only() {
    let crm = CrmStub::start().await.unwrap();
    let pricing = receipt("sub_pricing", "pricing_form");
    let contact = receipt("sub_contact", "contact_form");
    let routes = RoutesInForce::fixed(Arc::new(shared::routes::parse(ROUTES).unwrap()));
    let clock = shared::clock::Adjustable::default();
    let worker = worker(
        &crm,
        MemoryLedger::holding([&pricing, &contact]),
        routes,
        &clock,
    );

    let answer = worker
        .handle(inserts(&[&pricing, &contact]), in_seconds(30))
        .await;

    assert!(answer.batch_item_failures.is_empty());
    let routed = crm.lead("sub_pricing").expect("the pricing lead");
    assert_eq!(
        routed.body["fields"]["lead_source"], "Pricing page",
        "the route's word wins"
    );
    assert_eq!(routed.body["fields"]["score"], 10);
    let other = crm.lead("sub_contact").expect("the contact lead");
    assert_eq!(
        other.body["fields"]["lead_source"], "typed",
        "another form keeps its own"
    );
    assert!(
        other.body["fields"].get("score").is_none(),
        "{}",
        other.body
    );
}

#[tokio::test]
async fn a_form_waits_while_the_routes_cannot_be_read_then_follows_them() {
    let crm = CrmStub::start().await.unwrap();
    let pricing = receipt("sub_pricing", "pricing_form");
    let source = Scripted(Mutex::new(vec![
        Err("ProvisionedThroughputExceededException"),
        Err("ProvisionedThroughputExceededException"),
        Ok(shared::routes::parse(ROUTES).unwrap()),
    ]));
    let routes = RoutesInForce::read_from(Arc::new(source), Duration::from_secs(300)).await;
    let later = shared::clock::Adjustable::default();
    let worker = worker(&crm, MemoryLedger::holding([&pricing]), routes, &later);

    let first = worker.handle(inserts(&[&pricing]), in_seconds(30)).await;

    assert!(
        first.batch_item_failures.is_empty(),
        "its outcome is recorded"
    );
    assert_eq!(crm.writes(), 0, "nothing sent by a guess");
    let waiting = worker.ledger().get(&pricing.pk).unwrap();
    assert_eq!(waiting.status, ReceiptStatus::Received);
    assert_eq!(waiting.last_error.as_deref(), Some("routes-unreadable"));
    assert_eq!(waiting.attempts, 0, "no attempt was made");
    assert_eq!(
        waiting.unrecorded_claims, 0,
        "never a suspect for our fault"
    );
    assert_eq!(waiting.claimed_until, None);

    // The stream delivers the record again: its receipt was deferred, so
    // nothing happens. The next pass, once it is due, finds the routes
    // readable and delivers it by its route.
    let again = worker.handle(inserts(&[&pricing]), in_seconds(30)).await;
    assert!(again.batch_item_failures.is_empty());
    assert_eq!(crm.writes(), 0);
    later.advance(Duration::from_secs(3600));
    let pass = worker.reconcile(in_seconds(30)).await;
    assert_eq!(crm.writes(), 1, "{pass:?}");
    assert_eq!(
        crm.lead("sub_pricing").unwrap().body["fields"]["lead_source"],
        "Pricing page"
    );
    assert_eq!(status_of(&worker, &pricing).0, ReceiptStatus::Completed);
}
