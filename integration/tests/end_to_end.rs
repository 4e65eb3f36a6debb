//! Case 6: the whole path on one machine. 200 deliveries with 30%
//! duplicates and 10% bad keys go through ingest, the receipts table, the
//! stream, the worker and the CRM.

use std::collections::HashSet;

use devtools::crm_stub::CrmStub;
use integration::*;
use worker::destinations::http::HttpCrm;
use worker::ledger::dynamodb::DynamoLedger;
use worker::Worker;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case_6_two_hundred_deliveries_leave_one_lead_per_valid_submission() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let ReceiptsWithIngest {
        client,
        table,
        ingest,
    } = receipts_with_ingest(&moto).await;
    let crm = CrmStub::start().await.unwrap();
    let worker = Worker::new(
        HttpCrm::new(crm.leads_url(), None).unwrap(),
        DynamoLedger::new(worker_client(&moto).await, &table),
        8,
    );

    // 200 deliveries in 20 rounds of ten: six new submissions, three
    // duplicates of submissions already delivered (30%), and one delivery
    // whose key does not match its body (10%).
    let mut plan: Vec<(lambda_http::Request, u16)> = Vec::new();
    for round in 0..20 {
        for new in round * 6..round * 6 + 6 {
            plan.push((delivery(&format!("sub_{new}"), "x@example.com"), 202));
        }
        for repeat in round * 3..round * 3 + 3 {
            plan.push((delivery(&format!("sub_{repeat}"), "x@example.com"), 200));
        }
        let bad = body(&format!("sub_bad_{round}"), "x@example.com");
        plan.push((
            delivery_with_key(bad, "staticforms:form.submitted:wrong"),
            400,
        ));
    }
    assert_eq!(plan.len(), 200);
    for (n, (request, expected)) in plan.into_iter().enumerate() {
        assert_eq!(
            ingest.handle(request).await.status().as_u16(),
            expected,
            "delivery {n}"
        );
    }
    let valid: HashSet<String> = (0..120).map(|n| format!("sub_{n}")).collect();

    let report = drain_stream(&moto, &client, &table, &worker).await;
    assert!(report.given_up.is_empty());

    assert_eq!(
        crm.lead_count(),
        valid.len(),
        "leads = unique valid submissions"
    );
    for id in &valid {
        assert_eq!(crm.lead(id).map(|l| l.writes), Some(1), "{id} written once");
    }
    let receipts = scan(&client, &table).await;
    assert_eq!(receipts.len(), valid.len());
    assert!(
        receipts.iter().all(|r| text(r, "status") == "COMPLETED"),
        "every receipt COMPLETED"
    );
}

/// Numbers survive the whole path digit for digit: an integer beyond 64
/// bits reaches the CRM as sent, and a body written with exponents is
/// stored no larger than it came (a re-serialised `1e15` is
/// `1000000000000000.0`, four and a half times as long).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbers_reach_the_crm_digit_for_digit_and_are_stored_as_sent() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let ReceiptsWithIngest {
        client,
        table,
        ingest,
    } = receipts_with_ingest(&moto).await;
    let crm = CrmStub::start().await.unwrap();
    let worker = Worker::new(
        HttpCrm::new(crm.leads_url(), None).unwrap(),
        DynamoLedger::new(worker_client(&moto).await, &table),
        8,
    );
    let body = r#"{"event":"form.submitted","timestamp":1795941528,"data":{"submissionId":"sub_numbers","formData":{"email":"ada@example.com","accountNumber":123456789012345678901234,"budget":1e15,"seats":12},"apiKey":"k"}}"#;
    let response = ingest
        .handle(delivery_with_key(
            body.to_owned(),
            "staticforms:form.submitted:sub_numbers",
        ))
        .await;
    assert_eq!(response.status(), 202);
    let stored = text(&scan(&client, &table).await[0], "payload");
    assert!(stored.contains("123456789012345678901234"), "{stored}");
    assert!(stored.len() <= body.len() + 16, "{stored}");

    drain_stream(&moto, &client, &table, &worker).await;
    let lead = crm.lead("sub_numbers").expect("the lead");
    let fields = &lead.body["fields"];
    assert_eq!(
        fields["accountNumber"], "123456789012345678901234",
        "{fields}"
    );
    assert_eq!(fields["budget"], "1e15", "{fields}");
    assert_eq!(fields["seats"], 12, "a number that survives stays a number");
}

/// A body written with exponents up to the body limit is stored (it grows
/// when re-serialised by a lossy parser, past DynamoDB's item limit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_of_exponents_at_the_body_limit_is_stored() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let ReceiptsWithIngest {
        client,
        table,
        ingest,
    } = receipts_with_ingest(&moto).await;
    let numbers = "1e15,".repeat(50_000);
    let body = format!(
        r#"{{"event":"form.submitted","data":{{"submissionId":"sub_exponents","formData":{{"email":"ada@example.com","values":[{numbers}1]}}}}}}"#
    );
    assert!(body.len() < 256 * 1024);
    let response = ingest
        .handle(delivery_with_key(
            body,
            "staticforms:form.submitted:sub_exponents",
        ))
        .await;
    assert_eq!(response.status(), 202);
    assert_eq!(scan(&client, &table).await.len(), 1);
}
