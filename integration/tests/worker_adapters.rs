//! The worker's DynamoDB adapters against a real server: the leads table's
//! conditional upsert and the receipt ledger's "only if it still exists".

use std::time::{Duration, UNIX_EPOCH};

use aws_sdk_dynamodb::types::AttributeValue;
use devtools::stream_event;
use integration::*;
use shared::receipt::Timestamp;
use shared::record::DeliveredRecord;
use shared::{FormSubmission, IdempotencyKey, Lead, Receipt};
use worker::decide::AttemptError;
use worker::destinations::leads_table::LeadKey;
use worker::destinations::leads_table::LeadsTable;
use worker::destinations::{Destination, Upserted};
use worker::ledger::dynamodb::DynamoLedger;
use worker::ledger::{AttemptRecord, Claim, Completion, Ending, GatePass, Marked, ReceiptLedger};
use worker::Worker;

fn receipt_at(submission_id: &str, email: &str, message: &str, at_ms: u64) -> Receipt {
    let body = serde_json::json!({
        "event": "form.submitted",
        "data": {"submissionId": submission_id, "formData": {"name": "Ada", "email": email, "message": message}}
    });
    let submission = FormSubmission::parse(body.to_string().as_bytes()).unwrap();
    Receipt::new(&submission, UNIX_EPOCH + Duration::from_millis(at_ms))
}

async fn put_receipt(client: &aws_sdk_dynamodb::Client, table: &str, receipt: &Receipt) {
    client
        .put_item()
        .table_name(table)
        .set_item(Some(serde_dynamo::to_item(receipt).unwrap()))
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn lead_key_email_keeps_the_newest_submission_when_processed_newest_first() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let client = worker_client(&moto).await;
    let receipts = create_table(&client, "ReceiptsTable").await;
    let leads = create_table(&client, "LeadsTable").await;
    let older = receipt_at(
        "sub_old",
        "Ada@Example.com",
        "first message",
        1_795_900_000_000,
    );
    let newer = receipt_at(
        "sub_new",
        "ada@example.com ",
        "second message",
        1_795_900_060_000,
    );
    put_receipt(&client, &receipts, &older).await;
    put_receipt(&client, &receipts, &newer).await;
    let worker = Worker::new(
        LeadsTable::new(client.clone(), &leads, LeadKey::Email, &receipts),
        DynamoLedger::new(client.clone(), &receipts),
        8,
    );

    // Newest first, in two batches, as two shards or a retry could deliver them.
    for receipt in [&newer, &older] {
        let event = stream_event::event(vec![stream_event::record("INSERT", receipt, "1")]);
        let response = invoke_worker(&worker, event).await.unwrap();
        assert_eq!(response["batchItemFailures"], serde_json::json!([]));
    }

    let items = scan(&client, &leads).await;
    assert_eq!(items.len(), 1, "one lead per person");
    assert_eq!(text(&items[0], "pk"), "email#ada@example.com");
    assert_eq!(
        text(&items[0], "message"),
        "second message",
        "the older submission did not overwrite"
    );
    assert_eq!(text(&items[0], "externalId"), "sub_new");
    for item in scan(&client, &receipts).await {
        assert_eq!(
            text(&item, "status"),
            "COMPLETED",
            "a stale submission is done, not retried"
        );
    }
}

/// A receipt whose envelope carries the sender's `timestamp` (seconds).
fn receipt_sent_at(submission_id: &str, message: &str, sent_s: u64, received_ms: u64) -> Receipt {
    let body = serde_json::json!({
        "event": "form.submitted",
        "timestamp": sent_s,
        "data": {"submissionId": submission_id, "formData": {"email": "ada@example.com", "message": message}}
    });
    let submission = FormSubmission::parse(body.to_string().as_bytes()).unwrap();
    Receipt::new(&submission, UNIX_EPOCH + Duration::from_millis(received_ms))
}

#[tokio::test]
async fn lead_key_email_a_delayed_retry_of_an_older_submission_does_not_overwrite_a_newer_one() {
    let client = worker_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let receipts = create_table(&client, "ReceiptsTable").await;
    let leads = create_table(&client, "LeadsTable").await;
    // Sent first, but its delivery was retried and arrived an hour later.
    let older = receipt_sent_at(
        "sub_sent_first",
        "first message",
        1_795_900_000,
        1_795_903_600_000,
    );
    let newer = receipt_sent_at(
        "sub_sent_second",
        "second message",
        1_795_900_060,
        1_795_900_061_000,
    );
    assert!(older.received_at > newer.received_at);
    put_receipt(&client, &receipts, &older).await;
    put_receipt(&client, &receipts, &newer).await;
    let worker = Worker::new(
        LeadsTable::new(client.clone(), &leads, LeadKey::Email, &receipts),
        DynamoLedger::new(client.clone(), &receipts),
        8,
    );

    for receipt in [&newer, &older] {
        let event = stream_event::event(vec![stream_event::record("INSERT", receipt, "1")]);
        invoke_worker(&worker, event).await.unwrap();
    }

    let items = scan(&client, &leads).await;
    assert_eq!(items.len(), 1);
    assert_eq!(
        text(&items[0], "externalId"),
        "sub_sent_second",
        "the sender's time decides"
    );
    assert_eq!(text(&items[0], "submittedAt"), "2026-11-28T21:07:40.000Z");
    assert_eq!(text(&items[0], "newestBy"), "2026-11-28T21:07:40.000Z");
}

#[tokio::test]
async fn lead_key_email_lets_a_newer_submission_replace_an_older_one() {
    let client = worker_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let receipts = create_table(&client, "ReceiptsTable").await;
    let leads = create_table(&client, "LeadsTable").await;
    let table = LeadsTable::new(client.clone(), &leads, LeadKey::Email, &receipts);
    let older = receipt_at("sub_a", "ada@example.com", "first", 1_000);
    let newer = receipt_at("sub_b", "ada@example.com", "second", 2_000);
    put_receipt(&client, &receipts, &older).await;
    put_receipt(&client, &receipts, &newer).await;
    let key = |r: &Receipt| IdempotencyKey::from_stored(r.pk.clone());

    assert_eq!(
        table
            .upsert(&Lead::from_receipt(&older).unwrap(), &key(&older))
            .await,
        Ok(Upserted::Written(DeliveredRecord::unknown())),
        "keyed by e-mail, the item's key is personal data: no receipt names it"
    );
    assert_eq!(
        table
            .upsert(&Lead::from_receipt(&newer).unwrap(), &key(&newer))
            .await,
        Ok(Upserted::Written(DeliveredRecord::unknown()))
    );
    assert_eq!(
        table
            .upsert(&Lead::from_receipt(&older).unwrap(), &key(&older))
            .await,
        Ok(Upserted::Stale)
    );
    let items = scan(&client, &leads).await;
    assert_eq!(items.len(), 1);
    assert_eq!(text(&items[0], "message"), "second");
}

