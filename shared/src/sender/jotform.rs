//! Jotform's webhook: a `multipart/form-data` POST (ingest makes it a JSON
//! object of its parts, `form_body`) with `formID`, `submissionID` (the
//! stable id, the same in its API) and the answers in `rawRequest`, a JSON
//! string whose keys are `q<N>_<field name>`: a full name is
//! `{"first", "last"}`, an e-mail or a text a string, a checkbox group a
//! list (help article 245, as cited by Jotform's AsyncAPI description,
//! https://asyncapi.apis.io/asyncapis/jotform/jotform-asyncapi/, and a
//! captured delivery, zulip's `zerver/webhooks/jotform/fixtures/response.multipart`).
//! Its other parts (`pretty`, `ip`, `username`, `webhookURL`, which holds
//! the URL's secret) and `rawRequest`'s own bookkeeping (`slug`,
//! `jsExecutionTracker`, `temp_upload`, …) are never kept: the stored
//! payload is `{"formID", "submissionID", "answers": {q-keys}}`, which this
//! parser reads back. It signs nothing: the stack's secret rides in the
//! webhook URL.

use serde_json::{json, Map, Value};

use super::listing::{self, ApiAuth, ApiRequest, Listed, ListingError, Page, PageAsk, SenderApi};
use super::{
    canonical_field, object, Answers, BodyFormat, FormSubmission, Profile, Sample, Sender,
};
use crate::envelope::{EnvelopeError, SubmissionId};

pub const PROFILE: Profile = Profile {
    name: "jotform",
    title: "Jotform",
    webhook_settings: "Jotform (the form, Settings, Integrations, WebHooks)",
    event: "submission",
    content_pointer: "/answers",
    form_id_pointer: Some("/formID"),
    accepted_status: 202,
    body: BodyFormat::Form,
    browser: false,
    signature: None,
    id_header: None,
    parse,
    answers,
    submitted_at,
    sample,
    api: Some(&API),
    erasure: "in Jotform's Inbox (the submission, Delete), or its API: DELETE /v1/submission/{id} with an API key allowed to write (https://api.jotform.com/docs/#submission-id)",
};

/// Whether `key` is an answer's (`q<N>_<name>`), and its name.
fn answer_name(key: &str) -> Option<&str> {
    let rest = key.strip_prefix('q')?;
    let (number, name) = rest.split_once('_')?;
    (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) && !name.is_empty())
        .then_some(name)
}

/// The answers of a `rawRequest` object: its `q<N>_<name>` keys only.
fn answers_of(raw: &Map<String, Value>) -> Map<String, Value> {
    raw.iter()
        .filter(|(key, _)| answer_name(key).is_some())
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// Reads a delivery (its parts as JSON, `rawRequest` a JSON string) or a
/// stored payload (`answers` already an object).
pub fn parse(body: &[u8]) -> Result<FormSubmission, EnvelopeError> {
    let payload = object(body)?;
    let text = |field: &'static str| match payload.get(field) {
        Some(Value::String(text)) => Ok(text.clone()),
        _ => Err(EnvelopeError::MissingField(field, "a string")),
    };
    let form = text("formID")?;
    let submission_id =
        SubmissionId::parse(&text("submissionID")?).map_err(|e| e.at_field("submissionID"))?;
    let answers = match (payload.get("answers"), payload.get("rawRequest")) {
        (Some(Value::Object(answers)), _) => answers_of(answers),
        (_, Some(Value::String(raw))) => match crate::exact_json::parse(raw.as_bytes()) {
            Ok(Value::Object(raw)) => answers_of(&raw),
            _ => return Err(EnvelopeError::MissingField("rawRequest", "a JSON object")),
        },
        _ => return Err(EnvelopeError::MissingField("rawRequest", "a JSON object")),
    };
    Ok(FormSubmission {
        sender: Sender::Jotform,
        payload: json!({
            "formID": form,
            "submissionID": submission_id.as_str(),
            "answers": answers,
        }),
        submission_id,
        form_key: None,
    })
}

