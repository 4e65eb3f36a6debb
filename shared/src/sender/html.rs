//! A plain HTML form on the user's own page, posted by the visitor's
//! browser straight to the stack (`application/x-www-form-urlencoded`, or
//! `multipart/form-data` without files): the stack is the form backend.
//! Its fields are the form's inputs by name; three are the snippet's own
//! (docs/senders/html.md): `_form`, the form's name (`default` when
//! absent), which a route's `form` matches; `_submission_id`, a random id
//! the page draws when it renders, so the same page posted twice is one
//! submission; and `cf-turnstile-response`, the Cloudflare Turnstile
//! widget's token, which ingest verifies before anything is stored and
//! which is never stored. Without `_submission_id`, the stable id is the
//! SHA-256 of the token (a token is good once, so it names one post).
//! Nothing signs a browser's post: the page's origin and the token prove
//! it (`Profile::browser`).

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::{
    canonical_field, object, Answers, BodyFormat, FormSubmission, Profile, Sample, Sender,
};
use crate::envelope::{EnvelopeError, SubmissionId};

/// The Turnstile widget's hidden input.
pub const TOKEN_FIELD: &str = "cf-turnstile-response";
/// The snippet's hidden input naming the form.
pub const FORM_FIELD: &str = "_form";
/// The snippet's hidden input holding the page's random id.
pub const ID_FIELD: &str = "_submission_id";
/// The form's name when the page gives none.
pub const DEFAULT_FORM: &str = "default";

pub const PROFILE: Profile = Profile {
    name: "html",
    title: "a plain HTML form",
    webhook_settings: "your page's <form action=\"…\" method=\"post\"> (docs/senders/html.md has the whole snippet)",
    event: "submission",
    content_pointer: "/fields",
    form_id_pointer: Some("/form"),
    accepted_status: 202,
    body: BodyFormat::Form,
    browser: true,
    signature: None,
    id_header: None,
    parse,
    answers,
    submitted_at,
    sample,
    api: None,
    erasure: "nowhere else: the page keeps nothing, and no form backend holds a copy",
};

/// Fields never kept: the snippet's own, and bot checks' tokens.
const NOT_KEPT: [&str; 5] = [
    TOKEN_FIELD,
    FORM_FIELD,
    ID_FIELD,
    "g-recaptcha-response",
    "h-captcha-response",
];

/// Reads a post (its fields as JSON) or a stored payload
/// (`{"form", "submissionId", "fields"}`).
pub fn parse(body: &[u8]) -> Result<FormSubmission, EnvelopeError> {
    let given = object(body)?;
    let stored = given
        .get("fields")
        .filter(|fields| fields.is_object())
        .is_some();
    let (form, id, fields) = if stored {
        let text = |field| given.get(field).and_then(Value::as_str).unwrap_or_default();
        let fields = given["fields"].as_object().cloned().unwrap_or_default();
        (
            text("form").to_owned(),
            text("submissionId").to_owned(),
            fields,
        )
    } else {
        let fields = given.as_object().cloned().unwrap_or_default();
        let text = |field| fields.get(field).and_then(Value::as_str).map(str::trim);
        let form = text(FORM_FIELD)
            .filter(|form| !form.is_empty())
            .unwrap_or(DEFAULT_FORM)
            .to_owned();
        let id = match (text(ID_FIELD), text(TOKEN_FIELD)) {
            (Some(id), _) if !id.is_empty() => id.to_owned(),
            (_, Some(token)) if !token.is_empty() => token_id(token),
            _ => {
                return Err(EnvelopeError::MissingField(
                    ID_FIELD,
                    "a string (or a bot check token)",
                ))
            }
        };
        let kept: Map<String, Value> = fields
            .into_iter()
            .filter(|(name, _)| !NOT_KEPT.contains(&name.as_str()))
            .collect();
        (form, id, kept)
    };
    let submission_id = SubmissionId::parse(&id).map_err(|e| e.at_field(ID_FIELD))?;
    if form.is_empty() || form.len() > 64 {
        return Err(EnvelopeError::MissingField(
            FORM_FIELD,
            "a name of 1 to 64 characters",
        ));
    }
    Ok(FormSubmission {
        sender: Sender::Html,
        payload: json!({"form": form, "submissionId": submission_id.as_str(), "fields": fields}),
        submission_id,
        form_key: None,
    })
}

