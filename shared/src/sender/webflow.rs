//! Webflow's `form_submission` webhook: `{"triggerType": "form_submission",
//! "payload": {"name", "siteId", "data": {"<field name>": value},
//! "schema": [...], "submittedAt", "id", "formId"}}`, as Webflow documents
//! it (https://developers.webflow.com/data/docs/working-with-webhooks and
//! https://developers.webflow.com/data/reference/webhooks/events/form-submission).
//! `payload.id` is the submission's id, the same on every retry.

use serde_json::Value;

use super::{canonical_field, parse_shaped, Answers, Shape};
use crate::envelope::{EnvelopeError, EventType, FormSubmission};

pub fn parse(body: &[u8]) -> Result<FormSubmission, EnvelopeError> {
    parse_shaped(
        body,
        &Shape {
            event: EventType::WebflowFormSubmission,
            event_field: "triggerType",
            content_field: "payload",
            id_pointer: "/payload/id",
            id_field: "payload.id",
        },
    )
}

/// `payload.data`, keyed by the field names set in the Designer: by name
/// (`email`, `First Name`, `Phone Number`...); values as sent (Webflow may
/// send a number).
pub fn answers(payload: &Value) -> Answers {
    let mut answers = Answers::default();
    if let Some(data) = payload.pointer("/payload/data").and_then(Value::as_object) {
        for (label, value) in data {
            if value.is_null() {
                continue;
            }
            answers.add(canonical_field(label), label, &[], value.clone());
        }
    }
    answers
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Webflow's documented example delivery.
    fn delivery() -> Value {
        json!({"triggerType": "form_submission", "payload": {
            "name": "Contact Us", "siteId": "65427cf400e02b306eaa049c",
            "data": {"First Name": "Zaphod", "Last Name": "Beeblebrox", "email": "zaphod@heartofgold.ai", "Phone Number": 15550000000_u64},
            "schema": [{"fieldName": "First Name", "fieldType": "FormTextInput", "fieldElementId": "285042f7-d554-dc7f-102c-aa10d6a2d2c4"}],
            "submittedAt": "2022-09-14T12:35:16.117Z", "id": "6321ca84df3949bfc6752327",
            "formId": "65429eadebe8a9f3a30f62d0", "formElementId": "4e038d2c-6a1e-4953-7be9-a59a2b453177"}})
    }

    #[test]
    fn envelope_rules() {
        let mut other = delivery();
        other["triggerType"] = json!("site_publish");
        let mut numeric_id = delivery();
        numeric_id["payload"]["id"] = json!(5);
        let rows = [
            (delivery(), Ok("6321ca84df3949bfc6752327".to_owned())),
            (
                other,
                Err(EnvelopeError::UnexpectedEvent {
                    field: "triggerType",
                    expected: "form_submission",
                }),
            ),
            (
                json!({"triggerType": "form_submission", "payload": []}),
                Err(EnvelopeError::MissingField("payload", "an object")),
            ),
            (
                numeric_id,
                Err(EnvelopeError::MissingField("payload.id", "a string")),
            ),
        ];
        for (body, expected) in rows {
            let got =
                parse(body.to_string().as_bytes()).map(|s| s.submission_id.as_str().to_owned());
            assert_eq!(got, expected, "{body}");
        }
    }

    #[test]
    fn answers_by_field_name() {
        let answers = answers(&delivery());
        assert_eq!(answers.fields["email"], "zaphod@heartofgold.ai");
        assert_eq!(answers.fields["firstName"], "Zaphod");
        assert_eq!(answers.fields["lastName"], "Beeblebrox");
        assert_eq!(answers.fields["phone"], 15550000000_u64);
        assert!(answers
            .aliases
            .contains(&("First Name".to_owned(), "firstName".to_owned())));
        assert_eq!(
            super::super::Sender::Webflow
                .submitted_at(&delivery())
                .as_deref(),
            Some("2022-09-14T12:35:16.117Z")
        );
    }
}
