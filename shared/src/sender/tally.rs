//! Tally (tally.so): `{"eventId", "eventType": "FORM_RESPONSE", "createdAt",
//! "data": {"submissionId", "responseId", "formId", "createdAt", "fields":
//! [{"key", "label", "type", "value", "options"?}]}}`, as Tally's webhook
//! page documents it (https://tally.so/help/webhooks, "Example webhook
//! event"). `data.submissionId` is the same on every retry.

use serde_json::Value;

use serde_json::json;

use super::signature::{Encoding, Signature};
use super::{
    canonical_field, parse_shaped, timestamp_at, Answers, FormSubmission, Profile, Sample, Sender,
    Shape,
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
    signature: Some(SIGNATURE),
    parse,
    answers,
    submitted_at,
    sample,
};

/// `Tally-Signature: base64(HMAC-SHA256(secret, body))`, keyed by the
/// signing secret set in the webhook's settings
/// (https://tally.so/help/webhooks, "Signing secret"). No time is signed.
pub const SIGNATURE: Signature = Signature {
    mode: "tally-signature",
    header: "tally-signature",
    encoding: Encoding::Base64 { prefix: "" },
    time: None,
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
    let at = crate::receipt::format_timestamp(sample.at);
    json!({
        "eventId": format!("ev_{}", sample.id), "eventType": PROFILE.event, "createdAt": at,
        "data": {"responseId": sample.id, "submissionId": sample.id, "formName": "sample", "createdAt": at, "fields": [
            {"key": "name", "label": "Name", "type": "INPUT_TEXT", "value": sample.name},
            {"key": "email", "label": "Email", "type": "INPUT_EMAIL", "value": sample.email},
            {"key": "message", "label": "Message", "type": "TEXTAREA", "value": sample.message}]}
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
        let signed = SIGNATURE.sign(b"whsec_tally_demo", TALLY_BODY.as_bytes(), now);
        assert_eq!(
            signed,
            vec![("tally-signature", TALLY_SIGNATURE.to_owned())]
        );
    }
}
