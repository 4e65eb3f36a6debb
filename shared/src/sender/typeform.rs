//! Typeform: `{"event_id", "event_type": "form_response", "form_response":
//! {"form_id", "token", "submitted_at", "definition": {"fields": [{"id",
//! "title", "type", "ref"}]}, "answers": [{"type", "<type>": value,
//! "field": {"id", "type", "ref"}}]}}`, as Typeform's example payload
//! documents it (https://www.typeform.com/developers/webhooks/example-payload/).
//! `form_response.token` is the submission's id, the same on every retry.
//! Only answered questions appear in `answers`; they are matched by field
//! id or ref, never by position.

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
    name: "typeform",
    title: "Typeform",
    webhook_settings: "Typeform (Connect, Webhooks)",
    // Never `form_response_partial`: a partial response is no lead.
    event: "form_response",
    content_pointer: "/form_response",
    form_id_pointer: Some("/form_response/form_id"),
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
    erasure: "in Typeform's dashboard (the form's responses), or its API: DELETE /forms/{form_id}/responses?included_response_ids=<ids> with a token that may write responses (https://www.typeform.com/developers/responses/reference/delete-responses/)",
};

/// `Typeform-Signature: sha256=base64(HMAC-SHA256(secret, body))`
/// (https://www.typeform.com/developers/webhooks/secure-your-webhooks/).
/// No time is signed.
pub const SIGNATURE: Signature = Signature {
    mode: "typeform-signature",
    header: "typeform-signature",
    scheme: Scheme::Hmac {
        encoding: Encoding::Base64 { prefix: "sha256=" },
        time: None,
    },
    key_chosen_by_sender: false,
};

pub fn parse(body: &[u8]) -> Result<FormSubmission, EnvelopeError> {
    parse_shaped(
        body,
        &Shape {
            sender: Sender::Typeform,
            event_field: "event_type",
            content_field: "form_response",
            id_pointer: "/form_response/token",
            id_field: "form_response.token",
        },
    )
}

