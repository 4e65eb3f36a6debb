//! Properties over generated input: every authentication scheme and the
//! query parser take any header or query without panicking and accept only
//! an accepted secret; any body, base64 or not, through the runtime's event
//! parsing and the whole handler, gets a known answer; what is stored reads
//! back unchanged from its DynamoDB item form.
//!
//! `make test` runs proptest's default number of cases; `make proptest`
//! runs at least a million (PROPTEST_CASES) in release mode.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use common::*;
use http::{HeaderMap, HeaderName, HeaderValue};
use ingest::auth::verifier::single_query_value;
use ingest::auth::{Presented, Scheme, Verifier};
use ingest::store::MemoryReceiptStore;
use ingest::Ingest;
use proptest::prelude::*;
use shared::{FormSubmission, Outcome, Receipt};

const SECRET: &str = "property-secret-0001";
const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn verifiers() -> Vec<Verifier> {
    let schemes = [
        (Scheme::Bearer, SECRET.to_owned()),
        (Scheme::Basic, format!("user:{SECRET}")),
        (
            Scheme::Header(HeaderName::from_static("x-webhook-token")),
            SECRET.to_owned(),
        ),
        (Scheme::Query("token".into()), SECRET.to_owned()),
        (
            Scheme::StandardWebhooks {
                tolerance: Duration::from_secs(300),
            },
            WHSEC.to_owned(),
        ),
    ];
    schemes
        .into_iter()
        .map(|(scheme, text)| scheme.verifier(&text).unwrap())
        .collect()
}

/// Every credential-bearing header, each with a generated value (any bytes
/// a header value may hold), some sent twice.
fn any_headers() -> impl Strategy<Value = HeaderMap> {
    let names = [
        "authorization",
        "x-webhook-token",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
        "svix-id",
        "svix-timestamp",
        "svix-signature",
    ];
    let value = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..80),
        "(Bearer|Basic|bearer|basic) [ -~]{0,60}".prop_map(String::into_bytes),
        "v1,[A-Za-z0-9+/=]{0,50}( v1,[A-Za-z0-9+/=]{0,50})?".prop_map(String::into_bytes),
        "[0-9]{0,12}".prop_map(String::into_bytes),
    ];
    prop::collection::vec((prop::sample::select(names.to_vec()), value), 0..8).prop_map(|pairs| {
        let mut headers = HeaderMap::new();
        for (name, bytes) in pairs {
            if let Ok(value) = HeaderValue::from_bytes(&bytes) {
                headers.append(HeaderName::from_static(name), value);
            }
        }
        headers
    })
}

fn any_query() -> impl Strategy<Value = Option<String>> {
    prop::option::of(prop_oneof![
        any::<String>(),
        "([a-z%+&=]{0,6}(token)?[=&%0-9A-Fa-f+-]{0,20}){0,4}",
    ])
}

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_795_941_528)
}

