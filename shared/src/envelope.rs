//! A delivery's envelope, parsed once from the raw body into typed values,
//! with the sender's credentials removed before anything keeps it. Static
//! Forms' `form.submitted` is parsed here; the other senders' envelopes in
//! `crate::sender`, into the same `FormSubmission`.

use serde_json::{Map, Value};

/// Longest submission id accepted. It becomes part of the receipt's partition
/// key (DynamoDB allows 2048 bytes) and of an HTTP header value.
pub const MAX_SUBMISSION_ID_CHARS: usize = 256;

/// Fields of `data` that carry the sender's credentials. Static Forms puts the
/// form's API key in `data.apiKey`; it must never be stored or logged.
const CREDENTIAL_FIELDS: &[&str] = &["apikey", "api_key"];

/// The events this receiver accepts: one per sender, named as the sender
/// names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Static Forms' `form.submitted`.
    FormSubmitted,
    /// Tally's `FORM_RESPONSE`.
    TallyFormResponse,
    /// Typeform's `form_response` (never `form_response_partial`: a
    /// partial response is no lead).
    TypeformFormResponse,
    /// Webflow's `form_submission`.
    WebflowFormSubmission,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::FormSubmitted => "form.submitted",
            EventType::TallyFormResponse => "FORM_RESPONSE",
            EventType::TypeformFormResponse => "form_response",
            EventType::WebflowFormSubmission => "form_submission",
        }
    }

    /// The name of who sends it: the first part of its receipts' keys
    /// (`crate::sender::Sender::name`).
    pub fn sender_name(self) -> &'static str {
        match self {
            EventType::FormSubmitted => "staticforms",
            EventType::TallyFormResponse => "tally",
            EventType::TypeformFormResponse => "typeform",
            EventType::WebflowFormSubmission => "webflow",
        }
    }

    /// Where in its payload a submission's content is: what the
    /// fingerprint covers (a JSON pointer).
    pub fn content_pointer(self) -> &'static str {
        match self {
            EventType::FormSubmitted | EventType::TallyFormResponse => "/data",
            EventType::TypeformFormResponse => "/form_response",
            EventType::WebflowFormSubmission => "/payload",
        }
    }

    fn parse(raw: &str) -> Option<Self> {
        (raw == "form.submitted").then_some(EventType::FormSubmitted)
    }
}

/// A submission id that is safe to use in a key, a header, a log line and
/// a URL path segment: 1 to 256 visible ASCII characters (no spaces, no
/// control characters), and not `.` or `..`, which a URL resolves as "this"
/// or "the parent" path segment instead of a name (the `http` destination
/// puts the id in its URL; RFC 3986 section 5.2.4).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SubmissionId(String);

