//! Formspree's webhook (the Webhook plugin, a "simple webhook"):
//! `{"form": "<hashid>", "keys": [...], "submission": {"_date": "<when>",
//! "<field name>": value, ...}}`. Formspree documents no submission id in
//! its webhook or its API (its Form Submissions API lists `_date` and the
//! fields: https://help.formspree.io/articles/the-forms-api/form-submissions-api),
//! so the stable id is derived from what stays the same across its retries
//! and matches its API's list: the form's hashid and the submission's
//! `_date` (to the microsecond Formspree records), `<hashid>.<microseconds
//! since the epoch>`. Two submissions of one form in the same microsecond
//! would share it; Formspree's own dates never have.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use super::listing::{self, ApiAuth, ApiRequest, Listed, ListingError, Page, PageAsk, SenderApi};
use super::signature::{Scheme, Signature};
use super::{
    canonical_field, object, Answers, BodyFormat, FormSubmission, Profile, Sample, Sender,
};
use crate::envelope::{EnvelopeError, SubmissionId};

pub const PROFILE: Profile = Profile {
    name: "formspree",
    title: "Formspree",
    webhook_settings: "Formspree (the form, Plugins, Webhook)",
    event: "submission",
    content_pointer: "/submission",
    form_id_pointer: Some("/form"),
    accepted_status: 202,
    body: BodyFormat::Json,
    browser: false,
    signature: Some(SIGNATURE),
    id_header: None,
    parse,
    answers,
    submitted_at,
    sample,
    api: Some(&API),
    erasure: "in Formspree's dashboard (the form's Submissions, select, Delete); its API lists submissions but deletes none (https://help.formspree.io/articles/the-forms-api/form-submissions-api)",
};

/// `Formspree-Signature: t=<unix seconds>,v1=<hex>`, the HMAC-SHA256 of
/// `"<t>.<raw body>"` keyed by the webhook's signing secret, which
/// Formspree shows (it chooses it); its own sample refuses a `t` more than
/// 300 seconds from now
/// (https://help.formspree.io/articles/advanced-features/verify-webhook-signatures).
pub const SIGNATURE: Signature = Signature {
    mode: "formspree-signature",
    header: "formspree-signature",
    scheme: Scheme::TimestampedHex {
        tolerance: std::time::Duration::from_secs(300),
    },
    key_chosen_by_sender: true,
};

pub fn parse(body: &[u8]) -> Result<FormSubmission, EnvelopeError> {
    let payload = object(body)?;
    let Some(form) = payload.get("form").and_then(Value::as_str) else {
        return Err(EnvelopeError::MissingField("form", "a string"));
    };
    let Some(submission) = payload.get("submission").and_then(Value::as_object) else {
        return Err(EnvelopeError::MissingField("submission", "an object"));
    };
    let submission_id = submission_id(form, submission)?;
    Ok(FormSubmission {
        sender: Sender::Formspree,
        submission_id,
        payload,
        form_key: None,
    })
}

/// `<hashid>.<microseconds of _date>`.
fn submission_id(
    form: &str,
    submission: &Map<String, Value>,
) -> Result<SubmissionId, EnvelopeError> {
    let at = submission
        .get("_date")
        .and_then(Value::as_str)
        .and_then(date)
        .ok_or(EnvelopeError::MissingField("submission._date", "a time"))?;
    let micros = at
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros();
    SubmissionId::parse(&format!("{form}.{micros}")).map_err(|e| e.at_field("form"))
}

/// A Formspree `_date`: ISO 8601 in UTC, with or without its `Z`
/// (`2018-11-03T07:28:29.707632`).
fn date(text: &str) -> Option<SystemTime> {
    let has_zone = text.ends_with('Z') || text.ends_with('z');
    if has_zone {
        crate::time::parse_timestamp(text)
    } else {
        crate::time::parse_timestamp(&format!("{text}Z"))
    }
}

/// The submission's fields by name; Formspree's own (`_date`, `_status`,
/// `_gotcha`, `_next`, `_subject`...) are not the lead's, but `_replyto`
/// is its address when no `email` field is.
pub fn answers(payload: &Value) -> Answers {
    let mut answers = Answers::default();
    let Some(submission) = payload.get("submission").and_then(Value::as_object) else {
        return answers;
    };
    for (name, value) in submission {
        if value.is_null() || name.starts_with('_') {
            continue;
        }
        answers.add(canonical_field(name), name, &[], value.clone());
    }
    if let Some(reply_to) = submission.get("_replyto").filter(|v| v.is_string()) {
        if !answers.fields.contains_key("email") {
            answers.add(Some("email"), "_replyto", &[], reply_to.clone());
        }
    }
    answers
}

pub fn submitted_at(payload: &Value) -> Option<String> {
    payload
        .pointer("/submission/_date")
        .and_then(Value::as_str)
        .and_then(date)
        .map(crate::time::format_timestamp)
}

/// `_date` as Formspree writes it: UTC, microseconds, no zone.
fn formspree_date(at: SystemTime) -> String {
    let text = humantime::format_rfc3339_micros(at).to_string();
    text.trim_end_matches('Z').to_owned()
}

