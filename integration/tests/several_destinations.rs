//! One stack, several destinations, through the real binaries: the local
//! pipeline with `DESTINATION=hubspot,mailchimp`, the HubSpot and Mailchimp
//! fakes on 127.0.0.1, a DynamoDB-protocol server, and a routes file that
//! sends the contact form to both and the newsletter form to Mailchimp
//! only. Each destination of a lead is written exactly once, a Mailchimp
//! outage holds no HubSpot lead back, and `receipts show` tells each
//! destination's state.

use std::time::{Duration, Instant};

use integration::pipeline::*;
use integration::*;

const ROUTES: &str = r#"
[[route]]
form = "contact_form"
name = "Contact"
destinations = ["hubspot", "mailchimp"]

[[route]]
form = "newsletter_form"
name = "Newsletter"
destinations = ["mailchimp"]
"#;

/// What a fake lists at `path` (`items` names its list) once `ready` says
/// so, or as it is after 30 s (the caller's assertion says what is wrong).
async fn listed_when(
    http: &reqwest::Client,
    url: &str,
    items: &str,
    ready: impl Fn(&[serde_json::Value]) -> bool,
) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let listed: serde_json::Value = http.get(url).send().await.unwrap().json().await.unwrap();
        let list = listed[items].as_array().cloned().unwrap_or_default();
        if ready(&list) || Instant::now() > deadline {
            return list;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn emails(list: &[serde_json::Value], at: &str) -> Vec<String> {
    let mut emails: Vec<String> = list
        .iter()
        .map(|item| {
            item.pointer(at)
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    emails.sort();
    emails
}

fn writes(list: &[serde_json::Value]) -> Vec<u64> {
    list.iter()
        .map(|item| item["writes"].as_u64().unwrap_or(0))
        .collect()
}

/// `receipts show` of one submission, once `ready` holds (or after 30 s).
async fn card_when(table: &str, id: &str, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (ok, out, err) = receipts_cli(&[], &["--table", table, "show", id]);
        assert!(ok, "{err}");
        if ready(&out) || Instant::now() > deadline {
            return out;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn each_form_reaches_the_destinations_its_route_names_each_exactly_once() {
    let file = std::env::temp_dir().join(format!("{}.toml", unique_name("routes")));
    std::fs::write(&file, ROUTES).unwrap();
    let table = unique_name("several-receipts");
    let (pipeline, webhook_port, crm_port, _) = start_pipeline_with(
        "hubspot,mailchimp",
        &table,
        &[("ROUTES_FILE", file.to_str().unwrap())],
    )
    .await;
    std::fs::remove_file(&file).unwrap();
    let hubspot = format!("http://127.0.0.1:{crm_port}");
    let mailchimp = format!("http://127.0.0.1:{}", crm_port + 1);

    let http = reqwest::Client::new();
    let send = |id: &str, form: &str, email: &str| {
        let body = format!(
            r#"{{"event":"form.submitted","data":{{"submissionId":"{id}","apiKey":"{form}","formData":{{"name":"Ada Lovelace","email":"{email}","message":"{id}"}}}}}}"#
        );
        static_forms_post(&http, webhook_port).body(body).send()
    };
    assert_eq!(
        send("sub_contact_1", "contact_form", "ada@example.com")
            .await
            .unwrap()
            .status(),
        202
    );
    assert_eq!(
        send("sub_news_1", "newsletter_form", "grace@example.com")
            .await
            .unwrap()
            .status(),
        202
    );

    let members = listed_when(&http, &format!("{mailchimp}/members"), "members", |l| {
        l.len() >= 2
    })
    .await;
    assert_eq!(
        emails(&members, "/email_address"),
        ["ada@example.com", "grace@example.com"]
    );
    assert_eq!(writes(&members), [1, 1]);
    let contacts = listed_when(&http, &format!("{hubspot}/contacts"), "contacts", |l| {
        !l.is_empty()
    })
    .await;
    assert_eq!(
        emails(&contacts, "/properties/email"),
        ["ada@example.com"],
        "the newsletter is Mailchimp's only"
    );
    assert_eq!(writes(&contacts), [1]);
    let card = card_when(&table, "sub_contact_1", |card| {
        card.contains("status         COMPLETED")
    })
    .await;
    assert!(
        card.contains("to             hubspot: WRITTEN, record "),
        "{card}"
    );
    assert!(
        card.contains("to             mailchimp: WRITTEN, record "),
        "{card}"
    );
    let alone = card_when(&table, "sub_news_1", |card| {
        card.contains("status         COMPLETED")
    })
    .await;
    assert!(
        alone.contains("to             mailchimp: WRITTEN, record "),
        "{alone}"
    );
    assert!(
        !alone.contains("hubspot"),
        "the newsletter's one destination: {alone}"
    );

    // Mailchimp down: the next contact is in HubSpot at once, Mailchimp's
    // share waits with its next attempt, then lands once it recovers.
    let broken = http
        .post(format!("{mailchimp}/faults"))
        .json(&serde_json::json!({"status": 503}))
        .send()
        .await
        .unwrap();
    assert_eq!(broken.status(), 204);
    assert_eq!(
        send("sub_contact_2", "contact_form", "alan@example.com")
            .await
            .unwrap()
            .status(),
        202
    );
    let contacts = listed_when(&http, &format!("{hubspot}/contacts"), "contacts", |l| {
        l.len() >= 2
    })
    .await;
    assert_eq!(
        emails(&contacts, "/properties/email"),
        ["ada@example.com", "alan@example.com"]
    );
    // Deferred (its last error recorded), not only saved while it retried.
    let waiting = card_when(&table, "sub_contact_2", |card| {
        card.contains("mailchimp: PENDING") && card.contains("last error")
    })
    .await;
    assert!(waiting.contains("status         RECEIVED"), "{waiting}");
    assert!(
        waiting.contains("to             hubspot: WRITTEN"),
        "{waiting}"
    );
    assert!(
        waiting.contains("to             mailchimp: PENDING, "),
        "{waiting}"
    );
    assert!(waiting.contains(", next attempt "), "{waiting}");
    let (ok, listed, err) = receipts_cli(&[], &["--table", &table, "list", "--status", "received"]);
    assert!(ok, "{err}");
    assert!(
        listed.contains("mailchimp: "),
        "list names the open destination: {listed}"
    );

    let mended = http
        .delete(format!("{mailchimp}/faults"))
        .send()
        .await
        .unwrap();
    assert_eq!(mended.status(), 204);
    let members = listed_when(&http, &format!("{mailchimp}/members"), "members", |l| {
        l.len() >= 3
    })
    .await;
    assert_eq!(
        emails(&members, "/email_address"),
        ["ada@example.com", "alan@example.com", "grace@example.com"]
    );
    card_when(&table, "sub_contact_2", |card| {
        card.contains("status         COMPLETED")
    })
    .await;

    // A retried delivery is a duplicate, and a few passes later nothing
    // was written again anywhere.
    assert_eq!(
        send("sub_contact_1", "contact_form", "ada@example.com")
            .await
            .unwrap()
            .status(),
        200
    );
    tokio::time::sleep(Duration::from_secs(7)).await;
    let contacts = listed_when(&http, &format!("{hubspot}/contacts"), "contacts", |_| true).await;
    let members = listed_when(&http, &format!("{mailchimp}/members"), "members", |_| true).await;
    assert_eq!(writes(&contacts), [1, 1], "{contacts:?}");
    assert_eq!(writes(&members), [1, 1, 1], "{members:?}");
    let notes = listed_when(&http, &format!("{mailchimp}/notes"), "notes", |_| true).await;
    assert_eq!(notes.len(), 3, "one member note per submission: {notes:?}");
    let hubspot_notes = listed_when(&http, &format!("{hubspot}/notes"), "notes", |l| {
        l.len() >= 2
    })
    .await;
    assert_eq!(
        hubspot_notes.len(),
        2,
        "one contact note per submission: {hubspot_notes:?}"
    );

    // Mailchimp refusing the lead for good: FAILED there, written in
    // HubSpot; a redrive of Mailchimp alone writes it there once and never
    // HubSpot again.
    let refusing = http
        .post(format!("{mailchimp}/faults"))
        .json(&serde_json::json!({"status": 400, "times": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(refusing.status(), 204);
    assert_eq!(
        send("sub_contact_3", "contact_form", "marie@example.com")
            .await
            .unwrap()
            .status(),
        202
    );
    let failed = card_when(&table, "sub_contact_3", |card| {
        card.contains("status         FAILED")
    })
    .await;
    assert!(
        failed.contains("to             hubspot: WRITTEN"),
        "{failed}"
    );
    assert!(
        failed.contains("to             mailchimp: FAILED"),
        "{failed}"
    );
    let (ok, listed, err) = receipts_cli(
        &[],
        &[
            "--table",
            &table,
            "list",
            "--destination",
            "mailchimp",
            "--status",
            "failed",
        ],
    );
    assert!(ok, "{err}");
    assert!(listed.contains("sub_contact_3"), "{listed}");
    assert!(!listed.contains("sub_contact_1"), "{listed}");
    let (ok, out, err) = receipts_cli(
        &[],
        &[
            "--table",
            &table,
            "redrive",
            "--destination",
            "hubspot",
            "sub_contact_3",
        ],
    );
    assert!(ok, "{err}");
    assert!(
        out.contains("hubspot is WRITTEN, never delivered again"),
        "{out}"
    );
    let (ok, out, err) = receipts_cli(
        &[],
        &[
            "--table",
            &table,
            "redrive",
            "--destination",
            "mailchimp",
            "sub_contact_3",
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains("redriven "), "{out}");
    card_when(&table, "sub_contact_3", |card| {
        card.contains("status         COMPLETED")
    })
    .await;
    let members = listed_when(&http, &format!("{mailchimp}/members"), "members", |l| {
        l.len() >= 4
    })
    .await;
    let contacts = listed_when(&http, &format!("{hubspot}/contacts"), "contacts", |_| true).await;
    assert_eq!(writes(&members), [1, 1, 1, 1], "{members:?}");
    assert_eq!(
        writes(&contacts),
        [1, 1, 1],
        "HubSpot not again: {contacts:?}"
    );
    stop(pipeline).await;
}
