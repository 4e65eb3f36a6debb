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

/// HubSpot and Mailchimp fakes, and the worker `main` builds for
/// `DESTINATION=hubspot,mailchimp` (from its configuration: each
/// destination's own gates and person memories on the receipts table),
/// delivering from a fresh receipts table on the DynamoDB-protocol server.
struct TwoDestinations {
    hubspot: devtools::fakes::hubspot::HubSpotFake,
    mailchimp: devtools::fakes::mailchimp::MailchimpFake,
    client: aws_sdk_dynamodb::Client,
    table: String,
    clock: shared::clock::Adjustable,
}

impl TwoDestinations {
    async fn start() -> Self {
        use devtools::fakes::hubspot::{HubSpotFake, DEMO_HUBSPOT_TOKEN};
        use devtools::fakes::mailchimp::{
            MailchimpFake, DEMO_MAILCHIMP_API_KEY, DEMO_MAILCHIMP_LIST_ID,
        };
        let moto = endpoint(DYNAMODB_ENDPOINT);
        let client = worker_client(&moto).await;
        TwoDestinations {
            hubspot: HubSpotFake::start(DEMO_HUBSPOT_TOKEN).await.unwrap(),
            mailchimp: MailchimpFake::start(DEMO_MAILCHIMP_API_KEY, DEMO_MAILCHIMP_LIST_ID)
                .await
                .unwrap(),
            table: create_table(&client, "ReceiptsTable").await,
            client,
            clock: shared::clock::Adjustable::default(),
        }
    }

    async fn worker<L: worker::ledger::ReceiptLedger + worker::ledger::PendingQueue>(
        &self,
        ledger: impl FnOnce(worker::ledger::dynamodb::DynamoLedger) -> L,
    ) -> worker::Worker<worker::destinations::ConfiguredDestination, L> {
        use devtools::fakes::hubspot::DEMO_HUBSPOT_TOKEN;
        use devtools::fakes::mailchimp::{DEMO_MAILCHIMP_API_KEY, DEMO_MAILCHIMP_LIST_ID};
        let env: std::collections::HashMap<&str, String> = std::collections::HashMap::from([
            ("RECEIPTS_TABLE", self.table.clone()),
            ("DESTINATION", "hubspot,mailchimp".to_owned()),
            ("GATE_KEY", devtools::local::DEMO_GATE_KEY.to_owned()),
            ("CRM_ALLOW_HTTP", "true".to_owned()),
            ("HUBSPOT_TOKEN", DEMO_HUBSPOT_TOKEN.to_owned()),
            ("HUBSPOT_BASE_URL", self.hubspot.base_url()),
            ("MAILCHIMP_API_KEY", DEMO_MAILCHIMP_API_KEY.to_owned()),
            ("MAILCHIMP_LIST_ID", DEMO_MAILCHIMP_LIST_ID.to_owned()),
            ("MAILCHIMP_BASE_URL", self.mailchimp.base_url()),
        ]);
        let config = worker::Config::from_lookup(|name| env.get(name).cloned()).unwrap();
        let sdk = worker_sdk_config(&endpoint(DYNAMODB_ENDPOINT)).await;
        let mut built = config
            .destinations
            .build(&self.table, &sdk, &self.client)
            .await
            .unwrap();
        let first = built.remove(0);
        let ledger = ledger(worker::ledger::dynamodb::DynamoLedger::new(
            self.client.clone(),
            &self.table,
        ));
        worker::Worker::new(first, ledger, 8)
            .also_to(built)
            .with_retry_policy(shared::delivery::RetryPolicy {
                base_delay: Duration::from_millis(10),
                max_delay: Duration::from_millis(50),
                safety_margin: Duration::from_millis(200),
                max_attempts: 3,
            })
            .with_clock(self.clock.clock())
    }

    /// A receipt of `email`'s submission, stored as ingest stores it, and
    /// its stream INSERT.
    async fn store(
        &self,
        id: &str,
        email: &str,
    ) -> (shared::Receipt, aws_lambda_events::event::dynamodb::Event) {
        let body = serde_json::json!({
            "event": "form.submitted",
            "data": {"submissionId": id, "formData": {"name": "Grace Hopper", "email": email, "message": id}}
        });
        let submission = shared::FormSubmission::parse(body.to_string().as_bytes()).unwrap();
        let receipt = shared::Receipt::new(&submission, std::time::SystemTime::now());
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(serde_dynamo::to_item(&receipt).unwrap()))
            .send()
            .await
            .unwrap();
        let event = devtools::stream_event::event(vec![devtools::stream_event::record(
            "INSERT", &receipt, "100",
        )]);
        (receipt, serde_json::from_value(event).unwrap())
    }

    async fn stored(&self, receipt: &shared::Receipt) -> shared::Receipt {
        let item = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(
                "pk",
                aws_sdk_dynamodb::types::AttributeValue::S(receipt.pk.clone()),
            )
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .item
            .unwrap();
        serde_dynamo::from_item(item).unwrap()
    }
}