/// A delivery as Formspree sends one. Its id is derived (the form and
/// `_date`), so `sample.id` names nothing here.
fn sample(sample: &Sample) -> Value {
    json!({"form": sample.form_key.unwrap_or("sampleform"), "keys": ["name", "email", "message"],
           "submission": {"_date": formspree_date(sample.at), "name": sample.name,
                          "email": sample.email, "message": sample.message}})
}

/// Formspree's Form Submissions API: `GET /api/0/forms/{hashid}/submissions`
/// with `since` (ISO, UTC), `limit`, `offset` and `order=asc`, HTTP Basic
/// with the form's API key as the password; `{"fields": [...],
/// "submissions": [{"_date", fields..., "_status"}]}`
/// (https://help.formspree.io/articles/the-forms-api/form-submissions-api).
/// Professional and Business plans.
pub const API: SenderApi = SenderApi {
    base_url: "https://formspree.io",
    pace: std::time::Duration::from_millis(1000),
    token_help: "the form's Formspree API key, read-only (the form's Settings, API)",
    auth: ApiAuth::BasicPassword,
    definition: None,
    page: page_request,
    read_page,
    delete: None,
};

const PAGE_SIZE: usize = 100;

fn page_request(ask: &PageAsk) -> ApiRequest {
    let since = listing::api_time(ask.since);
    ApiRequest {
        path: format!("/api/0/forms/{}/submissions", ask.form),
        query: vec![
            ("since", since.trim_end_matches('Z').to_owned()),
            ("limit", PAGE_SIZE.to_string()),
            ("offset", ask.cursor.unwrap_or("0").to_owned()),
            ("order", "asc".to_owned()),
        ],
    }
}