#[tokio::test]
async fn lead_key_submission_replays_update_the_same_lead() {
    let client = worker_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let receipts = create_table(&client, "ReceiptsTable").await;
    let leads = create_table(&client, "LeadsTable").await;
    let table = LeadsTable::new(client.clone(), &leads, LeadKey::Submission, &receipts);
    let receipt = receipt_at("sub_1", "ada@example.com", "hello", 1_000);
    put_receipt(&client, &receipts, &receipt).await;
    let lead = Lead::from_receipt(&receipt).unwrap();
    let key = IdempotencyKey::from_stored(receipt.pk.clone());

    let written = Ok(Upserted::Written(DeliveredRecord::with_id(
        "submission#sub_1",
    )));
    assert_eq!(table.upsert(&lead, &key).await, written);
    assert_eq!(
        table.upsert(&lead, &key).await,
        written,
        "a replay rewrites the same lead"
    );
    let items = scan(&client, &leads).await;
    assert_eq!(items.len(), 1);
    assert_eq!(text(&items[0], "pk"), "submission#sub_1");
    assert_eq!(text(&items[0], "idempotencyKey"), receipt.pk);
    assert!(
        !items[0].contains_key("expiresAt"),
        "without LEAD_RETENTION_DAYS a lead never expires"
    );

    // With it, each write sets the expiry from the submission's receipt.
    let expiring = LeadsTable::new(client.clone(), &leads, LeadKey::Submission, &receipts)
        .expiring_after(shared::Retention::days(2));
    assert_eq!(expiring.upsert(&lead, &key).await, written);
    let items = scan(&client, &leads).await;
    let received = shared::receipt::parse_timestamp(&receipt.received_at).unwrap();
    let expected = received.duration_since(UNIX_EPOCH).unwrap().as_secs() + 2 * 86_400;
    assert_eq!(
        items[0].get("expiresAt"),
        Some(&AttributeValue::N(expected.to_string()))
    );
}

/// A lead is written only while its receipt is RECEIVED: a delivery that
/// held a receipt `receipts forget` erased (or that another delivery
/// settled) never writes the person back into the leads table.
#[tokio::test]
async fn no_lead_row_is_written_for_a_receipt_no_longer_received() {
    let client = worker_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let receipts = create_table(&client, "ReceiptsTable").await;
    let leads = create_table(&client, "LeadsTable").await;
    let table = LeadsTable::new(client.clone(), &leads, LeadKey::Email, &receipts);
    let mut erased = receipt_at("sub_erased", "ada@example.com", "hello", 1_000);
    let lead = Lead::from_receipt(&erased).unwrap();
    erased.status = shared::ReceiptStatus::Erased;
    erased.payload = None;
    put_receipt(&client, &receipts, &erased).await;
    let key = IdempotencyKey::from_stored(erased.pk.clone());

    assert_eq!(table.upsert(&lead, &key).await, Ok(Upserted::Stale));
    let missing = IdempotencyKey::from_stored("staticforms:form.submitted:sub_gone".to_owned());
    assert_eq!(table.upsert(&lead, &missing).await, Ok(Upserted::Stale));
    assert!(scan(&client, &leads).await.is_empty(), "no row written");
}

fn attempt(attempts: u32, at: &str) -> AttemptRecord {
    AttemptRecord::new(attempts, Timestamp::from_stored(at))
}

/// A completion as the worker writes it by default: the payload goes.
fn completion(expires_at: u64) -> Completion {
    Completion {
        expires_at,
        keep_payload: false,
        destination: "http".into(),
        ending: Ending::Delivered(DeliveredRecord::unknown()),
        notice: None,
    }
}

fn refused_400() -> AttemptError {
    AttemptError {
        code: "HTTP 400".into(),
        status: Some(400),
    }
}

#[tokio::test]
async fn the_ledger_never_recreates_a_deleted_receipt() {
    let client = worker_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let receipts = create_table(&client, "ReceiptsTable").await;
    let ledger = DynamoLedger::new(client.clone(), &receipts);

    let at = attempt(1, "2026-11-29T09:00:00.000Z");
    let gone = &IdempotencyKey::from_stored("staticforms:form.submitted:gone".to_owned());
    assert_eq!(
        ledger
            .mark_completed(gone, &at, &completion(1_800_000_000))
            .await,
        Ok(Marked::NotPending)
    );
    assert_eq!(
        ledger.mark_failed(gone, &refused_400(), &at).await,
        Ok(Marked::NotPending)
    );
    assert_eq!(
        ledger
            .defer(
                gone,
                &Timestamp::from_stored("2026-11-29T10:00:00.000Z"),
                &refused_400(),
                &at
            )
            .await,
        Ok(Marked::NotPending)
    );
    assert!(
        scan(&client, &receipts).await.is_empty(),
        "no receipt was created"
    );
}