/// `form_response.answers[]`: by type first (`email`, `phone_number`),
/// then by the field's ref, then by its title (from `definition.fields`);
/// a choice as its label, several as their labels joined by ", ". Each
/// answer may also be named by its ref or id in `FIELD_MAP`. Then the
/// hidden fields (`form_response.hidden`, an object of name and value,
/// where forms carry UTM values and the page), each under its name.
pub fn answers(payload: &Value) -> Answers {
    let mut answers = Answers::default();
    let given = payload
        .pointer("/form_response/answers")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let definitions = payload
        .pointer("/form_response/definition/fields")
        .and_then(Value::as_array);
    for answer in given {
        let text = |value: &Value, name: &str| {
            value
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let field = answer.get("field").unwrap_or(&Value::Null);
        let (id, reference) = (text(field, "id"), text(field, "ref"));
        let title = definitions
            .and_then(|fields| fields.iter().find(|f| text(f, "id") == id))
            .map(|definition| text(definition, "title"))
            .unwrap_or_default();
        let kind = text(answer, "type");
        let Some(value) = value_of(answer, &kind) else {
            continue;
        };
        let canonical = match kind.as_str() {
            "email" => Some("email"),
            "phone_number" => Some("phone"),
            _ => canonical_field(&reference).or_else(|| canonical_field(&title)),
        };
        let label = if title.is_empty() { &reference } else { &title };
        answers.add(canonical, label, &[&reference, &id], value);
    }
    let hidden = payload
        .pointer("/form_response/hidden")
        .and_then(Value::as_object);
    for (name, value) in hidden.into_iter().flatten() {
        if !value.is_null() {
            answers.add(canonical_field(name), name, &[], value.clone());
        }
    }
    answers
}

/// The answer's value, kept under the name of its type.
fn value_of(answer: &Value, kind: &str) -> Option<Value> {
    let value = answer.get(kind)?;
    Some(match kind {
        "choice" => value
            .get("label")
            .or_else(|| value.get("other"))
            .cloned()
            .unwrap_or(Value::Null),
        "choices" => {
            let mut labels: Vec<Value> = value
                .get("labels")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if let Some(other) = value.get("other").filter(|o| o.is_string()) {
                labels.push(other.clone());
            }
            let texts: Vec<&str> = labels.iter().filter_map(Value::as_str).collect();
            Value::String(texts.join(", "))
        }
        _ => value.clone(),
    })
    .filter(|value| !value.is_null())
}

pub fn submitted_at(payload: &Value) -> Option<String> {
    timestamp_at(payload, "/form_response/submitted_at")
}

fn sample(sample: &Sample) -> Value {
    let at = crate::time::format_timestamp(sample.at);
    json!({
        "event_id": format!("ev_{}", sample.id), "event_type": PROFILE.event,
        "form_response": {"token": sample.id, "submitted_at": at,
            "definition": {"title": "sample", "fields": [
                {"id": "name", "title": "Name", "type": "short_text", "ref": "name"},
                {"id": "email", "title": "Email", "type": "email", "ref": "email"},
                {"id": "message", "title": "Message", "type": "long_text", "ref": "message"}]},
            "answers": [
                {"type": "text", "text": sample.name, "field": {"id": "name", "type": "short_text", "ref": "name"}},
                {"type": "email", "email": sample.email, "field": {"id": "email", "type": "email", "ref": "email"}},
                {"type": "text", "text": sample.message, "field": {"id": "message", "type": "long_text", "ref": "message"}}]}
    })
}

/// Typeform's Responses API: `GET /forms/{form_id}/responses` with
/// `response_type=completed`, `since`, `until`, `page_size` and, for each
/// next page, `before` the last token listed (newest first; `page_count`
/// counts the pages left), and `GET /forms/{form_id}` for the questions'
/// titles a webhook's `definition` carries
/// (https://www.typeform.com/developers/responses/reference/retrieve-responses/,
/// https://www.typeform.com/developers/create/reference/retrieve-form/). A
/// response's `token` is its webhook's `form_response.token`. Two requests
/// a second; a personal access token with the `responses:read` and
/// `forms:read` scopes. The EU data centre's API is
/// `https://api.eu.typeform.com` (`SENDER_API_BASE_URL`).
pub const API: SenderApi = SenderApi {
    base_url: "https://api.typeform.com",
    pace: std::time::Duration::from_millis(500),
    token_help: "a Typeform personal access token (Account, Personal tokens) with responses:read and forms:read",
    auth: ApiAuth::Bearer,
    definition: Some(definition_request),
    page: page_request,
    read_page,
    delete: Some(listing::Deletion {
        per_request: DELETE_PER_REQUEST,
        request: delete_request,
        token_help: "a Typeform personal access token with responses:write (and responses:read, forms:read to find them)",
    }),
};

/// Response ids one deletion names: Typeform takes up to 1000 in the
/// query; fewer keep the URL short.
const DELETE_PER_REQUEST: usize = 25;

/// `DELETE /forms/{form_id}/responses?included_response_ids=a,b` (a token
/// with `responses:write`)
/// (https://www.typeform.com/developers/responses/reference/delete-responses/).
fn delete_request(ask: &listing::DeleteAsk) -> Result<ApiRequest, ListingError> {
    Ok(ApiRequest {
        path: format!("/forms/{}/responses", ask.form),
        query: vec![("included_response_ids", ask.ids.join(","))],
    })
}

/// The most responses a page may hold.
const PAGE_SIZE: &str = "1000";

fn definition_request(form: &str) -> ApiRequest {
    ApiRequest {
        path: format!("/forms/{form}"),
        query: Vec::new(),
    }
}

fn page_request(ask: &PageAsk) -> ApiRequest {
    let mut query = vec![
        ("response_type", "completed".to_owned()),
        ("since", listing::api_time(ask.since)),
        ("until", listing::api_time(ask.until)),
        ("page_size", PAGE_SIZE.to_owned()),
    ];
    if let Some(token) = ask.cursor {
        query.push(("before", token.to_owned()));
    }
    ApiRequest {
        path: format!("/forms/{}/responses", ask.form),
        query,
    }
}

fn read_page(body: &[u8], ask: &PageAsk) -> Result<Page, ListingError> {
    let page = listing::json_of(body)?;
    let items = page
        .get("items")
        .and_then(Value::as_array)
        .ok_or(ListingError::Missing("items"))?;
    let definition = definition_of(ask.definition, ask.form);
    let mut submissions = Vec::new();
    let mut partial = 0;
    for item in items {
        let submitted = item
            .get("submitted_at")
            .and_then(Value::as_str)
            .is_some_and(|at| !at.is_empty());
        let completed = item
            .get("response_type")
            .and_then(Value::as_str)
            .is_none_or(|kind| kind == "completed");
        if !(submitted && completed) {
            partial += 1;
            continue;
        }
        let Some(token) = item.get("token").and_then(Value::as_str) else {
            return Err(ListingError::Missing("items[].token"));
        };
        let mut response = json!({"form_id": ask.form, "token": token, "definition": definition});
        for name in [
            "landed_at",
            "submitted_at",
            "hidden",
            "calculated",
            "answers",
        ] {
            if let Some(value) = item.get(name) {
                response[name] = value.clone();
            }
        }
        submissions.push(Listed {
            submission_id: token.to_owned(),
            submitted_at: listing::time_at(item, "submitted_at"),
            webhook_body: json!({"event_id": format!("import-{token}"), "event_type": PROFILE.event, "form_response": response}),
        });
    }
    // Without its end marker a page could end the listing early and the
    // window be taken as read: an error, read again next time.
    let pages_left = page
        .get("page_count")
        .and_then(Value::as_u64)
        .ok_or(ListingError::Missing("page_count"))?;
    let next = match items.last() {
        Some(last) if pages_left > 1 => {
            last.get("token").and_then(Value::as_str).map(str::to_owned)
        }
        _ => None,
    };
    Ok(Page {
        submissions,
        partial,
        next,
    })
}

/// A webhook's `definition` from the form's own: its id, title and
/// questions (a group's questions beside it, as a webhook lists them).
fn definition_of(form: Option<&Value>, form_id: &str) -> Value {
    let mut fields = Vec::new();
    let mut add = |field: &Value| {
        let mut kept = serde_json::Map::new();
        for name in ["id", "title", "type", "ref"] {
            if let Some(value) = field.get(name) {
                kept.insert(name.to_owned(), value.clone());
            }
        }
        fields.push(Value::Object(kept));
    };
    let top = form.and_then(|f| f.get("fields")).and_then(Value::as_array);
    for field in top.into_iter().flatten() {
        add(field);
        let inner = field
            .pointer("/properties/fields")
            .and_then(Value::as_array);
        for field in inner.into_iter().flatten() {
            add(field);
        }
    }
    let title = form
        .and_then(|f| f.get("title"))
        .cloned()
        .unwrap_or(Value::Null);
    json!({"id": form_id, "title": title, "fields": fields})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Typeform's documented shapes: the research notes' example delivery.
    fn delivery() -> Value {
        json!({
            "event_id": "01KBYWTTXW2SXX86TBH2SGNCCS",
            "event_type": "form_response",
            "form_response": {
                "form_id": "lT4Z3j", "token": "a3a12ec67a1365927098a606107fac15",
                "landed_at": "2018-01-18T18:07:02Z", "submitted_at": "2018-01-18T18:17:02Z",
                "hidden": {"user_id": "abc123456"},
                "definition": {"id": "lT4Z3j", "title": "Contact form", "fields": [
                    {"id": "JwWggjAKtOkA", "title": "What is your first name?", "type": "short_text", "ref": "first_name"},
                    {"id": "SMEUb7VJz92Q", "title": "Your email?", "type": "email", "ref": "email"},
                    {"id": "PNe8ZKBK8C2Q", "title": "Phone?", "type": "phone_number", "ref": "phone"},
                    {"id": "k6TP9oLGgHjl", "title": "Which plan?", "type": "multiple_choice", "ref": "plan"},
                    {"id": "Xy9", "title": "Extras", "type": "multiple_choice", "ref": "extras"}
                ]},
                "answers": [
                    {"type": "text", "text": "Laura", "field": {"id": "JwWggjAKtOkA", "type": "short_text", "ref": "first_name"}},
                    {"type": "email", "email": "laura@example.com", "field": {"id": "SMEUb7VJz92Q", "type": "email", "ref": "email"}},
                    {"type": "phone_number", "phone_number": "+15551234567", "field": {"id": "PNe8ZKBK8C2Q", "type": "phone_number", "ref": "phone"}},
                    {"type": "choice", "choice": {"id": "eXnU3oA141Cg", "label": "Business", "ref": "business"}, "field": {"id": "k6TP9oLGgHjl", "type": "multiple_choice", "ref": "plan"}},
                    {"type": "choices", "choices": {"labels": ["Support", "Training"]}, "field": {"id": "Xy9", "type": "multiple_choice", "ref": "extras"}}
                ],
                "ending": {"id": "DefaultTyScreen", "ref": "default_tys"}
            }
        })
    }

    #[test]
    fn envelope_rules() {
        let mut partial = delivery();
        partial["event_type"] = json!("form_response_partial");
        let mut no_token = delivery();
        no_token["form_response"]
            .as_object_mut()
            .unwrap()
            .remove("token");
        let mut empty = delivery();
        empty["form_response"]["token"] = json!("");
        let rows = [
            (
                delivery(),
                Ok("a3a12ec67a1365927098a606107fac15".to_owned()),
            ),
            (
                partial,
                Err(EnvelopeError::UnexpectedEvent {
                    field: "event_type",
                    expected: "form_response",
                }),
            ),
            (
                json!({"event_type": "form_response"}),
                Err(EnvelopeError::MissingField("form_response", "an object")),
            ),
            (
                no_token,
                Err(EnvelopeError::MissingField(
                    "form_response.token",
                    "a string",
                )),
            ),
            (
                empty,
                Err(EnvelopeError::EmptySubmissionId.at_field("form_response.token")),
            ),
        ];
        for (body, expected) in rows {
            let got =
                parse(body.to_string().as_bytes()).map(|s| s.submission_id.as_str().to_owned());
            assert_eq!(got, expected, "{body}");
        }
        let submission = parse(delivery().to_string().as_bytes()).unwrap();
        assert_eq!(submission.data()["form_id"], "lT4Z3j");
    }

    #[test]
    fn hidden_fields_become_fields_and_attribution_keeps_its_names() {
        let mut delivery = delivery();
        delivery["form_response"]["hidden"] = json!({
            "utm_source": "newsletter", "UTM_Campaign": "spring",
            "page_url": "https://example.com/pricing", "empty": null
        });
        let answers = answers(&delivery);
        assert_eq!(answers.fields["utm_source"], "newsletter");
        assert_eq!(answers.fields["utm_campaign"], "spring");
        assert_eq!(answers.fields["page_url"], "https://example.com/pricing");
        assert!(!answers.fields.contains_key("empty"));
        assert_eq!(answers.fields["email"], "laura@example.com");
    }

    #[test]
    fn answers_by_type_ref_and_title_with_choice_labels() {
        let answers = answers(&delivery());
        assert_eq!(answers.fields["email"], "laura@example.com");
        assert_eq!(answers.fields["phone"], "+15551234567");
        assert_eq!(answers.fields["firstName"], "Laura");
        assert_eq!(answers.fields["Which plan?"], "Business");
        assert_eq!(answers.fields["Extras"], "Support, Training");
        assert_eq!(answers.fields["user_id"], "abc123456");
        for alias in ["plan", "k6TP9oLGgHjl"] {
            assert!(
                answers
                    .aliases
                    .contains(&(alias.to_owned(), "Which plan?".to_owned())),
                "{alias}"
            );
        }
        assert_eq!(
            super::super::Sender::Typeform
                .submitted_at(&delivery())
                .as_deref(),
            Some("2018-01-18T18:17:02.000Z")
        );
    }

    #[test]
    fn signs_the_raw_body_with_a_prefix() {
        use super::super::signature::{lookup, SignatureError};
        use base64::engine::general_purpose::STANDARD;
        use base64::Engine;
        use hmac::{Hmac, Mac};
        use sha2::Sha256;
        let body = br#"{"event_type":"form_response","form_response":{"token":"t"}}"#;
        let mut mac = Hmac::<Sha256>::new_from_slice(b"tf_demo_secret_0001").unwrap();
        mac.update(body);
        let good = format!("sha256={}", STANDARD.encode(mac.finalize().into_bytes()));
        let keys = [b"tf_demo_secret_0001".to_vec()];
        let now = std::time::SystemTime::now();
        let verify = |pairs: &[(&str, &str)], body: &[u8]| {
            SIGNATURE.verify(lookup(pairs), body, &keys, Default::default(), now)
        };
        assert_eq!(verify(&[("typeform-signature", &good)], body), Ok(()));
        type Presented<'a> = Vec<(&'a str, &'a str)>;
        let rows: Vec<(Presented, &[u8], SignatureError)> = vec![
            (
                vec![],
                body,
                SignatureError::MissingHeader("typeform-signature"),
            ),
            (
                vec![("typeform-signature", &good), ("typeform-signature", &good)],
                body,
                SignatureError::MissingHeader("typeform-signature"),
            ),
            (
                vec![("typeform-signature", &good["sha256=".len()..])],
                body,
                SignatureError::Malformed,
            ),
            (
                vec![("typeform-signature", "sha256=!!")],
                body,
                SignatureError::Malformed,
            ),
            // The same content re-serialised (a space) is other bytes.
            (
                vec![("typeform-signature", &good)],
                br#"{"event_type": "form_response","form_response":{"token":"t"}}"#,
                SignatureError::NoMatch,
            ),
        ];
        for (presented, body, error) in rows {
            assert_eq!(verify(&presented, body), Err(error), "{presented:?}");
        }
    }

    /// The same response as `delivery()`, as the Responses API lists it
    /// (https://www.typeform.com/developers/responses/reference/retrieve-responses/):
    /// no definition, the answers as a webhook carries them; and one
    /// response started but never submitted.
    fn api_page(page_count: u64) -> Value {
        let response = delivery()["form_response"].clone();
        json!({"total_items": 2, "page_count": page_count, "items": [
            {"landing_id": "a3a12ec67a1365927098a606107fac15", "token": "a3a12ec67a1365927098a606107fac15",
             "response_id": "a3a12ec67a1365927098a606107fac15", "response_type": "completed",
             "landed_at": response["landed_at"], "submitted_at": response["submitted_at"],
             "metadata": {"browser": "default", "platform": "other"},
             "hidden": response["hidden"], "calculated": {"score": 0}, "answers": response["answers"]},
            {"landing_id": "21085286190ffad1248d17c4135ee56f", "token": "21085286190ffad1248d17c4135ee56f",
             "response_type": "partial", "landed_at": "2018-01-18T18:20:02Z", "submitted_at": "",
             "answers": []}
        ]})
    }

    /// The form as `GET /forms/{form_id}` returns it
    /// (https://www.typeform.com/developers/create/reference/retrieve-form/),
    /// with the phone question inside a group.
    fn form() -> Value {
        json!({"id": "lT4Z3j", "title": "Contact form", "fields": [
            {"id": "JwWggjAKtOkA", "title": "What is your first name?", "type": "short_text", "ref": "first_name", "validations": {"required": true}},
            {"id": "SMEUb7VJz92Q", "title": "Your email?", "type": "email", "ref": "email"},
            {"id": "G1", "title": "Reach you", "type": "group", "ref": "reach", "properties": {"fields": [
                {"id": "PNe8ZKBK8C2Q", "title": "Phone?", "type": "phone_number", "ref": "phone"}]}},
            {"id": "k6TP9oLGgHjl", "title": "Which plan?", "type": "multiple_choice", "ref": "plan", "properties": {"choices": []}},
            {"id": "Xy9", "title": "Extras", "type": "multiple_choice", "ref": "extras"}
        ], "hidden": ["user_id"]})
    }

    fn ask<'a>(cursor: Option<&'a str>, definition: Option<&'a Value>) -> PageAsk<'a> {
        let at = |s| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s);
        PageAsk {
            form: "lT4Z3j",
            since: at(1_516_000_000),
            until: at(1_516_400_000),
            cursor,
            definition,
        }
    }

    #[test]
    fn the_api_is_asked_for_completed_responses_before_the_last_token() {
        let form = form();
        assert_eq!(definition_request("lT4Z3j").path, "/forms/lT4Z3j");
        let first = page_request(&ask(None, None));
        assert_eq!(first.path, "/forms/lT4Z3j/responses");
        assert_eq!(
            first.query,
            vec![
                ("response_type", "completed".to_owned()),
                ("since", "2018-01-15T07:06:40Z".to_owned()),
                ("until", "2018-01-19T22:13:20Z".to_owned()),
                ("page_size", "1000".to_owned()),
            ]
        );
        assert_eq!(
            page_request(&ask(Some("tok"), None)).query[4],
            ("before", "tok".to_owned())
        );
        let more = api_page(3).to_string();
        let page = read_page(more.as_bytes(), &ask(None, Some(&form))).unwrap();
        assert_eq!(
            page.next.as_deref(),
            Some("21085286190ffad1248d17c4135ee56f")
        );
        let last = api_page(1).to_string();
        assert_eq!(
            read_page(last.as_bytes(), &ask(None, Some(&form)))
                .unwrap()
                .next,
            None
        );
        // Without its end marker a page could end the listing early.
        let mut unmarked = api_page(1);
        unmarked.as_object_mut().unwrap().remove("page_count");
        assert_eq!(
            read_page(unmarked.to_string().as_bytes(), &ask(None, Some(&form))),
            Err(ListingError::Missing("page_count"))
        );
        assert_eq!(
            read_page(b"{}", &ask(None, None)),
            Err(ListingError::Missing("items"))
        );
    }

    /// The listed response is the webhook Typeform would have sent: the
    /// same key, and the same lead as `delivery()`'s.
    #[test]
    fn a_listed_response_is_its_webhook() {
        let form = form();
        let body = api_page(1).to_string();
        let page = read_page(body.as_bytes(), &ask(None, Some(&form))).unwrap();
        assert_eq!(page.partial, 1);
        assert_eq!(page.submissions.len(), 1);
        let submission = page.submissions[0].submission(Sender::Typeform).unwrap();
        let webhook = parse(delivery().to_string().as_bytes()).unwrap();
        assert_eq!(submission.submission_id, webhook.submission_id);
        assert_eq!(submission.form_id(), Some("lT4Z3j"));
        assert_eq!(answers(&submission.payload), answers(&webhook.payload));
        assert_eq!(
            submitted_at(&submission.payload),
            submitted_at(&webhook.payload)
        );
    }
}