/// An answer's text, whatever its shape: a string as it is; an object (an
/// address, a date, a phone) its non-empty parts joined by spaces; a list
/// its texts.
fn text_of(value: &Value) -> Value {
    match value {
        Value::Object(parts) => {
            let parts: Vec<String> = parts
                .values()
                .filter_map(|part| match part {
                    Value::String(text) if !text.trim().is_empty() => Some(text.trim().to_owned()),
                    Value::Number(number) => Some(number.to_string()),
                    _ => None,
                })
                .collect();
            Value::String(parts.join(" "))
        }
        Value::Array(items) => Value::Array(items.iter().map(text_of).collect()),
        other => other.clone(),
    }
}

/// Whether an answer is empty (an untouched field is sent empty).
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.trim().is_empty(),
        Value::Array(items) => items.iter().all(is_empty),
        Value::Object(parts) => parts.values().all(is_empty),
        _ => false,
    }
}

/// The lead's fields, by the answers' field types and names: a full-name
/// answer (`{"first", "last"}`) is the name; a field named like an e-mail,
/// or else the first answer that is an address, is the e-mail; message,
/// phone and company by their names (`canonical_field`). Every answer is
/// also reachable by its key (`q4_email`) and its name (`email`), which a
/// route's `fields` may use.
pub fn answers(payload: &Value) -> Answers {
    let mut answers = Answers::default();
    let Some(given) = payload.get("answers").and_then(Value::as_object) else {
        return answers;
    };
    for (key, value) in given {
        let Some(name) = answer_name(key) else {
            continue;
        };
        if is_empty(value) {
            continue;
        }
        let full_name = value
            .as_object()
            .filter(|parts| parts.contains_key("first") || parts.contains_key("last"));
        if let Some(parts) = full_name {
            let part = |p: &str| {
                parts
                    .get(p)
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .unwrap_or_default()
                    .to_owned()
            };
            if !answers.fields.contains_key("name") {
                for (field, text) in [("firstName", part("first")), ("lastName", part("last"))] {
                    if !text.is_empty() {
                        answers.fields.insert(field.to_owned(), Value::String(text));
                    }
                }
            }
            answers.add(Some("name"), name, &[key], text_of(value));
            continue;
        }
        let looks_like_address = value
            .as_str()
            .is_some_and(|text| text.contains('@') && !text.contains(char::is_whitespace));
        let canonical = canonical_field(name).or(looks_like_address.then_some("email"));
        answers.add(canonical, name, &[key], text_of(value));
    }
    answers
}

/// Jotform's webhook says no time: the receipt's arrival stands for it.
pub fn submitted_at(_payload: &Value) -> Option<String> {
    None
}

/// A delivery as Jotform sends one: its parts (as ingest reads them), the
/// answers in `rawRequest` with its own bookkeeping beside them.
fn sample(sample: &Sample) -> Value {
    let (first, last) = sample.name.rsplit_once(' ').unwrap_or((sample.name, ""));
    let raw = json!({
        "slug": "submit/241234567890123",
        "q3_name": {"first": first, "last": last},
        "q4_email": sample.email,
        "q5_message": sample.message,
        "event_id": "1732615894703_241234567890123_smoke",
    });
    json!({
        "action": "",
        "formID": sample.form_key.unwrap_or("241234567890123"),
        "type": "WEB",
        "formTitle": "Contact",
        "submissionID": sample.id,
        "rawRequest": raw.to_string(),
        "pretty": format!("Name:{}, E-mail:{}", sample.name, sample.email),
    })
}

