//! Framer forms sent to a webhook ("Send To → Webhook"): a JSON object
//! keyed by the inputs' names, with the submission's id in the
//! `Framer-Webhook-Submission-Id` header (a UUID, the same on each of
//! Framer's up to 5 retries), as Framer documents it
//! (https://www.framer.com/help/articles/framer-form-webhook-setup).
//! The id travels beside the body, so a delivery is kept as
//! `{"submissionId": <header>, "data": <body>}` (`Profile::id_header`).
//! Framer sends no form id and no submission time: a Framer stack takes one
//! site's forms, and newest-wins orders its leads by arrival.

use serde_json::{json, Value};

use super::signature::{Encoding, Scheme, Signature};
use super::{
    canonical_field, id_at, object, Answers, BodyFormat, FormSubmission, Profile, Sample, Sender,
};
use crate::envelope::EnvelopeError;

pub const PROFILE: Profile = Profile {
    name: "framer",
    title: "Framer",
    webhook_settings: "Framer (select the form, Send To, Add…, Webhook)",
    event: "submission",
    content_pointer: "/data",
    form_id_pointer: None,
    accepted_status: 202,
    body: BodyFormat::Json,
    browser: false,
    signature: Some(SIGNATURE),
    id_header: Some(ID_HEADER),
    parse,
    answers,
    submitted_at,
    sample,
    api: None,
    erasure: "nowhere at Framer when the form sends to this webhook only (Framer lists no webhook submissions); where the same form also sends them (e-mail, another integration), delete them there",
};

/// The header that carries the submission's id.
pub const ID_HEADER: &str = "framer-webhook-submission-id";

/// `Framer-Signature: sha256=<hex>`, the HMAC-SHA256 of the raw body
/// followed by the submission id (the `Framer-Webhook-Submission-Id`
/// header's value), keyed by the secret set on the webhook (at least 32
/// characters) (https://www.framer.com/help/articles/framer-form-webhook-setup,
/// "How to secure webhook destinations" and its code sample). No time is
/// signed.
pub const SIGNATURE: Signature = Signature {
    mode: "framer-signature",
    header: "framer-signature",
    scheme: Scheme::HmacWithHeader {
        encoding: Encoding::Hex { prefix: "sha256=" },
        also: ID_HEADER,
    },
    key_chosen_by_sender: false,
};

/// A kept delivery: `{"submissionId": ..., "data": {...}}`.
pub fn parse(body: &[u8]) -> Result<FormSubmission, EnvelopeError> {
    let payload = object(body)?;
    if !payload.get("data").is_some_and(Value::is_object) {
        return Err(EnvelopeError::MissingField("data", "an object"));
    }
    let submission_id = id_at(&payload, "/submissionId", ID_HEADER)?;
    Ok(FormSubmission {
        sender: Sender::Framer,
        submission_id,
        payload,
        form_key: None,
    })
}

/// The inputs by name (`Name`, `Email`, `utm_source`...), values as sent.
pub fn answers(payload: &Value) -> Answers {
    let mut answers = Answers::default();
    if let Some(data) = payload.get("data").and_then(Value::as_object) {
        for (name, value) in data {
            if !value.is_null() {
                answers.add(canonical_field(name), name, &[], value.clone());
            }
        }
    }
    answers
}

/// Framer says nothing of when the form was submitted.
pub fn submitted_at(_payload: &Value) -> Option<String> {
    None
}

fn sample(sample: &Sample) -> Value {
    json!({"submissionId": sample.id,
           "data": {"Name": sample.name, "Email": sample.email, "Message": sample.message}})
}

#[cfg(test)]
mod tests {
    use super::super::signature::{lookup, SignatureError};
    use super::*;

    const BODY: &str = r#"{"Name":"Grace Hopper","Email":"grace@example.com","Message":"Hello","utm_source":"news"}"#;
    const ID: &str = "0fbbb90e-564b-4870-ac8b-78f9bc4e44a6";
    const SECRET: &[u8] = b"framer-demo-secret-at-least-32-chars";
    /// hex(HMAC-SHA256(SECRET, BODY + ID)), computed with Python's hmac.
    const EXPECTED: &str =
        "sha256=26868b2f3cde9add854ee31fbcafc6f2eb2e3dfb75a5d5ead6c0e11f1e360923";

    fn at() -> std::time::SystemTime {
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_140_800)
    }

    #[test]
    fn signs_the_body_then_the_submission_id() {
        let signed = SIGNATURE.sign(SECRET, BODY.as_bytes(), at(), &[(ID_HEADER, ID)]);
        assert_eq!(signed, vec![("framer-signature", EXPECTED.to_owned())]);
        let keys = [SECRET.to_vec()];
        let verify = |pairs: &[(&str, &str)], body: &str| {
            SIGNATURE.verify(
                lookup(pairs),
                body.as_bytes(),
                &keys,
                std::time::Duration::ZERO,
                at(),
            )
        };
        let presented = [("framer-signature", EXPECTED), (ID_HEADER, ID)];
        assert_eq!(verify(&presented, BODY), Ok(()));
        let other_id = [
            ("framer-signature", EXPECTED),
            (ID_HEADER, "0fbbb90e-564b-4870-ac8b-78f9bc4e44a7"),
        ];
        assert_eq!(verify(&other_id, BODY), Err(SignatureError::NoMatch));
        assert_eq!(
            verify(&[("framer-signature", EXPECTED)], BODY),
            Err(SignatureError::MissingHeader(ID_HEADER))
        );
        let bare = EXPECTED.trim_start_matches("sha256=");
        assert_eq!(
            verify(&[("framer-signature", bare), (ID_HEADER, ID)], BODY),
            Err(SignatureError::Malformed)
        );
    }

    #[test]
    fn a_delivery_is_kept_with_its_header_id() {
        let header = |name: &str| (name == ID_HEADER).then_some(ID);
        let submission = Sender::Framer
            .parse_delivery(BODY.as_bytes(), header)
            .unwrap();
        assert_eq!(submission.submission_id.as_str(), ID);
        assert_eq!(submission.payload["data"]["Name"], "Grace Hopper");
        assert_eq!(submission.form_id(), None);
        // What is kept parses back the same.
        let kept = Sender::Framer
            .parse_submission(submission.payload.to_string().as_bytes())
            .unwrap();
        assert_eq!(kept, submission);
        assert_eq!(
            Sender::Framer.parse_delivery(BODY.as_bytes(), |_| None),
            Err(EnvelopeError::MissingIdHeader(ID_HEADER))
        );
        assert_eq!(
            Sender::Framer.parse_delivery(b"[1]", header),
            Err(EnvelopeError::NotAnObject)
        );
        let answers = answers(&submission.payload);
        assert_eq!(answers.fields["email"], "grace@example.com");
        assert_eq!(answers.fields["name"], "Grace Hopper");
        assert_eq!(answers.fields["utm_source"], "news");
        assert_eq!(
            Sender::Framer.sent_body(&submission.payload),
            serde_json::from_str::<Value>(BODY).unwrap()
        );
    }
}