impl SubmissionId {
    pub fn parse(raw: &str) -> Result<Self, EnvelopeError> {
        if raw.is_empty() {
            return Err(EnvelopeError::EmptySubmissionId);
        }
        if raw.chars().count() > MAX_SUBMISSION_ID_CHARS {
            return Err(EnvelopeError::SubmissionIdTooLong);
        }
        if !raw.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(EnvelopeError::SubmissionIdNotPrintable);
        }
        if is_dot_segment(raw) {
            return Err(EnvelopeError::SubmissionIdDotSegment);
        }
        Ok(SubmissionId(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `.` or `..`: a path segment that names no resource. Every other id,
/// once percent-encoded (`/` and the rest; unreserved characters kept),
/// is exactly one path segment.
pub fn is_dot_segment(id: &str) -> bool {
    id == "." || id == ".."
}

impl std::fmt::Display for SubmissionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a body is not a usable `form.submitted` envelope. The messages are
/// returned to the sender and logged, so they never quote the body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    #[error("body is not valid JSON")]
    MalformedJson,
    #[error("body must be a JSON object")]
    NotAnObject,
    #[error("`event` is missing or not a string")]
    MissingEvent,
    #[error("`event` must be \"form.submitted\"")]
    UnsupportedEvent,
    #[error("`data` is missing or not an object")]
    MissingData,
    #[error("`data.submissionId` is missing or not a string")]
    MissingSubmissionId,
    #[error("`data.submissionId` is empty")]
    EmptySubmissionId,
    #[error("`data.submissionId` is longer than 256 characters")]
    SubmissionIdTooLong,
    #[error("`data.submissionId` must be visible ASCII characters only")]
    SubmissionIdNotPrintable,
    #[error("`data.submissionId` cannot be `.` or `..`: it must name one submission, and in a URL these mean the current or parent path")]
    SubmissionIdDotSegment,
    #[error("this is Static Forms' older webhook format, without `event` and `data.submissionId`, which a delivery needs to be stored once; switch the webhook to the current format in Static Forms' webhook settings")]
    OlderFormat,
    /// Another sender's field is missing or not of its documented type.
    #[error("`{0}` is missing or not {1}")]
    MissingField(&'static str, &'static str),
    #[error("`{field}` must be \"{expected}\"")]
    UnexpectedEvent {
        field: &'static str,
        expected: &'static str,
    },
    /// Another sender's stable id is not usable as a key.
    #[error("`{field}` {problem}")]
    InvalidId {
        field: &'static str,
        problem: &'static str,
    },
}

impl EnvelopeError {
    /// The same rule as `SubmissionId::parse`, said of another sender's
    /// field (`form_response.token`, `payload.id`...).
    pub fn at_field(self, field: &'static str) -> EnvelopeError {
        let problem = match self {
            EnvelopeError::EmptySubmissionId => "is empty",
            EnvelopeError::SubmissionIdTooLong => "is longer than 256 characters",
            EnvelopeError::SubmissionIdNotPrintable => "must be visible ASCII characters only",
            EnvelopeError::SubmissionIdDotSegment => {
                "cannot be `.` or `..`: it must name one submission, and in a URL these mean the current or parent path"
            }
            other => return other,
        };
        EnvelopeError::InvalidId { field, problem }
    }
}

/// Top-level fields of Static Forms' older webhook format (no `event`, no
/// `data`): any of them, without `event`, names the format in the error.
const OLDER_FORMAT_FIELDS: &[&str] = &["formData", "submittedAt", "apiKey"];

/// The form's API key as the sender put it in `data.apiKey`: compared with
/// `WEBHOOK_API_KEYS`, then dropped. Never stored, never shown.
#[derive(Clone, PartialEq, Eq)]
pub struct FormKey(String);

impl FormKey {
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl std::fmt::Debug for FormKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FormKey(***)")
    }
}

/// A valid delivery: its identity and its payload with credentials removed.
#[derive(Debug, Clone, PartialEq)]
pub struct FormSubmission {
    pub event: EventType,
    pub submission_id: SubmissionId,
    /// The whole envelope as sent, minus credential fields.
    pub payload: Value,
    /// `data.apiKey`, when it is a string; not part of the payload.
    pub form_key: Option<FormKey>,
}

impl FormSubmission {
    /// Parses a raw body. The body is read once; nothing else keeps it.
    pub fn parse(body: &[u8]) -> Result<Self, EnvelopeError> {
        let value = crate::exact_json::parse(body).map_err(|_| EnvelopeError::MalformedJson)?;
        let Value::Object(mut envelope) = value else {
            return Err(EnvelopeError::NotAnObject);
        };
        let event = match envelope.get("event") {
            Some(Value::String(raw)) => {
                EventType::parse(raw).ok_or(EnvelopeError::UnsupportedEvent)?
            }
            None if OLDER_FORMAT_FIELDS
                .iter()
                .any(|field| envelope.contains_key(*field)) =>
            {
                return Err(EnvelopeError::OlderFormat)
            }
            _ => return Err(EnvelopeError::MissingEvent),
        };
        let Some(Value::Object(data)) = envelope.get_mut("data") else {
            return Err(EnvelopeError::MissingData);
        };
        let submission_id = match data.get("submissionId") {
            Some(Value::String(raw)) => SubmissionId::parse(raw)?,
            _ => return Err(EnvelopeError::MissingSubmissionId),
        };
        let form_key = match data.get("apiKey") {
            Some(Value::String(key)) => Some(FormKey(key.clone())),
            _ => None,
        };
        remove_credentials(data);
        remove_credentials(&mut envelope);
        Ok(FormSubmission {
            event,
            submission_id,
            payload: Value::Object(envelope),
            form_key,
        })
    }

    /// The part of the payload that identifies the content of a submission
    /// (Static Forms' and Tally's `data`, Typeform's `form_response`,
    /// Webflow's `payload`), without the envelope fields (such as
    /// `timestamp`) that may change from one delivery attempt to the next.
    pub fn data(&self) -> &Value {
        self.payload
            .pointer(self.event.content_pointer())
            .unwrap_or(&Value::Null)
    }
}

fn remove_credentials(object: &mut Map<String, Value>) {
    object.retain(|name, _| !CREDENTIAL_FIELDS.contains(&name.to_ascii_lowercase().as_str()));
}

/// Whether a Content-Type header value names JSON (`application/json`, or
/// any `+json` type), ignoring parameters such as `charset`.
pub fn is_json_media_type(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<FormSubmission, EnvelopeError> {
        FormSubmission::parse(value.to_string().as_bytes())
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

    #[test]
    fn json_media_types() {
        let cases = [
            ("application/json", true),
            ("application/json; charset=utf-8", true),
            ("Application/JSON", true),
            ("application/cloudevents+json", true),
            (" application/json ", true),
            ("text/plain", false),
            ("application/x-www-form-urlencoded", false),
            ("multipart/form-data; boundary=x", false),
            ("application/jsonp", false),
            ("", false),
        ];
        for (content_type, expected) in cases {
            assert_eq!(
                is_json_media_type(content_type),
                expected,
                "{content_type:?}"
            );
        }
    }
}
