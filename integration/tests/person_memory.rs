//! A frequent submitter's person memory, through the real binaries: its
//! own test binary, so its hundreds of writes never slow the pipeline
//! tests that count writes beside it (cargo runs test binaries one after
//! the other).

use std::time::{Duration, Instant};

use integration::pipeline::*;
use integration::*;

/// A person memory that stays small (issue 58), through the real binaries
/// and the Pipedrive fake: one address submits 40 times (each answer its
/// own, so no double submit), and the person's gate item, which records
/// each note as it is written, keeps only what exactly-once still needs:
/// it ends under 1.5 KB (without pruning, about 66 bytes more for each
/// submission: 2.8 KB), and each submission is one note.
#[tokio::test]
async fn a_frequent_submitters_gate_item_stays_small_and_each_submission_is_one_note() {
    const SUBMISSIONS: u64 = 40;
    const BOUND_BYTES: usize = 1536;
    let table = unique_name("frequent-receipts");
    let (pipeline, webhook_port, crm_port, _printed) = start_pipeline_on("pipedrive", &table).await;
    let http = reqwest::Client::new();
    const AT: u64 = 1795941528;
    for n in 0..SUBMISSIONS {
        let body = format!(
            r#"{{"event":"form.submitted","timestamp":{},"data":{{"submissionId":"sub_{n:03}","formData":{{"name":"Ada Lovelace","email":"ada@example.com","message":"Visit {n}"}}}}}}"#,
            AT + n
        );
        // As a sender does, a 5xx (no durable receipt: the local table
        // busy beside the other suites) is sent again.
        let mut status = 0;
        for _ in 0..5 {
            let answer = static_forms_post(&http, webhook_port)
                .body(body.clone())
                .send()
                .await
                .unwrap();
            status = answer.status().as_u16();
            if status < 500 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert_eq!(status, 202, "sub_{n:03}");
    }
    let notes_url = format!("http://127.0.0.1:{crm_port}/notes");
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let notes = get_json(&http, &notes_url).await;
        if notes["count"].as_u64() >= Some(SUBMISSIONS) || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // A pass later, still one note each.
    tokio::time::sleep(Duration::from_secs(7)).await;
    let notes = get_json(&http, &notes_url).await;
    let mut contents: Vec<&str> = notes["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|note| note["content"].as_str().unwrap())
        .collect();
    contents.sort_unstable();
    contents.dedup();
    assert_eq!(notes["count"], SUBMISSIONS, "one note per submission");
    assert_eq!(contents.len() as u64, SUBMISSIONS, "none twice");

    let client = worker_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let gates: Vec<_> = scan(&client, &table)
        .await
        .into_iter()
        .filter(|item| {
            text(item, "pk").starts_with("gate#") && !text(item, "pk").starts_with("gate#double:")
        })
        .collect();
    assert_eq!(gates.len(), 1, "one person, one gate item");
    let size = item_size(&gates[0]);
    println!("the person's gate item after {SUBMISSIONS} submissions: {size} bytes");
    assert!(
        size < BOUND_BYTES,
        "the person's gate item holds {size} bytes after {SUBMISSIONS} submissions: {:?}",
        gates[0].keys().collect::<Vec<_>>()
    );
    stop(pipeline).await;
}

/// An item's size as DynamoDB counts it: each attribute's name and value
/// (strings and numbers by their text; enough for the items checked here).
fn item_size(
    item: &std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>,
) -> usize {
    item.iter()
        .map(|(name, value)| {
            name.len()
                + match value {
                    aws_sdk_dynamodb::types::AttributeValue::S(text)
                    | aws_sdk_dynamodb::types::AttributeValue::N(text) => text.len(),
                    aws_sdk_dynamodb::types::AttributeValue::Bool(_) => 1,
                    other => format!("{other:?}").len(),
                }
        })
        .sum()
}