fn lanes_of(receipt: &shared::Receipt) -> Vec<(String, shared::lanes::LaneState)> {
    receipt
        .destinations
        .iter()
        .map(|(name, lane)| (name.clone(), lane.state))
        .collect()
}

fn in_seconds(seconds: u64) -> Instant {
    Instant::now() + Duration::from_secs(seconds)
}

/// Mailchimp keeps the person away (compliance): the receipt is COMPLETED
/// with Mailchimp REFUSED and HubSpot's write standing.
#[tokio::test]
async fn a_mailchimp_refusal_leaves_the_hubspot_write_standing() {
    use shared::lanes::LaneState::*;
    let two = TwoDestinations::start().await;
    two.mailchimp.keep_away(
        "grace@example.com",
        devtools::fakes::mailchimp::KeptAway::Compliance,
    );
    let worker = two.worker(|ledger| ledger).await;
    let (receipt, event) = two.store("sub_refused", "grace@example.com").await;

    let response = worker.handle(event, in_seconds(30)).await;
    assert!(response.batch_item_failures.is_empty());
    let after = two.stored(&receipt).await;
    assert_eq!(after.status, shared::ReceiptStatus::Completed);
    assert_eq!(
        lanes_of(&after),
        [
            ("hubspot".to_owned(), Written),
            ("mailchimp".to_owned(), Refused)
        ]
    );
    assert_eq!(
        after.destinations["mailchimp"].last_error.as_deref(),
        Some("Member In Compliance State")
    );
    assert_eq!(
        after.payload, None,
        "no form data once every destination settled"
    );
    let contacts = two.hubspot.contacts();
    assert_eq!(contacts.len(), 1);
    assert_eq!(contacts[0].writes, 1);
    assert!(two.mailchimp.members().is_empty());
}

/// Mailchimp writes the member and its answer is lost, then the stream
/// delivers the record again: one contact and one member, each with one
/// note, and HubSpot written once.
#[tokio::test]
async fn a_lost_mailchimp_answer_and_a_replay_write_no_destination_twice() {
    let two = TwoDestinations::start().await;
    two.mailchimp
        .lose_answer(devtools::fakes::mailchimp::Lost::MemberPut);
    let worker = two.worker(|ledger| ledger).await;
    let (receipt, event) = two.store("sub_lost", "grace@example.com").await;

    worker.handle(event.clone(), in_seconds(30)).await;
    worker.handle(event, in_seconds(30)).await;

    let after = two.stored(&receipt).await;
    assert_eq!(after.status, shared::ReceiptStatus::Completed, "{after:?}");
    let contacts = two.hubspot.contacts();
    assert_eq!((contacts.len(), contacts[0].writes), (1, 1), "{contacts:?}");
    assert_eq!(two.hubspot.notes().len(), 1, "one contact note");
    assert_eq!(two.mailchimp.members().len(), 1, "one member");
    assert_eq!(two.mailchimp.notes().len(), 1, "one member note");
}

/// The worker dies after one destination's answer was saved and before the
/// receipt's last write: a pass after its claim ends calls only the other
/// destination. The crash is injected at the completion, whichever
/// destination answered first.
#[tokio::test]
async fn a_worker_killed_between_two_destinations_never_writes_the_first_again() {
    let two = TwoDestinations::start().await;
    let worker = two
        .worker(|ledger| worker::ledger::memory::WatchedLedger::new(ledger).failing_first(1))
        .await;
    let (receipt, event) = two.store("sub_killed", "grace@example.com").await;

    let response = worker.handle(event, in_seconds(30)).await;
    assert_eq!(
        response.batch_item_failures.len(),
        1,
        "nothing final recorded"
    );
    let saved = two.stored(&receipt).await;
    let settled: Vec<String> = saved
        .destinations
        .iter()
        .filter(|(_, lane)| lane.state == shared::lanes::LaneState::Written)
        .map(|(name, _)| name.clone())
        .collect();
    assert_eq!(settled.len(), 1, "the first answer was saved: {saved:?}");

    two.clock.advance(Duration::from_secs(3600));
    worker.reconcile(in_seconds(30)).await;
    let done = two.stored(&receipt).await;
    assert_eq!(done.status, shared::ReceiptStatus::Completed, "{done:?}");
    let hubspot_writes = two.hubspot.contacts()[0].writes;
    let mailchimp_writes = two.mailchimp.members()[0].writes;
    let saved_writes = match settled[0].as_str() {
        "hubspot" => hubspot_writes,
        _ => mailchimp_writes,
    };
    assert_eq!(saved_writes, 1, "{} was not written again", settled[0]);
    assert_eq!(two.hubspot.notes().len(), 1);
    assert_eq!(two.mailchimp.notes().len(), 1);
}
