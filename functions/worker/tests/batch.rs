//! The worker's batch logic against a real HTTP CRM on 127.0.0.1 (the
//! devtools stub) and an in-memory receipt ledger that keeps DynamoDB's
//! "update only if it exists" rule.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use aws_lambda_events::event::dynamodb::Event;
use devtools::crm_stub::{Answer, CrmStub};
use devtools::stream_event;
use serde_json::Value;
use shared::{FormSubmission, Receipt, ReceiptStatus};
use worker::config::CrmToken;
use worker::destinations::http::HttpCrm;
use worker::destinations::token::{Source, TokenError};
use worker::destinations::Destination;
use worker::ledger::memory::{MemoryLedger, WatchedLedger};
use worker::ledger::{
    AttemptRecord, Census, Claim, Cursor, DuePage, DueQuery, GatePass, LedgerError, Marked,
    PendingQueue, ReceiptLedger,
};
use worker::Worker;

use common::{fast_retries, in_seconds, static_forms_receipt};

fn receipt(submission_id: &str, email: &str) -> Receipt {
    let fields =
        serde_json::json!({"name": "Ada", "email": email, "message": "Hello", "company": "AE"});
    static_forms_receipt(submission_id, None, fields, None)
}

fn insert(receipt: &Receipt, sequence_number: &str) -> Value {
    stream_event::record("INSERT", receipt, sequence_number)
}

/// `count` receipts named `<prefix><n>`, a ledger holding them RECEIVED,
/// and their INSERT records in one event, sequence numbers from `first`.
fn batch(prefix: &str, count: usize, first: usize) -> (Vec<Receipt>, MemoryLedger, Event) {
    let receipts: Vec<Receipt> = (0..count)
        .map(|n| receipt(&format!("{prefix}{n:03}"), "x@example.com"))
        .collect();
    let ledger = MemoryLedger::holding(&receipts);
    let records = receipts
        .iter()
        .enumerate()
        .map(|(n, r)| insert(r, &(first + n).to_string()))
        .collect();
    (receipts, ledger, event(records))
}

fn event(records: Vec<Value>) -> Event {
    serde_json::from_value(stream_event::event(records)).expect("a Lambda DynamoDB event")
}

fn failed_sequence_numbers(
    response: &aws_lambda_events::event::streams::DynamoDbEventResponse,
) -> Vec<Option<String>> {
    response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect()
}

fn http_worker(crm: &CrmStub, ledger: MemoryLedger) -> Worker<HttpCrm, MemoryLedger> {
    let destination = HttpCrm::new(crm.leads_url(), None).unwrap();
    Worker::new(destination, ledger, 8).with_retry_policy(fast_retries())
}

#[tokio::test]
async fn seed_test_3_repeated_stream_delivery_still_produces_one_logical_lead() {
    let crm = CrmStub::start().await.unwrap();
    let receipt = receipt("sub_123", "ada@example.com");
    let worker = http_worker(&crm, MemoryLedger::holding([&receipt]));
    let record = insert(&receipt, "100");

    let first = worker
        .handle(event(vec![record.clone()]), in_seconds(30))
        .await;
    let second = worker.handle(event(vec![record]), in_seconds(30)).await;

    assert!(first.batch_item_failures.is_empty());
    assert!(second.batch_item_failures.is_empty());
    assert_eq!(crm.lead_count(), 1);
    let lead = crm.lead("sub_123").unwrap();
    assert_eq!(
        lead.writes, 1,
        "the record delivered again found its receipt settled: no CRM call"
    );
    assert_eq!(lead.body["email"], "ada@example.com");
    assert_eq!(lead.body["externalId"], "sub_123");
    assert_eq!(lead.body["fields"]["company"], "AE");
    assert_eq!(
        lead.idempotency_key.as_deref(),
        Some("staticforms:form.submitted:sub_123")
    );
    let delivered = worker.ledger().get(&receipt.pk).unwrap();
    assert_eq!(delivered.status, ReceiptStatus::Completed);
    assert_eq!(
        delivered.payload, None,
        "a delivered receipt keeps no form data"
    );
    assert_eq!(delivered.payload_fingerprint, receipt.payload_fingerprint);
}

#[tokio::test]
async fn keep_payload_after_delivery_keeps_the_form_data() {
    let crm = CrmStub::start().await.unwrap();
    let receipt = receipt("sub_kept", "ada@example.com");
    let rules = worker::decide::DeliveryRules {
        keep_payload: true,
        ..Default::default()
    };
    let worker = http_worker(&crm, MemoryLedger::holding([&receipt])).with_delivery_rules(rules);
    let response = worker
        .handle(event(vec![insert(&receipt, "1")]), in_seconds(30))
        .await;
    assert!(response.batch_item_failures.is_empty());
    let delivered = worker.ledger().get(&receipt.pk).unwrap();
    assert_eq!(delivered.status, ReceiptStatus::Completed);
    assert_eq!(delivered.payload, receipt.payload);
}

