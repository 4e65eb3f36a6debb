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

use super::signature::{Encoding, Signature};
use super::{
    canonical_field, parse_shaped, timestamp_at, Answers, FormSubmission, Profile, Sample, Sender,
    Shape,
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
    signature: Some(SIGNATURE),
    parse,
    answers,
    submitted_at,
    sample,
};

/// `Typeform-Signature: sha256=base64(HMAC-SHA256(secret, body))`
/// (https://www.typeform.com/developers/webhooks/secure-your-webhooks/).
/// No time is signed.
pub const SIGNATURE: Signature = Signature {
    mode: "typeform-signature",
    header: "typeform-signature",
    encoding: Encoding::Base64 { prefix: "sha256=" },
    time: None,
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
    let at = crate::receipt::format_timestamp(sample.at);
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
}