/// The stable id of a post without `_submission_id`: its token's SHA-256,
/// in hex (32 characters).
fn token_id(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The inputs by name: `email`, `name`, `message`… by their usual names
/// (`canonical_field`), every other under its own.
pub fn answers(payload: &Value) -> Answers {
    let mut answers = Answers::default();
    for (name, value) in payload
        .get("fields")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let empty = match value {
            Value::String(text) => text.trim().is_empty(),
            Value::Null => true,
            _ => false,
        };
        if !empty {
            answers.add(canonical_field(name), name, &[], value.clone());
        }
    }
    answers
}

/// A post names no time: the receipt's arrival stands for it.
pub fn submitted_at(_payload: &Value) -> Option<String> {
    None
}

/// A post as the snippet's form sends it, with the widget test keys'
/// dummy token.
fn sample(sample: &Sample) -> Value {
    json!({
        FORM_FIELD: sample.form_key.unwrap_or("contact"),
        ID_FIELD: sample.id,
        "name": sample.name,
        "email": sample.email,
        "message": sample.message,
        TOKEN_FIELD: "XXXX.DUMMY.TOKEN.XXXX",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_post_keeps_its_inputs_and_never_its_token() {
        let post = json!({"_form": "contact", "_submission_id": "3f2b8c1e-9a7d-4c55-b1e2-0d9f6a7c8b10",
            "name": "Ada Lovelace", "email": "ada@example.com", "message": "Hello", "rendered_at": "1796140800",
            "topics": ["a", "b"], "cf-turnstile-response": "0.secret-token"});
        let submission = parse(post.to_string().as_bytes()).unwrap();
        assert_eq!(
            submission.submission_id.as_str(),
            "3f2b8c1e-9a7d-4c55-b1e2-0d9f6a7c8b10"
        );
        assert_eq!(submission.form_id(), Some("contact"));
        let stored = submission.payload.to_string();
        assert!(!stored.contains("0.secret-token"), "{stored}");
        assert_eq!(
            parse(stored.as_bytes()).unwrap(),
            submission,
            "reads back as itself"
        );
        let answers = answers(&submission.payload);
        assert_eq!(answers.fields["email"], "ada@example.com");
        assert_eq!(answers.fields["name"], "Ada Lovelace");
        assert_eq!(answers.fields["message"], "Hello");
        assert_eq!(answers.fields["topics"], json!(["a", "b"]));
        assert!(!answers.fields.contains_key("_form"));
    }

    #[test]
    fn without_its_id_a_post_is_named_by_its_token_and_its_form_defaults() {
        let post = json!({"email": "ada@example.com", "cf-turnstile-response": "0.token"});
        let submission = parse(post.to_string().as_bytes()).unwrap();
        assert_eq!(submission.submission_id.as_str().len(), 32);
        assert_eq!(submission.form_id(), Some("default"));
        let other = json!({"email": "ada@example.com", "cf-turnstile-response": "0.other"});
        assert_ne!(
            parse(other.to_string().as_bytes()).unwrap().submission_id,
            submission.submission_id
        );
        let rows = [
            (json!({"email": "a@b.c"}), EnvelopeError::MissingField(ID_FIELD, "a string (or a bot check token)")),
            (json!({"_submission_id": "..", "cf-turnstile-response": "t"}), EnvelopeError::InvalidId { field: ID_FIELD, problem: "cannot be `.` or `..`: it must name one submission, and in a URL these mean the current or parent path" }),
            (json!({"_submission_id": "a", "_form": "x".repeat(65)}), EnvelopeError::MissingField(FORM_FIELD, "a name of 1 to 64 characters")),
        ];
        for (post, error) in rows {
            assert_eq!(parse(post.to_string().as_bytes()), Err(error), "{post}");
        }
    }
}
