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