#[tokio::test]
async fn the_ledger_records_attempts_completion_and_failure_once() {
    let client = worker_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let receipts = create_table(&client, "ReceiptsTable").await;
    let ledger = DynamoLedger::new(client.clone(), &receipts);
    // Both written by an earlier version, with an expiry from arrival:
    // waiting or failing takes it away.
    let mut done = receipt_at("sub_done", "a@example.com", "m", 1_000);
    let mut refused = receipt_at("sub_refused", "b@example.com", "m", 1_000);
    done.expires_at = Some(1_000_000);
    refused.expires_at = Some(1_000_000);
    put_receipt(&client, &receipts, &done).await;
    put_receipt(&client, &receipts, &refused).await;

    let unavailable = AttemptError {
        code: "HTTP 503".into(),
        status: Some(503),
    };
    assert_eq!(
        ledger
            .defer(
                &done.key(),
                &Timestamp::from_stored("2026-11-29T09:05:00.000Z"),
                &unavailable,
                &attempt(3, "2026-11-29T08:59:00.000Z")
            )
            .await,
        Ok(Marked::Updated)
    );
    let items = scan(&client, &receipts).await;
    let find = |items: &[std::collections::HashMap<String, AttributeValue>], pk: &str| {
        items.iter().find(|i| text(i, "pk") == pk).unwrap().clone()
    };
    let deferred = find(&items, &done.pk);
    assert_eq!(text(&deferred, "status"), "RECEIVED");
    assert_eq!(text(&deferred, "pending"), "PENDING");
    assert_eq!(text(&deferred, "nextAttemptAt"), "2026-11-29T09:05:00.000Z");
    assert_eq!(text(&deferred, "lastError"), "HTTP 503");
    assert_eq!(
        deferred.get("attempts"),
        Some(&AttributeValue::N("3".into()))
    );
    assert_eq!(
        deferred.get("lastHttpStatus"),
        Some(&AttributeValue::N("503".into()))
    );
    assert!(
        !deferred.contains_key("expiresAt"),
        "TTL never deletes a waiting receipt"
    );

    assert_eq!(
        ledger
            .mark_completed(
                &done.key(),
                &attempt(1, "2026-11-29T09:00:00.000Z"),
                &Completion {
                    destination: "salesforce".into(),
                    ending: Ending::Delivered(
                        DeliveredRecord::with_id("00Q1")
                            .linked("https://acme.my.salesforce.com/lightning/r/Lead/00Q1/view")
                    ),
                    ..completion(1_800_000_000)
                }
            )
            .await,
        Ok(Marked::Updated)
    );
    assert_eq!(
        ledger
            .mark_completed(
                &done.key(),
                &attempt(1, "2026-11-29T09:00:02.000Z"),
                &completion(1_900_000_000)
            )
            .await,
        Ok(Marked::NotPending),
        "a receipt is completed once"
    );
    assert_eq!(
        ledger
            .mark_failed(
                &refused.key(),
                &refused_400(),
                &attempt(1, "2026-11-29T09:00:01.000Z")
            )
            .await,
        Ok(Marked::Updated)
    );

    let items = scan(&client, &receipts).await;
    let done_item = find(&items, &done.pk);
    assert_eq!(text(&done_item, "status"), "COMPLETED");
    assert_eq!(text(&done_item, "completedAt"), "2026-11-29T09:00:00.000Z");
    // Where the lead went: the destination, its record and the link.
    assert_eq!(text(&done_item, "deliveredTo"), "salesforce");
    assert_eq!(text(&done_item, "recordId"), "00Q1");
    assert_eq!(
        text(&done_item, "recordUrl"),
        "https://acme.my.salesforce.com/lightning/r/Lead/00Q1/view"
    );
    assert_eq!(
        done_item.get("attempts"),
        Some(&AttributeValue::N("4".into()))
    );
    assert!(!done_item.contains_key("pending"), "left the queue");
    for failure_field in [
        "lastError",
        "lastHttpStatus",
        "failedAt",
        "failureReason",
        "failureHttpStatus",
    ] {
        assert!(
            !done_item.contains_key(failure_field),
            "a completed receipt has no {failure_field}"
        );
    }
    assert!(!done_item.contains_key("nextAttemptAt"));
    assert_eq!(
        done_item.get("expiresAt"),
        Some(&AttributeValue::N("1800000000".into())),
        "the expiry is set at delivery, once"
    );
    // Delivered: no personal data left, the rest of the record kept.
    assert!(!done_item.contains_key("payload"), "{done_item:?}");
    let stored = format!("{done_item:?}");
    assert!(!stored.contains("a@example.com"), "{stored}");
    for kept in [
        "pk",
        "event",
        "submissionId",
        "payloadFingerprint",
        "receivedAt",
        "lastAttemptAt",
    ] {
        assert!(done_item.contains_key(kept), "{kept} is kept: {stored}");
    }
    assert_eq!(
        text(&done_item, "payloadFingerprint"),
        done.payload_fingerprint
    );
    let refused_item = find(&items, &refused.pk);
    assert!(
        text(&refused_item, "payload").contains("b@example.com"),
        "a FAILED receipt keeps its payload for a redrive"
    );
    assert_eq!(text(&refused_item, "status"), "FAILED");
    assert_eq!(text(&refused_item, "failureReason"), "HTTP 400");
    assert_eq!(
        text(&refused_item, "pending"),
        "FAILED",
        "in the FAILED queue, counted by every pass"
    );
    assert!(
        !refused_item.contains_key("expiresAt"),
        "TTL never deletes a FAILED receipt"
    );
    assert_eq!(
        refused_item.get("failureHttpStatus"),
        Some(&AttributeValue::N("400".into()))
    );
}

/// A suspect's claim alone: only while this delivery holds the receipt,
/// counted apart from the page's claims, and cleared with every other
/// count when an outcome is recorded.
#[tokio::test]
async fn a_claim_alone_counts_only_while_held_and_a_recorded_outcome_clears_it() {
    let client = worker_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let receipts = create_table(&client, "ReceiptsTable").await;
    let ledger = DynamoLedger::new(client.clone(), &receipts);
    let suspect = receipt_at("sub_suspect", "a@example.com", "m", 1_000);
    put_receipt(&client, &receipts, &suspect).await;
    let seen = Timestamp::from_stored(suspect.next_attempt_at.clone().unwrap());
    let until = Timestamp::from_stored("2026-11-29T09:10:00.000Z");

    let now = Timestamp::from_stored("2026-11-29T09:00:00.000Z");
    let Ok(Claim::Taken(taken)) = ledger
        .claim(&suspect.key(), Some(&seen), &until, &now)
        .await
    else {
        panic!("the page's claim");
    };
    let taken = (*taken).unwrap();
    assert_eq!((taken.unrecorded_claims, taken.solo_claims), (1, 0));

    let elsewhere = Timestamp::from_stored("2026-11-29T09:11:00.000Z");
    assert_eq!(
        ledger.claim_alone(&suspect.key(), &elsewhere).await,
        Ok(Claim::Lost),
        "held by another delivery"
    );
    let Ok(Claim::Taken(alone)) = ledger.claim_alone(&suspect.key(), &until).await else {
        panic!("the claim alone");
    };
    let alone = (*alone).unwrap();
    assert_eq!((alone.unrecorded_claims, alone.solo_claims), (1, 1));
    assert_eq!(alone.payload, suspect.payload, "delivered from the claim");

    assert_eq!(
        ledger
            .mark_completed(
                &suspect.key(),
                &attempt(1, "2026-11-29T09:00:00.000Z"),
                &completion(1_800_000_000)
            )
            .await,
        Ok(Marked::Updated)
    );
    let items = scan(&client, &receipts).await;
    assert!(!items[0].contains_key("unrecordedClaims"));
    assert!(!items[0].contains_key("soloClaims"));
    assert!(
        !items[0].contains_key("claimedUntil"),
        "an outcome ends the claim"
    );
}