fn read_page(body: &[u8], ask: &PageAsk) -> Result<Page, ListingError> {
    let page = listing::json_of(body)?;
    let listed = page
        .get("submissions")
        .and_then(Value::as_array)
        .ok_or(ListingError::Missing("submissions"))?;
    let keys: Vec<Value> = page
        .get("fields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|f| f.as_str().is_some_and(|f| !f.starts_with('_')))
        .cloned()
        .collect();
    let mut submissions = Vec::new();
    for item in listed {
        let Some(fields) = item.as_object() else {
            return Err(ListingError::Missing("submissions[]"));
        };
        // The webhook carries no delivery status.
        let mut fields = fields.clone();
        fields.remove("_status");
        let id = submission_id(ask.form, &fields)
            .map_err(|_| ListingError::Missing("submissions[]._date"))?;
        let submitted = fields.get("_date").and_then(Value::as_str).and_then(date);
        submissions.push(Listed {
            submission_id: id.as_str().to_owned(),
            submitted_at: submitted,
            webhook_body: json!({"form": ask.form, "keys": keys, "submission": fields}),
        });
    }
    let offset: usize = ask.cursor.and_then(|c| c.parse().ok()).unwrap_or(0);
    Ok(Page {
        submissions,
        partial: 0,
        // Only an empty page ends the listing (a page may be capped
        // below the limit asked).
        next: (!listed.is_empty()).then(|| (offset + listed.len()).to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::super::signature::{lookup, SignatureError};
    use super::*;

    const BODY: &str = r#"{"form":"mvzvldzo","keys":["name","email","message","utm_source"],"submission":{"_date":"2026-12-01T08:00:00.123456","name":"Grace Hopper","email":"grace@example.com","message":"Hello","utm_source":"news","_gotcha":""}}"#;
    const SECRET: &[u8] = b"formspree_demo_signing_secret";
    const T: u64 = 1_796_140_800;
    /// hex(HMAC-SHA256(SECRET, "1796140800." + BODY)), by Formspree's own
    /// Python sample (`hmac.new(secret, f"{t}.{raw_body}", sha256)`).
    const V1: &str = "b4a0889880a7c231ae2fc8fcfbf969864de018f8ac5367272ecd0a8911b20747";

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + std::time::Duration::from_secs(seconds)
    }

    fn verify(header: &str, body: &str, now: u64) -> Result<(), SignatureError> {
        SIGNATURE.verify(
            lookup(&[("formspree-signature", header)]),
            body.as_bytes(),
            &[b"rotated-out".to_vec(), SECRET.to_vec()],
            std::time::Duration::from_secs(300),
            at(now),
        )
    }

    #[test]
    fn the_documented_scheme_within_five_minutes() {
        let header = format!("t={T},v1={V1}");
        assert_eq!(
            SIGNATURE.sign(SECRET, BODY.as_bytes(), at(T), &[]),
            vec![("formspree-signature", header.clone())]
        );
        assert_eq!(verify(&header, BODY, T + 299), Ok(()));
        assert_eq!(verify(&header, BODY, T - 299), Ok(()));
        let late = Err(SignatureError::OutsideTolerance("formspree-signature"));
        assert_eq!(verify(&header, BODY, T + 301), late);
        assert_eq!(
            verify(&header, &BODY.replacen("Hello", "Hellp", 1), T),
            Err(SignatureError::NoMatch)
        );
        // Its own sample reads `t` as an integer: a leading zero is the
        // same time, signed as its digits.
        assert_eq!(verify(&format!("t=0{T},v1={V1}"), BODY, T), Ok(()));
        assert_eq!(verify(&format!("v1={V1},t={T}"), BODY, T), Ok(()));
        for broken in [
            format!("t={T}"),
            format!("v1={V1}"),
            format!("t={T},v1=zz"),
            format!("t={T},t={T},v1={V1}"),
        ] {
            assert_eq!(
                verify(&broken, BODY, T),
                Err(SignatureError::Malformed),
                "{broken}"
            );
        }
        for broken in [format!("t=-1,v1={V1}"), format!("t={T};v1={V1}")] {
            assert_eq!(
                verify(&broken, BODY, T),
                Err(SignatureError::InvalidTimestamp("formspree-signature")),
                "{broken}"
            );
        }
    }

    #[test]
    fn the_id_is_the_form_and_its_date() {
        let submission = parse(BODY.as_bytes()).unwrap();
        assert_eq!(
            submission.submission_id.as_str(),
            "mvzvldzo.1796112000123456"
        );
        assert_eq!(submission.form_id(), Some("mvzvldzo"));
        // The same date written with its zone is the same submission.
        let zoned = parse(BODY.replace(".123456\"", ".123456Z\"").as_bytes()).unwrap();
        assert_eq!(zoned.submission_id, submission.submission_id);
        assert_eq!(
            submitted_at(&submission.payload).as_deref(),
            Some("2026-12-01T08:00:00.123Z")
        );
        let answers = answers(&submission.payload);
        assert_eq!(answers.fields["email"], "grace@example.com");
        assert_eq!(answers.fields["utm_source"], "news");
        assert!(!answers.fields.contains_key("_gotcha"));
        let reply_to = json!({"form": "f", "submission": {"_date": "2026-12-01T08:00:00", "_replyto": "a@example.com"}});
        assert_eq!(super::answers(&reply_to).fields["email"], "a@example.com");
        for (body, error) in [
            (
                r#"{"submission":{}}"#,
                EnvelopeError::MissingField("form", "a string"),
            ),
            (
                r#"{"form":"f"}"#,
                EnvelopeError::MissingField("submission", "an object"),
            ),
            (
                r#"{"form":"f","submission":{"email":"a@b.c"}}"#,
                EnvelopeError::MissingField("submission._date", "a time"),
            ),
            (
                r#"{"form":"f","submission":{"_date":"yesterday"}}"#,
                EnvelopeError::MissingField("submission._date", "a time"),
            ),
        ] {
            assert_eq!(parse(body.as_bytes()), Err(error), "{body}");
        }
    }

    #[test]
    fn a_listed_submission_is_its_webhook() {
        let ask = |cursor| PageAsk {
            form: "mvzvldzo",
            since: at(T),
            until: at(T + 3600),
            cursor,
            definition: None,
        };
        let first = page_request(&ask(None));
        assert_eq!(first.path, "/api/0/forms/mvzvldzo/submissions");
        assert_eq!(first.query[0], ("since", "2026-12-01T16:00:00".to_owned()));
        assert!(first.query.contains(&("offset", "0".to_owned())));
        let page = json!({"fields": ["_date", "name", "email", "message", "utm_source", "_status"],
            "submissions": [{"_date": "2026-12-01T08:00:00.123456", "name": "Grace Hopper",
                "email": "grace@example.com", "message": "Hello", "utm_source": "news", "_gotcha": "",
                "_status": {"me@example.com": {"delivered": true}}}]});
        let read = read_page(page.to_string().as_bytes(), &ask(None)).unwrap();
        assert_eq!(read.next.as_deref(), Some("1"));
        let empty = json!({"fields": [], "submissions": []}).to_string();
        assert_eq!(
            read_page(empty.as_bytes(), &ask(Some("1"))).unwrap().next,
            None
        );
        let listed = read.submissions[0].submission(Sender::Formspree).unwrap();
        let webhook = parse(BODY.as_bytes()).unwrap();
        assert_eq!(listed.submission_id, webhook.submission_id);
        assert_eq!(
            listed.data(),
            webhook.data(),
            "the same content, without _status"
        );
        assert_eq!(
            read.submissions[0].submission_id,
            "mvzvldzo.1796112000123456"
        );
        assert_eq!(
            read_page(b"{}", &ask(None)),
            Err(ListingError::Missing("submissions"))
        );
        let full: Vec<Value> = (0..100)
            .map(|n| json!({"_date": format!("2026-12-01T08:00:{:02}", n % 60)}))
            .collect();
        let full = json!({"fields": [], "submissions": full}).to_string();
        assert_eq!(
            read_page(full.as_bytes(), &ask(Some("100")))
                .unwrap()
                .next
                .as_deref(),
            Some("200")
        );
    }
}