#[tokio::test]
async fn seed_failure_case_3_upsert_succeeds_then_the_receipt_update_fails() {
    let crm = CrmStub::start().await.unwrap();
    let receipt = receipt("sub_crash", "ada@example.com");
    // The first completion fails, as if the worker crashed after the upsert.
    let ledger = WatchedLedger::new(MemoryLedger::holding([&receipt])).failing_first(1);
    let later = shared::clock::Adjustable::default();
    let worker = Worker::new(HttpCrm::new(crm.leads_url(), None).unwrap(), ledger, 8)
        .with_clock(later.clock());
    let record = insert(&receipt, "200");

    let first = worker
        .handle(event(vec![record.clone()]), in_seconds(30))
        .await;
    assert_eq!(
        failed_sequence_numbers(&first),
        vec![Some("200".to_owned())]
    );
    assert_eq!(
        worker.ledger().inner.get(&receipt.pk).unwrap().status,
        ReceiptStatus::Received
    );

    // The event source mapping delivers the record again: the receipt is
    // still claimed by the delivery that died, so nothing is sent.
    let again = worker.handle(event(vec![record]), in_seconds(30)).await;
    assert!(again.batch_item_failures.is_empty());
    assert_eq!(crm.lead("sub_crash").unwrap().writes, 1);

    // Once the claim has lapsed, a pass delivers it again, to the same key.
    later.advance(Duration::from_secs(3600));
    let report = worker.reconcile(in_seconds(30)).await;
    assert_eq!(report.delivered, 1, "{report:?}");
    assert_eq!(crm.lead_count(), 1, "updated, not duplicated");
    assert_eq!(crm.lead("sub_crash").unwrap().writes, 2);
    assert_eq!(
        worker.ledger().inner.get(&receipt.pk).unwrap().status,
        ReceiptStatus::Completed
    );
}

#[tokio::test]
async fn a_receipt_deleted_before_completion_is_not_recreated() {
    let crm = CrmStub::start().await.unwrap();
    let receipt = receipt("sub_expired", "ada@example.com");
    let worker = http_worker(&crm, MemoryLedger::default());

    let response = worker
        .handle(event(vec![insert(&receipt, "300")]), in_seconds(30))
        .await;

    assert!(
        response.batch_item_failures.is_empty(),
        "a vanished receipt counts as done"
    );
    assert_eq!(crm.lead_count(), 0, "its claim failed: nothing is sent");
    assert!(worker.ledger().is_empty(), "no receipt was re-created");
}

#[tokio::test]
async fn a_429_with_retry_after_is_waited_out_then_succeeds() {
    let crm = CrmStub::start().await.unwrap();
    crm.script("sub_429", [Answer::retry_after(429, "1")]);
    let receipt = receipt("sub_429", "ada@example.com");
    let worker = http_worker(&crm, MemoryLedger::holding([&receipt]));

    let response = worker
        .handle(event(vec![insert(&receipt, "400")]), in_seconds(30))
        .await;

    assert!(response.batch_item_failures.is_empty());
    let calls = crm.calls_for("sub_429");
    assert_eq!(calls.len(), 2);
    assert!(
        calls[1].at - calls[0].at >= Duration::from_millis(950),
        "Retry-After: 1 was honoured"
    );
    assert!(
        calls
            .iter()
            .all(|c| c.idempotency_key.as_deref() == Some(receipt.pk.as_str())),
        "same key on every attempt"
    );
    assert_eq!(
        worker.ledger().get(&receipt.pk).unwrap().status,
        ReceiptStatus::Completed
    );
}

#[tokio::test]
async fn two_503s_then_success() {
    let crm = CrmStub::start().await.unwrap();
    crm.script("sub_503", [Answer::status(503), Answer::status(503)]);
    let receipt = receipt("sub_503", "ada@example.com");
    let worker = http_worker(&crm, MemoryLedger::holding([&receipt]));

    let response = worker
        .handle(event(vec![insert(&receipt, "500")]), in_seconds(30))
        .await;

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(crm.calls_for("sub_503").len(), 3);
    assert_eq!(crm.lead_count(), 1);
    assert_eq!(
        worker.ledger().get(&receipt.pk).unwrap().status,
        ReceiptStatus::Completed
    );
}

