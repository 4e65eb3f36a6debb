//! A plain HTML form posted by a browser straight to the stack
//! (`SENDER=html`), through the ingest handler against the real
//! DynamoDB-protocol server, Cloudflare Turnstile's siteverify fake over
//! HTTP (devtools, from Cloudflare's pages) and an HTTP CRM on loopback:
//! the origin checked, each token verified once per submission (even when
//! ingest asks again), the browser answered as a browser.

use devtools::crm_stub::CrmStub;
use devtools::fakes::turnstile::TurnstileFake;
use integration::*;
use lambda_http::{Body, Request};
use worker::destinations::http::HttpCrm;
use worker::ledger::dynamodb::DynamoLedger;
use worker::Worker;

const SECRET: &str = "0x4AAAAAAAtest-turnstile-secret";
const PAGE: &str = "https://example.com";
const THANKS: &str = "https://example.com/thanks";

struct Post<'a> {
    origin: &'a str,
    accept: Option<&'a str>,
    content_type: String,
    body: Vec<u8>,
}

/// The snippet's form as a browser posts it (urlencoded): its inputs, the
/// page's random id, the widget's token.
fn form(submission_id: &str, token: Option<&str>, email: &str) -> Post<'static> {
    let mut fields = vec![
        ("_form", "contact"),
        ("_submission_id", submission_id),
        ("name", "Ada Lovelace"),
        ("email", email),
        ("message", "Please call me about the engine."),
    ];
    if let Some(token) = token {
        fields.push(("cf-turnstile-response", token));
    }
    let body: String = fields
        .iter()
        .map(|(k, v)| format!("{k}={}", v.replace('@', "%40").replace(' ', "+")))
        .collect::<Vec<_>>()
        .join("&");
    Post {
        origin: PAGE,
        accept: None,
        content_type: "application/x-www-form-urlencoded".to_owned(),
        body: body.into_bytes(),
    }
}

fn request(post: &Post<'_>) -> Request {
    let mut request = http::Request::builder()
        .method("POST")
        .uri("/webhooks/html")
        .header("origin", post.origin)
        .header("content-type", post.content_type.as_str());
    if let Some(accept) = post.accept {
        request = request.header("accept", accept);
    }
    request.body(Body::from(post.body.clone())).unwrap()
}

async fn send(
    ingest: &ingest::Ingest<ingest::dynamo::DynamoReceiptStore>,
    post: Post<'_>,
) -> (u16, http::HeaderMap, String) {
    let response = ingest.handle(request(&post)).await;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = match response.body() {
        Body::Text(text) => text.clone(),
        Body::Binary(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Body::Empty => String::new(),
        _ => String::new(),
    };
    (status, headers, body)
}

/// Ingest for `SENDER=html` on a fresh table, as main.rs builds it (an
/// inline secret: no check handed over at start-up), with the Turnstile
/// fake and, when given, the stack's thank-you page.
async fn html_ingest(
    client: &aws_sdk_dynamodb::Client,
    turnstile: &TurnstileFake,
    thank_you: Option<&str>,
) -> (ingest::Ingest<ingest::dynamo::DynamoReceiptStore>, String) {
    let table = create_table(client, "ReceiptsTable").await;
    let config = ingest::Config::from_lookup(|variable| match variable {
        "RECEIPTS_TABLE" => Some(table.clone()),
        "SENDER" => Some("html".to_owned()),
        "ALLOWED_ORIGINS" => Some(format!("{PAGE},http://localhost:8080")),
        "THANK_YOU_URL" => thank_you.map(str::to_owned),
        "TURNSTILE_SECRET" => Some(SECRET.to_owned()),
        "TURNSTILE_VERIFY_URL" => Some(turnstile.verify_url()),
        _ => None,
    })
    .unwrap();
    let ingest = ingest_over(
        ingest::dynamo::DynamoReceiptStore::new(client.clone(), &table),
        &config,
    )
    .await
    .with_bot_check(None);
    (ingest, table)
}

/// Issue 62, done when: a urlencoded post from an allowed origin with a
/// valid token is stored once and answered 303 to the thank-you page; the
/// same page posted twice is one receipt; a foreign origin, a missing or
/// reused token, or a file store nothing; the fake saw each token verified
/// once per submission even when ingest asked again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_form_is_checked_stored_once_and_sent_on_to_its_thank_you_page() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let client = ingest_client(&moto).await;
    let turnstile = TurnstileFake::start(SECRET).await.unwrap();
    let crm = CrmStub::start().await.unwrap();
    let (ingest, table) = html_ingest(&client, &turnstile, Some(THANKS)).await;
    let page_id = "3f2b8c1e-9a7d-4c55-b1e2-0d9f6a7c8b10";
    let token = turnstile.issue();
    // Its first answer is lost: ingest asks again with the same key.
    turnstile.lose_next(1);

    let (status, headers, _) = send(&ingest, form(page_id, Some(&token), "ada@example.com")).await;
    assert_eq!(status, 303);
    assert_eq!(headers["location"], THANKS);
    assert_eq!(
        turnstile.verifications(&token),
        (1, 2),
        "verified once, asked twice"
    );
    // The same page posted again (a double click): the same token, one receipt.
    let (status, headers, _) = send(&ingest, form(page_id, Some(&token), "ada@example.com")).await;
    assert_eq!(
        (status, &headers["location"]),
        (303, &THANKS.parse().unwrap())
    );
    // Back to the page, the widget renewed its token: still the same page.
    let renewed = turnstile.issue();
    let (status, _, _) = send(&ingest, form(page_id, Some(&renewed), "ada@example.com")).await;
    assert_eq!(status, 303);
    assert_eq!(turnstile.verifications(&token).0, 1, "never verified anew");

    // Refused, nothing stored: a foreign page, no token, a token spent on
    // another submission, a file.
    let mut foreign = form("page-2", Some(&turnstile.issue()), "eve@example.com");
    foreign.origin = "https://evil.example";
    let (status, headers, _) = send(&ingest, foreign).await;
    assert_eq!(status, 403);
    assert!(!headers.contains_key("location"), "never an open redirect");
    let (status, _, text) = send(&ingest, form("page-3", None, "eve@example.com")).await;
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("bot check"), "{text}");
    let (status, _, text) = send(&ingest, form("page-4", Some(&token), "eve@example.com")).await;
    assert_eq!(status, 403, "a reused token: {text}");
    assert!(text.contains("timeout-or-duplicate"), "{text}");
    let boundary = "----WebKitFormBoundary7MA4YWxkTrZu0gW";
    let file = Post {
        origin: PAGE,
        accept: None,
        content_type: format!("multipart/form-data; boundary={boundary}"),
        body: format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"_submission_id\"\r\n\r\npage-5\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"cf-turnstile-response\"\r\n\r\n{}\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"cv\"; filename=\"cv.pdf\"\r\n\
             Content-Type: application/pdf\r\n\r\n%PDF-1.4\r\n--{boundary}--\r\n",
            turnstile.issue()
        )
        .into_bytes(),
    };
    let (status, _, text) = send(&ingest, file).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("file"), "{text}");
    // The check unreachable: nothing stored, the visitor may send again.
    turnstile.fail_next(2);
    let (status, _, _) = send(
        &ingest,
        form("page-6", Some(&turnstile.issue()), "eve@example.com"),
    )
    .await;
    assert_eq!(status, 503);

    let items = scan(&client, &table).await;
    assert_eq!(items.len(), 1, "one receipt, nothing else");
    assert_eq!(
        text_of(&items[0], "pk"),
        format!("html:submission:{page_id}")
    );
    let stored = text_of(&items[0], "payload");
    assert!(!stored.contains(&token), "the token is never stored");

    let worker = Worker::new(
        HttpCrm::new(crm.leads_url(), None).unwrap(),
        DynamoLedger::new(worker_client(&moto).await, &table),
        8,
    );
    drain_stream(&moto, &client, &table, &worker).await;
    let lead = crm.lead(page_id).expect("the lead");
    assert_eq!(lead.writes, 1);
    assert_eq!(lead.body["email"], "ada@example.com");
    assert_eq!(lead.body["name"], "Ada Lovelace");
    assert_eq!(lead.body["message"], "Please call me about the engine.");
}

