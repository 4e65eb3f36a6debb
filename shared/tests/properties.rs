//! Properties of the rules over generated input: no input panics, a parsed
//! envelope survives being stored and read back, the fingerprint is stable.
//!
//! `make test` runs proptest's default number of cases; `make proptest`
//! runs at least a million (PROPTEST_CASES) in release mode.

use std::time::{Duration, UNIX_EPOCH};

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use shared::{FormSubmission, IdempotencyKey, PayloadFingerprint, Receipt};

/// Any JSON value: nested, with any keys (escapes, non-BMP characters),
/// integers, floats and big numbers.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Submission ids as the envelope allows them: visible ASCII, 1–256, not a
/// dot segment.
fn submission_id() -> impl Strategy<Value = String> {
    "[!-~]{1,256}".prop_filter("not . or ..", |id| id != "." && id != "..")
}

/// A valid envelope around generated form data and extra fields.
fn envelope() -> impl Strategy<Value = Value> {
    (
        submission_id(),
        any_json(),
        any_json(),
        prop::option::of(any::<String>()),
    )
        .prop_map(|(id, form_data, extra, api_key)| {
            let mut data = json!({"submissionId": id, "formData": form_data, "extra": extra});
            if let Some(key) = api_key {
                data["apiKey"] = key.into();
            }
            json!({"event": "form.submitted", "timestamp": 1_795_941_528, "data": data})
        })
}

proptest! {
    #[test]
    fn any_bytes_parse_or_fail_without_panicking(body in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = FormSubmission::parse(&body);
    }

    /// A routes file of any text is routes or problems, never a panic;
    /// every problem is one line.
    #[test]
    fn any_text_is_routes_or_problems_without_panicking(
        text in "(\\[\\[route\\]\\]|\\[spam\\]|form|name|honeypot|max_links|[=\"\\[\\]\\n .a-z0-9\u{e9}-])*"
    ) {
        if let Err(problems) = shared::routes::parse(&text) {
            for problem in problems {
                prop_assert!(!problem.to_string().contains('\n'), "{problem}");
            }
        }
    }

    #[test]
    fn any_json_value_parses_or_fails_without_panicking(value in any_json()) {
        let _ = FormSubmission::parse(value.to_string().as_bytes());
        let _ = PayloadFingerprint::of(&value);
    }

    /// What ingest stores (the receipt's payload text) parses back into the
    /// same submission with the same fingerprint, and never holds the key.
    #[test]
    fn a_parsed_envelope_survives_store_and_read_back(value in envelope(), millis in 0u64..4_102_444_800_000) {
        let submission = FormSubmission::parse(value.to_string().as_bytes()).expect("a valid envelope");
        let receipt = Receipt::new(&submission, UNIX_EPOCH + Duration::from_millis(millis));
        let read_back = FormSubmission::parse(receipt.payload.as_deref().unwrap().as_bytes()).expect("the stored payload parses");
        prop_assert_eq!(&read_back.sender, &submission.sender);
        prop_assert_eq!(&read_back.submission_id, &submission.submission_id);
        prop_assert_eq!(&read_back.payload, &submission.payload);
        prop_assert!(read_back.form_key.is_none());
        let fingerprint = PayloadFingerprint::of(read_back.data());
        prop_assert_eq!(fingerprint.as_str(), receipt.payload_fingerprint.as_str());
        prop_assert_eq!(
            receipt.key(),
            IdempotencyKey::for_submission(submission.sender, &submission.submission_id)
        );
        if let Some(key) = submission.form_key.as_ref().filter(|k| !k.as_bytes().is_empty()) {
            let key_text = serde_json::to_string(std::str::from_utf8(key.as_bytes()).unwrap()).unwrap();
            let stored_key = format!("\"apiKey\":{key_text}");
            prop_assert!(!receipt.payload.as_deref().unwrap().contains(&stored_key));
        }
    }

    /// The fingerprint depends on the content only: text that parses to the
    /// same value has the same fingerprint, in the stored format.
    #[test]
    fn the_fingerprint_is_stable_through_text(value in any_json()) {
        let first = PayloadFingerprint::of(&value);
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        let reparsed: Value = serde_json::from_str(&pretty).unwrap();
        let again = PayloadFingerprint::of(&reparsed);
        prop_assert_eq!(again.as_str(), first.as_str());
        prop_assert_eq!(first.as_str().len(), 64);
        prop_assert!(first.as_str().bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    }
}

/// A Tally, Typeform or Webflow delivery: the sender's envelope around a
/// generated id and generated answers, in the places each parser reads.
fn vendor_delivery() -> impl Strategy<Value = (shared::Sender, Value)> {
    (0..3usize, submission_id(), any_json(), any_json()).prop_map(|(n, id, answers, extra)| {
        match n {
            0 => (
                shared::Sender::Tally,
                json!({"eventType": "FORM_RESPONSE", "data": {"submissionId": id, "createdAt": extra, "fields": answers}}),
            ),
            1 => (
                shared::Sender::Typeform,
                json!({"event_type": "form_response", "form_response": {"token": id, "submitted_at": extra, "answers": answers, "definition": {"fields": answers}}}),
            ),
            _ => (
                shared::Sender::Webflow,
                json!({"triggerType": "form_submission", "payload": {"id": id, "submittedAt": extra, "data": answers}}),
            ),
        }
    })
}

proptest! {
    /// Every sender's parser takes any bytes and any JSON without a panic.
    #[test]
    fn every_senders_parser_takes_any_input_without_panicking(
        body in prop::collection::vec(any::<u8>(), 0..512),
        value in any_json(),
    ) {
        for sender in shared::Sender::ALL {
            let _ = sender.parse_submission(&body);
            let _ = sender.parse_submission(value.to_string().as_bytes());
            let _ = sender.answers(&value);
            let _ = sender.submitted_at(&value);
        }
    }

    /// A valid delivery of any sender parses, keeps its id, and becomes a
    /// lead whatever its answers hold.
    #[test]
    fn a_vendor_delivery_parses_and_becomes_a_lead((sender, body) in vendor_delivery()) {
        let submission = sender.parse_submission(body.to_string().as_bytes()).expect("a valid delivery");
        prop_assert_eq!(submission.sender, sender);
        let receipt = Receipt::new(&submission, UNIX_EPOCH + Duration::from_secs(1_795_941_528));
        prop_assert!(receipt.pk.starts_with(&sender.key_prefix()));
        let lead = shared::Lead::from_receipt(&receipt).expect("a lead");
        prop_assert_eq!(lead.external_id, submission.submission_id.as_str());
    }
}