#[tokio::test]
async fn a_failure_that_outlasts_the_invocation_is_deferred_to_the_reconciler() {
    let crm = CrmStub::start().await.unwrap();
    crm.always("sub_down", Answer::status(503));
    let down = receipt("sub_down", "a@example.com");
    let fine = receipt("sub_fine", "b@example.com");
    let worker = http_worker(&crm, MemoryLedger::holding([&down, &fine]));

    let deadline = Instant::now() + Duration::from_millis(1500);
    let before = SystemTime::now();
    let response = worker
        .handle(
            event(vec![insert(&fine, "600"), insert(&down, "601")]),
            deadline,
        )
        .await;

    assert!(
        Instant::now() < deadline,
        "the worker stopped before the invocation timed out"
    );
    assert!(
        response.batch_item_failures.is_empty(),
        "the shard moves on: the receipt says when to try again"
    );
    let calls = crm.calls_for("sub_down").len();
    assert!(calls >= 2, "it retried while there was time");
    let waiting = worker.ledger().get(&down.pk).unwrap();
    assert_eq!(waiting.status, ReceiptStatus::Received);
    assert_eq!(waiting.attempts as usize, calls);
    assert_eq!(waiting.last_error.as_deref(), Some("HTTP 503"));
    assert_eq!(waiting.last_http_status, Some(503));
    let next =
        shared::receipt::parse_timestamp(waiting.next_attempt_at.as_deref().unwrap()).unwrap();
    assert!(
        next >= before + Duration::from_secs(60),
        "backed off across invocations by at least a minute"
    );
    assert_eq!(
        worker.ledger().get(&fine.pk).unwrap().status,
        ReceiptStatus::Completed
    );
}

#[tokio::test]
async fn a_crm_that_is_down_holds_a_batch_for_a_few_attempts_not_the_whole_timeout() {
    let crm = CrmStub::start().await.unwrap();
    crm.fail_all(Answer::status(503));
    let (receipts, ledger, batch) = batch("sub_down_", 20, 680);
    let worker = http_worker(&crm, ledger);

    // Fifteen minutes left: the invocation could retry for all of them.
    let response = worker.handle(batch, in_seconds(900)).await;

    assert!(response.batch_item_failures.is_empty());
    for r in &receipts {
        assert_eq!(
            crm.calls_for(&r.submission_id).len(),
            3,
            "RetryPolicy::max_attempts, then the reconciler owns it"
        );
        let waiting = worker.ledger().get(&r.pk).unwrap();
        assert_eq!(
            (waiting.status, waiting.attempts),
            (ReceiptStatus::Received, 3)
        );
        assert!(
            waiting.next_attempt_at.is_some(),
            "a next attempt is always set"
        );
    }
}

/// A CRM slower than the invocation: every answer that came is recorded,
/// no call is started that cannot finish, and the next pass writes only
/// what was not written. Each lead is written once, except at most the
/// one call in flight at the deadline.
#[tokio::test]
async fn a_crm_slower_than_the_invocation_writes_each_lead_once() {
    let crm = CrmStub::start().await.unwrap();
    crm.set_delay(Duration::from_millis(400));
    let (receipts, ledger, batch) = batch("sub_slow_", 10, 900);
    let later = shared::clock::Adjustable::default();
    let destination = HttpCrm::new(crm.leads_url(), None).unwrap();
    let worker = Worker::new(destination, ledger, 1)
        .with_retry_policy(fast_retries())
        .with_clock(later.clock());

    // About seven calls fit before the margin; ten leads are due.
    let response = worker.handle(batch, in_seconds(3)).await;
    assert!(response.batch_item_failures.is_empty());

    let written: Vec<&Receipt> = receipts
        .iter()
        .filter(|r| crm.lead(&r.submission_id).is_some())
        .collect();
    assert!(
        written.len() >= 4 && written.len() < 10,
        "some, not all, were written: {}",
        written.len()
    );
    let recorded = written
        .iter()
        .filter(|r| worker.ledger().get(&r.pk).unwrap().status == ReceiptStatus::Completed)
        .count();
    assert!(
        recorded + 1 >= written.len(),
        "every answer that came is recorded ({recorded} of {} written)",
        written.len()
    );

    // The next pass, once the claims have ended, writes the rest.
    later.advance(Duration::from_secs(3600));
    crm.set_delay(Duration::ZERO);
    worker.reconcile(in_seconds(30)).await;
    let mut twice = 0;
    for r in &receipts {
        assert_eq!(
            worker.ledger().get(&r.pk).unwrap().status,
            ReceiptStatus::Completed,
            "{}",
            r.submission_id
        );
        let writes = crm.lead(&r.submission_id).unwrap().writes;
        assert!(writes <= 2, "{}: {writes}", r.submission_id);
        twice += usize::from(writes == 2);
    }
    assert!(
        twice <= 1,
        "only the call in flight at the deadline may be written again: {twice}"
    );
}

#[tokio::test]
async fn with_no_time_for_an_attempt_the_receipt_waits_for_the_next_pass_untouched() {
    let crm = CrmStub::start().await.unwrap();
    let receipt = receipt("sub_late", "a@example.com");
    let worker = http_worker(&crm, MemoryLedger::holding([&receipt]));
    let before = worker.ledger().get(&receipt.pk).unwrap();

    // Less time left than the safety margin: no attempt fits.
    let response = worker
        .handle(
            event(vec![insert(&receipt, "640")]),
            Instant::now() + Duration::from_millis(100),
        )
        .await;

    assert!(response.batch_item_failures.is_empty());
    assert!(crm.calls().is_empty());
    let after = worker.ledger().get(&receipt.pk).unwrap();
    // No attempt, nothing recorded, no backoff: only the claim, which ends
    // about a minute after this invocation; then the next pass takes it.
    // The next attempt (the queue index's key) is untouched.
    let claimed_until = after.claimed_until.clone().unwrap();
    assert!(claimed_until > before.next_attempt_at.clone().unwrap());
    assert_eq!(after.next_attempt_at, before.next_attempt_at);
    assert_eq!(after.unrecorded_claims, 1, "one claim, no outcome recorded");
    assert_eq!(
        Receipt {
            claimed_until: None,
            unrecorded_claims: 0,
            ..after
        },
        before
    );
}

