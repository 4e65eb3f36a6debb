//! The run command's pipeline, as a user meets it: the real `ingest` and
//! `worker` binaries behind the local HTTP API, the stream pump, the
//! reconciliation passes and the CRM stub. The README's curl sequences (202,
//! then 200 duplicate, then one lead; the CRM broken, three deliveries, the
//! CRM mended, three leads once each) and a clean Ctrl-C.

use std::time::{Duration, Instant};

use integration::pipeline::*;
use integration::*;

/// The direct children of `pid` (Linux).
fn children_of(pid: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            children.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    children
}

fn is_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.contains(") Z "))
        .unwrap_or(false)
}

#[tokio::test]
async fn the_local_pipeline_takes_a_delivery_to_one_lead_and_stops_cleanly() {
    let (mut pipeline, webhook_port, crm_port, printed) = start_pipeline_for("http").await;

    let event: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../events/ingest-valid.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let http = reqwest::Client::new();
    let send = || {
        // As Static Forms sends it: the secret in the URL, no header of ours.
        static_forms_post(&http, webhook_port)
            .body(event["body"].as_str().unwrap().to_owned())
            .send()
    };
    let first = send().await.unwrap();
    assert_eq!(first.status(), 202);
    assert_eq!(
        first.text().await.unwrap(),
        r#"{"accepted":true,"duplicate":false}"#
    );
    let second = send().await.unwrap();
    assert_eq!(second.status(), 200);
    assert_eq!(
        second.text().await.unwrap(),
        r#"{"accepted":true,"duplicate":true}"#
    );

    // Another sender's path: API Gateway's 404, and a line saying which
    // path this pipeline takes.
    let elsewhere = http
        .post(format!("http://127.0.0.1:{webhook_port}/webhooks/tally"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(elsewhere.status(), 404);
    let told = "local-pipeline: POST /webhooks/tally answered 404: this pipeline takes POST /webhooks/staticforms (SENDER chooses the sender)";
    let deadline = Instant::now() + Duration::from_secs(10);
    while !printed.lock().unwrap().iter().any(|line| line == told) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        printed.lock().unwrap().iter().any(|line| line == told),
        "no {told:?}"
    );

    let leads_url = format!("http://127.0.0.1:{crm_port}/leads");
    let leads = leads_once_there(&http, &leads_url, 1, Duration::from_secs(20)).await;
    assert_eq!(leads["count"], 1, "{leads}");
    assert_eq!(
        leads["leads"][0]["externalId"],
        "sub_01JDEMO00000000000000000001"
    );
    assert_eq!(leads["leads"][0]["writes"], 1);

    // The README's outage: break the CRM, deliver, mend it, watch.
    let faults_url = format!("http://127.0.0.1:{crm_port}/faults");
    let broken = http
        .post(&faults_url)
        .json(&serde_json::json!({"status": 503}))
        .send()
        .await
        .unwrap();
    assert_eq!(broken.status(), 204);
    for n in 1..=3 {
        let id = format!("sub_outage_{n}");
        // Each its own answer: the same ones within minutes would be one
        // lead (a double submit).
        let accepted = static_forms_post(&http, webhook_port).body(format!(r#"{{"event":"form.submitted","data":{{"submissionId":"{id}","formData":{{"email":"ada@example.com","message":"outage {n}"}}}}}}"#))
            .send()
            .await
            .unwrap();
        assert_eq!(accepted.status(), 202);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let during: serde_json::Value = http
        .get(&leads_url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        during["count"], 1,
        "nothing gets through a broken CRM: {during}"
    );
    let mended = http.delete(&faults_url).send().await.unwrap();
    assert_eq!(mended.status(), 204);
    let leads = leads_once_there(&http, &leads_url, 4, Duration::from_secs(90)).await;
    assert_eq!(
        leads["count"], 4,
        "the reconciler delivered the waiting leads: {leads}"
    );
    for lead in leads["leads"].as_array().unwrap() {
        assert_eq!(lead["writes"], 1, "once each: {lead}");
    }
    // The summary line says the same, within its few seconds.
    let summary =
        "local-pipeline: deliveries accepted=4 duplicate=1 | leads 4 (4 writes) | pending 0";
    let deadline = Instant::now() + Duration::from_secs(20);
    while !printed.lock().unwrap().iter().any(|line| line == summary) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let lines = printed.lock().unwrap().clone();
    assert!(
        lines.iter().any(|line| line == summary),
        "no {summary:?} in:\n{}",
        lines.join("\n")
    );
    // The functions' logs as one human line per event: no JSON, no metric
    // line (LOGS=json shows those).
    for said in [
        "ingest received   sub_01JDEMO00000000000000000001: accepted (202)",
        "ingest received   sub_01JDEMO00000000000000000001: duplicate (200)",
        "worker delivered  sub_01JDEMO00000000000000000001 to http",
    ] {
        assert!(
            lines.iter().any(|line| line == said),
            "no {said:?} in:\n{}",
            lines.join("\n")
        );
    }
    assert!(
        !lines.iter().any(|line| line.contains('{')),
        "no JSON line: {}",
        lines.join("\n")
    );

    let pid = pipeline.id().expect("running");
    let functions = children_of(pid);
    assert_eq!(functions.len(), 2, "ingest and worker run as processes");
    let interrupted = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(interrupted.success());
    let exit = tokio::time::timeout(Duration::from_secs(10), pipeline.wait()).await;
    assert!(
        matches!(exit, Ok(Ok(status)) if status.success()),
        "Ctrl-C stops it cleanly: {exit:?}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    for child in functions {
        assert!(
            !is_running(child),
            "function process {child} was left behind"
        );
    }
}

/// What a CRM fake lists at `url` once it holds one item (failing after
/// 20 s with what it holds).
async fn listed_once(http: &reqwest::Client, url: &str) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    let listed = loop {
        let listed: serde_json::Value = http.get(url).send().await.unwrap().json().await.unwrap();
        if listed["count"] == 1 || Instant::now() > deadline {
            break listed;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(listed["count"], 1, "{listed}");
    listed
}

/// One delivery twice (202, then 200), then what the CRM fake lists at
/// `list_path` once it holds one item (`items` names the list).
async fn deliver_twice_and_list(
    webhook_port: u16,
    crm_port: u16,
    list_path: &str,
    items: &str,
) -> serde_json::Value {
    let http = reqwest::Client::new();
    let body = r#"{"event":"form.submitted","timestamp":1795941528,"data":{"submissionId":"sub_crm_1","formData":{"name":"Ada Lovelace","email":"Ada@Example.com","company":"AE"}}}"#;
    let send = || static_forms_post(&http, webhook_port).body(body).send();
    assert_eq!(send().await.unwrap().status(), 202);
    assert_eq!(send().await.unwrap().status(), 200);
    let listed = listed_once(&http, &format!("http://127.0.0.1:{crm_port}{list_path}")).await;
    let item = listed[items][0].clone();
    assert_eq!(item["writes"], 1, "the duplicate was never sent: {item}");
    item
}

/// The README's quick start, run as written (its ports the test's): two
/// deliveries answered 202 then 200, and, once the script has seen the lead
/// written, one lead written once. The `receipts` line the pipeline prints runs as printed.
#[tokio::test]
async fn the_readme_quick_start_runs_as_written() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let section = readme
        .split("## Run it locally")
        .nth(1)
        .expect("README: Run it locally");
    let script = section
        .split("```sh\n")
        .nth(1)
        .and_then(|block| block.split("```").next())
        .expect("README: the quick start's sh block");
    let (pipeline, webhook_port, crm_port, printed) = start_pipeline_for("http").await;
    let script = script
        .replace("127.0.0.1:9000", &format!("127.0.0.1:{webhook_port}"))
        .replace("127.0.0.1:9001", &format!("127.0.0.1:{crm_port}"));
    // Not blocking the runtime: its tasks read the pipeline's output. The
    // script waits for the lead itself; a lead that never comes fails here.
    let ran = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new("bash")
            .args(["-euo", "pipefail", "-c", &script])
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the quick start's lead within 60 s")
    .unwrap();
    let out = String::from_utf8_lossy(&ran.stdout);
    assert!(
        ran.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let answers: Vec<&str> = out.lines().filter(|l| l.starts_with("HTTP/")).collect();
    assert_eq!(
        answers,
        ["HTTP/1.1 202 Accepted", "HTTP/1.1 200 OK"],
        "{out}"
    );
    let leads: serde_json::Value =
        serde_json::from_str(out.lines().last().unwrap_or_default()).expect("the leads, as JSON");
    assert_eq!(leads["count"], 1, "{out}");
    assert_eq!(leads["leads"][0]["writes"], 1, "{out}");

    let receipts_line = printed
        .lock()
        .unwrap()
        .iter()
        .find_map(|line| line.trim().strip_prefix("receipts  ").map(str::to_owned))
        .expect("a receipts line");
    let listed = tokio::process::Command::new("bash")
        .args(["-c", &receipts_line])
        .env_remove("AWS_PROFILE")
        .output()
        .await
        .unwrap();
    let listed_out = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success(),
        "{listed_out}{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(listed_out.contains("COMPLETED"), "{listed_out}");
    stop(pipeline).await;
}

/// The card `receipts show` prints for `sub_crm_1` once it is COMPLETED
/// (failing after 20 s with the last card).
async fn delivered_card(receipts_table: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (ok, out, err) = receipts_cli(&[], &["--table", receipts_table, "show", "sub_crm_1"]);
        assert!(ok, "{err}");
        if out.contains("status         COMPLETED\n") || Instant::now() > deadline {
            return out;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `DESTINATION=hubspot make run`: 202, then 200, then exactly one contact,
/// and its receipt names it.
#[tokio::test]
async fn the_local_pipeline_with_hubspot_makes_one_contact() {
    let receipts = unique_name("hubspot-receipts");
    let (pipeline, webhook_port, crm_port, _) = start_pipeline_on("hubspot", &receipts).await;
    let contact = deliver_twice_and_list(webhook_port, crm_port, "/contacts", "contacts").await;
    assert_eq!(contact["properties"]["email"], "ada@example.com");
    assert_eq!(contact["properties"]["firstname"], "Ada");
    assert_eq!(contact["properties"]["lastname"], "Lovelace");
    let card = delivered_card(&receipts).await;
    let id = contact["id"].as_str().unwrap();
    assert!(
        card.contains(&format!("delivered to   HubSpot, record {id}\n")),
        "{card}"
    );
    stop(pipeline).await;
}

/// One destination's local run keeping every submission as a note: 202,
/// then 200, then exactly one record (listed at `records` as `items`),
/// written once, with one note (at `/notes`) that names the record
/// (`note_record`, its id `id_key` on the record) and holds the unmapped
/// `company` field (`note_text`); the receipt's card names the record (its
/// `record_id_key`) at the destination's `title`. The record, for the
/// caller's own checks.
async fn one_record_and_its_note(
    destination: &str,
    (records, items): (&str, &str),
    (note_record, note_text): (&str, &str),
    (id_key, record_id_key): (&str, &str),
    title: &str,
) -> serde_json::Value {
    let receipts = unique_name(&format!("{destination}-receipts"));
    let (pipeline, webhook_port, crm_port, _) = start_pipeline_on(destination, &receipts).await;
    let record = deliver_twice_and_list(webhook_port, crm_port, records, items).await;
    let notes: serde_json::Value = reqwest::get(format!("http://127.0.0.1:{crm_port}/notes"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(notes["count"], 1, "{notes}");
    assert_eq!(notes["notes"][0][note_record], record[id_key]);
    assert!(
        notes["notes"][0][note_text]
            .as_str()
            .unwrap()
            .contains("company: AE"),
        "an unmapped field goes to the note: {notes}"
    );
    let card = delivered_card(&receipts).await;
    let shown = match &record[record_id_key] {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    assert!(
        card.contains(&format!("delivered to   {title}, record {shown}\n")),
        "{card}"
    );
    // A shared access token is in the table sealed, never readable.
    let client = worker_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let tokens: Vec<_> = scan(&client, &receipts)
        .await
        .into_iter()
        .filter(|item| text(item, "pk").starts_with("token#"))
        .collect();
    assert_eq!(
        tokens.len(),
        usize::from(destination == "zoho"),
        "{tokens:?}"
    );
    for token in &tokens {
        let at_rest = text(token, "accessToken");
        assert!(
            at_rest.starts_with("v1:") && !at_rest.contains("1000."),
            "the token item holds a readable token"
        );
    }
    stop(pipeline).await;
    record
}

/// `DESTINATION=pipedrive make run`: 202, then 200, then exactly one
/// person, written once, with the submission's note; its receipt names it.
#[tokio::test]
async fn the_local_pipeline_with_pipedrive_makes_one_person_and_its_note() {
    let person = one_record_and_its_note(
        "pipedrive",
        ("/persons", "persons"),
        ("person_id", "content"),
        ("id", "id"),
        "Pipedrive",
    )
    .await;
    assert_eq!(person["name"], "Ada Lovelace");
    assert_eq!(person["emails"][0]["value"], "ada@example.com");
}

/// `DESTINATION=mailchimp make run`: 202, then 200, then exactly one
/// member, written once and `transactional` (no consent asked), with the
/// submission's note; its receipt names it.
#[tokio::test]
async fn the_local_pipeline_with_mailchimp_makes_one_member_and_its_note() {
    let member = one_record_and_its_note(
        "mailchimp",
        ("/members", "members"),
        ("email_id", "note"),
        ("id", "web_id"),
        "Mailchimp",
    )
    .await;
    assert_eq!(member["email_address"], "ada@example.com");
    assert_eq!(member["merge_fields"]["FNAME"], "Ada");
    assert_eq!(member["merge_fields"]["LNAME"], "Lovelace");
    assert_eq!(member["status"], "transactional");
}

/// `DESTINATION=zoho make run`: 202, then 200, then exactly one Lead,
/// written once, with the submission's note; the access token fetched
/// once and kept in the receipts table for every instance.
#[tokio::test]
async fn the_local_pipeline_with_zoho_makes_one_lead_and_its_note() {
    let lead = one_record_and_its_note(
        "zoho",
        ("/records", "records"),
        ("record", "content"),
        ("id", "id"),
        "Zoho CRM",
    )
    .await;
    assert_eq!(lead["Email"], "ada@example.com");
    assert_eq!(lead["Last_Name"], "Lovelace");
}

/// `DESTINATION=brevo make run`: 202, then 200, then exactly one contact,
/// written once, with the submission's note; its receipt names it.
#[tokio::test]
async fn the_local_pipeline_with_brevo_makes_one_contact_and_its_note() {
    let contact = one_record_and_its_note(
        "brevo",
        ("/contacts", "contacts"),
        ("contactId", "text"),
        ("id", "id"),
        "Brevo",
    )
    .await;
    assert_eq!(contact["email"], "ada@example.com");
    assert_eq!(contact["attributes"]["FIRSTNAME"], "Ada");
    assert_eq!(contact["attributes"]["LASTNAME"], "Lovelace");
}

/// `DESTINATION=attio make run`: 202, then 200, then exactly one person
/// record, written once, with the submission's note; its receipt names it.
#[tokio::test]
async fn the_local_pipeline_with_attio_makes_one_person_and_its_note() {
    let person = one_record_and_its_note(
        "attio",
        ("/people", "people"),
        ("parent_record_id", "content_plaintext"),
        ("record_id", "record_id"),
        "Attio",
    )
    .await;
    assert_eq!(
        person["values"]["email_addresses"][0]["email_address"],
        "ada@example.com"
    );
    assert_eq!(person["values"]["name"][0]["full_name"], "Ada Lovelace");
}

/// `SENDER=html make run`: a page on the loopback with the snippet, whose
/// form (posted as a browser posts it, with Turnstile's test token) is
/// stored once, the browser sent on to the thank-you page, and the lead
/// written once; a post from another page is refused.
#[tokio::test]
async fn the_local_pipeline_serves_a_form_page_whose_post_becomes_one_lead() {
    let receipts = unique_name("html-receipts");
    let (pipeline, webhook_port, crm_port, printed) =
        start_pipeline_with("http", &receipts, &[("SENDER", "html"), ("PAGE_PORT", "0")]).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let page = loop {
        let found = printed.lock().unwrap().iter().find_map(|line| {
            let at = line.find("open http://")?;
            line[at + 5..].split_whitespace().next().map(str::to_owned)
        });
        if let Some(page) = found {
            break page;
        }
        assert!(
            Instant::now() < deadline,
            "the page's address: {:?}",
            printed.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let origin = page.trim_end_matches('/').to_owned();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let html = http.get(&page).send().await.unwrap().text().await.unwrap();
    let action = format!("http://127.0.0.1:{webhook_port}/webhooks/html");
    assert!(html.contains(&format!("action=\"{action}\"")), "{html}");
    assert!(
        html.contains("cf-turnstile") && html.contains("_submission_id"),
        "{html}"
    );

    let post = |from: &str| {
        http.post(&action)
            .header("origin", from)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("_form=contact&_submission_id=5b1c7f0e-2a44-4d1f-9e0c-6a7b8c9d0e1f&name=Ada+Lovelace&email=ada%40example.com&message=Hello&cf-turnstile-response=XXXX.DUMMY.TOKEN.XXXX")
            .send()
    };
    let sent = post(&origin).await.unwrap();
    let status = sent.status();
    let headers = sent.headers().clone();
    assert_eq!(status, 303, "{headers:?} {}", sent.text().await.unwrap());
    assert_eq!(
        sent.headers()["location"],
        format!("{origin}/thanks").as_str()
    );
    let again = post(&origin).await.unwrap();
    assert_eq!(again.status(), 303, "the same page again");
    let foreign = post("https://evil.example").await.unwrap();
    assert_eq!(foreign.status(), 403);
    let thanks = http.get(format!("{origin}/thanks")).send().await.unwrap();
    assert_eq!(thanks.status(), 200);

    let leads = leads_once_there(
        &http,
        &format!("http://127.0.0.1:{crm_port}/leads"),
        1,
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(leads["count"], 1, "{leads}");
    assert_eq!(leads["calls"], 1, "written once: {leads}");
    stop(pipeline).await;
}

/// Pipedrive's limits and refusals through the binaries, as the other
/// destinations': a 429 waits and delivers; a 401 leaves the lead pending
/// as `destination-auth` until the token is accepted again, then a pass
/// delivers it; a custom field key the account lacks leaves it pending,
/// naming the key and where it came from.
#[tokio::test]
async fn pipedrive_limits_and_refusals_end_as_the_other_destinations_do() {
    let http = reqwest::Client::new();
    let receipts = unique_name("pipedrive-faults");
    let (pipeline, webhook_port, crm_port, _) = start_pipeline_on("pipedrive", &receipts).await;
    let faults = format!("http://127.0.0.1:{crm_port}/faults");
    let submit = |id: &'static str, email: &'static str| {
        let body = format!(
            r#"{{"event":"form.submitted","timestamp":1795941528,"data":{{"submissionId":"{id}","formData":{{"name":"Ada Lovelace","email":"{email}","company":"AE"}}}}}}"#
        );
        let http = http.clone();
        async move {
            let answer = static_forms_post(&http, webhook_port)
                .body(body)
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status(), 202);
        }
    };
    let client = worker_client(&endpoint(DYNAMODB_ENDPOINT)).await;
    let receipt_of = |id: &str| format!("staticforms:form.submitted:{id}");

    // A 429 with its wait: delivered once the wait is over.
    let fault = serde_json::json!({"status": 429, "retryAfter": "1", "times": 1});
    http.post(&faults).json(&fault).send().await.unwrap();
    submit("sub_rate", "rate@example.com").await;
    let persons = leads_once_there(
        &http,
        &format!("http://127.0.0.1:{crm_port}/persons"),
        1,
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(persons["count"], 1, "{persons}");

    // A refused token: pending as destination-auth, then delivered.
    let fault = serde_json::json!({"status": 401});
    http.post(&faults).json(&fault).send().await.unwrap();
    submit("sub_auth", "auth@example.com").await;
    let waiting = receipt_attribute(
        &client,
        &receipts,
        &receipt_of("sub_auth"),
        "lastError",
        |e| e == "destination-auth",
    )
    .await;
    assert_eq!(waiting, "destination-auth");
    http.delete(&faults).send().await.unwrap();
    let status = receipt_attribute(&client, &receipts, &receipt_of("sub_auth"), "status", |s| {
        s == "COMPLETED"
    })
    .await;
    assert_eq!(
        status, "COMPLETED",
        "a pass delivers it once the token is accepted"
    );
    stop(pipeline).await;

    // A custom field the account lacks: pending, naming it and its source.
    let unknown = "0123456789abcdef0123456789abcdef01234567";
    let field_map = format!(r#"{{"name":"name","{unknown}":"company"}}"#);
    let receipts = unique_name("pipedrive-field");
    let (pipeline, webhook_port, _, _) =
        start_pipeline_with("pipedrive", &receipts, &[("FIELD_MAP", &field_map)]).await;
    let body = r#"{"event":"form.submitted","timestamp":1795941528,"data":{"submissionId":"sub_field","formData":{"name":"Ada Lovelace","email":"ada@example.com","company":"AE"}}}"#;
    let answer = static_forms_post(&http, webhook_port)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 202);
    let said = format!("FIELD_REFUSED: {unknown} from FIELD_MAP");
    let reason = receipt_attribute(
        &client,
        &receipts,
        &receipt_of("sub_field"),
        "lastError",
        |e| e == said,
    )
    .await;
    assert_eq!(reason, said, "ours to fix, never the lead's data");
    let status = receipt_attribute(
        &client,
        &receipts,
        &receipt_of("sub_field"),
        "status",
        |_| true,
    )
    .await;
    assert_eq!(status, "RECEIVED", "pending, never FAILED");
    stop(pipeline).await;
}

/// The receipt's `name` once `wanted` holds (or what it is after 30 s).
async fn receipt_attribute(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    pk: &str,
    name: &str,
    wanted: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let value = scan(client, table)
            .await
            .iter()
            .find(|item| text(item, "pk") == pk)
            .and_then(|item| item.get(name)?.as_s().ok().cloned())
            .unwrap_or_default();
        if wanted(&value) || Instant::now() > deadline {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `SENDER=typeform DESTINATION=hubspot make run`: the events/ sample, as
/// Typeform signs it, is accepted once at /webhooks/typeform, and its
/// answers (an e-mail answer, a first name by its ref) make one contact.
#[tokio::test]
async fn the_local_pipeline_takes_a_signed_typeform_delivery_to_one_contact() {
    let (pipeline, webhook_port, crm_port, printed) = start_pipeline_with(
        "hubspot",
        &unique_name("typeform-receipts"),
        &[("SENDER", "typeform")],
    )
    .await;
    let event: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../events/ingest-typeform.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let http = reqwest::Client::new();
    let send = || {
        http.post(format!("http://127.0.0.1:{webhook_port}/webhooks/typeform"))
            .header("content-type", "application/json")
            .header(
                "typeform-signature",
                event["headers"]["typeform-signature"].as_str().unwrap(),
            )
            .body(event["body"].as_str().unwrap().to_owned())
            .send()
    };
    assert_eq!(send().await.unwrap().status(), 202);
    assert_eq!(send().await.unwrap().status(), 200);
    let listed = listed_once(&http, &format!("http://127.0.0.1:{crm_port}/contacts")).await;
    let contact = &listed["contacts"][0];
    assert_eq!(
        contact["properties"]["email"], "laura@example.com",
        "{contact}"
    );
    assert_eq!(contact["properties"]["firstname"], "Laura", "{contact}");
    assert_eq!(contact["properties"]["phone"], "+15551234567", "{contact}");
    // Read after the deliveries: the lines after "is up" arrive meanwhile.
    assert!(
        printed
            .lock()
            .unwrap()
            .iter()
            .any(|line| line.contains("/webhooks/typeform")),
        "it says where Typeform posts"
    );
    stop(pipeline).await;
}

/// `DESTINATION=salesforce make run`: 202, then 200, then exactly one Lead.
#[tokio::test]
async fn the_local_pipeline_with_salesforce_makes_one_lead() {
    let receipts = unique_name("salesforce-receipts");
    let (pipeline, webhook_port, crm_port, _) = start_pipeline_on("salesforce", &receipts).await;
    let lead = deliver_twice_and_list(webhook_port, crm_port, "/records", "records").await;
    assert_eq!(lead["fields"]["StaticForms_Submission_Id__c"], "sub_crm_1");
    assert_eq!(lead["fields"]["LastName"], "Lovelace");
    assert_eq!(lead["fields"]["Company"], "AE");
    let card = delivered_card(&receipts).await;
    let id = lead["id"].as_str().unwrap();
    assert!(
        card.contains(&format!("delivered to   Salesforce, record {id}\n")),
        "{card}"
    );
    stop(pipeline).await;
}

/// A stack on moto's CloudFormation whose outputs point at a local
/// pipeline (`Destination=http`, the sender's default authentication): its
/// name.
async fn stack_of_local_pipeline(
    endpoint: &str,
    sender: &str,
    webhook_url: &str,
    receipts_table: &str,
    secret_arn: &str,
) -> String {
    let stack = unique_name("smoke-stack");
    create_stack(
        endpoint,
        &stack,
        &[
            ("Sender", sender),
            ("WebhookAuth", ""),
            ("AcceptedForms", ""),
            ("Destination", "http"),
        ],
        &[
            ("WebhookUrl", webhook_url),
            ("ReceiptsTableName", receipts_table),
            ("WebhookSecretArn", secret_arn),
        ],
    )
    .await;
    stack
}

/// `receipts smoke --stack NAME` against the local pipeline, found through
/// a stack on moto's CloudFormation whose outputs point at it: the test
/// submission is accepted with the stack's own secret (read from moto's
/// Secrets Manager) and followed to COMPLETED. With the CRM failing it says
/// where the receipt waits and why, and exits non-zero; so it does with a
/// secret the endpoint refuses. The secret is never printed.
#[tokio::test(flavor = "multi_thread")]
async fn smoke_follows_a_test_submission_to_completed() {
    let receipts_table = unique_name("smoke-receipts");
    let (pipeline, webhook_port, crm_port, _) = start_pipeline_on("http", &receipts_table).await;
    let endpoint = endpoint(DYNAMODB_ENDPOINT);
    let secrets = secrets_client(&endpoint).await;
    let secret = "local-demo-token-change-me";
    let good_secret = create_secret(
        &secrets,
        "smoke-secret",
        &format!("{secret},an-older-secret-0001"),
    )
    .await;
    let webhook_url = format!("http://127.0.0.1:{webhook_port}/webhooks/staticforms");
    let stack_with = |secret_arn: String| {
        let (webhook_url, receipts_table) = (webhook_url.clone(), receipts_table.clone());
        let endpoint = endpoint.clone();
        async move {
            stack_of_local_pipeline(
                &endpoint,
                "staticforms",
                &webhook_url,
                &receipts_table,
                &secret_arn,
            )
            .await
        }
    };

    let stack = stack_with(good_secret).await;
    let (ok, out, err) = receipts_cli(&[], &["--stack", &stack, "smoke", "--timeout", "60s"]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("webhook answered 202"), "{out}");
    assert!(out.contains("COMPLETED after"), "{out}");
    assert!(
        out.contains(": delivered to Your CRM (http), record lead-1\n"),
        "where the smoke lead went: {out}"
    );
    assert!(
        out.contains("then delete the smoke lead in your CRM: externalId smoke_"),
        "what to delete in a CRM this tool holds no secret for: {out}"
    );
    assert!(
        !out.contains(secret) && !err.contains(secret),
        "the secret was printed: {out}{err}"
    );
    let http = reqwest::Client::new();
    let leads = leads_once_there(
        &http,
        &format!("http://127.0.0.1:{crm_port}/leads"),
        1,
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(leads["count"], 1, "{leads}");
    assert!(
        leads["leads"][0]["externalId"]
            .as_str()
            .unwrap()
            .starts_with("smoke_"),
        "{leads}"
    );

    // The CRM fails: smoke shows where the receipt waits, and why.
    http.post(format!("http://127.0.0.1:{crm_port}/faults"))
        .json(&serde_json::json!({"status": 503}))
        .send()
        .await
        .unwrap();
    let (ok, out, err) = receipts_cli(&[], &["--stack", &stack, "smoke", "--timeout", "8s"]);
    assert!(!ok, "{out}");
    assert!(err.contains("not COMPLETED within 8s"), "{err}");
    assert!(out.contains("last error HTTP 503"), "{out}");
    http.delete(format!("http://127.0.0.1:{crm_port}/faults"))
        .send()
        .await
        .unwrap();

    // A secret the endpoint does not accept: refused, said, non-zero.
    let wrong_secret = create_secret(&secrets, "smoke-wrong", "not-the-pipelines-secret-01").await;
    let wrong = stack_with(wrong_secret).await;
    let (ok, out, err) = receipts_cli(&[], &["--stack", &wrong, "smoke"]);
    assert!(!ok);
    assert!(out.contains("webhook answered 401"), "{out}");
    assert!(err.contains("refused the test submission (401)"), "{err}");
    assert!(!out.contains("not-the-pipelines-secret-01"), "{out}");
    stop(pipeline).await;
}

/// Smoke sends what Static Forms sends and nothing more: a stack that
/// would refuse Static Forms (one that requires an `Idempotency-Key`, which
/// Static Forms never sends) fails the smoke test. A webhook URL that does
/// not answer is said without the URL, which holds the secret. The secret
/// is never printed.
#[tokio::test(flavor = "multi_thread")]
async fn smoke_fails_where_the_real_sender_would_and_never_prints_the_secret() {
    let receipts_table = unique_name("smoke-strict-receipts");
    let (pipeline, webhook_port, _, _) =
        start_pipeline_with("http", &receipts_table, &[("IDEMPOTENCY_KEY", "required")]).await;
    let endpoint = endpoint(DYNAMODB_ENDPOINT);
    let secrets = secrets_client(&endpoint).await;
    let secret = "local-demo-token-change-me";
    let secret_arn = create_secret(&secrets, "smoke-strict-secret", secret).await;
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    for (port, said) in [
        (webhook_port, "webhook answered 400"),
        (closed, "the webhook URL did not answer"),
    ] {
        let stack = stack_of_local_pipeline(
            &endpoint,
            "staticforms",
            &format!("http://127.0.0.1:{port}/webhooks/staticforms"),
            &receipts_table,
            &secret_arn,
        )
        .await;
        let (ok, out, err) = receipts_cli(&[], &["--stack", &stack, "smoke", "--timeout", "20s"]);
        assert!(!ok, "{out}{err}");
        assert!(format!("{out}{err}").contains(said), "{out}{err}");
        assert!(
            !out.contains(secret) && !err.contains(secret),
            "the secret was printed: {out}{err}"
        );
        // What to paste: the URL with the token's place, never the token
        // where no terminal reads it.
        let (ok, out, err) = receipts_cli(&[], &["--stack", &stack, "webhook-url"]);
        assert!(ok, "{err}");
        assert!(
            out.contains(&format!(
                "http://127.0.0.1:{port}/webhooks/staticforms?token=<secret>"
            )),
            "{out}"
        );
        let (ok, out, err) =
            receipts_cli(&[], &["--stack", &stack, "webhook-url", "--show-secret"]);
        assert!(!ok, "{out}");
        assert!(err.contains("only to a terminal"), "{err}");
        assert!(!out.contains(secret) && !err.contains(secret), "{out}{err}");
    }
    let (_, out, _) = receipts_cli(&[("RECEIPTS_TABLE", &receipts_table)], &["list"]);
    assert!(!out.contains("smoke_"), "nothing stored: {out}");
    stop(pipeline).await;
}

/// `receipts smoke` against a Webflow stack: it sends a Webflow delivery
/// signed as Webflow signs (fresh millisecond timestamp), which the local
/// pipeline with `SENDER=webflow` answers 200 (all Webflow counts as
/// success), and follows its receipt to COMPLETED.
#[tokio::test(flavor = "multi_thread")]
async fn smoke_signs_as_the_stacks_sender_does() {
    let receipts_table = unique_name("smoke-webflow-receipts");
    let (pipeline, webhook_port, crm_port, _) =
        start_pipeline_with("http", &receipts_table, &[("SENDER", "webflow")]).await;
    let endpoint = endpoint(DYNAMODB_ENDPOINT);
    let secrets = secrets_client(&endpoint).await;
    let key = create_secret(
        &secrets,
        "smoke-webflow-key",
        devtools::local::DEMO_SIGNING_SECRET,
    )
    .await;
    let stack = stack_of_local_pipeline(
        &endpoint,
        "webflow",
        &format!("http://127.0.0.1:{webhook_port}/webhooks/webflow"),
        &receipts_table,
        &key,
    )
    .await;
    let (ok, out, err) = receipts_cli(&[], &["--stack", &stack, "smoke", "--timeout", "60s"]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("webhook answered 200"), "{out}");
    assert!(out.contains("COMPLETED after"), "{out}");
    let leads = leads_once_there(
        &reqwest::Client::new(),
        &format!("http://127.0.0.1:{crm_port}/leads"),
        1,
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(
        leads["leads"][0]["lead"]["email"], "smoke-test@example.com",
        "{leads}"
    );
    stop(pipeline).await;
}

/// `receipts smoke` against a plain HTML form's stack posts the snippet's
/// fields from the stack's first allowed page with the widget test keys'
/// dummy token: a stack that takes it (here the local pipeline, whose
/// Turnstile passes test tokens) is called out, as a deployed stack with a
/// test secret would be; one that refuses it for the token passes (the
/// verdict's table test).
#[tokio::test(flavor = "multi_thread")]
async fn smoke_of_a_browser_form_calls_out_a_stack_that_takes_test_tokens() {
    let receipts_table = unique_name("smoke-html-receipts");
    let (pipeline, webhook_port, _, printed) = start_pipeline_with(
        "http",
        &receipts_table,
        &[("SENDER", "html"), ("PAGE_PORT", "0")],
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let origin = loop {
        let found = printed.lock().unwrap().iter().find_map(|line| {
            let at = line.find("open http://")?;
            line[at + 5..]
                .split_whitespace()
                .next()
                .map(|page| page.trim_end_matches('/').to_owned())
        });
        if let Some(origin) = found {
            break origin;
        }
        assert!(Instant::now() < deadline, "the page's address");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let endpoint = endpoint(DYNAMODB_ENDPOINT);
    let stack = unique_name("smoke-html-stack");
    create_stack(
        &endpoint,
        &stack,
        &[
            ("Sender", "html"),
            ("AllowedOrigins", &origin),
            ("Destination", "http"),
        ],
        &[
            (
                "WebhookUrl",
                &format!("http://127.0.0.1:{webhook_port}/webhooks/html"),
            ),
            ("ReceiptsTableName", &receipts_table),
        ],
    )
    .await;
    let (ok, out, err) = receipts_cli(&[], &["--stack", &stack, "smoke", "--timeout", "30s"]);
    assert!(!ok, "{out}{err}");
    assert!(
        out.contains(&format!("posting the form from {origin}")),
        "{out}"
    );
    assert!(
        (out.clone() + &err).contains("its Turnstile secret is a test secret"),
        "{out}{err}"
    );
    stop(pipeline).await;
}

/// `make run` with a routes file: the file is stored as `routes apply`
/// stores it, the real ingest binary reads its spam rules at start and
/// holds bots back (answered as a person is), the real worker gives a
/// route's constants to its form's leads only, and only people's leads
/// reach the CRM, by the stream or any pass. A routes change applied while
/// both run takes effect without a restart (`ROUTES_REREAD_SECONDS=1`
/// here; five minutes at most in AWS).
#[tokio::test]
async fn the_local_pipeline_holds_bots_back_and_routes_forms_by_the_routes_file() {
    let routes_file = |lead_source: &str, honeypots: &str| {
        let file = std::env::temp_dir().join(format!("{}.toml", unique_name("routes")));
        std::fs::write(
            &file,
            format!(
                "[spam]\nhoneypot = [{honeypots}]\nblock_email_domains = [\"mailinator.com\"]\n\n\
                 [[route]]\nform = \"pricing_form\"\nname = \"Pricing\"\n[route.set]\nlead_source = \"{lead_source}\"\n"
            ),
        )
        .unwrap();
        file
    };
    let file = routes_file("Pricing page", "\"website_url\"");
    let table = unique_name("routes-receipts");
    let (pipeline, webhook_port, crm_port, printed) = start_pipeline_with(
        "http",
        &table,
        &[
            ("ROUTES_FILE", file.to_str().unwrap()),
            ("ROUTES_REREAD_SECONDS", "1"),
        ],
    )
    .await;
    std::fs::remove_file(&file).unwrap();

    let http = reqwest::Client::new();
    let send = |id: &str, form: &str, email: &str, extra: &str| {
        let body = format!(
            r#"{{"event":"form.submitted","timestamp":1795941528,"data":{{"submissionId":"{id}","apiKey":"{form}","formData":{{"name":"Ada","email":"{email}","lead_source":"typed"{extra}}}}}}}"#
        );
        static_forms_post(&http, webhook_port).body(body).send()
    };
    let mut answers = Vec::new();
    for (id, form, email, extra) in [
        ("sub_person", "pricing_form", "ada@example.com", ""),
        ("sub_other_form", "contact_form", "grace@example.com", ""),
        (
            "sub_honeypot",
            "pricing_form",
            "ada2@example.com",
            r#","website_url":"http://spam.example""#,
        ),
        ("sub_domain", "contact_form", "bot@mailinator.com", ""),
    ] {
        let response = send(id, form, email, extra).await.unwrap();
        answers.push((response.status().as_u16(), response.text().await.unwrap()));
    }
    assert!(
        answers.iter().all(|answer| *answer == answers[0]),
        "a bot is answered as a person is: {answers:?}"
    );
    assert_eq!(answers[0].0, 202);

    let leads_url = format!("http://127.0.0.1:{crm_port}/leads");
    let lead_source = |leads: &serde_json::Value, id: &str| {
        let lead = leads["leads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|lead| lead["externalId"] == id)
            .unwrap_or_else(|| panic!("{id} is not in the CRM: {leads}"));
        lead["lead"]["fields"]["lead_source"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let leads = leads_once_there(&http, &leads_url, 2, Duration::from_secs(20)).await;
    assert_eq!(lead_source(&leads, "sub_person"), "Pricing page", "{leads}");
    assert_eq!(lead_source(&leads, "sub_other_form"), "typed", "{leads}");
    // A reconciliation pass runs every few seconds: it sends nothing held.
    tokio::time::sleep(Duration::from_secs(7)).await;
    let leads = leads_once_there(&http, &leads_url, 2, Duration::ZERO).await;
    assert_eq!(leads["count"], 2, "{leads}");
    // The terminal's summary counts the held ones apart from the accepted.
    let summary = "local-pipeline: deliveries accepted=2 quarantined=2 |";
    assert!(
        printed
            .lock()
            .unwrap()
            .iter()
            .any(|line| line.starts_with(summary)),
        "{:?}",
        printed.lock().unwrap()
    );

    // A change applied while both functions run: a new honeypot and a new
    // constant, with no restart.
    let changed = routes_file("Pricing page v2", "\"website_url\", \"fax\"");
    let (ok, out, err) = receipts_cli(
        &[("RECEIPTS_TABLE", table.as_str())],
        &["routes", "apply", changed.to_str().unwrap()],
    );
    std::fs::remove_file(&changed).unwrap();
    assert!(ok, "{err}");
    assert!(out.contains("stored as version 2"), "{out}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for (id, extra) in [
        ("sub_after_change", ""),
        ("sub_fax", r#","fax":"+1 555 0100""#),
    ] {
        let response = send(id, "pricing_form", "ada@example.com", extra)
            .await
            .unwrap();
        assert_eq!(response.status(), 202);
    }
    let leads = leads_once_there(&http, &leads_url, 3, Duration::from_secs(20)).await;
    assert_eq!(
        lead_source(&leads, "sub_after_change"),
        "Pricing page v2",
        "{leads}"
    );

    let (ok, out, err) = receipts_cli(
        &[("RECEIPTS_TABLE", table.as_str())],
        &["list", "--status", "quarantined", "--json"],
    );
    assert!(ok, "{err}");
    let held: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mut rules: Vec<&str> = held
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["quarantineRule"].as_str().unwrap())
        .collect();
    rules.sort_unstable();
    assert_eq!(
        rules,
        ["blocked-domain", "honeypot:fax", "honeypot:website_url"],
        "{out}"
    );
    let leads = leads_once_there(&http, &leads_url, 3, Duration::ZERO).await;
    assert_eq!(leads["count"], 3, "no bot reached the CRM: {leads}");
    stop(pipeline).await;
}

/// A bot that submits sooner after the page's render than a person could:
/// with `min_fill_seconds = 3` and the render time in a hidden field, the
/// real ingest binary holds back a submission rendered 1 second before it
/// was sent (`QUARANTINED`, rule `too-fast`, answered as a person is), and
/// delivers one rendered 10 seconds before, and one with no render time.
#[tokio::test]
async fn a_submission_faster_than_a_person_is_held_back_as_too_fast() {
    let file = std::env::temp_dir().join(format!("{}.toml", unique_name("routes")));
    std::fs::write(
        &file,
        "[spam]\nmin_fill_seconds = 3\nrender_time_field = \"rendered_at\"\n",
    )
    .unwrap();
    let table = unique_name("too-fast-receipts");
    let (pipeline, webhook_port, crm_port, _printed) =
        start_pipeline_with("http", &table, &[("ROUTES_FILE", file.to_str().unwrap())]).await;
    std::fs::remove_file(&file).unwrap();
    let http = reqwest::Client::new();
    // Static Forms says when it was submitted: `timestamp`, 1795941528.
    let mut answers = Vec::new();
    for (id, rendered) in [
        ("sub_bot", r#","rendered_at":"1795941527""#),
        ("sub_person", r#","rendered_at":"1795941518000""#),
        ("sub_no_snippet", ""),
    ] {
        let body = format!(
            r#"{{"event":"form.submitted","timestamp":1795941528,"data":{{"submissionId":"{id}","formData":{{"name":"Ada","email":"{id}@example.com"{rendered}}}}}}}"#
        );
        let response = static_forms_post(&http, webhook_port)
            .body(body)
            .send()
            .await
            .unwrap();
        answers.push((response.status().as_u16(), response.text().await.unwrap()));
    }
    assert!(
        answers.iter().all(|answer| *answer == answers[0]),
        "a bot is answered as a person is: {answers:?}"
    );
    let leads_url = format!("http://127.0.0.1:{crm_port}/leads");
    let leads = leads_once_there(&http, &leads_url, 2, Duration::from_secs(20)).await;
    let delivered: Vec<&str> = leads["leads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|lead| lead["externalId"].as_str().unwrap())
        .collect();
    assert!(
        delivered.contains(&"sub_person") && delivered.contains(&"sub_no_snippet"),
        "{leads}"
    );
    let (ok, out, err) = receipts_cli(
        &[("RECEIPTS_TABLE", table.as_str())],
        &["list", "--status", "quarantined", "--json"],
    );
    assert!(ok, "{err}");
    let held: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(held.as_array().map(Vec::len), Some(1), "{out}");
    assert_eq!(held[0]["submissionId"], "sub_bot", "{out}");
    assert_eq!(held[0]["quarantineRule"], "too-fast", "{out}");
    tokio::time::sleep(Duration::from_secs(7)).await;
    let leads = leads_once_there(&http, &leads_url, 2, Duration::ZERO).await;
    assert_eq!(leads["count"], 2, "no pass delivers the held one: {leads}");
    stop(pipeline).await;
}

/// The write units one delivered lead costs, per step, counted by the
/// metering proxy from the requests the real binaries make against the
/// receipts table (table and index entries: `devtools::write_meter`).
/// Each lead's receipt writes, in order, once `leads` leads are in the CRM
/// and every receipt has `steps` writes.
async fn metered_steps(
    destination: &str,
    leads_path: &str,
    leads: usize,
    steps: usize,
) -> (
    Vec<Vec<devtools::write_meter::Metered>>,
    Vec<devtools::write_meter::Metered>,
) {
    let meter = devtools::write_meter::WriteMeter::start(&endpoint(DYNAMODB_ENDPOINT))
        .await
        .unwrap();
    let table = unique_name("metered-receipts");
    let (pipeline, webhook_port, crm_port, _) =
        start_pipeline_with(destination, &table, &[("DYNAMODB_ENDPOINT", &meter.url())]).await;
    let http = reqwest::Client::new();
    for n in 0..leads {
        let body = format!(
            r#"{{"event":"form.submitted","timestamp":1795941528,"data":{{"submissionId":"sub_metered_{n}","formData":{{"name":"Ada Lovelace","email":"ada{n}@example.com","message":"Hello"}}}}}}"#
        );
        let answer = static_forms_post(&http, webhook_port)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 202);
    }
    let listed = leads_once_there(
        &http,
        &format!("http://127.0.0.1:{crm_port}{leads_path}"),
        leads as u64,
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(listed["count"], leads as u64, "{listed}");
    let receipts_of =
        |metered: &[devtools::write_meter::Metered]| -> Vec<Vec<devtools::write_meter::Metered>> {
            (0..leads)
                .map(|n| {
                    let key = format!("staticforms:form.submitted:sub_metered_{n}");
                    metered.iter().filter(|m| m.key == key).cloned().collect()
                })
                .collect()
        };
    let deadline = Instant::now() + Duration::from_secs(20);
    let metered = loop {
        let metered = meter.metered();
        if receipts_of(&metered)
            .iter()
            .all(|writes| writes.len() >= steps)
            || Instant::now() > deadline
        {
            break metered;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // A pass runs every few seconds: give it one, to see it writes nothing.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let after_a_pass = meter.metered();
    assert_eq!(
        receipts_of(&after_a_pass),
        receipts_of(&metered),
        "a pass writes nothing for delivered receipts"
    );
    stop(pipeline).await;
    let (doubles, others): (Vec<_>, Vec<_>) = after_a_pass
        .into_iter()
        .filter(|m| !m.key.starts_with("staticforms:"))
        .partition(|m| m.key.starts_with("gate#double:"));
    // Each lead's answers (its own address) take their double-submit item
    // once: one small write, whatever the destination.
    assert_eq!(
        doubles.len(),
        leads,
        "one double-submit item per lead: {doubles:?}"
    );
    for write in &doubles {
        assert_eq!(
            (
                write.operation.as_str(),
                write.table_units,
                write.index_units
            ),
            ("UpdateItem", DOUBLE_SUBMIT_UNITS, 0)
        );
    }
    assert_cost_page_says(&[cost_row(
        "the worker's double-submit item: the person's submission added",
        &doubles[0],
    )]);
    (receipts_of(&metered), others)
}

/// What a lead's double-submit item costs (`gate#double:`), counted in
/// `metered_steps` for every destination.
const DOUBLE_SUBMIT_UNITS: u32 = 1;

/// Each write as (request, table units, index units).
fn steps_of(writes: &[devtools::write_meter::Metered]) -> Vec<(&str, u32, u32)> {
    writes
        .iter()
        .map(|m| (m.operation.as_str(), m.table_units, m.index_units))
        .collect()
}

/// docs/cost.md's row for one counted step: what, the request, table and
/// index write units. The page states exactly what the meter counts.
fn cost_row(step: &str, write: &devtools::write_meter::Metered) -> String {
    let request = write.operation.split(':').next().unwrap_or_default();
    format!(
        "| {step} | `{request}` | {} | {} |",
        write.table_units, write.index_units
    )
}

fn assert_cost_page_says(rows: &[String]) {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/cost.md")).unwrap();
    for row in rows {
        assert!(
            page.contains(row.as_str()),
            "docs/cost.md must count what the binaries do; missing:\n{row}"
        );
    }
}

/// At most seven write units per delivered lead on the happy path, every
/// index entry counted (the queue's and the day index's): ingest's put, the
/// claim (no index entry), the completion; and docs/cost.md says so, step
/// by step.
#[tokio::test]
async fn a_delivered_lead_costs_eight_write_units() {
    let (receipts, others) = metered_steps("http", "/leads", 3, 3).await;
    for writes in &receipts {
        assert_eq!(
            steps_of(writes),
            [
                ("PutItem", 1, 2),
                ("UpdateItem", 1, 0),
                ("UpdateItem", 1, 2)
            ],
            "ingest's put, the claim, the completion"
        );
        assert!(writes.iter().all(|m| m.succeeded));
        let units: u32 = writes.iter().map(|m| m.units()).sum();
        assert!(
            units <= 7,
            "{units} write units for one receipt: {writes:?}"
        );
    }
    assert!(others.is_empty(), "no other write: {others:?}");
    let lead = &receipts[0];
    let total: u32 = lead.iter().map(|m| m.units()).sum::<u32>() + DOUBLE_SUBMIT_UNITS;
    assert_cost_page_says(&[
        cost_row("ingest stores the receipt", &lead[0]),
        cost_row("the worker claims it", &lead[1]),
        cost_row("the worker completes it", &lead[2]),
        format!("a delivered lead costs **{total} write units**"),
    ]);
}

/// A second destination adds one small write to the receipt and its entry
/// in the day index (which shows each destination's state): its lanes
/// saved when the first destination's answer lands (so a crash never calls
/// it again), before the completion writes them with the status. What the
/// second destination writes of its own (a gate, where it keeps one) is its
/// own row of docs/cost.md: Salesforce keeps none.
#[tokio::test]
async fn a_second_destination_adds_two_write_units_to_the_receipt() {
    let (receipts, others) = metered_steps("http,salesforce", "/leads", 3, 4).await;
    assert!(others.is_empty(), "no other write: {others:?}");
    for writes in &receipts {
        assert_eq!(
            steps_of(writes),
            [
                ("PutItem", 1, 2),
                ("UpdateItem", 1, 0),
                ("UpdateItem", 1, 1),
                ("UpdateItem", 1, 2)
            ],
            "ingest's put, the claim, the first answer saved, the completion"
        );
        assert!(writes.iter().all(|m| m.succeeded));
    }
    assert_cost_page_says(&[cost_row(
        "each destination after the first: its answer saved with the receipt's lanes",
        &receipts[0][2],
    )]);
}

/// HubSpot by e-mail adds the newest-wins gate: the person's gate item and
/// a check that the receipt is still RECEIVED, in one transaction (each
/// write of a transaction costs twice).
#[tokio::test]
async fn a_hubspot_contact_by_email_costs_the_gates_transaction_more() {
    let (receipts, others) = metered_steps("hubspot", "/contacts", 3, 4).await;
    // Each person's gate item: its newest-wins gate, then its note
    // started and written.
    let mut by_gate: std::collections::BTreeMap<&str, Vec<&devtools::write_meter::Metered>> =
        Default::default();
    for write in &others {
        by_gate.entry(write.key.as_str()).or_default().push(write);
    }
    assert_eq!(by_gate.len(), 3, "one gate item per person: {others:?}");
    let gates: Vec<&devtools::write_meter::Metered> =
        by_gate.values().map(|writes| writes[0]).collect();
    for writes in by_gate.values() {
        assert_eq!(
            writes
                .iter()
                .map(|m| (m.operation.as_str(), m.table_units, m.index_units))
                .collect::<Vec<_>>(),
            [
                ("TransactWriteItems:Update", 2, 0),
                ("UpdateItem", 1, 0),
                ("UpdateItem", 1, 0)
            ],
            "the gate, then the note started and its id"
        );
    }
    for (writes, gate) in receipts.iter().zip(&gates) {
        assert_eq!(
            steps_of(writes),
            [
                ("PutItem", 1, 2),
                ("UpdateItem", 1, 0),
                ("TransactWriteItems:ConditionCheck", 2, 0),
                ("UpdateItem", 1, 2)
            ],
            "the put, the claim, the gate's check of the receipt, the completion"
        );
        assert!(gate.key.starts_with("gate#"), "{gate:?}");
        assert_eq!(
            (gate.operation.as_str(), gate.table_units, gate.index_units),
            ("TransactWriteItems:Update", 2, 0)
        );
    }
    let lead = &receipts[0];
    let total: u32 = lead
        .iter()
        .chain(by_gate.values().next().unwrap().iter().copied())
        .map(|m| m.units())
        .sum::<u32>()
        + DOUBLE_SUBMIT_UNITS;
    assert_cost_page_says(&[
        cost_row("HubSpot by e-mail: the person's newest-wins gate", gates[0]),
        cost_row(
            "HubSpot by e-mail: the gate's check that the receipt is still `RECEIVED`",
            &lead[2],
        ),
        format!("a HubSpot contact by e-mail costs **{total} write units**"),
    ]);
}

/// `DESTINATION=mailchimp`, through the real binaries and DynamoDB: one
/// member and one note per lead; on the gate item, its newest-wins gate,
/// then the note started and its id; and one call slot per person of the
/// batch, taken then given back.
#[tokio::test]
async fn a_mailchimp_member_costs_its_gate_two_small_writes_of_its_note_and_a_call_slot() {
    let (receipts, others) = metered_steps("mailchimp", "/members", 3, 4).await;
    let mut by_key: std::collections::BTreeMap<&str, Vec<(&str, u32, u32)>> = Default::default();
    for write in &others {
        by_key.entry(write.key.as_str()).or_default().push((
            write.operation.as_str(),
            write.table_units,
            write.index_units,
        ));
    }
    let (slots, gates): (Vec<_>, Vec<_>) = by_key
        .iter()
        .partition(|(key, _)| key.starts_with("slot#mailchimp#"));
    assert_eq!(gates.len(), 3, "one gate item per person: {others:?}");
    for (_, steps) in &gates {
        assert_eq!(
            *steps,
            &[
                ("TransactWriteItems:Update", 2, 0),
                ("UpdateItem", 1, 0),
                ("UpdateItem", 1, 0)
            ],
            "the gate, then the note started, its id"
        );
    }
    assert!(
        (1..=3).contains(&slots.len()),
        "a slot per person at most: {slots:?}"
    );
    for (_, steps) in &slots {
        assert_eq!(steps.len() % 2, 0, "each taken slot given back: {steps:?}");
        assert!(steps.iter().all(|step| *step == ("UpdateItem", 1, 0)));
    }
    let slot_write = others
        .iter()
        .find(|write| write.key.starts_with("slot#"))
        .unwrap();
    let per_lead: u32 = receipts[0].iter().map(|m| m.units()).sum::<u32>()
        + gates[0].1.iter().map(|(_, t, i)| t + i).sum::<u32>()
        + 2 * slot_write.table_units
        + DOUBLE_SUBMIT_UNITS;
    assert_cost_page_says(&[
        cost_row(
            "Mailchimp: a call slot taken, then given back (each write, one slot per person of a batch)",
            slot_write,
        ),
        format!("a Mailchimp member costs **{per_lead} write units**"),
    ]);
}

/// `DESTINATION=brevo` and `attio`, through the real binaries and
/// DynamoDB: one record and one note per lead; on the gate item, its
/// newest-wins gate, then the note started and its id (each upserts by
/// address, so no create is recorded).
#[tokio::test]
async fn a_brevo_contact_or_attio_person_costs_its_gate_and_two_small_writes_of_its_note() {
    for (destination, records, what) in [
        ("brevo", "/contacts", "a Brevo contact"),
        ("attio", "/people", "an Attio person"),
    ] {
        let (receipts, others) = metered_steps(destination, records, 3, 4).await;
        let mut by_gate: std::collections::BTreeMap<&str, Vec<(&str, u32, u32)>> =
            Default::default();
        for write in &others {
            assert!(
                write.key.starts_with("gate#hmac:"),
                "{destination}: {write:?}"
            );
            by_gate.entry(write.key.as_str()).or_default().push((
                write.operation.as_str(),
                write.table_units,
                write.index_units,
            ));
        }
        assert_eq!(by_gate.len(), 3, "{destination}: one gate item per person");
        for steps in by_gate.values() {
            assert_eq!(
                steps,
                &[
                    ("TransactWriteItems:Update", 2, 0),
                    ("UpdateItem", 1, 0),
                    ("UpdateItem", 1, 0)
                ],
                "{destination}: the gate, then the note started, its id"
            );
        }
        let gate: u32 = by_gate
            .values()
            .next()
            .unwrap()
            .iter()
            .map(|(_, t, i)| t + i)
            .sum();
        let per_lead: u32 =
            receipts[0].iter().map(|m| m.units()).sum::<u32>() + gate + DOUBLE_SUBMIT_UNITS;
        assert_cost_page_says(&[format!("{what} costs **{per_lead} write units**")]);
    }
}

/// `DESTINATION=zoho` by e-mail, through the real binaries and DynamoDB:
/// one Lead and one note per lead; on the gate item, its newest-wins
/// gate, the record's id, the note started and its id; and the shared
/// access token's claim and store, once for every lead of the hour.
#[tokio::test]
async fn a_zoho_lead_costs_its_gate_three_small_writes_and_the_token_once_an_hour() {
    let (receipts, others) = metered_steps("zoho", "/records", 3, 4).await;
    let mut by_key: std::collections::BTreeMap<&str, Vec<(&str, u32, u32)>> = Default::default();
    for write in &others {
        by_key.entry(write.key.as_str()).or_default().push((
            write.operation.as_str(),
            write.table_units,
            write.index_units,
        ));
    }
    assert_eq!(
        by_key.get("token#zoho").map(Vec::len),
        Some(2),
        "the token claimed and stored once for all three: {others:?}"
    );
    let gates: Vec<_> = by_key
        .iter()
        .filter(|(key, _)| key.starts_with("gate#"))
        .collect();
    assert_eq!(gates.len(), 3, "one gate item per person: {others:?}");
    for (_, steps) in &gates {
        assert_eq!(
            *steps,
            &[
                ("TransactWriteItems:Update", 2, 0),
                ("UpdateItem", 1, 0),
                ("UpdateItem", 1, 0),
                ("UpdateItem", 1, 0)
            ],
            "the gate, then the record's id, the note started, its id"
        );
    }
    let per_lead: u32 = receipts[0].iter().map(|m| m.units()).sum::<u32>()
        + gates[0].1.iter().map(|(_, t, i)| t + i).sum::<u32>()
        + DOUBLE_SUBMIT_UNITS;
    assert_cost_page_says(&[format!(
        "a Zoho CRM Lead by e-mail costs **{per_lead} write units**"
    )]);
}

/// `DESTINATION=pipedrive`, through the real binaries and DynamoDB: one
/// person and one note per lead, and what the person memory costs on the
/// gate item (each write counted as DynamoDB bills it): its newest-wins
/// gate, the create started and its id, the note started and its id.
#[tokio::test]
async fn a_pipedrive_person_costs_its_gate_and_four_small_writes_of_what_the_worker_knows() {
    let (receipts, gates) = metered_steps("pipedrive", "/persons", 3, 4).await;
    for writes in &receipts {
        assert_eq!(
            steps_of(writes),
            [
                ("PutItem", 1, 2),
                ("UpdateItem", 1, 0),
                ("TransactWriteItems:ConditionCheck", 2, 0),
                ("UpdateItem", 1, 2)
            ],
            "the put, the claim, the gate's check of the receipt, the completion"
        );
    }
    let mut by_gate: std::collections::BTreeMap<&str, Vec<(&str, u32, u32)>> = Default::default();
    for write in &gates {
        assert!(write.key.starts_with("gate#hmac:"), "{write:?}");
        by_gate.entry(write.key.as_str()).or_default().push((
            write.operation.as_str(),
            write.table_units,
            write.index_units,
        ));
    }
    assert_eq!(by_gate.len(), 3, "one gate item per person: {gates:?}");
    for steps in by_gate.values() {
        assert_eq!(
            steps,
            &[
                ("TransactWriteItems:Update", 2, 0),
                ("UpdateItem", 1, 0),
                ("UpdateItem", 1, 0),
                ("UpdateItem", 1, 0),
                ("UpdateItem", 1, 0)
            ],
            "the gate, then the create started, its id, the note started, its id"
        );
    }
    let memory = gates
        .iter()
        .find(|write| write.operation == "UpdateItem")
        .unwrap();
    let per_lead: u32 = receipts[0].iter().map(|m| m.units()).sum::<u32>()
        + by_gate
            .values()
            .next()
            .unwrap()
            .iter()
            .map(|(_, t, i)| t + i)
            .sum::<u32>()
        + DOUBLE_SUBMIT_UNITS;
    assert_cost_page_says(&[
        cost_row(
            "HubSpot by e-mail and Pipedrive: what the worker records on the person's gate item (each write)",
            memory,
        ),
        format!("a new Pipedrive person costs **{per_lead} write units**"),
    ]);
}

/// Double submits (`duplicate_window`, 2 minutes unless a routes file says
/// otherwise), through the real binaries and the receipts table: the same
/// form, address and answers submitted 10 seconds apart (Static Forms'
/// own `timestamp`, which the window compares) make one CRM write, the
/// other receipt DUPLICATE of it; the same answers 10 minutes on, and
/// other answers within the window, are leads of their own.
#[tokio::test]
async fn a_double_submit_is_one_lead_and_the_same_answers_later_are_another() {
    let table = unique_name("double-receipts");
    let (pipeline, webhook_port, crm_port, _printed) = start_pipeline_on("http", &table).await;
    let http = reqwest::Client::new();
    const CLICKED: u64 = 1795941528;
    for (id, at, message) in [
        ("sub_click", CLICKED, "Call me"),
        ("sub_click_again", CLICKED + 10, "Call me"),
        ("sub_ten_minutes_on", CLICKED + 600, "Call me"),
        ("sub_other_answers", CLICKED + 605, "Call me tomorrow"),
    ] {
        let body = format!(
            r#"{{"event":"form.submitted","timestamp":{at},"data":{{"submissionId":"{id}","formData":{{"name":"Ada","email":"ada@example.com","message":"{message}"}}}}}}"#
        );
        let answer = static_forms_post(&http, webhook_port)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 202, "every submission is stored: {id}");
    }
    let leads_url = format!("http://127.0.0.1:{crm_port}/leads");
    leads_once_there(&http, &leads_url, 3, Duration::from_secs(20)).await;
    // The duplicate is settled beside the leads, maybe just after the last
    // of them: asked again until it is, or until the deadline.
    let deadline = Instant::now() + Duration::from_secs(20);
    let (out, duplicates) = loop {
        let (ok, out, err) = receipts_cli(
            &[("RECEIPTS_TABLE", table.as_str())],
            &["list", "--status", "duplicate", "--json"],
        );
        assert!(ok, "{err}");
        let duplicates: serde_json::Value = serde_json::from_str(&out).unwrap();
        if duplicates
            .as_array()
            .is_some_and(|listed| !listed.is_empty())
            || Instant::now() > deadline
        {
            break (out, duplicates);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(duplicates.as_array().map(Vec::len), Some(1), "{out}");
    let duplicate = duplicates[0]["submissionId"].as_str().unwrap();
    let original = duplicates[0]["duplicateOf"].as_str().unwrap();
    let clicks = ["sub_click", "sub_click_again"];
    assert!(
        clicks.contains(&duplicate)
            && clicks
                .iter()
                .any(|other| *other != duplicate && original.ends_with(&format!(":{other}"))),
        "one click repeats the other: {out}"
    );
    assert!(duplicates[0].get("payload").is_none(), "{out}");
    let (ok, stats, err) =
        receipts_cli(&[("RECEIPTS_TABLE", table.as_str())], &["stats", "--json"]);
    assert!(ok, "{err}");
    let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(stats["byStatus"]["DUPLICATE"], 1, "{stats}");
    assert_eq!(stats["byStatus"]["COMPLETED"], 3, "{stats}");
    // A pass later, still one write per lead, and none for the duplicate.
    tokio::time::sleep(Duration::from_secs(7)).await;
    let leads = leads_once_there(&http, &leads_url, 3, Duration::ZERO).await;
    assert_eq!(leads["count"], 3, "{leads}");
    assert_eq!(leads["calls"], 3, "one CRM write per lead: {leads}");
    let delivered: Vec<&str> = leads["leads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|lead| lead["externalId"].as_str().unwrap())
        .collect();
    assert!(
        delivered.contains(&"sub_ten_minutes_on")
            && delivered.contains(&"sub_other_answers")
            && !delivered.contains(&duplicate),
        "{leads}"
    );
    stop(pipeline).await;
}

/// Double submits meet newest wins (issue 58), through the real binaries
/// and the HubSpot fake (one contact per address, the newest answers win):
/// Pro, then Basic 30 s later, then Pro again 30 s after that, all within
/// the 2-minute window, is three submissions and leaves the contact at
/// Pro (the second Pro repeats nothing: Basic came between); two identical
/// clicks 10 s apart are still one lead with one note. All five arrive in
/// one batch, so the person's submissions are judged in the order made.
#[tokio::test]
async fn a_repeat_after_other_answers_is_new_data_and_a_double_click_is_still_one_lead() {
    let table = unique_name("repeat-receipts");
    let (pipeline, webhook_port, crm_port, _printed) = start_pipeline_on("hubspot", &table).await;
    let http = reqwest::Client::new();
    const AT: u64 = 1795941528;
    let submissions = [
        ("sub_pro", AT, "ada@example.com", "Plan Pro"),
        ("sub_basic", AT + 30, "ada@example.com", "Plan Basic"),
        ("sub_pro_again", AT + 60, "ada@example.com", "Plan Pro"),
        ("sub_click", AT, "grace@example.com", "Call me"),
        ("sub_click_again", AT + 10, "grace@example.com", "Call me"),
    ];
    for (id, at, email, message) in submissions {
        let body = format!(
            r#"{{"event":"form.submitted","timestamp":{at},"data":{{"submissionId":"{id}","formData":{{"name":"Ada","email":"{email}","message":"{message}"}}}}}}"#
        );
        let answer = static_forms_post(&http, webhook_port)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 202, "{id}");
    }
    let settled = |stats: &serde_json::Value| {
        stats["byStatus"]["COMPLETED"].as_u64().unwrap_or(0)
            + stats["byStatus"]["DUPLICATE"].as_u64().unwrap_or(0)
            == 5
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let stats = loop {
        let (ok, out, err) =
            receipts_cli(&[("RECEIPTS_TABLE", table.as_str())], &["stats", "--json"]);
        assert!(ok, "{err}");
        let stats: serde_json::Value = serde_json::from_str(&out).unwrap();
        if settled(&stats) || Instant::now() > deadline {
            break stats;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(stats["byStatus"]["DUPLICATE"], 1, "{stats}");
    assert_eq!(stats["byStatus"]["COMPLETED"], 4, "{stats}");
    let (ok, out, err) = receipts_cli(
        &[("RECEIPTS_TABLE", table.as_str())],
        &["list", "--status", "duplicate", "--json"],
    );
    assert!(ok, "{err}");
    let duplicates: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(duplicates[0]["submissionId"], "sub_click_again", "{out}");

    let hubspot = format!("http://127.0.0.1:{crm_port}");
    let contacts = get_json(&http, &format!("{hubspot}/contacts")).await;
    let contact = |email: &str| {
        contacts["contacts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["properties"]["email"] == email)
            .cloned()
            .unwrap_or_else(|| panic!("no contact {email}: {contacts}"))
    };
    assert_eq!(
        contact("ada@example.com")["properties"]["message"],
        "Plan Pro",
        "the newest answers win: {contacts}"
    );
    assert_eq!(contacts["count"], 2, "{contacts}");
    let notes = get_json(&http, &format!("{hubspot}/notes")).await;
    let notes_of = |email: &str| {
        let id = contact(email)["id"].clone();
        notes["notes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|note| note["contactId"] == id)
            .count()
    };
    assert_eq!(
        notes_of("ada@example.com"),
        3,
        "one note per submission: {notes}"
    );
    assert_eq!(
        notes_of("grace@example.com"),
        1,
        "the double click is one: {notes}"
    );
    stop(pipeline).await;
}

/// New-lead notices through the real binaries, the receipts table and a
/// stand-in chat webhook that refuses its first two POSTs: each lead the
/// CRM got is announced exactly once (the refused ones by later passes),
/// with its form's name and no personal data (only the answer its route
/// names); a muted form's lead is not
/// announced; a quarantined submission is announced only once released
/// and delivered; the CRM is written once per lead whatever the notices do.
#[tokio::test]
async fn each_delivered_lead_is_announced_once_and_without_personal_data() {
    let endpoint = devtools::notice_endpoint::NoticeEndpoint::start(2)
        .await
        .unwrap();
    let file = std::env::temp_dir().join(format!("{}.toml", unique_name("routes")));
    std::fs::write(
        &file,
        "[spam]\nhoneypot = [\"fax\"]\n\n[[route]]\nform = \"sf_pricing\"\nname = \"Pricing page\"\nnotify_fields = [\"plan\"]\n\n\
         [[route]]\nform = \"sf_quiet\"\nname = \"Newsletter\"\nnotify = false\n",
    )
    .unwrap();
    let table = unique_name("notice-receipts");
    let url = endpoint.url();
    let (pipeline, webhook_port, crm_port, _printed) = start_pipeline_with(
        "http",
        &table,
        &[
            ("ROUTES_FILE", file.to_str().unwrap()),
            ("NOTIFY_URL", &url),
        ],
    )
    .await;
    std::fs::remove_file(&file).unwrap();
    let http = reqwest::Client::new();
    for (id, form, fax) in [
        ("sub_n1", "sf_pricing", ""),
        ("sub_n2", "sf_pricing", ""),
        ("sub_n3", "sf_pricing", ""),
        ("sub_quiet", "sf_quiet", ""),
        ("sub_held", "sf_pricing", "0123 456"),
    ] {
        let body = format!(
            r#"{{"event":"form.submitted","timestamp":1795941528,"data":{{"submissionId":"{id}","apiKey":"{form}","formData":{{"name":"Ada Lovelace","email":"{id}@example.com","message":"Call me","plan":"Pro","fax":"{fax}"}}}}}}"#
        );
        let answer = static_forms_post(&http, webhook_port)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 202, "{id}");
    }
    let leads_url = format!("http://127.0.0.1:{crm_port}/leads");
    leads_once_there(&http, &leads_url, 4, Duration::from_secs(20)).await;
    let announced = |endpoint: &devtools::notice_endpoint::NoticeEndpoint| -> Vec<String> {
        let mut receipts: Vec<String> = endpoint
            .accepted()
            .iter()
            .map(|body| {
                body["lead"]["receipt"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect();
        receipts.sort();
        receipts
    };
    let until = |count: usize| {
        let endpoint = &endpoint;
        async move {
            let deadline = Instant::now() + Duration::from_secs(40);
            while endpoint.accepted().len() < count && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    };
    until(3).await;
    let key = |id: &str| format!("staticforms:form.submitted:{id}");
    assert_eq!(
        announced(&endpoint),
        [key("sub_n1"), key("sub_n2"), key("sub_n3")],
        "the three leads of the announced form, the two refused sends again"
    );
    assert_eq!(endpoint.calls(), 5, "three accepted, two refused");
    for body in endpoint.accepted() {
        let text = body.to_string();
        assert!(
            !text.contains("example.com") && !text.contains("Ada") && !text.contains("Call me"),
            "no personal data in a notice: {text}"
        );
        assert_eq!(body["lead"]["form"], "Pricing page", "{text}");
        assert_eq!(
            body["lead"]["fields"],
            serde_json::json!({"plan": "Pro"}),
            "the answer its route names, and no other: {text}"
        );
        assert_eq!(body["lead"]["destination"], "http", "{text}");
        assert!(body["lead"]["recordId"].is_string(), "{text}");
    }

    // The held one: announced only once released and delivered.
    let (ok, _, err) = receipts_cli(
        &[("RECEIPTS_TABLE", table.as_str())],
        &["release", "sub_held"],
    );
    assert!(ok, "{err}");
    leads_once_there(&http, &leads_url, 5, Duration::from_secs(30)).await;
    until(4).await;
    assert_eq!(
        announced(&endpoint),
        [key("sub_held"), key("sub_n1"), key("sub_n2"), key("sub_n3")]
    );
    // A pass later: nothing announced twice, the CRM written once per lead.
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert_eq!(endpoint.accepted().len(), 4);
    assert_eq!(endpoint.calls(), 6);
    let leads = leads_once_there(&http, &leads_url, 5, Duration::ZERO).await;
    assert_eq!(leads["calls"], 5, "one CRM write per lead: {leads}");
    let (ok, out, err) = receipts_cli(
        &[("RECEIPTS_TABLE", table.as_str())],
        &["show", "sub_n1", "--json"],
    );
    assert!(ok, "{err}");
    assert!(out.contains(r#""notice":"SENT""#), "{out}");
    stop(pipeline).await;
}
