//! Tally (tally.so): `{"eventId", "eventType": "FORM_RESPONSE", "createdAt",
//! "data": {"submissionId", "responseId", "formId", "createdAt", "fields":
//! [{"key", "label", "type", "value", "options"?}]}}`, as Tally's webhook
//! page documents it (https://tally.so/help/webhooks, "Example webhook
//! event"). `data.submissionId` is the same on every retry.

use serde_json::Value;

use serde_json::json;

use super::listing::{self, ApiAuth, ApiRequest, Listed, ListingError, Page, PageAsk, SenderApi};
use super::signature::{Encoding, Scheme, Signature};
use super::{
    canonical_field, parse_shaped, timestamp_at, Answers, BodyFormat, FormSubmission, Profile,
    Sample, Sender, Shape,
};
use crate::envelope::EnvelopeError;

pub const PROFILE: Profile = Profile {
    name: "tally",
    title: "Tally",
    webhook_settings: "Tally (Integrations, Webhooks)",
    event: "FORM_RESPONSE",
    content_pointer: "/data",
    form_id_pointer: Some("/data/formId"),
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
    erasure: "in Tally's dashboard (the form's submissions), or its API: DELETE /forms/{formId}/submissions/{submissionId} with an API key (https://developers.tally.so/api-reference/endpoint/forms/submissions/delete)",
};

/// `Tally-Signature: base64(HMAC-SHA256(secret, body))`, keyed by the
/// signing secret set in the webhook's settings
/// (https://tally.so/help/webhooks, "Signing secret"). No time is signed.
pub const SIGNATURE: Signature = Signature {
    mode: "tally-signature",
    header: "tally-signature",
    scheme: Scheme::Hmac {
        encoding: Encoding::Base64 { prefix: "" },
        time: None,
    },
    key_chosen_by_sender: false,
};

pub fn parse(body: &[u8]) -> Result<FormSubmission, EnvelopeError> {
    parse_shaped(
        body,
        &Shape {
            sender: Sender::Tally,
            event_field: "eventType",
            content_field: "data",
            id_pointer: "/data/submissionId",
            id_field: "data.submissionId",
        },
    )
}

/// `data.fields[]`: by type first (`INPUT_EMAIL`, `INPUT_PHONE_NUMBER`),
/// then by label; choices (`MULTIPLE_CHOICE`, `DROPDOWN`, `MULTI_SELECT`,
/// `RANKING`, `CHECKBOXES`) as their option text, since Tally sends option
/// ids with the `options` that name them. Each answer may also be named by
/// its `key` in `FIELD_MAP`.
pub fn answers(payload: &Value) -> Answers {
    let mut answers = Answers::default();
    let Some(fields) = payload.pointer("/data/fields").and_then(Value::as_array) else {
        return answers;
    };
    for field in fields {
        let text = |name: &str| field.get(name).and_then(Value::as_str).unwrap_or("");
        let value = match field.get("value") {
            None | Some(Value::Null) => continue,
            Some(value) => option_text(value, field.get("options")),
        };
        let canonical = match text("type") {
            "INPUT_EMAIL" => Some("email"),
            "INPUT_PHONE_NUMBER" => Some("phone"),
            _ => canonical_field(text("label")),
        };
        answers.add(canonical, text("label"), &[text("key")], value);
    }
    answers
}

/// Option ids replaced by their option's text (several joined by ", ");
/// any other value as sent.
fn option_text(value: &Value, options: Option<&Value>) -> Value {
    let Some(options) = options.and_then(Value::as_array) else {
        return value.clone();
    };
    let text_of = |id: &Value| {
        options
            .iter()
            .find(|option| option.get("id") == Some(id))
            .and_then(|option| option.get("text"))
            .and_then(Value::as_str)
    };
    match value {
        Value::Array(ids) => {
            let texts: Option<Vec<&str>> = ids.iter().map(text_of).collect();
            match texts {
                Some(texts) => Value::String(texts.join(", ")),
                None => value.clone(),
            }
        }
        Value::String(_) => text_of(value).map_or_else(|| value.clone(), Value::from),
        other => other.clone(),
    }
}