#[tokio::test]
async fn a_retry_after_longer_than_the_invocation_sets_the_next_attempt() {
    let crm = CrmStub::start().await.unwrap();
    crm.always("sub_later", Answer::retry_after(429, "3600"));
    let receipt = receipt("sub_later", "a@example.com");
    let worker = http_worker(&crm, MemoryLedger::holding([&receipt]));

    let before = SystemTime::now();
    let response = worker
        .handle(event(vec![insert(&receipt, "650")]), in_seconds(30))
        .await;

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(
        crm.calls_for("sub_later").len(),
        1,
        "no waiting inside the invocation"
    );
    let waiting = worker.ledger().get(&receipt.pk).unwrap();
    let next =
        shared::receipt::parse_timestamp(waiting.next_attempt_at.as_deref().unwrap()).unwrap();
    assert!(
        next >= before + Duration::from_secs(3600),
        "Retry-After honoured"
    );
    assert!(next < before + Duration::from_secs(3700));
}

#[tokio::test]
async fn a_retry_after_too_large_for_time_arithmetic_does_not_panic() {
    let crm = CrmStub::start().await.unwrap();
    crm.always(
        "sub_huge",
        Answer::retry_after(503, "99999999999999999999999"),
    );
    let receipt = receipt("sub_huge", "a@example.com");
    let worker = http_worker(&crm, MemoryLedger::holding([&receipt]));

    let response = worker
        .handle(event(vec![insert(&receipt, "660")]), in_seconds(30))
        .await;

    assert!(response.batch_item_failures.is_empty());
    let waiting = worker.ledger().get(&receipt.pk).unwrap();
    assert_eq!(waiting.status, ReceiptStatus::Received);
    assert!(waiting.next_attempt_at.is_some());
}

/// A token source that hands out the rotated token, counting reads.
struct RotatedToken {
    reads: AtomicUsize,
}

impl Source<CrmToken, TokenError> for RotatedToken {
    fn fetch(&self) -> Pin<Box<dyn Future<Output = Result<CrmToken, TokenError>> + Send + '_>> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(CrmToken::new("rotated-token").unwrap()) })
    }
}

#[tokio::test]
async fn a_401_re_reads_the_token_once_and_delivers() {
    let crm = CrmStub::start().await.unwrap();
    crm.require_bearer("rotated-token");
    let (receipts, ledger, batch) = batch("sub_rot_", 5, 660);
    let source = Arc::new(RotatedToken {
        reads: AtomicUsize::new(0),
    });
    let crm_client = HttpCrm::new(crm.leads_url(), CrmToken::new("old-token"))
        .unwrap()
        .refreshing_from(source.clone(), Duration::ZERO);
    let worker = Worker::new(crm_client, ledger, 1).with_retry_policy(fast_retries());

    let response = worker.handle(batch, in_seconds(30)).await;

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(crm.lead_count(), 5);
    assert_eq!(
        source.reads.load(Ordering::SeqCst),
        1,
        "one re-read, then the new token"
    );
    for r in &receipts {
        assert_eq!(
            worker.ledger().get(&r.pk).unwrap().status,
            ReceiptStatus::Completed
        );
    }
}

/// A token source whose secret was deleted.
struct DeletedToken;

impl Source<CrmToken, TokenError> for DeletedToken {
    fn fetch(&self) -> Pin<Box<dyn Future<Output = Result<CrmToken, TokenError>> + Send + '_>> {
        Box::pin(async { Err(TokenError::unreadable("ResourceNotFoundException")) })
    }
}

#[tokio::test]
async fn a_deleted_token_secret_is_withdrawn_and_nothing_more_is_sent() {
    let crm = CrmStub::start().await.unwrap();
    crm.require_bearer("a-token-we-do-not-have");
    let first = receipt("sub_gone_1", "a@example.com");
    let second = receipt("sub_gone_2", "b@example.com");
    let crm_client = HttpCrm::new(crm.leads_url(), CrmToken::new("old-token"))
        .unwrap()
        .refreshing_from(Arc::new(DeletedToken), Duration::ZERO);
    let worker = Worker::new(crm_client, MemoryLedger::holding([&first, &second]), 8)
        .with_retry_policy(fast_retries());

    worker
        .handle(event(vec![insert(&first, "1")]), in_seconds(30))
        .await;
    let calls_after_first = crm.calls().len();
    assert_eq!(
        calls_after_first, 1,
        "one refused call, then the re-read found it deleted"
    );
    worker
        .handle(event(vec![insert(&second, "2")]), in_seconds(30))
        .await;
    assert_eq!(
        crm.calls().len(),
        calls_after_first,
        "the withdrawn token is never sent again"
    );
    let waiting = worker.ledger().get(&second.pk).unwrap();
    assert_eq!(
        waiting.status,
        ReceiptStatus::Received,
        "pending, never FAILED"
    );
    assert_eq!(
        waiting.last_error.as_deref(),
        Some("credentials-unavailable")
    );
}

