//! Static Forms (staticforms.dev): `{"event": "form.submitted",
//! "timestamp", "data": {"submissionId", "formData": {...}, "apiKey"?,
//! ...}}`, as its webhook page documents it
//! (https://www.staticforms.dev/docs/webhooks). `data.submissionId` is the
//! same on every retry. It signs nothing: a deployment chooses how the
//! sender proves itself (`WEBHOOK_AUTH`; its documented set-up is a token in
//! the URL). The form's API key comes in the body (`data.apiKey`); it is
//! compared with the accepted forms, then dropped.

use serde_json::{json, Map, Value};

use super::{BodyFormat, FormSubmission, Profile, Sample, Sender};
use crate::envelope::{EnvelopeError, FormKey, SubmissionId};

pub const EVENT: &str = "form.submitted";

pub const PROFILE: Profile = Profile {
    name: "staticforms",
    title: "Static Forms",
    webhook_settings: "Static Forms (Settings, Webhooks, Add Webhook)",
    event: EVENT,
    content_pointer: "/data",
    form_id_pointer: None,
    accepted_status: 202,
    body: BodyFormat::Json,
    browser: false,
    signature: None,
    id_header: None,
    parse,
    answers,
    submitted_at,
    sample,
    api: None,
    erasure: "in Static Forms' dashboard (its submissions); it documents no API to delete them",
};

/// Fields of `data` that carry the sender's credentials. Static Forms puts the
/// form's API key in `data.apiKey`; it must never be stored or logged.
const CREDENTIAL_FIELDS: &[&str] = &["apikey", "api_key"];

/// Top-level fields of Static Forms' older webhook format (no `event`, no
/// `data`): any of them, without `event`, names the format in the error.
const OLDER_FORMAT_FIELDS: &[&str] = &["formData", "submittedAt", "apiKey"];

/// Parses a raw body. The body is read once; nothing else keeps it.
pub fn parse(body: &[u8]) -> Result<FormSubmission, EnvelopeError> {
    let value = crate::exact_json::parse(body).map_err(|_| EnvelopeError::MalformedJson)?;
    let Value::Object(mut envelope) = value else {
        return Err(EnvelopeError::NotAnObject);
    };
    match envelope.get("event") {
        Some(Value::String(raw)) if raw == EVENT => {}
        Some(Value::String(_)) => return Err(EnvelopeError::UnsupportedEvent),
        None if OLDER_FORMAT_FIELDS
            .iter()
            .any(|field| envelope.contains_key(*field)) =>
        {
            return Err(EnvelopeError::OlderFormat)
        }
        _ => return Err(EnvelopeError::MissingEvent),
    }
    let Some(Value::Object(data)) = envelope.get_mut("data") else {
        return Err(EnvelopeError::MissingData);
    };
    let submission_id = match data.get("submissionId") {
        Some(Value::String(raw)) => SubmissionId::parse(raw)?,
        _ => return Err(EnvelopeError::MissingSubmissionId),
    };
    let form_key = match data.get("apiKey") {
        Some(Value::String(key)) => Some(FormKey::new(key.clone())),
        _ => None,
    };
    remove_credentials(data);
    remove_credentials(&mut envelope);
    Ok(FormSubmission {
        sender: Sender::StaticForms,
        submission_id,
        payload: Value::Object(envelope),
        form_key,
    })
}

fn remove_credentials(object: &mut Map<String, Value>) {
    object.retain(|name, _| !CREDENTIAL_FIELDS.contains(&name.to_ascii_lowercase().as_str()));
}

/// `data.formData`, as the form names its fields; attribution fields
/// under their own names (`UTM Source` is `utm_source`, reachable by its
/// label too), unless the form also has a field of that exact name, which
/// keeps it.
pub fn answers(payload: &Value) -> super::Answers {
    let mut answers = super::Answers::default();
    let Some(Value::Object(form)) = payload.pointer("/data/formData") else {
        return answers;
    };
    let (as_named, respelled): (Vec<_>, Vec<_>) = form.iter().partition(|(name, _)| {
        super::attribution_field(name).is_none_or(|attribution| attribution == name.as_str())
    });
    for (name, value) in as_named {
        answers.fields.insert(name.clone(), value.clone());
    }
    for (name, value) in respelled {
        answers.add(super::attribution_field(name), name, &[], value.clone());
    }
    answers
}