pub fn submitted_at(payload: &Value) -> Option<String> {
    timestamp_at(payload, "/data/createdAt")
}

fn sample(sample: &Sample) -> Value {
    let at = crate::time::format_timestamp(sample.at);
    json!({
        "eventId": format!("ev_{}", sample.id), "eventType": PROFILE.event, "createdAt": at,
        "data": {"responseId": sample.id, "submissionId": sample.id, "formName": "sample", "createdAt": at, "fields": [
            {"key": "name", "label": "Name", "type": "INPUT_TEXT", "value": sample.name},
            {"key": "email", "label": "Email", "type": "INPUT_EMAIL", "value": sample.email},
            {"key": "message", "label": "Message", "type": "TEXTAREA", "value": sample.message}]}
    })
}

/// Tally's API: `GET /forms/{formId}/submissions` with `filter=completed`,
/// `startDate`, `endDate` and `page` (1, 2, ... while `hasMore`), each
/// answer by its question's id beside the form's `questions`
/// (https://developers.tally.so/api-reference/endpoint/forms/submissions/list,
/// https://developers.tally.so/documentation/fetching-form-submissions). A
/// listed submission's `id` is the `data.submissionId` (and `responseId`)
/// of its webhook. 100 requests a minute; a bearer API key made under
/// Settings, API keys, acting as the user who made it.
pub const API: SenderApi = SenderApi {
    base_url: "https://api.tally.so",
    pace: std::time::Duration::from_millis(600),
    token_help: "a Tally API key (Settings, API keys); it reads what its user can",
    auth: ApiAuth::Bearer,
    definition: None,
    page: page_request,
    read_page,
    delete: Some(listing::Deletion {
        per_request: 1,
        request: delete_request,
        token_help: "a Tally API key of a user who may delete the form's submissions",
    }),
};

/// `DELETE /forms/{formId}/submissions/{submissionId}`, one each
/// (https://developers.tally.so/api-reference/endpoint/forms/submissions/delete).
fn delete_request(ask: &listing::DeleteAsk) -> Result<ApiRequest, ListingError> {
    Ok(ApiRequest {
        path: format!(
            "/forms/{}/submissions/{}",
            ask.form,
            ask.ids.first().map_or("", String::as_str)
        ),
        query: Vec::new(),
    })
}

fn page_request(ask: &PageAsk) -> ApiRequest {
    ApiRequest {
        path: format!("/forms/{}/submissions", ask.form),
        query: vec![
            ("filter", "completed".to_owned()),
            ("startDate", listing::api_time(ask.since)),
            ("endDate", listing::api_time(ask.until)),
            ("page", ask.cursor.unwrap_or("1").to_owned()),
        ],
    }
}

/// Choice types whose webhook value is its options' text.
const CHOICES: [&str; 5] = [
    "MULTIPLE_CHOICE",
    "DROPDOWN",
    "MULTI_SELECT",
    "RANKING",
    "CHECKBOXES",
];