/// A claim holds a receipt until its end and no longer, and it never moves
/// the next attempt (the queue index's key): taking it costs no index
/// write. A second claim of the same receipt, as the stream's retry or a
/// pass would make it, is lost while the first holds, and taken after.
#[tokio::test]
async fn a_claim_holds_until_its_end_and_leaves_the_queue_index_alone() {
    let client = worker_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let receipts = create_table(&client, "ReceiptsTable").await;
    let ledger = DynamoLedger::new(client.clone(), &receipts);
    let receipt = receipt_at("sub_claimed", "c@example.com", "m", 1_000);
    put_receipt(&client, &receipts, &receipt).await;
    let seen = Timestamp::from_stored(receipt.next_attempt_at.clone().unwrap());
    let until = Timestamp::from_stored("2026-11-29T09:10:00.000Z");
    let at = Timestamp::from_stored;

    let first = ledger
        .claim(
            &receipt.key(),
            Some(&seen),
            &until,
            &at("2026-11-29T09:00:00.000Z"),
        )
        .await;
    assert!(matches!(first, Ok(Claim::Taken(_))), "{first:?}");
    let items = scan(&client, &receipts).await;
    assert_eq!(
        text(&items[0], "nextAttemptAt"),
        seen.as_str(),
        "the index key stays"
    );
    assert_eq!(text(&items[0], "claimedUntil"), until.as_str());

    let later = Timestamp::from_stored("2026-11-29T09:20:00.000Z");
    assert_eq!(
        ledger
            .claim(
                &receipt.key(),
                Some(&seen),
                &later,
                &at("2026-11-29T09:09:59.999Z")
            )
            .await,
        Ok(Claim::Lost),
        "held until its end"
    );
    let other_seen = Timestamp::from_stored("2026-11-29T08:00:00.000Z");
    assert_eq!(
        ledger
            .claim(
                &receipt.key(),
                Some(&other_seen),
                &later,
                &at("2026-11-29T09:11:00.000Z")
            )
            .await,
        Ok(Claim::Lost),
        "a stale sighting never claims"
    );
    let Ok(Claim::Taken(again)) = ledger
        .claim(
            &receipt.key(),
            Some(&seen),
            &later,
            &at("2026-11-29T09:11:00.000Z"),
        )
        .await
    else {
        panic!("taken again once the first claim ended");
    };
    let again = (*again).unwrap();
    assert_eq!(again.unrecorded_claims, 2, "the claim that died is counted");
    assert_eq!(again.claimed_until.as_deref(), Some(later.as_str()));
}

#[tokio::test]
async fn keep_payload_after_delivery_keeps_it() {
    let client = worker_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let receipts = create_table(&client, "ReceiptsTable").await;
    let ledger = DynamoLedger::new(client.clone(), &receipts);
    let kept = receipt_at("sub_kept", "k@example.com", "m", 1_000);
    put_receipt(&client, &receipts, &kept).await;
    let keep = Completion {
        expires_at: 1_800_000_000,
        keep_payload: true,
        destination: "http".into(),
        ending: Ending::Delivered(DeliveredRecord::unknown()),
        notice: None,
    };
    assert_eq!(
        ledger
            .mark_completed(&kept.key(), &attempt(1, "2026-11-29T09:00:00.000Z"), &keep)
            .await,
        Ok(Marked::Updated)
    );
    let items = scan(&client, &receipts).await;
    assert_eq!(text(&items[0], "status"), "COMPLETED");
    assert_eq!(text(&items[0], "payload"), kept.payload.unwrap());
}

/// The item stored under `key`.
async fn stored(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    key: &str,
) -> std::collections::HashMap<String, AttributeValue> {
    scan(client, table)
        .await
        .into_iter()
        .find(|item| text(item, "pk") == key)
        .unwrap()
}