/// The envelope's `timestamp` (whole Unix seconds) as receipt-timestamp
/// text; `None` for anything else or a time outside years 2000 to 9999.
pub fn submitted_at(payload: &Value) -> Option<String> {
    const YEAR_2000: u64 = 946_684_800;
    const YEAR_10000: u64 = 253_402_300_800;
    let seconds = payload.get("timestamp")?.as_u64()?;
    (YEAR_2000..YEAR_10000).contains(&seconds).then(|| {
        crate::time::format_timestamp(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds),
        )
    })
}

fn sample(sample: &Sample) -> Value {
    let seconds = sample
        .at
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let mut data = json!({
        "submissionId": sample.id,
        "formData": {"name": sample.name, "email": sample.email, "message": sample.message},
        "recipientEmail": sample.email,
        "attachments": [],
    });
    if let Some(form_key) = sample.form_key {
        data["apiKey"] = json!(form_key);
    }
    json!({"event": EVENT, "timestamp": seconds, "data": data})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::MAX_SUBMISSION_ID_CHARS;
    use serde_json::json;

    fn parse(value: Value) -> Result<FormSubmission, EnvelopeError> {
        FormSubmission::parse(value.to_string().as_bytes())
    }

    #[test]
    fn attribution_fields_are_kept_under_their_own_names() {
        let payload = json!({"data": {"formData": {
            "name": "Ada", "UTM Source": "newsletter", "utm_source": "direct",
            "Page URL": "https://example.com/pricing", "": "kept"
        }}});
        let answers = answers(&payload);
        assert_eq!(answers.fields["utm_source"], "direct");
        assert_eq!(answers.fields["UTM Source"], "newsletter");
        assert_eq!(answers.fields["page_url"], "https://example.com/pricing");
        assert_eq!(answers.fields["name"], "Ada");
        assert_eq!(answers.fields[""], "kept");
        assert!(answers
            .aliases
            .contains(&("Page URL".to_owned(), "page_url".to_owned())));
    }

    #[test]
    fn envelope_rules() {
        let long_id = "a".repeat(MAX_SUBMISSION_ID_CHARS + 1);
        let max_id = "a".repeat(MAX_SUBMISSION_ID_CHARS);
        let cases: Vec<(&str, Value, Result<&str, EnvelopeError>)> = vec![
            (
                "valid",
                json!({"event":"form.submitted","data":{"submissionId":"sub_1"}}),
                Ok("sub_1"),
            ),
            (
                "longest id",
                json!({"event":"form.submitted","data":{"submissionId":max_id}}),
                Ok(max_id.as_str()),
            ),
            ("array body", json!([1, 2]), Err(EnvelopeError::NotAnObject)),
            (
                "string body",
                json!("form.submitted"),
                Err(EnvelopeError::NotAnObject),
            ),
            (
                "no event",
                json!({"data":{"submissionId":"s"}}),
                Err(EnvelopeError::MissingEvent),
            ),
            (
                "the older format",
                json!({"apiKey":"k","submittedAt":"2026-11-30T08:00:00Z","formData":{"email":"a@example.com"}}),
                Err(EnvelopeError::OlderFormat),
            ),
            (
                "the older format, fields alone",
                json!({"formData":{}}),
                Err(EnvelopeError::OlderFormat),
            ),
            (
                "event not a string",
                json!({"event":1,"data":{"submissionId":"s"}}),
                Err(EnvelopeError::MissingEvent),
            ),
            (
                "other event",
                json!({"event":"form.deleted","data":{"submissionId":"s"}}),
                Err(EnvelopeError::UnsupportedEvent),
            ),
            (
                "event case differs",
                json!({"event":"Form.Submitted","data":{"submissionId":"s"}}),
                Err(EnvelopeError::UnsupportedEvent),
            ),
            (
                "no data",
                json!({"event":"form.submitted"}),
                Err(EnvelopeError::MissingData),
            ),
            (
                "data not an object",
                json!({"event":"form.submitted","data":"x"}),
                Err(EnvelopeError::MissingData),
            ),
            (
                "no id",
                json!({"event":"form.submitted","data":{}}),
                Err(EnvelopeError::MissingSubmissionId),
            ),
            (
                "id a number",
                json!({"event":"form.submitted","data":{"submissionId":123}}),
                Err(EnvelopeError::MissingSubmissionId),
            ),
            (
                "id null",
                json!({"event":"form.submitted","data":{"submissionId":null}}),
                Err(EnvelopeError::MissingSubmissionId),
            ),
            (
                "empty id",
                json!({"event":"form.submitted","data":{"submissionId":""}}),
                Err(EnvelopeError::EmptySubmissionId),
            ),
            (
                "id too long",
                json!({"event":"form.submitted","data":{"submissionId":long_id}}),
                Err(EnvelopeError::SubmissionIdTooLong),
            ),
            (
                "id with space",
                json!({"event":"form.submitted","data":{"submissionId":"a b"}}),
                Err(EnvelopeError::SubmissionIdNotPrintable),
            ),
            (
                "id with newline",
                json!({"event":"form.submitted","data":{"submissionId":"a\nb"}}),
                Err(EnvelopeError::SubmissionIdNotPrintable),
            ),
            (
                "id not ascii",
                json!({"event":"form.submitted","data":{"submissionId":"é"}}),
                Err(EnvelopeError::SubmissionIdNotPrintable),
            ),
            (
                "id a dot",
                json!({"event":"form.submitted","data":{"submissionId":"."}}),
                Err(EnvelopeError::SubmissionIdDotSegment),
            ),
            (
                "id two dots",
                json!({"event":"form.submitted","data":{"submissionId":".."}}),
                Err(EnvelopeError::SubmissionIdDotSegment),
            ),
            (
                "id three dots is a name",
                json!({"event":"form.submitted","data":{"submissionId":"..."}}),
                Ok("..."),
            ),
            (
                "id with a slash is one encoded segment",
                json!({"event":"form.submitted","data":{"submissionId":"a/../b"}}),
                Ok("a/../b"),
            ),
        ];
        for (name, body, expected) in cases {
            let got = parse(body).map(|s| s.submission_id.as_str().to_owned());
            assert_eq!(got, expected.map(str::to_owned), "case {name}");
        }
    }

    #[test]
    fn bodies_that_are_not_json_are_malformed() {
        for body in [&b""[..], b"{", b"not json", b"\xff\xfe", b"{\"event\":}"] {
            assert_eq!(
                FormSubmission::parse(body),
                Err(EnvelopeError::MalformedJson)
            );
        }
    }

    #[test]
    fn deeply_nested_json_is_rejected_without_overflowing_the_stack() {
        let body = "[".repeat(100_000);
        assert_eq!(
            FormSubmission::parse(body.as_bytes()),
            Err(EnvelopeError::MalformedJson)
        );
    }

    #[test]
    fn credentials_are_removed_from_the_payload() {
        let submission = parse(json!({
            "event": "form.submitted",
            "apiKey": "top-level-key",
            "data": {
                "submissionId": "sub_1",
                "apiKey": "sf_secret",
                "API_KEY": "another",
                "formData": {"name": "Ada", "email": "ada@example.com"}
            }
        }))
        .unwrap();
        let text = submission.payload.to_string();
        assert!(!text.contains("sf_secret"));
        assert!(!text.contains("another"));
        assert!(!text.contains("top-level-key"));
        assert_eq!(submission.data()["formData"]["email"], "ada@example.com");
        assert_eq!(submission.data()["submissionId"], "sub_1");
        // The form key is kept aside for WEBHOOK_API_KEYS, and never shown.
        assert_eq!(
            submission.form_key.as_ref().map(FormKey::as_bytes),
            Some(&b"sf_secret"[..])
        );
        let shown = format!("{submission:?}");
        assert!(!shown.contains("sf_secret"), "{shown}");
        let without =
            parse(json!({"event": "form.submitted", "data": {"submissionId": "s", "apiKey": 7}}));
        assert_eq!(without.unwrap().form_key, None, "only a string is a key");
    }
}