#[tokio::test]
async fn a_401_that_persists_keeps_the_receipt_pending_never_failed() {
    let crm = CrmStub::start().await.unwrap();
    crm.require_bearer("a-token-we-do-not-have");
    let receipt = receipt("sub_401", "a@example.com");
    let source = Arc::new(RotatedToken {
        reads: AtomicUsize::new(0),
    });
    let crm_client = HttpCrm::new(crm.leads_url(), CrmToken::new("old-token"))
        .unwrap()
        .refreshing_from(source.clone(), Duration::from_secs(60));
    let worker = Worker::new(crm_client, MemoryLedger::holding([&receipt]), 8)
        .with_retry_policy(fast_retries());

    let response = worker
        .handle(event(vec![insert(&receipt, "670")]), in_seconds(30))
        .await;

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(
        source.reads.load(Ordering::SeqCst),
        0,
        "no read due within the interval"
    );
    assert_eq!(
        crm.calls_for("sub_401").len(),
        1,
        "an auth error is not retried in place"
    );
    let waiting = worker.ledger().get(&receipt.pk).unwrap();
    assert_eq!(waiting.status, ReceiptStatus::Received);
    assert_eq!(waiting.last_error.as_deref(), Some("destination-auth"));
    assert_eq!(waiting.last_http_status, Some(401));
}

#[tokio::test]
async fn a_permanent_400_marks_the_receipt_failed_and_the_batch_goes_on() {
    let crm = CrmStub::start().await.unwrap();
    crm.always("sub_bad", Answer::status(400));
    let bad = receipt("sub_bad", "a@example.com");
    let others: Vec<Receipt> = (0..3)
        .map(|i| receipt(&format!("sub_ok_{i}"), "b@example.com"))
        .collect();
    let worker = http_worker(&crm, MemoryLedger::holding(others.iter().chain([&bad])));

    let mut records = vec![insert(&bad, "700")];
    records.extend(
        others
            .iter()
            .enumerate()
            .map(|(i, r)| insert(r, &format!("70{}", i + 1))),
    );
    let response = worker.handle(event(records), in_seconds(30)).await;

    assert!(
        response.batch_item_failures.is_empty(),
        "a permanent failure does not block the shard"
    );
    assert_eq!(crm.calls_for("sub_bad").len(), 1, "a 400 is not retried");
    let failed = worker.ledger().get(&bad.pk).unwrap();
    assert_eq!(failed.status, ReceiptStatus::Failed);
    assert_eq!(failed.failure_reason.as_deref(), Some("HTTP 400"));
    assert_eq!(failed.failure_http_status, Some(400));
    for other in &others {
        assert_eq!(
            worker.ledger().get(&other.pk).unwrap().status,
            ReceiptStatus::Completed
        );
    }
}

#[tokio::test]
async fn a_batch_of_100_runs_with_bounded_concurrency() {
    let crm = CrmStub::start().await.unwrap();
    crm.set_delay(Duration::from_millis(50));
    let (_, ledger, batch) = batch("sub_", 100, 1000);
    let worker = http_worker(&crm, ledger);

    let response = worker.handle(batch, in_seconds(60)).await;

    assert!(response.batch_item_failures.is_empty());
    assert_eq!(crm.lead_count(), 100);
    assert_eq!(
        crm.max_in_flight(),
        8,
        "exactly WORKER_CONCURRENCY calls ran at once"
    );
}

#[tokio::test]
async fn records_that_need_no_work_are_skipped() {
    let crm = CrmStub::start().await.unwrap();
    let receipt = receipt("sub_skip", "a@example.com");
    let mut completed = receipt.clone();
    completed.status = ReceiptStatus::Completed;
    let worker = http_worker(&crm, MemoryLedger::holding([&receipt]));

    let records = vec![
        stream_event::record("MODIFY", &completed, "800"),
        stream_event::record("REMOVE", &receipt, "801"),
        stream_event::record("INSERT", &completed, "802"),
    ];
    let response = worker.handle(event(records), in_seconds(30)).await;

    assert!(response.batch_item_failures.is_empty());
    assert!(crm.calls().is_empty());
    assert_eq!(
        worker.ledger().get(&receipt.pk).unwrap().status,
        ReceiptStatus::Received
    );
}

