//! What every sender's envelope is checked by: the stable id's rules, the
//! errors a body is refused with, the form key that is never kept, and the
//! media types taken as JSON. Each sender's module (`crate::sender`) parses
//! its own envelope into a `FormSubmission`.

/// Longest submission id accepted. It becomes part of the receipt's partition
/// key (DynamoDB allows 2048 bytes) and of an HTTP header value.
pub const MAX_SUBMISSION_ID_CHARS: usize = 256;

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
    /// The header that carries a sender's stable id (Framer's).
    #[error("the {0} header (the submission's id) is missing or sent more than once")]
    MissingIdHeader(&'static str),
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

/// The form's API key as the sender put it in `data.apiKey`: compared with
/// `WEBHOOK_API_KEYS`, then dropped. Never stored, never shown.
#[derive(Clone, PartialEq, Eq)]
pub struct FormKey(String);

impl FormKey {
    pub(crate) fn new(key: String) -> Self {
        FormKey(key)
    }
}

impl FormKey {
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }

    /// The key itself: a form's id in routes, never for a log or a message.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for FormKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FormKey(***)")
    }
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