proptest! {
    /// No generated header or query passes a scheme: only the secret does.
    #[test]
    fn no_scheme_panics_or_accepts_a_generated_credential(
        headers in any_headers(),
        query in any_query(),
        body in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        for verifier in verifiers() {
            let presented = Presented { headers: &headers, query: query.as_deref(), body: &body, now: now() };
            prop_assert!(verifier.verify(presented).is_err(), "{verifier:?} accepted {headers:?} ?{query:?}");
        }
    }

    #[test]
    fn the_query_parser_takes_any_text_and_decodes_what_it_encodes(
        query in any::<String>(),
        name in "[A-Z][A-Za-z0-9_.~-]{0,15}",
        value in prop::collection::vec(any::<u8>(), 0..40),
        // Other parameters have lower-case names: `name` occurs once.
        before in "([a-z]{1,4}=[a-z0-9]{0,4}&){0,3}",
    ) {
        let _ = single_query_value(&query, &name);
        let encoded = percent_encoding::percent_encode(&value, percent_encoding::NON_ALPHANUMERIC);
        let sent = format!("{before}{name}={encoded}");
        prop_assert_eq!(single_query_value(&sent, &name), Some(value));
    }

    /// Any body, sent base64-encoded in an HTTP API event as API Gateway
    /// does for binary content, parsed by the runtime and handled whole:
    /// a known answer, and a receipt only for a 2xx.
    #[test]
    fn any_base64_body_gets_a_known_answer(body in prop_oneof![
        prop::collection::vec(any::<u8>(), 0..300),
        prop_oneof![any::<String>(), "[!-~]{1,40}", Just(".".to_owned()), Just("..".to_owned())].prop_map(|text| format!(
            "{{\"event\":\"form.submitted\",\"data\":{{\"submissionId\":{}}}}}",
            serde_json::to_string(&text).unwrap()
        ).into_bytes()),
    ], with_key in any::<bool>()) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let ingest: Ingest<MemoryReceiptStore> = runtime.block_on(ingest_with(MemoryReceiptStore::default(), &bearer_config()));
        let mut headers = serde_json::json!({
            "content-type": "application/json",
            "authorization": format!("Bearer {TOKEN}"),
        });
        if with_key {
            // The key for the body's submission when it has one.
            let key = FormSubmission::parse(&body)
                .map(|s| format!("staticforms:form.submitted:{}", s.submission_id))
                .unwrap_or_else(|_| KEY.to_owned());
            headers["idempotency-key"] = key.into();
        }
        let event = serde_json::json!({
            "version": "2.0",
            "routeKey": "POST /webhooks/staticforms",
            "rawPath": "/webhooks/staticforms",
            "rawQueryString": "",
            "headers": headers,
            "requestContext": {
                "accountId": "123456789012", "apiId": "api", "domainName": "api.example",
                "http": {"method": "POST", "path": "/webhooks/staticforms", "protocol": "HTTP/1.1", "sourceIp": "192.0.2.1", "userAgent": "test"},
                "requestId": "r", "routeKey": "POST /webhooks/staticforms", "stage": "$default",
                "time": "30/Nov/2026:08:00:00 +0000", "timeEpoch": 1_795_941_528_000u64
            },
            "body": STANDARD.encode(&body),
            "isBase64Encoded": true
        });
        let request = lambda_http::request::from_str(&event.to_string()).expect("a Lambda HTTP event");
        let response = runtime.block_on(ingest.handle(request));
        let status = response.status().as_u16();
        prop_assert!(Outcome::ALL.iter().any(|o| o.status() == status), "unknown status {status}");
        let stored = ingest.store().receipts();
        prop_assert_eq!(stored.len(), usize::from(status == 202));
        if status == 202 {
            let submission = FormSubmission::parse(&body).unwrap();
            prop_assert_eq!(stored[0].submission_id.as_str(), submission.submission_id.as_str());
        }
    }

    /// The receipt as a DynamoDB item (what the store writes and the
    /// worker reads) converts back to the same receipt.
    #[test]
    fn a_receipt_survives_its_dynamodb_item_form(
        id in "[!-~]{1,256}".prop_filter("an accepted id: not . or ..", |id| id != "." && id != ".."),
        form in any::<String>(),
        number in any::<f64>().prop_filter("finite", |f| f.is_finite()),
        millis in 0u64..4_102_444_800_000,
    ) {
        let envelope = serde_json::json!({
            "event": "form.submitted",
            "data": {"submissionId": id, "formData": {"message": form, "n": number}}
        });
        let submission = FormSubmission::parse(envelope.to_string().as_bytes()).unwrap();
        let receipt = Receipt::new(&submission, UNIX_EPOCH + Duration::from_millis(millis));
        let item: std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue> =
            serde_dynamo::to_item(&receipt).unwrap();
        let back: Receipt = serde_dynamo::from_item(item).unwrap();
        prop_assert_eq!(&back, &receipt);
        let reparsed = FormSubmission::parse(back.payload.as_deref().unwrap().as_bytes()).unwrap();
        prop_assert_eq!(reparsed.payload, submission.payload);
    }
}