/// A script's `fetch` gets JSON (202, then 200 for the same page) with
/// CORS for its page; a preflight is answered for allowed origins only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_gets_json_and_only_allowed_pages_pass_the_preflight() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let client = ingest_client(&moto).await;
    let turnstile = TurnstileFake::start(SECRET).await.unwrap();
    let (ingest, table) = html_ingest(&client, &turnstile, None).await;
    let token = turnstile.issue();
    for expected in [202, 200] {
        let mut post = form("page-json", Some(&token), "ada@example.com");
        post.accept = Some("application/json");
        let (status, headers, body) = send(&ingest, post).await;
        assert_eq!(status, expected, "{body}");
        assert_eq!(headers["access-control-allow-origin"], PAGE);
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["accepted"], true);
    }
    let mut refused = form("page-json-2", None, "ada@example.com");
    refused.accept = Some("application/json");
    let (status, _, body) = send(&ingest, refused).await;
    assert_eq!(status, 403);
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["error"], "bot_check_failed");

    for (origin, status) in [(PAGE, 204), ("https://evil.example", 403)] {
        let preflight = http::Request::builder()
            .method("OPTIONS")
            .uri("/webhooks/html")
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .body(Body::Empty)
            .unwrap();
        let response = ingest.handle(preflight).await;
        assert_eq!(response.status().as_u16(), status, "{origin}");
        assert_eq!(
            response
                .headers()
                .get("access-control-allow-origin")
                .is_some(),
            status == 204,
            "{origin}"
        );
    }
    assert_eq!(scan(&client, &table).await.len(), 1);
}

fn text_of(
    item: &std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>,
    name: &str,
) -> String {
    text(item, name)
}

/// A form's route may send its visitors to its own thank-you page, on an
/// allowed origin only: one on another site is never followed, the
/// stack's is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forms_route_chooses_its_thank_you_page_on_an_allowed_origin_only() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let client = ingest_client(&moto).await;
    let turnstile = TurnstileFake::start(SECRET).await.unwrap();
    let routes = shared::routes::parse(
        "[[route]]\nform = \"contact\"\nthank_you_url = \"https://example.com/thanks/contact\"\n\n\
         [[route]]\nform = \"newsletter\"\nthank_you_url = \"https://evil.example/phish\"\n",
    )
    .unwrap();
    let (ingest, _) = html_ingest(&client, &turnstile, Some(THANKS)).await;
    let ingest = ingest.with_routes(aws_edge::routes::RoutesInForce::fixed(std::sync::Arc::new(
        routes,
    )));
    let (status, headers, _) = send(
        &ingest,
        form("page-c", Some(&turnstile.issue()), "a@example.com"),
    )
    .await;
    assert_eq!(status, 303);
    assert_eq!(headers["location"], "https://example.com/thanks/contact");
    let mut newsletter = form("page-n", Some(&turnstile.issue()), "b@example.com");
    newsletter.body = String::from_utf8(newsletter.body)
        .unwrap()
        .replace("_form=contact", "_form=newsletter")
        .into_bytes();
    let (status, headers, _) = send(&ingest, newsletter).await;
    assert_eq!(status, 303);
    assert_eq!(headers["location"], THANKS, "never another site");
}