fn read_page(body: &[u8], ask: &PageAsk) -> Result<Page, ListingError> {
    let page = listing::json_of(body)?;
    let listed = page
        .get("submissions")
        .and_then(Value::as_array)
        .ok_or(ListingError::Missing("submissions"))?;
    let questions = page
        .get("questions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut submissions = Vec::new();
    let mut partial = 0;
    for item in listed {
        if item.get("isCompleted") == Some(&Value::Bool(false)) {
            partial += 1;
            continue;
        }
        let Some(id) = item.get("id").and_then(Value::as_str) else {
            return Err(ListingError::Missing("submissions[].id"));
        };
        submissions.push(Listed {
            submission_id: id.to_owned(),
            submitted_at: listing::time_at(item, "submittedAt"),
            webhook_body: webhook_of(item, id, ask.form, questions),
        });
    }
    let number: u64 = ask.cursor.and_then(|c| c.parse().ok()).unwrap_or(1);
    // Without its end marker a page could end the listing early and the
    // window be taken as read: an error, read again next time.
    let has_more = page
        .get("hasMore")
        .and_then(Value::as_bool)
        .ok_or(ListingError::Missing("hasMore"))?;
    let next = has_more.then(|| (number + 1).to_string());
    Ok(Page {
        submissions,
        partial,
        next,
    })
}

/// A listed submission as its `FORM_RESPONSE` webhook carries it: each
/// response a field keyed `question_<questionId>` (the webhook's key)
/// under its question's title and type; hidden fields (an object of name
/// and value) one field each, under their names.
fn webhook_of(item: &Value, id: &str, form: &str, questions: &[Value]) -> Value {
    let at = item.get("submittedAt").cloned().unwrap_or(Value::Null);
    let mut fields = Vec::new();
    let responses = item.get("responses").and_then(Value::as_array);
    for response in responses.into_iter().flatten() {
        let question_id = response
            .get("questionId")
            .and_then(Value::as_str)
            .unwrap_or("");
        let question = questions
            .iter()
            .find(|q| q.get("id").and_then(Value::as_str) == Some(question_id));
        let text = |name: &str| {
            question
                .and_then(|q| q.get(name))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let kind = text("type");
        let key = format!("question_{question_id}");
        let answer = response.get("answer").cloned().unwrap_or(Value::Null);
        match answer {
            Value::Object(hidden) if kind == "HIDDEN_FIELDS" => {
                for (name, value) in hidden {
                    fields.push(json!({"key": format!("{key}_{name}"), "label": name, "type": kind, "value": value}));
                }
            }
            Value::Array(options)
                if CHOICES.contains(&kind) && options.iter().all(Value::is_string) =>
            {
                let texts: Vec<&str> = options.iter().filter_map(Value::as_str).collect();
                fields.push(json!({"key": key, "label": text("title"), "type": kind, "value": texts.join(", ")}));
            }
            value => fields
                .push(json!({"key": key, "label": text("title"), "type": kind, "value": value})),
        }
    }
    json!({
        "eventId": format!("import-{id}"), "eventType": PROFILE.event, "createdAt": at,
        "data": {"responseId": id, "submissionId": id, "respondentId": item.get("respondentId"),
                 "formId": form, "createdAt": at, "fields": fields}
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Tally's documented example, trimmed to the field types a lead uses.
    fn delivery() -> Value {
        json!({
            "eventId": "a4cb511e-d513-4fa5-baee-b815d718dfd1",
            "eventType": "FORM_RESPONSE",
            "createdAt": "2023-06-28T15:00:21.889Z",
            "data": {
                "responseId": "2wgx4n", "submissionId": "2wgx4n", "respondentId": "dwQKYm",
                "formId": "VwbNEw", "formName": "Contact form", "createdAt": "2023-06-28T15:00:21.000Z",
                "fields": [
                    {"key": "question_3EKz4n", "label": "Full name", "type": "INPUT_TEXT", "value": "Alice Smith"},
                    {"key": "question_w4Q4Xn", "label": "Work address", "type": "INPUT_EMAIL", "value": "alice@example.com"},
                    {"key": "question_3jZaa3", "label": "Mobile", "type": "INPUT_PHONE_NUMBER", "value": "+32491223344"},
                    {"key": "question_3Nrpl3", "label": "Message", "type": "TEXTAREA", "value": "Hello world"},
                    {"key": "question_3qL4Gm", "label": "Plan", "type": "MULTIPLE_CHOICE",
                     "value": ["e7bfbbc6-c2e6-4821-8670-72ed1cb31cd5"],
                     "options": [{"id": "ec321dc4-b50d-4270-8df0-0e38c898762a", "text": "Starter"},
                                 {"id": "e7bfbbc6-c2e6-4821-8670-72ed1cb31cd5", "text": "Business"}]},
                    {"key": "question_mVGEg3", "label": "Skipped", "type": "INPUT_TEXT", "value": null}
                ]
            }
        })
    }

    fn parse_value(value: Value) -> Result<FormSubmission, EnvelopeError> {
        parse(value.to_string().as_bytes())
    }

    #[test]
    fn envelope_rules() {
        let mut other_event = delivery();
        other_event["eventType"] = json!("FORM_DELETED");
        let mut no_data = delivery();
        no_data.as_object_mut().unwrap().remove("data");
        let mut no_id = delivery();
        no_id["data"]
            .as_object_mut()
            .unwrap()
            .remove("submissionId");
        let mut dot = delivery();
        dot["data"]["submissionId"] = json!("..");
        let rows = [
            (delivery(), Ok("2wgx4n")),
            (
                other_event,
                Err(EnvelopeError::UnexpectedEvent {
                    field: "eventType",
                    expected: "FORM_RESPONSE",
                }),
            ),
            (
                json!({"data": {}}),
                Err(EnvelopeError::MissingField("eventType", "a string")),
            ),
            (
                no_data,
                Err(EnvelopeError::MissingField("data", "an object")),
            ),
            (
                no_id,
                Err(EnvelopeError::MissingField("data.submissionId", "a string")),
            ),
            (
                dot.clone(),
                Err(EnvelopeError::SubmissionIdDotSegment.at_field("data.submissionId")),
            ),
            (json!([]), Err(EnvelopeError::NotAnObject)),
        ];
        for (body, expected) in rows {
            let got = parse_value(body.clone()).map(|s| s.submission_id.as_str().to_owned());
            assert_eq!(got, expected.map(str::to_owned), "{body}");
        }
        assert!(parse(b"{not json").is_err());
        let submission = parse_value(delivery()).unwrap();
        assert_eq!(submission.sender, Sender::Tally);
        assert_eq!(submission.data()["formId"], "VwbNEw");
    }

    #[test]
    fn answers_by_type_then_label_with_option_text() {
        let answers = answers(&delivery());
        assert_eq!(answers.fields["email"], "alice@example.com");
        assert_eq!(answers.fields["phone"], "+32491223344");
        assert_eq!(answers.fields["name"], "Alice Smith");
        assert_eq!(answers.fields["message"], "Hello world");
        assert_eq!(answers.fields["Plan"], "Business");
        assert!(!answers.fields.contains_key("Skipped"));
        assert!(answers
            .aliases
            .contains(&("question_3qL4Gm".to_owned(), "Plan".to_owned())));
        assert_eq!(
            super::super::Sender::Tally
                .submitted_at(&delivery())
                .as_deref(),
            Some("2023-06-28T15:00:21.000Z")
        );
    }

    /// Tally sends hidden fields as fields of type `HIDDEN_FIELDS`, named
    /// by their label (Tally's documented example delivery carries
    /// `utm_campaign` so).
    #[test]
    fn hidden_fields_carry_attribution_under_its_names() {
        let mut delivery = delivery();
        let fields = delivery["data"]["fields"].as_array_mut().unwrap();
        fields.push(json!({"key": "question_mVGEg3_8b57", "label": "utm_campaign", "type": "HIDDEN_FIELDS", "value": "newsletter"}));
        fields.push(json!({"key": "question_nPpjVn_84b6", "label": "Referrer", "type": "HIDDEN_FIELDS", "value": "https://example.org/"}));
        let answers = answers(&delivery);
        assert_eq!(answers.fields["utm_campaign"], "newsletter");
        assert_eq!(answers.fields["referrer"], "https://example.org/");
    }

    #[test]
    fn choices_as_text() {
        let options = json!([{"id": "a", "text": "Red"}, {"id": "b", "text": "Blue"}]);
        let rows = [
            (json!(["a", "b"]), json!("Red, Blue")),
            (json!("b"), json!("Blue")),
            (json!(["a", "unknown"]), json!(["a", "unknown"])),
            (json!(3), json!(3)),
        ];
        for (value, expected) in rows {
            assert_eq!(option_text(&value, Some(&options)), expected, "{value}");
        }
        assert_eq!(option_text(&json!(["a"]), None), json!(["a"]));
    }

    /// Tally's example delivery, byte for byte, with the signature its
    /// documented algorithm gives (checked with Node's crypto and Python's
    /// hmac).
    const TALLY_BODY: &str = r#"{"eventId":"a4cb511e-d513-4fa5-baee-b815d718dfd1","eventType":"FORM_RESPONSE","createdAt":"2023-06-28T15:00:21.889Z","data":{"responseId":"2wgx4n","submissionId":"2wgx4n","respondentId":"dwQKYm","formId":"VwbNEw","formName":"Contact form","createdAt":"2023-06-28T15:00:21.000Z","fields":[{"key":"question_3EKz4n","label":"Full name","type":"INPUT_TEXT","value":"Alice Smith"},{"key":"question_w4Q4Xn","label":"Email","type":"INPUT_EMAIL","value":"alice@example.com"},{"key":"question_3jZaa3","label":"Phone number","type":"INPUT_PHONE_NUMBER","value":"+32491223344"},{"key":"question_3Nrpl3","label":"Message","type":"TEXTAREA","value":"Hello world"},{"key":"question_3qL4Gm","label":"Plan","type":"MULTIPLE_CHOICE","value":["e7bfbbc6-c2e6-4821-8670-72ed1cb31cd5"],"options":[{"id":"ec321dc4-b50d-4270-8df0-0e38c898762a","text":"Starter"},{"id":"e7bfbbc6-c2e6-4821-8670-72ed1cb31cd5","text":"Business"}]}]}}"#;
    const TALLY_SIGNATURE: &str = "AJqjBx/khwAhdAp+0P76eDKBcYj4yxAWjNPGjyhNMd0=";

    #[test]
    fn the_documented_example_verifies() {
        use super::super::signature::lookup;
        let keys = [
            b"another-secret-0001".to_vec(),
            b"whsec_tally_demo".to_vec(),
        ];
        let now = std::time::SystemTime::now();
        let signed = [("tally-signature", TALLY_SIGNATURE)];
        assert_eq!(
            SIGNATURE.verify(
                lookup(&signed),
                TALLY_BODY.as_bytes(),
                &keys,
                Default::default(),
                now
            ),
            Ok(())
        );
        let signed = SIGNATURE.sign(b"whsec_tally_demo", TALLY_BODY.as_bytes(), now, &[]);
        assert_eq!(
            signed,
            vec![("tally-signature", TALLY_SIGNATURE.to_owned())]
        );
    }

    /// A page as Tally's API documents it (the example on "Fetching form
    /// submissions"), with an e-mail question, a choice, hidden fields and
    /// a partial submission added.
    fn api_page(has_more: bool) -> Value {
        json!({
            "page": 1, "limit": 50, "hasMore": has_more,
            "totalNumberOfSubmissionsPerFilter": {"all": 3, "completed": 2, "partial": 1},
            "questions": [
                {"id": "EKOE2N", "type": "INPUT_TEXT", "title": "First name", "fields": [
                    {"uuid": "21dd98ef-4c54-4e77-bcc6-7ec79409b3ea", "type": "INPUT_FIELD", "questionType": "INPUT_TEXT", "title": "First name"}]},
                {"id": "w4Q4Xn", "type": "INPUT_EMAIL", "title": "Work address", "fields": []},
                {"id": "3qL4Gm", "type": "MULTIPLE_CHOICE", "title": "Plan", "fields": []},
                {"id": "mVGEg3", "type": "HIDDEN_FIELDS", "title": "Hidden fields", "fields": []}
            ],
            "submissions": [
                {"id": "GG6z5L", "formId": "mexJoq", "respondentId": "jzQdR9", "isCompleted": true,
                 "submittedAt": "2024-12-30T09:02:01.000Z", "responses": [
                    {"id": "4r5rAWb", "questionId": "EKOE2N", "answer": "Filip"},
                    {"id": "5s6sBXc", "questionId": "w4Q4Xn", "answer": "filip@example.com"},
                    {"id": "6t7tCYd", "questionId": "3qL4Gm", "answer": ["Business"]},
                    {"id": "7u8uDZe", "questionId": "mVGEg3", "answer": {"utm_campaign": "newsletter"}}]},
                {"id": "2WXeKV", "formId": "mexJoq", "respondentId": "kzQdR0", "isCompleted": false,
                 "submittedAt": "2024-12-30T08:57:52.000Z", "responses": []}
            ]
        })
    }

    fn ask(cursor: Option<&str>) -> PageAsk<'_> {
        let at = |s| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s);
        PageAsk {
            form: "mexJoq",
            since: at(1_735_000_000),
            until: at(1_735_600_000),
            cursor,
            definition: None,
        }
    }

    #[test]
    fn the_api_is_asked_for_completed_submissions_in_the_window_page_by_page() {
        let first = page_request(&ask(None));
        assert_eq!(first.path, "/forms/mexJoq/submissions");
        assert_eq!(
            first.query,
            vec![
                ("filter", "completed".to_owned()),
                ("startDate", "2024-12-24T00:26:40Z".to_owned()),
                ("endDate", "2024-12-30T23:06:40Z".to_owned()),
                ("page", "1".to_owned()),
            ]
        );
        assert_eq!(
            page_request(&ask(Some("3"))).query[3],
            ("page", "3".to_owned())
        );
        let body = api_page(true).to_string();
        assert_eq!(
            read_page(body.as_bytes(), &ask(Some("3")))
                .unwrap()
                .next
                .as_deref(),
            Some("4")
        );
        let last = api_page(false).to_string();
        assert_eq!(read_page(last.as_bytes(), &ask(None)).unwrap().next, None);
        assert_eq!(
            read_page(b"{}", &ask(None)),
            Err(ListingError::Missing("submissions"))
        );
        assert_eq!(read_page(b"<html>", &ask(None)), Err(ListingError::NotJson));
        // Without its end marker a page could end the listing early.
        let mut unmarked = api_page(false);
        unmarked.as_object_mut().unwrap().remove("hasMore");
        assert_eq!(
            read_page(unmarked.to_string().as_bytes(), &ask(None)),
            Err(ListingError::Missing("hasMore"))
        );
    }

    /// The listed submission is the webhook Tally would have sent: the
    /// same key, and the same lead as that webhook's.
    #[test]
    fn a_listed_submission_is_its_webhook() {
        let body = api_page(false).to_string();
        let page = read_page(body.as_bytes(), &ask(None)).unwrap();
        assert_eq!(page.partial, 1);
        assert_eq!(page.submissions.len(), 1);
        let listed = &page.submissions[0];
        let submission = listed.submission(Sender::Tally).unwrap();
        assert_eq!(
            crate::IdempotencyKey::for_submission(Sender::Tally, &submission.submission_id)
                .as_str(),
            "tally:FORM_RESPONSE:GG6z5L"
        );
        assert_eq!(submission.form_id(), Some("mexJoq"));
        assert_eq!(
            listed
                .submitted_at
                .map(crate::time::format_timestamp)
                .as_deref(),
            Some("2024-12-30T09:02:01.000Z")
        );
        let webhook = json!({
            "eventId": "e1", "eventType": "FORM_RESPONSE", "createdAt": "2024-12-30T09:02:02.000Z",
            "data": {"responseId": "GG6z5L", "submissionId": "GG6z5L", "respondentId": "jzQdR9",
                     "formId": "mexJoq", "formName": "Contact", "createdAt": "2024-12-30T09:02:01.000Z", "fields": [
                {"key": "question_EKOE2N", "label": "First name", "type": "INPUT_TEXT", "value": "Filip"},
                {"key": "question_w4Q4Xn", "label": "Work address", "type": "INPUT_EMAIL", "value": "filip@example.com"},
                {"key": "question_3qL4Gm", "label": "Plan", "type": "MULTIPLE_CHOICE", "value": ["b"],
                 "options": [{"id": "a", "text": "Starter"}, {"id": "b", "text": "Business"}]},
                {"key": "question_mVGEg3_utm_campaign", "label": "utm_campaign", "type": "HIDDEN_FIELDS", "value": "newsletter"}]}
        });
        assert_eq!(answers(&submission.payload), answers(&webhook));
        assert_eq!(answers(&webhook).fields["email"], "filip@example.com");
        assert_eq!(submitted_at(&submission.payload), submitted_at(&webhook));
    }
}