/// Jotform's API: `GET /v1/form/{id}/submissions` with `offset`, `limit`
/// (at most 1000), `filter` (JSON: `{"created_at:gt": "<YYYY-MM-DD
/// HH:MM:SS>"}`) and `orderby`, the key in an `APIKEY` header; `{"content":
/// [{"id", "form_id", "created_at", "status", "answers": {"<qid>":
/// {"name", "type", "answer"}}}], "resultSet"}`. An EU or HIPAA account's
/// API is `https://eu-api.jotform.com` or `https://hipaa-api.jotform.com`
/// (`SENDER_API_BASE_URL`). From Jotform's own client, jotform-api-python
/// (`get_form_submissions`, `delete_submission`, the `apiKey` header), and
/// https://api.jotform.com/docs/#form-id-submissions.
pub const API: SenderApi = SenderApi {
    base_url: "https://api.jotform.com",
    // 1,000 calls a day on the free plan: a page of 1,000 a second.
    pace: std::time::Duration::from_millis(1000),
    token_help:
        "a Jotform API key (Settings, API, Create New Key), Read Access; Full Access to delete",
    auth: ApiAuth::Header("APIKEY"),
    definition: None,
    page: page_request,
    read_page,
    delete: Some(listing::Deletion {
        per_request: 1,
        request: delete_request,
        token_help: "a Jotform API key with Full Access (Settings, API)",
    }),
};

const PAGE_SIZE: usize = 1000;

/// `DELETE /v1/submission/{id}`, one each.
fn delete_request(ask: &listing::DeleteAsk) -> Result<ApiRequest, ListingError> {
    Ok(ApiRequest {
        path: format!(
            "/v1/submission/{}",
            ask.ids.first().map_or("", String::as_str)
        ),
        query: Vec::new(),
    })
}

/// Jotform's `created_at` (`2026-12-01 08:00:00`), read as UTC: Jotform
/// writes it in the account's own time zone, which the answer does not
/// name (docs/senders/jotform.md: an account set to UTC reads exactly).
fn created_at(text: &str) -> Option<std::time::SystemTime> {
    let (date, time) = text.trim().split_once(' ')?;
    crate::time::parse_timestamp(&format!("{date}T{time}Z"))
}

/// The window's start a day early: `created_at` is in the account's own
/// time zone, so the filter reaches back far enough for any zone, and the
/// window is applied to the times read (`created_at`).
fn page_request(ask: &PageAsk) -> ApiRequest {
    let since = ask.since - std::time::Duration::from_secs(86_400);
    let since = listing::api_time(since)
        .trim_end_matches('Z')
        .replace('T', " ");
    ApiRequest {
        path: format!("/v1/form/{}/submissions", ask.form),
        query: vec![
            ("offset", ask.cursor.unwrap_or("0").to_owned()),
            ("limit", PAGE_SIZE.to_string()),
            ("filter", json!({ "created_at:gt": since }).to_string()),
            ("orderby", "created_at".to_owned()),
        ],
    }
}

