//! Typeform: `{"event_id", "event_type": "form_response", "form_response":
//! {"form_id", "token", "submitted_at", "definition": {"fields": [{"id",
//! "title", "type", "ref"}]}, "answers": [{"type", "<type>": value,
//! "field": {"id", "type", "ref"}}]}}`, as Typeform's example payload
//! documents it (https://www.typeform.com/developers/webhooks/example-payload/).
//! `form_response.token` is the submission's id, the same on every retry.
//! Only answered questions appear in `answers`; they are matched by field
//! id or ref, never by position.

use serde_json::Value;

use super::{canonical_field, parse_shaped, Answers, Shape};
use crate::envelope::{EnvelopeError, EventType, FormSubmission};

pub fn parse(body: &[u8]) -> Result<FormSubmission, EnvelopeError> {
    parse_shaped(
        body,
        &Shape {
            event: EventType::TypeformFormResponse,
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
/// answer may also be named by its ref or id in `FIELD_MAP`.
pub fn answers(payload: &Value) -> Answers {
    let mut answers = Answers::default();
    let Some(given) = payload
        .pointer("/form_response/answers")
        .and_then(Value::as_array)
    else {
        return answers;
    };
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
    fn answers_by_type_ref_and_title_with_choice_labels() {
        let answers = answers(&delivery());
        assert_eq!(answers.fields["email"], "laura@example.com");
        assert_eq!(answers.fields["phone"], "+15551234567");
        assert_eq!(answers.fields["firstName"], "Laura");
        assert_eq!(answers.fields["Which plan?"], "Business");
        assert_eq!(answers.fields["Extras"], "Support, Training");
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
}