#[tokio::test]
async fn an_unreadable_receipt_is_marked_failed() {
    let crm = CrmStub::start().await.unwrap();
    let mut broken = receipt("sub_broken", "a@example.com");
    broken.payload = Some("{not json".into());
    let worker = http_worker(&crm, MemoryLedger::holding([&broken]));

    let response = worker
        .handle(event(vec![insert(&broken, "900")]), in_seconds(30))
        .await;

    assert!(response.batch_item_failures.is_empty());
    assert!(crm.calls().is_empty());
    assert_eq!(
        worker.ledger().get(&broken.pk).unwrap().status,
        ReceiptStatus::Failed
    );
}

#[tokio::test]
async fn the_crm_token_is_sent_as_a_bearer_token() {
    let crm = CrmStub::start().await.unwrap();
    let receipt = receipt("sub_auth", "a@example.com");
    let worker = Worker::new(
        HttpCrm::new(crm.leads_url(), Some(test_token())).unwrap(),
        MemoryLedger::holding([&receipt]),
        8,
    );
    worker
        .handle(event(vec![insert(&receipt, "950")]), in_seconds(30))
        .await;
    assert_eq!(
        crm.lead("sub_auth").unwrap().authorization.as_deref(),
        Some("Bearer crm-secret-token")
    );
}

/// A token the way production gets one: through the configuration.
fn test_token() -> CrmToken {
    let config = worker::Config::from_lookup(|name| match name {
        "RECEIPTS_TABLE" => Some("receipts".into()),
        "DESTINATION" => Some("http".into()),
        "CRM_URL" => Some("http://127.0.0.1/leads/{externalId}".into()),
        "CRM_TOKEN" => Some("crm-secret-token".into()),
        _ => None,
    })
    .unwrap();
    match config.destinations.first().settings() {
        Some(worker::destinations::http::HttpConfig {
            token: worker::config::TokenSetting::Inline(token),
            ..
        }) => token.clone(),
        _ => unreachable!("http configuration with a token"),
    }
}

/// A ledger where another delivery completes each receipt right after this
/// one claimed it (a claim that lapsed while its CRM call was slow).
struct CompletedElsewhere(MemoryLedger);

impl ReceiptLedger for CompletedElsewhere {
    async fn admit_newest(
        &self,
        gate: &str,
        pass: &GatePass<'_>,
        expires_at: u64,
    ) -> Result<bool, LedgerError> {
        self.0.admit_newest(gate, pass, expires_at).await
    }
    async fn first_of_identical(
        &self,
        item: &str,
        first: &shared::duplicates::FirstSubmission,
    ) -> Result<Option<String>, LedgerError> {
        self.0.first_of_identical(item, first).await
    }
    async fn erased_at(&self, marker: &str) -> Result<Option<String>, LedgerError> {
        self.0.erased_at(marker).await
    }
    async fn claim_notice(
        &self,
        key: &shared::IdempotencyKey,
        until: &shared::receipt::Timestamp,
        now: &shared::receipt::Timestamp,
    ) -> Result<worker::ledger::NoticeClaim, LedgerError> {
        self.0.claim_notice(key, until, now).await
    }
    async fn settle_notice(
        &self,
        key: &shared::IdempotencyKey,
        held: &shared::receipt::Timestamp,
        sent: &worker::ledger::NoticeSent,
    ) -> Result<Marked, LedgerError> {
        self.0.settle_notice(key, held, sent).await
    }
    async fn claim_alone(
        &self,
        key: &shared::IdempotencyKey,
        held: &shared::receipt::Timestamp,
    ) -> Result<Claim, LedgerError> {
        self.0.claim_alone(key, held).await
    }
    async fn claim(
        &self,
        key: &shared::IdempotencyKey,
        seen: Option<&shared::receipt::Timestamp>,
        until: &shared::receipt::Timestamp,
        now: &shared::receipt::Timestamp,
    ) -> Result<Claim, LedgerError> {
        let claim = self.0.claim(key, seen, until, now).await;
        let other = AttemptRecord::new(1, shared::receipt::Timestamp::at(SystemTime::now()));
        self.0
            .mark_completed(
                key,
                &other,
                &worker::ledger::Completion {
                    expires_at: 1,
                    keep_payload: false,
                    destination: "http".into(),
                    ending: worker::ledger::Ending::Delivered(
                        shared::record::DeliveredRecord::unknown(),
                    ),
                    notice: None,
                },
            )
            .await?;
        claim
    }
    async fn mark_completed(
        &self,
        key: &shared::IdempotencyKey,
        attempt: &AttemptRecord,
        completion: &worker::ledger::Completion,
    ) -> Result<Marked, LedgerError> {
        self.0.mark_completed(key, attempt, completion).await
    }
    async fn save_lanes(
        &self,
        key: &shared::IdempotencyKey,
        held: &shared::receipt::Timestamp,
        lanes: &shared::lanes::Lanes,
    ) -> Result<Marked, LedgerError> {
        self.0.save_lanes(key, held, lanes).await
    }
    async fn mark_failed(
        &self,
        key: &shared::IdempotencyKey,
        failure: &worker::decide::AttemptError,
        attempt: &AttemptRecord,
    ) -> Result<Marked, LedgerError> {
        self.0.mark_failed(key, failure, attempt).await
    }
    async fn defer(
        &self,
        key: &shared::IdempotencyKey,
        next_attempt_at: &shared::receipt::Timestamp,
        error: &worker::decide::AttemptError,
        attempt: &AttemptRecord,
    ) -> Result<Marked, LedgerError> {
        self.0.defer(key, next_attempt_at, error, attempt).await
    }
}