fn read_page(body: &[u8], ask: &PageAsk) -> Result<Page, ListingError> {
    let page = listing::json_of(body)?;
    let listed = page
        .get("content")
        .and_then(Value::as_array)
        .ok_or(ListingError::Missing("content"))?;
    let mut submissions = Vec::new();
    for item in listed {
        let Some(id) = item.get("id").and_then(Value::as_str) else {
            return Err(ListingError::Missing("content[].id"));
        };
        // The webhook's rawRequest keys: `q<qid>_<name>`, each answer's
        // value as the form sent it.
        let raw: Map<String, Value> = item
            .get("answers")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(qid, answer)| {
                let name = answer.get("name")?.as_str()?;
                let value = answer.get("answer")?;
                Some((format!("q{qid}_{name}"), value.clone()))
            })
            .collect();
        submissions.push(Listed {
            submission_id: id.to_owned(),
            submitted_at: item
                .get("created_at")
                .and_then(Value::as_str)
                .and_then(created_at),
            webhook_body: json!({
                "formID": ask.form,
                "submissionID": id,
                "rawRequest": Value::Object(raw).to_string(),
            }),
        });
    }
    let offset: usize = ask.cursor.and_then(|c| c.parse().ok()).unwrap_or(0);
    Ok(Page {
        submissions,
        partial: 0,
        // Only an empty page ends the listing.
        next: (!listed.is_empty()).then(|| (offset + listed.len()).to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A delivery's parts as ingest reads them, from a captured delivery
    /// (zulip's fixture, trimmed; the address and message are ours).
    fn delivery() -> Value {
        let raw = r#"{"slug":"submit\/243231271343446","jsExecutionTracker":"build-date-1732271172685","submitSource":"form","q3_studentsName":{"first":"Niloth","last":"P"},"q4_yourEmail":"niloth@example.com","q33_typeOf":"Online Tutoring","q7_description":"","q8_message":"Can we meet on Tuesday?","q15_date":{"month":"","day":"","year":""},"q9_topics":["Math","Physics"],"temp_upload":{"q5_identityProof":["Student_ID.png#jotformfs-e4f4"]},"identityProof":["https:\/\/www.jotform.com\/uploads\/UserNiloth\/1.png"],"event_id":"1732615894703_243231271343446_abc"}"#;
        json!({"action": "", "webhookURL": "https://example.com/webhooks/jotform?token=s3cret-in-the-url",
               "username": "UserNiloth", "formID": "243231271343446", "type": "WEB",
               "formTitle": "Tutor Appointment Form", "submissionID": "6084250982513018472",
               "rawRequest": raw, "pretty": "Student's Name:Niloth P", "ip": "203.0.113.7"})
    }

    #[test]
    fn a_delivery_keeps_its_answers_only_and_reads_back_the_same() {
        let submission = parse(delivery().to_string().as_bytes()).unwrap();
        assert_eq!(submission.submission_id.as_str(), "6084250982513018472");
        assert_eq!(submission.form_id(), Some("243231271343446"));
        let stored = submission.payload.to_string();
        for never in [
            "s3cret",
            "203.0.113.7",
            "UserNiloth",
            "jsExecutionTracker",
            "temp_upload",
            "uploads",
        ] {
            assert!(!stored.contains(never), "{never} kept: {stored}");
        }
        let again = parse(stored.as_bytes()).unwrap();
        assert_eq!(again, submission, "a stored payload reads back as itself");
        let answers = answers(&submission.payload);
        assert_eq!(answers.fields["name"], "Niloth P");
        assert_eq!(answers.fields["firstName"], "Niloth");
        assert_eq!(answers.fields["lastName"], "P");
        assert_eq!(answers.fields["email"], "niloth@example.com");
        assert_eq!(answers.fields["message"], "Can we meet on Tuesday?");
        assert_eq!(answers.fields["typeOf"], "Online Tutoring");
        assert_eq!(answers.fields["topics"], json!(["Math", "Physics"]));
        assert!(!answers.fields.contains_key("description"), "empty");
        assert!(!answers.fields.contains_key("date"), "empty parts");
        assert!(answers
            .aliases
            .contains(&("q33_typeOf".to_owned(), "typeOf".to_owned())));
        assert!(answers
            .aliases
            .contains(&("yourEmail".to_owned(), "email".to_owned())));
        assert_eq!(submitted_at(&submission.payload), None);
    }

    #[test]
    fn an_address_without_an_email_name_is_still_the_email() {
        let payload = json!({"formID": "1", "submissionID": "2",
            "answers": {"q2_contact": "ada@example.com", "q3_note": "a @ b"}});
        let answers = answers(&payload);
        assert_eq!(answers.fields["email"], "ada@example.com");
        assert_eq!(answers.fields["note"], "a @ b");
    }

    #[test]
    fn every_bad_delivery_names_its_field() {
        let rows = [
            (
                json!({"submissionID": "1", "rawRequest": "{}"}),
                EnvelopeError::MissingField("formID", "a string"),
            ),
            (
                json!({"formID": "1", "rawRequest": "{}"}),
                EnvelopeError::MissingField("submissionID", "a string"),
            ),
            (
                json!({"formID": "1", "submissionID": "2"}),
                EnvelopeError::MissingField("rawRequest", "a JSON object"),
            ),
            (
                json!({"formID": "1", "submissionID": "2", "rawRequest": "[1]"}),
                EnvelopeError::MissingField("rawRequest", "a JSON object"),
            ),
            (
                json!({"formID": "1", "submissionID": "2", "rawRequest": "{"}),
                EnvelopeError::MissingField("rawRequest", "a JSON object"),
            ),
            (
                json!({"formID": "1", "submissionID": "", "rawRequest": "{}"}),
                EnvelopeError::InvalidId {
                    field: "submissionID",
                    problem: "is empty",
                },
            ),
        ];
        for (body, error) in rows {
            assert_eq!(parse(body.to_string().as_bytes()), Err(error), "{body}");
        }
        assert_eq!(answer_name("q12_email"), Some("email"));
        for not in ["q_email", "qx_email", "q12_", "slug", "12_email"] {
            assert_eq!(answer_name(not), None, "{not}");
        }
    }

    #[test]
    fn a_listed_submission_is_its_webhook() {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_140_800);
        let ask = |cursor| PageAsk {
            form: "243231271343446",
            since: at,
            until: at + std::time::Duration::from_secs(3600),
            cursor,
            definition: None,
        };
        let first = page_request(&ask(None));
        assert_eq!(first.path, "/v1/form/243231271343446/submissions");
        assert!(first.query.contains(&("offset", "0".to_owned())));
        assert!(first.query.contains(&(
            "filter",
            r#"{"created_at:gt":"2026-11-30 16:00:00"}"#.to_owned()
        )));
        let page = json!({"responseCode": 200, "content": [{
            "id": "6084250982513018472", "form_id": "243231271343446", "created_at": "2026-12-01 03:00:00",
            "status": "ACTIVE", "answers": {
                "1": {"name": "heading", "type": "control_head", "text": "Contact"},
                "3": {"name": "studentsName", "type": "control_fullname", "answer": {"first": "Niloth", "last": "P"}},
                "4": {"name": "yourEmail", "type": "control_email", "answer": "niloth@example.com"},
                "8": {"name": "message", "type": "control_textarea", "answer": "Can we meet on Tuesday?"}}}],
            "resultSet": {"offset": 0, "limit": 1000, "count": 1}});
        let read = read_page(page.to_string().as_bytes(), &ask(None)).unwrap();
        assert_eq!(read.next.as_deref(), Some("1"));
        assert_eq!(
            read.submissions[0].submitted_at,
            crate::time::parse_timestamp("2026-12-01T03:00:00Z")
        );
        assert_eq!(created_at("yesterday"), None);
        let listed = read.submissions[0].submission(Sender::Jotform).unwrap();
        let webhook = parse(delivery().to_string().as_bytes()).unwrap();
        assert_eq!(listed.submission_id, webhook.submission_id);
        let (listed_answers, webhook_answers) =
            (answers(&listed.payload), answers(&webhook.payload));
        for field in ["name", "email", "message"] {
            assert_eq!(
                listed_answers.fields[field], webhook_answers.fields[field],
                "{field}"
            );
        }
        let empty = json!({"content": []}).to_string();
        assert_eq!(
            read_page(empty.as_bytes(), &ask(Some("1"))).unwrap().next,
            None
        );
        assert_eq!(
            read_page(b"{}", &ask(None)),
            Err(ListingError::Missing("content"))
        );
        let deletion = delete_request(&listing::DeleteAsk {
            form: "243231271343446",
            ids: &["6084250982513018472".to_owned()],
            definition: None,
        })
        .unwrap();
        assert_eq!(deletion.path, "/v1/submission/6084250982513018472");
    }
}