/// A delivered lead's notice against the real table: the completion puts
/// it in the queue index's NOTICE partition with its named answers; one
/// send holds it at a time; a refused send makes it due again, answers
/// kept; an accepted one is SENT and out of the queue, answers gone; a
/// claim that ended unrecorded is UNCONFIRMED, never sent again; a record
/// under a claim that is not the receipt's changes nothing.
#[tokio::test]
async fn a_notice_is_claimed_once_sent_again_when_refused_and_never_after_an_unrecorded_send() {
    use worker::ledger::{DueQuery, NoticeClaim, NoticeSent, PendingQueue, WaitingNotice};
    let client = worker_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let receipts = create_table(&client, "ReceiptsTable").await;
    let ledger = DynamoLedger::new(client.clone(), &receipts);
    let at = |text: &str| Timestamp::from_stored(text.to_owned());
    let mut keys = Vec::new();
    for id in ["sub_refused_once", "sub_lapsed"] {
        let lead = receipt_at(id, "ada@example.com", "m", 1_000);
        put_receipt(&client, &receipts, &lead).await;
        let completion = Completion {
            notice: Some(WaitingNotice {
                fields: Some(r#"{"plan":"Pro"}"#.into()),
            }),
            ..completion(1_800_000_000)
        };
        let done = ledger
            .mark_completed(
                &lead.key(),
                &attempt(1, "2026-11-29T09:00:00.000Z"),
                &completion,
            )
            .await;
        assert_eq!(done, Ok(Marked::Updated));
        keys.push(lead.key());
    }
    let first = stored(&client, &receipts, keys[0].as_str()).await;
    assert_eq!(text(&first, "status"), "COMPLETED");
    assert_eq!(text(&first, "pending"), "NOTICE");
    assert_eq!(text(&first, "notice"), "PENDING");
    assert_eq!(text(&first, "noticeFields"), r#"{"plan":"Pro"}"#);
    assert!(
        !first.contains_key("payload"),
        "the form data goes as always"
    );
    let due = ledger
        .due(
            &DueQuery {
                queue: shared::receipt::NOTICE,
                now: "2026-11-29T10:00:00.000Z".into(),
                received_before: "2026-11-29T10:00:00.000Z".into(),
                page_size: 10,
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(due.due.len(), 2, "both wait in the NOTICE partition");

    let held = at("2026-11-29T09:05:00.000Z");
    let now = at("2026-11-29T09:01:00.000Z");
    let Ok(NoticeClaim::Taken(claimed)) = ledger.claim_notice(&keys[0], &held, &now).await else {
        panic!("the first claim takes it");
    };
    assert_eq!(claimed.notice_fields.as_deref(), Some(r#"{"plan":"Pro"}"#));
    assert_eq!(
        ledger.claim_notice(&keys[0], &held, &now).await,
        Ok(NoticeClaim::Lost)
    );
    let again = NoticeSent::Again {
        at: at("2026-11-29T09:02:00.000Z"),
    };
    assert_eq!(
        ledger
            .settle_notice(&keys[0], &at("2026-11-29T09:09:00.000Z"), &again)
            .await,
        Ok(Marked::NotPending),
        "another claim's record changes nothing"
    );
    assert_eq!(
        ledger.settle_notice(&keys[0], &held, &again).await,
        Ok(Marked::Updated)
    );
    let refused = stored(&client, &receipts, keys[0].as_str()).await;
    assert_eq!(text(&refused, "notice"), "PENDING");
    assert_eq!(text(&refused, "nextAttemptAt"), "2026-11-29T09:02:00.000Z");
    assert_eq!(
        refused.get("noticeAttempts"),
        Some(&AttributeValue::N("1".into()))
    );
    assert!(!refused.contains_key("noticeClaimedUntil"));
    assert_eq!(text(&refused, "noticeFields"), r#"{"plan":"Pro"}"#);
    let Ok(NoticeClaim::Taken(_)) = ledger.claim_notice(&keys[0], &held, &now).await else {
        panic!("due again, taken again");
    };
    let accepted = NoticeSent::Accepted {
        at: at("2026-11-29T09:03:00.000Z"),
    };
    assert_eq!(
        ledger.settle_notice(&keys[0], &held, &accepted).await,
        Ok(Marked::Updated)
    );
    let sent = stored(&client, &receipts, keys[0].as_str()).await;
    assert_eq!(text(&sent, "notice"), "SENT");
    assert_eq!(text(&sent, "noticedAt"), "2026-11-29T09:03:00.000Z");
    for gone in [
        "pending",
        "nextAttemptAt",
        "noticeClaimedUntil",
        "noticeFields",
    ] {
        assert!(!sent.contains_key(gone), "{gone}: {sent:?}");
    }
    assert_eq!(
        ledger.claim_notice(&keys[0], &held, &now).await,
        Ok(NoticeClaim::Lost)
    );

    // Claimed, then the worker stopped before recording anything.
    let Ok(NoticeClaim::Taken(_)) = ledger.claim_notice(&keys[1], &held, &now).await else {
        panic!("taken");
    };
    assert_eq!(
        ledger.claim_notice(&keys[1], &held, &now).await,
        Ok(NoticeClaim::Lost)
    );
    let later = at("2026-11-29T09:06:00.000Z");
    assert_eq!(
        ledger.claim_notice(&keys[1], &held, &later).await,
        Ok(NoticeClaim::Unconfirmed)
    );
    let lapsed = stored(&client, &receipts, keys[1].as_str()).await;
    assert_eq!(text(&lapsed, "notice"), "UNCONFIRMED");
    for gone in [
        "pending",
        "nextAttemptAt",
        "noticeClaimedUntil",
        "noticeFields",
    ] {
        assert!(!lapsed.contains_key(gone), "{gone}: {lapsed:?}");
    }
    assert_eq!(
        ledger.claim_notice(&keys[1], &held, &later).await,
        Ok(NoticeClaim::Lost)
    );
}

#[tokio::test]
async fn a_refused_person_leaves_the_queue_refused_with_its_code_and_no_personal_data() {
    let client = worker_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let receipts = create_table(&client, "ReceiptsTable").await;
    let ledger = DynamoLedger::new(client.clone(), &receipts);
    let refused = receipt_at("sub_refused", "gone@example.com", "m", 1_000);
    put_receipt(&client, &receipts, &refused).await;
    // Even a stack that keeps payloads keeps none of a refused person.
    let refusal = Completion {
        expires_at: 1_800_000_000,
        keep_payload: true,
        destination: "mailchimp".into(),
        ending: Ending::Refused("Forgotten Email Not Subscribed".into()),
        notice: None,
    };
    let at = attempt(1, "2026-11-29T09:00:00.000Z");
    assert_eq!(
        ledger.mark_completed(&refused.key(), &at, &refusal).await,
        Ok(Marked::Updated)
    );
    let items = scan(&client, &receipts).await;
    assert_eq!(text(&items[0], "status"), "REFUSED");
    assert_eq!(text(&items[0], "refusal"), "Forgotten Email Not Subscribed");
    assert_eq!(text(&items[0], "deliveredTo"), "mailchimp");
    for gone in ["payload", "pending", "nextAttemptAt", "recordId"] {
        assert!(!items[0].contains_key(gone), "{gone} removed");
    }
    assert!(
        items[0].contains_key("expiresAt"),
        "expires as a delivered one"
    );
    assert_eq!(
        ledger.mark_completed(&refused.key(), &at, &refusal).await,
        Ok(Marked::NotPending),
        "settled once"
    );
}

/// Double submits against the real table: two deliveries of one double
/// click at once stand first exactly once; a repeat is found whichever of
/// the two comes first, and a later first in between hides nothing; the
/// same answers ten minutes on stand first, and so does a repeat with
/// other answers in between; the item holds receipt keys, times and
/// digests only, for the receipts' retention.
#[tokio::test]
async fn the_firsts_of_identical_submissions_find_every_repeat_in_any_order() {
    use shared::duplicates::{FirstSubmission, Window};
    // dynalite: it serialises conditional writes per key as DynamoDB does
    // (moto may let two racing writes both pass, which this race tests).
    let client = worker_client(&endpoint(DYNALITE_ENDPOINT)).await;
    let receipts = create_table_key_only(&client, "ReceiptsTable").await;
    let ledger = DynamoLedger::new(client.clone(), &receipts);
    let item = "gate#double:0123abcd";
    let window = Window::parse("2m").unwrap();
    let now = std::time::SystemTime::now();
    let month = std::time::Duration::from_secs(30 * 86_400);
    let answered = |receipt: &str, at: &str, answers: &str| {
        FirstSubmission::new(receipt, (at, answers), window, month, now).unwrap()
    };
    let submission = |receipt: &str, at: &str| answered(receipt, at, "pro-digest");
    let click = submission("staticforms:e:click", "2026-12-01T10:00:00.000Z");
    let again = submission("staticforms:e:again", "2026-12-01T10:00:10.000Z");
    let (one, other) = tokio::join!(
        ledger.first_of_identical(item, &click),
        ledger.first_of_identical(item, &again)
    );
    let mut answers = [one.unwrap(), other.unwrap()];
    answers.sort();
    assert!(
        answers[0].is_none() && answers[1].is_some(),
        "exactly one of two at once stands first: {answers:?}"
    );
    let first = if answers[1].as_deref() == Some(click.receipt.as_str()) {
        &click
    } else {
        &again
    };
    let later = submission("staticforms:e:later", "2026-12-01T10:10:00.000Z");
    let rows = [
        (first, None, "the first again (a retry)"),
        (&later, None, "the same answers ten minutes on"),
        (&later, None, "that one again"),
    ];
    for (submission, expected, what) in rows {
        assert_eq!(
            ledger.first_of_identical(item, submission).await,
            Ok(expected),
            "{what}"
        );
    }
    let late_click = submission("staticforms:e:third", "2026-12-01T10:00:20.000Z");
    assert_eq!(
        ledger.first_of_identical(item, &late_click).await,
        Ok(Some(first.receipt.clone())),
        "a third click delivered after the later first still repeats the first"
    );
    // Pro, Basic, Pro: the second Pro is new data.
    let basic = answered(
        "staticforms:e:basic",
        "2026-12-01T10:10:30.000Z",
        "basic-digest",
    );
    let pro_again = submission("staticforms:e:pro-again", "2026-12-01T10:11:00.000Z");
    assert_eq!(ledger.first_of_identical(item, &basic).await, Ok(None));
    assert_eq!(
        ledger.first_of_identical(item, &pro_again).await,
        Ok(None),
        "a repeat with other answers in between is delivered"
    );
    let items: Vec<_> = scan(&client, &receipts)
        .await
        .into_iter()
        .filter(|stored| text(stored, "pk") == item)
        .collect();
    assert_eq!(items.len(), 1);
    let firsts = text(&items[0], "firsts");
    assert!(
        firsts.contains(&first.receipt) && firsts.contains("staticforms:e:later"),
        "{firsts}"
    );
    assert!(!items[0].contains_key("pending"), "never in the queue");
    let expires: u64 = items[0]["expiresAt"].as_n().unwrap().parse().unwrap();
    let now_secs = now.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert!(
        expires >= now_secs + month.as_secs(),
        "kept for the receipts' retention, so a late twin is still found"
    );
}

#[tokio::test]
async fn the_newest_wins_gate_lets_only_newer_submissions_through_and_holds_no_email() {
    let client = worker_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let receipts = create_table(&client, "ReceiptsTable").await;
    let ledger = DynamoLedger::new(client.clone(), &receipts);
    let gate = integration::gate_of("ada@example.com");
    let lead = receipt_at("sub_gate", "ada@example.com", "m", 1_000);
    put_receipt(&client, &receipts, &lead).await;
    let key = lead.key();
    let rows = [
        ("2026-12-01T10:00:00.000Z", true, "the first one"),
        ("2026-12-01T09:00:00.000Z", false, "an older one"),
        ("2026-12-01T10:00:00.000Z", true, "the same one again"),
        ("2026-12-01T11:00:00.000Z", true, "a newer one"),
        ("2026-12-01T10:30:00.000Z", false, "older than the newest"),
    ];
    for (stamp, admitted, what) in rows {
        assert_eq!(
            ledger
                .admit_newest(&gate, &GatePass::own(&key, stamp), 1_800_000_000)
                .await,
            Ok(admitted),
            "{what}"
        );
    }
    let gates = || async {
        scan(&client, &receipts)
            .await
            .into_iter()
            .filter(|item| text(item, "pk") == gate)
            .collect::<Vec<_>>()
    };
    let items = gates().await;
    assert_eq!(items.len(), 1, "one gate per person");
    assert_eq!(text(&items[0], "newestAt"), "2026-12-01T11:00:00.000Z");
    assert_eq!(
        items[0].get("expiresAt"),
        Some(&AttributeValue::N("1800000000".into()))
    );
    let stored = format!("{:?}", items[0]);
    assert!(!stored.contains("ada"), "no e-mail is stored: {stored}");
    assert!(
        !items[0].contains_key("pending"),
        "a gate is never in the queue"
    );

    // A lead held back by a newer one of its batch that was refused for
    // good passes over that one's stamp, and only over it.
    let held_back = |over| GatePass {
        receipt: &key,
        stamp: "2026-12-01T10:45:00.000Z",
        over,
    };
    assert_eq!(
        ledger
            .admit_newest(&gate, &held_back("2026-12-01T10:50:00.000Z"), 1_800_000_000)
            .await,
        Ok(false),
        "the gate holds 11:00, newer than the refused sibling's 10:50"
    );
    assert_eq!(
        ledger
            .admit_newest(&gate, &held_back("2026-12-01T11:00:00.000Z"), 1_800_000_000)
            .await,
        Ok(true),
        "the gate holds the refused sibling's own stamp"
    );
    assert_eq!(
        text(&gates().await[0], "newestAt"),
        "2026-12-01T10:45:00.000Z"
    );

    // `receipts forget` erased the person (the receipt, then the gate)
    // while a delivery held the receipt: that delivery never re-creates
    // the gate, whatever its stamp.
    client
        .update_item()
        .table_name(&receipts)
        .key("pk", AttributeValue::S(lead.pk.clone()))
        .update_expression("SET #status = :erased")
        .expression_attribute_names("#status", "status")
        .expression_attribute_values(":erased", AttributeValue::S("ERASED".into()))
        .send()
        .await
        .unwrap();
    client
        .delete_item()
        .table_name(&receipts)
        .key("pk", AttributeValue::S(gate.clone()))
        .send()
        .await
        .unwrap();
    assert_eq!(
        ledger
            .admit_newest(
                &gate,
                &GatePass::own(&key, "2026-12-02T00:00:00.000Z"),
                1_800_000_000
            )
            .await,
        Ok(false)
    );
    assert!(gates().await.is_empty(), "the gate stays deleted");
}

/// The `dynamodb` destination's write units per delivered lead, counted by
/// the write meter around ingest's store, the worker's ledger and its
/// leads table (the adapters the binaries run): the receipt's put, claim
/// and completion, and the lead's row written in one transaction with a
/// check that the receipt is still RECEIVED. docs/cost.md states them.
#[tokio::test]
async fn a_lead_in_the_leads_table_costs_its_rows_transaction_more() {
    let meter = devtools::write_meter::WriteMeter::start(&endpoint(DYNAMODB_ENDPOINT))
        .await
        .unwrap();
    let ReceiptsWithIngest {
        client,
        table: receipts,
        ingest,
    } = receipts_with_ingest(&meter.url()).await;
    let leads = create_table(&client, "LeadsTable").await;
    let delivered = ingest
        .handle(delivery_with_key(
            body("sub_metered", "ada@example.com"),
            "staticforms:form.submitted:sub_metered",
        ))
        .await;
    assert_eq!(delivered.status(), 202);
    let worker_client = worker_client(&meter.url()).await;
    let worker = Worker::new(
        LeadsTable::new(
            worker_client.clone(),
            &leads,
            LeadKey::Submission,
            &receipts,
        ),
        DynamoLedger::new(worker_client, &receipts),
        8,
    )
    .with_stack_key(shared::newest::GateSecret::new(
        devtools::local::DEMO_GATE_KEY,
    ));
    let stored: Receipt =
        serde_dynamo::from_item(scan(&client, &receipts).await.remove(0)).unwrap();
    let event = stream_event::event(vec![stream_event::record("INSERT", &stored, "1")]);
    let answer = invoke_worker(&worker, event).await.unwrap();
    assert_eq!(answer["batchItemFailures"], serde_json::json!([]));

    let metered = meter.metered();
    let steps: Vec<(&str, &str, u32, u32)> = metered
        .iter()
        .map(|m| {
            let on = match (m.table == receipts, m.key.starts_with("gate#double:")) {
                (true, true) => "double-submit item",
                (true, false) => "receipt",
                (false, _) => "lead",
            };
            (on, m.operation.as_str(), m.table_units, m.index_units)
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("receipt", "PutItem", 1, 2),
            ("receipt", "UpdateItem", 1, 0),
            ("double-submit item", "UpdateItem", 1, 0),
            ("receipt", "TransactWriteItems:ConditionCheck", 2, 0),
            ("lead", "TransactWriteItems:Put", 2, 0),
            ("receipt", "UpdateItem", 1, 2),
        ],
        "the put, the claim, the double-submit item, the row's check and the row, the completion"
    );
    let total: u32 = metered.iter().map(|m| m.units()).sum();
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/cost.md")).unwrap();
    for row in [
        format!(
            "| `dynamodb`: the lead's row | `TransactWriteItems` | {} | {} |",
            metered[4].table_units, metered[4].index_units
        ),
        format!(
            "| `dynamodb`: the row's check that the receipt is still `RECEIVED` | `TransactWriteItems` | {} | {} |",
            metered[3].table_units, metered[3].index_units
        ),
        format!("a lead in the `dynamodb` destination's table costs **{total} write units**"),
    ] {
        assert!(page.contains(&row), "docs/cost.md must say: {row}");
    }
}

/// The person memory's conditions on a real server: one create of a
/// person in flight at a time until the lag has passed, none once its id
/// is known; each submission's item started once, then written; and
/// nothing written, or re-created, once the person's gate item is gone.
#[tokio::test]
async fn the_person_memory_keeps_its_conditions_and_never_writes_back_an_erased_person() {
    use worker::destinations::memory::dynamodb::DynamoPersonMemory;
    use worker::destinations::memory::{Begun, ItemMark, MemoryError, PersonMemory, WrittenItem};

    let client = worker_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let receipts = create_table(&client, "ReceiptsTable").await;
    let memory = DynamoPersonMemory::new(client.clone(), &receipts);
    let gate = "gate#hmac:0123456789abcdef";
    // The gate the delivery passed wrote the item.
    client
        .put_item()
        .table_name(&receipts)
        .item("pk", AttributeValue::S(gate.to_owned()))
        .item(
            "newestAt",
            AttributeValue::S("2026-12-04T08:00:00.000Z".to_owned()),
        )
        .send()
        .await
        .unwrap();

    assert_eq!(
        memory.begin_create(gate, 1_000, 940).await,
        Ok(Begun::Begun)
    );
    assert_eq!(
        memory.begin_create(gate, 1_010, 950).await,
        Ok(Begun::Refused),
        "a create within the lag of another"
    );
    assert_eq!(
        memory.begin_create(gate, 1_100, 1_040).await,
        Ok(Begun::Begun),
        "the earlier start is older than the lag"
    );
    memory.remember_record(gate, "7").await.unwrap();
    let recalled = memory.recall(gate).await.unwrap();
    assert_eq!(recalled.record_id.as_deref(), Some("7"));
    assert_eq!(recalled.create_started_at, None, "no create in flight");
    assert_eq!(
        memory.begin_create(gate, 5_000, 4_940).await,
        Ok(Begun::Refused),
        "the person is known"
    );
    memory.forget_record(gate, "8").await.unwrap();
    assert_eq!(
        memory.recall(gate).await.unwrap().record_id.as_deref(),
        Some("7")
    );
    memory.forget_record(gate, "7").await.unwrap();
    assert_eq!(memory.recall(gate).await.unwrap().record_id, None);

    let note = "note:staticforms:form.submitted:sub_1";
    assert_eq!(
        memory.begin_item(gate, note, 1_000, 940).await,
        Ok(Begun::Begun)
    );
    assert_eq!(
        memory.begin_item(gate, note, 1_001, 941).await,
        Ok(Begun::Refused)
    );
    assert_eq!(
        memory.recall(gate).await.unwrap().items.get(note),
        Some(&ItemMark::Started(1_000))
    );
    let written = |id: &'static str, at: u64| WrittenItem {
        id,
        at,
        pruned: &[],
    };
    memory
        .remember_item(gate, note, written("42", 1_002))
        .await
        .unwrap();
    assert_eq!(
        memory.recall(gate).await.unwrap().items.get(note),
        Some(&ItemMark::Written {
            id: "42".to_owned(),
            at: 1_002
        })
    );
    // Another item written removes the ones it names, both attributes.
    let other = "note:staticforms:form.submitted:sub_2";
    let started = "note:staticforms:form.submitted:sub_3";
    memory.begin_item(gate, started, 1_003, 943).await.unwrap();
    let pruned = [note.to_owned(), started.to_owned()];
    memory
        .remember_item(
            gate,
            other,
            WrittenItem {
                id: "43",
                at: 1_004,
                pruned: &pruned,
            },
        )
        .await
        .unwrap();
    let items = memory.recall(gate).await.unwrap().items;
    assert_eq!(items.len(), 1, "{items:?}");
    assert!(items.contains_key(other));
    let stored = scan(&client, &receipts).await;
    let gate_item = stored.iter().find(|item| text(item, "pk") == gate).unwrap();
    assert!(
        !gate_item
            .keys()
            .any(|name| name.contains("sub_1") || name.contains("sub_3")),
        "{gate_item:?}"
    );
    memory
        .remember_item(gate, note, written("42", 1_005))
        .await
        .unwrap();
    assert_eq!(
        memory.begin_item(gate, note, 9_000, 8_940).await,
        Ok(Begun::Refused),
        "a written item is never started again"
    );

    // `receipts forget` deletes the gate item: nothing is written back.
    client
        .delete_item()
        .table_name(&receipts)
        .key("pk", AttributeValue::S(gate.to_owned()))
        .send()
        .await
        .unwrap();
    assert_eq!(memory.recall(gate).await, Ok(Default::default()));
    assert_eq!(
        memory.begin_create(gate, 10_000, 9_940).await,
        Err(MemoryError::Erased)
    );
    assert_eq!(
        memory.begin_item(gate, "lead:k", 10_000, 9_940).await,
        Err(MemoryError::Erased)
    );
    assert_eq!(
        memory.remember_record(gate, "9").await,
        Err(MemoryError::Erased)
    );
    assert_eq!(
        memory
            .remember_item(gate, note, written("43", 10_000))
            .await,
        Err(MemoryError::Erased)
    );
    assert!(
        scan(&client, &receipts).await.is_empty(),
        "the erased person's item was not re-created"
    );
}

/// The call slots on a real DynamoDB-protocol server (dynalite, which
/// locks around a conditional write): of 10 slots, however
/// many instances take at once, no slot is held twice and no more than 10
/// are held; a slot given back, or whose lease ran out, is taken again; no
/// one gives back a slot another holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_slots_are_never_held_twice_across_instances() {
    use worker::destinations::slots::dynamodb::DynamoCallSlots;
    use worker::destinations::slots::{now_ms, CallSlots, Lease};

    // On dynalite: moto takes no lock around a conditional write's check.
    let client = worker_client(&endpoint(DYNALITE_ENDPOINT)).await;
    let receipts = create_table_key_only(&client, "ReceiptsTable").await;
    let instances: Vec<DynamoCallSlots> = (0..4)
        .map(|_| DynamoCallSlots::new(client.clone(), &receipts, "mailchimp", 10))
        .collect();
    let leases: Vec<Lease> = (0..4)
        .map(|_| Lease::for_the_next(Duration::from_secs(60)))
        .collect();
    let now = now_ms();
    let (a, b, c, d) = tokio::join!(
        instances[0].take(8, &leases[0], now),
        instances[1].take(8, &leases[1], now),
        instances[2].take(8, &leases[2], now),
        instances[3].take(8, &leases[3], now),
    );
    let taken = [a, b, c, d];
    let mut all: Vec<u32> = taken
        .iter()
        .flat_map(|t| t.as_ref().unwrap().clone())
        .collect();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..10).collect::<Vec<_>>(),
        "each slot once, all 10 held"
    );

    // Every slot is held: nothing more for a fifth taker.
    let fifth = Lease::for_the_next(Duration::from_secs(60));
    assert_eq!(instances[0].take(1, &fifth, now).await, Ok(vec![]));
    // A holder gives back its own only.
    let mut first = taken[0].as_ref().unwrap().clone();
    first.sort_unstable();
    let other = taken
        .iter()
        .skip(1)
        .find_map(|t| t.as_ref().unwrap().first().copied())
        .unwrap();
    instances[0].give_back(&[other], &leases[0]).await.unwrap();
    assert_eq!(
        instances[0].take(1, &fifth, now).await,
        Ok(vec![]),
        "not its to give"
    );
    instances[0].give_back(&first, &leases[0]).await.unwrap();
    let mut again = instances[1].take(10, &fifth, now).await.unwrap();
    again.sort_unstable();
    assert_eq!(again, first, "given back: free again");

    // A holder that died: its slots are free once its lease has ended.
    let after = leases[1].until_ms + 1;
    let late = Lease::for_the_next(Duration::from_secs(120));
    let retaken = instances[2].take(10, &late, after).await.unwrap();
    assert!(
        retaken.len() >= taken[1].as_ref().unwrap().len(),
        "{retaken:?}"
    );
    // None of it is a receipt: the operator's CLI never lists a slot.
    let items = scan(&client, &receipts).await;
    assert!(items
        .iter()
        .all(|item| !shared::receipt::is_receipt_key(&text(item, "pk"))));
}

/// The shared access token on a real DynamoDB-protocol server (dynalite): of four
/// instances, one claims each generation's refresh; a claim lapses at its
/// end; a token is stored only over the generation it refreshed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_tokens_refresh_is_claimed_once_per_generation() {
    use worker::destinations::shared_token::dynamodb::DynamoTokenStore;
    use worker::destinations::shared_token::seal::TokenSeal;
    use worker::destinations::shared_token::TokenStore;

    // On dynalite: moto takes no lock around a conditional write's check.
    let client = worker_client(&endpoint(DYNALITE_ENDPOINT)).await;
    let receipts = create_table_key_only(&client, "ReceiptsTable").await;
    let key =
        shared::newest::GateSecret::new("a-test-gate-key-of-at-least-32-characters!").unwrap();
    let stores: Vec<DynamoTokenStore> = (0..4)
        .map(|_| {
            DynamoTokenStore::new(
                client.clone(),
                &receipts,
                "zoho",
                TokenSeal::new(&key, "zoho"),
            )
        })
        .collect();
    assert_eq!(stores[0].read().await, Ok(None));
    let (a, b, c, d) = tokio::join!(
        stores[0].claim_refresh(0, 1_000, 16_000),
        stores[1].claim_refresh(0, 1_000, 16_000),
        stores[2].claim_refresh(0, 1_000, 16_000),
        stores[3].claim_refresh(0, 1_000, 16_000),
    );
    let won: Vec<bool> = [a, b, c, d].into_iter().map(Result::unwrap).collect();
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
    assert_eq!(stores[1].read().await, Ok(None), "claimed, no token yet");
    assert_eq!(stores[0].store("token-1", 3_301_000, 0).await, Ok(true));
    assert_eq!(
        stores[1].store("late", 3_301_000, 0).await,
        Ok(false),
        "never over a newer generation"
    );
    let stored = stores[2].read().await.unwrap().unwrap();
    assert_eq!((stored.token.as_str(), stored.generation), ("token-1", 1));
    // At rest it is sealed: the table holds no readable token.
    let items = scan(&client, &receipts).await;
    let at_rest = text(&items[0], "accessToken");
    assert!(
        at_rest.starts_with("v1:") && !at_rest.contains("token-1"),
        "{at_rest}"
    );
    // Generation 1 refused: one claim, which lapses if its holder dies.
    assert_eq!(stores[0].claim_refresh(1, 5_000, 20_000).await, Ok(true));
    assert_eq!(stores[1].claim_refresh(1, 6_000, 21_000).await, Ok(false));
    assert_eq!(
        stores[1].claim_refresh(0, 25_000, 40_000).await,
        Ok(false),
        "an old generation"
    );
    assert_eq!(
        stores[1].claim_refresh(1, 25_000, 40_000).await,
        Ok(true),
        "lapsed"
    );
    assert_eq!(stores[1].store("token-2", 3_325_000, 1).await, Ok(true));
    assert_eq!(stores[3].read().await.unwrap().unwrap().generation, 2);
}