impl PendingQueue for CompletedElsewhere {
    async fn census(&self, deadline: Instant) -> Result<Census, LedgerError> {
        self.0.census(deadline).await
    }
    async fn due(&self, query: &DueQuery, from: Option<&Cursor>) -> Result<DuePage, LedgerError> {
        self.0.due(query, from).await
    }
}

#[tokio::test]
async fn an_outcome_another_delivery_settled_first_is_counted_there_not_here() {
    let crm = CrmStub::start().await.unwrap();
    crm.always("sub_both", Answer::status(400));
    let mut receipt = receipt("sub_both", "a@example.com");
    receipt.received_at =
        shared::receipt::format_timestamp(SystemTime::now() - Duration::from_secs(3600));
    let worker = Worker::new(
        HttpCrm::new(crm.leads_url(), None).unwrap(),
        CompletedElsewhere(MemoryLedger::holding([&receipt])),
        8,
    )
    .with_retry_policy(fast_retries());

    let pass = worker.reconcile(in_seconds(30)).await;

    assert_eq!(
        (pass.failed, pass.skipped),
        (0, 1),
        "a 400 for a receipt already COMPLETED is no FAILED lead: {pass:?}"
    );
    assert_eq!(
        worker.ledger().0.get(&receipt.pk).unwrap().status,
        ReceiptStatus::Completed
    );
}

/// A receipt whose outcome can never be recorded (or whose lead crashes the
/// worker) is not written to the CRM at every pass forever: after
/// MAX_UNRECORDED_CLAIMS such claims alone it is FAILED, for a person.
#[tokio::test]
async fn a_receipt_whose_outcome_never_records_stops_being_delivered() {
    use worker::deliver::claim::{MAX_UNRECORDED_CLAIMS, OUTCOME_NOT_RECORDED};
    let crm = CrmStub::start().await.unwrap();
    let mut stuck = receipt("sub_stuck", "a@example.com");
    stuck.received_at =
        shared::receipt::format_timestamp(SystemTime::now() - Duration::from_secs(3600));
    // Every completion fails, as if the receipt could not take it.
    let ledger = WatchedLedger::new(MemoryLedger::holding([&stuck])).failing_first(usize::MAX);
    let later = shared::clock::Adjustable::default();
    let worker = Worker::new(HttpCrm::new(crm.leads_url(), None).unwrap(), ledger, 8)
        .with_retry_policy(fast_retries())
        .with_clock(later.clock());

    for _ in 0..(MAX_UNRECORDED_CLAIMS + 3) {
        worker.reconcile(in_seconds(30)).await;
        // The claim of a delivery that recorded nothing lapses.
        later.advance(Duration::from_secs(600));
    }

    assert_eq!(
        crm.calls_for("sub_stuck").len(),
        1 + MAX_UNRECORDED_CLAIMS as usize,
        "written once in its page, then once per claim alone, then no more"
    );
    let stored = worker.ledger().inner.get(&stuck.pk).unwrap();
    assert_eq!(stored.status, ReceiptStatus::Failed);
    assert_eq!(stored.failure_reason.as_deref(), Some(OUTCOME_NOT_RECORDED));
}

/// Deliveries that died with their page (a container killed while a page
/// was with the CRM) are charged to no receipt: however many, each page-mate
/// is then delivered alone, and COMPLETED.
#[tokio::test]
async fn deaths_of_a_whole_page_are_charged_to_no_receipt() {
    use worker::deliver::claim::MAX_UNRECORDED_CLAIMS;
    let crm = CrmStub::start().await.unwrap();
    let mut receipts: Vec<Receipt> = (0..10)
        .map(|n| receipt(&format!("sub_page_{n}"), "a@example.com"))
        .collect();
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    for receipt in &mut receipts {
        receipt.received_at = shared::receipt::format_timestamp(hour_ago);
        // Its page died with the CRM call in flight, again and again.
        receipt.unrecorded_claims = MAX_UNRECORDED_CLAIMS + 2;
    }
    let refs: Vec<&Receipt> = receipts.iter().collect();
    let worker = http_worker(&crm, MemoryLedger::holding(refs));

    let pass = worker.reconcile(in_seconds(30)).await;

    assert_eq!(pass.delivered, 10, "{pass:?}");
    for receipt in &receipts {
        let stored = worker.ledger().get(&receipt.pk).unwrap();
        assert_eq!(stored.status, ReceiptStatus::Completed, "{}", receipt.pk);
        assert_eq!((stored.unrecorded_claims, stored.solo_claims), (0, 0));
        assert_eq!(crm.calls_for(&receipt.submission_id).len(), 1);
    }
    assert_eq!(
        crm.max_in_flight(),
        1,
        "each delivered alone, one at a time"
    );
}

/// A suspect among a page's receipts is delivered after the page, alone.
#[tokio::test]
async fn a_suspect_is_delivered_after_its_page_alone() {
    let crm = CrmStub::start().await.unwrap();
    crm.set_delay(Duration::from_millis(50));
    let hour_ago = shared::receipt::format_timestamp(SystemTime::now() - Duration::from_secs(3600));
    let mut receipts: Vec<Receipt> = (0..6)
        .map(|n| receipt(&format!("sub_mate_{n}"), "a@example.com"))
        .collect();
    for receipt in &mut receipts {
        receipt.received_at = hour_ago.clone();
    }
    receipts[0].unrecorded_claims = 1;
    let refs: Vec<&Receipt> = receipts.iter().collect();
    let worker = http_worker(&crm, MemoryLedger::holding(refs));

    let pass = worker.reconcile(in_seconds(30)).await;

    assert_eq!(pass.delivered, 6, "{pass:?}");
    let calls = crm.calls();
    assert_eq!(calls.len(), 6);
    let suspect = calls
        .iter()
        .find(|call| call.external_id == "sub_mate_0")
        .unwrap();
    assert!(
        calls
            .iter()
            .filter(|call| call.external_id != "sub_mate_0")
            .all(|mate| mate.at + Duration::from_millis(50) <= suspect.at),
        "the suspect's call starts after every page-mate's has ended"
    );
    let stored = worker.ledger().get(&receipts[0].pk).unwrap();
    assert_eq!(stored.status, ReceiptStatus::Completed);
}

/// Records the form data of every batch handed to the CRM.
struct BatchBytes {
    crm: HttpCrm,
    batches: std::sync::Mutex<Vec<usize>>,
}

impl Destination for BatchBytes {
    async fn erase(
        &self,
        _person: worker::destinations::Person<'_>,
    ) -> Result<worker::destinations::Forgotten, worker::destinations::DestinationError> {
        Ok(worker::destinations::Forgotten::NotFound)
    }

    fn name(&self) -> &'static str {
        "http"
    }

    async fn upsert(
        &self,
        lead: &shared::Lead,
        key: &shared::IdempotencyKey,
    ) -> Result<worker::destinations::Upserted, worker::destinations::DestinationError> {
        self.crm.upsert(lead, key).await
    }

    async fn upsert_batch(
        &self,
        writes: &[worker::destinations::Write<'_>],
        concurrency: usize,
        deadline: worker::destinations::CallDeadline,
    ) -> Vec<worker::destinations::Answer> {
        let bytes = writes.iter().map(|write| write.lead.message.len()).sum();
        self.batches.lock().unwrap().push(bytes);
        self.crm.upsert_batch(writes, concurrency, deadline).await
    }
}

/// A pass holds at most about PAGE_PAYLOAD_BYTES of form data at once: a
/// page of large receipts is cut, and the rest is the next page's.
#[tokio::test]
async fn a_page_of_large_receipts_is_cut_by_its_bytes() {
    use worker::reconcile::PAGE_PAYLOAD_BYTES;
    let crm = CrmStub::start().await.unwrap();
    let message = "m".repeat(200 * 1024);
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let receipts: Vec<Receipt> = (0..40)
        .map(|n| {
            let body = serde_json::json!({
                "event": "form.submitted",
                "data": {"submissionId": format!("sub_large_{n:02}"), "formData": {"email": "a@example.com", "message": message}}
            });
            let submission = FormSubmission::parse(body.to_string().as_bytes()).unwrap();
            let mut receipt = Receipt::new(&submission, hour_ago);
            receipt.next_attempt_at = Some(shared::receipt::format_timestamp(hour_ago));
            receipt
        })
        .collect();
    let destination = BatchBytes {
        crm: HttpCrm::new(crm.leads_url(), None).unwrap(),
        batches: std::sync::Mutex::new(Vec::new()),
    };
    let worker = Worker::new(destination, MemoryLedger::holding(&receipts), 8)
        .with_retry_policy(fast_retries());

    let pass = worker.reconcile(in_seconds(60)).await;

    assert_eq!((pass.due, pass.delivered), (40, 40), "{pass:?}");
    let batches = worker.destination().batches.lock().unwrap().clone();
    assert!(batches.len() >= 2, "{batches:?}");
    for bytes in batches {
        assert!(
            bytes <= PAGE_PAYLOAD_BYTES + 8 * message.len(),
            "at most one claim round past the limit: {bytes}"
        );
    }
}
