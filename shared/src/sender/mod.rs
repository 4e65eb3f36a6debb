//! The senders a deployment can take deliveries from, one profile each: its
//! envelope and stable id, its event, how its answers become a lead, and
//! what it needs to hear back. A receipt's key starts with its sender's name
//! (`tally:FORM_RESPONSE:2wgx4n`), so the worker reads the sender from the
//! receipt, whatever its own deployment takes.
//!
//! Each vendor's module cites the page its shapes come from; the signature
//! schemes are the ingest function's (`ingest::vendor_signatures`).

pub mod tally;
pub mod typeform;
pub mod webflow;

use serde_json::{Map, Value};

use crate::envelope::{EnvelopeError, EventType, FormSubmission, SubmissionId};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sender {
    StaticForms,
    Tally,
    Typeform,
    Webflow,
}

impl Sender {
    pub const ALL: [Sender; 4] = [
        Sender::StaticForms,
        Sender::Tally,
        Sender::Typeform,
        Sender::Webflow,
    ];

    /// Its name in `SENDER`, in the webhook route (`/webhooks/<name>`) and
    /// at the start of its receipts' keys.
    pub fn name(self) -> &'static str {
        self.event().sender_name()
    }

    /// Who sends `event`.
    pub fn of_event(event: EventType) -> Self {
        match event {
            EventType::FormSubmitted => Sender::StaticForms,
            EventType::TallyFormResponse => Sender::Tally,
            EventType::TypeformFormResponse => Sender::Typeform,
            EventType::WebflowFormSubmission => Sender::Webflow,
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Sender::ALL.into_iter().find(|s| s.name() == raw.trim())
    }

    /// The sender of a stored receipt, from its key's first part.
    pub fn of_key(key: &str) -> Option<Self> {
        let (name, _) = key.split_once(':')?;
        Sender::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The prefix every receipt key of this sender starts with (the stream
    /// filter lists one per sender).
    pub fn key_prefix(self) -> String {
        format!("{}:", self.name())
    }

    /// The one event of this sender that is a submission.
    pub fn event(self) -> EventType {
        match self {
            Sender::StaticForms => EventType::FormSubmitted,
            Sender::Tally => EventType::TallyFormResponse,
            Sender::Typeform => EventType::TypeformFormResponse,
            Sender::Webflow => EventType::WebflowFormSubmission,
        }
    }

    /// Parses a raw body as this sender's delivery.
    pub fn parse_submission(self, body: &[u8]) -> Result<FormSubmission, EnvelopeError> {
        match self {
            Sender::StaticForms => FormSubmission::parse(body),
            Sender::Tally => tally::parse(body),
            Sender::Typeform => typeform::parse(body),
            Sender::Webflow => webflow::parse(body),
        }
    }

    /// The HTTP status a new receipt is answered with. Webflow counts
    /// anything but 200 as a failure and retries it, so it gets 200 for a
    /// new receipt too (the body still says which).
    pub fn accepted_status(self) -> u16 {
        match self {
            Sender::Webflow => 200,
            _ => 202,
        }
    }

    /// Whether a delivery older than the receipts are kept is a replay: the
    /// sender signs its body but no time (Tally, Typeform), so a captured
    /// body verifies for ever, and once its receipt expired it would be
    /// stored and delivered again. A genuine first delivery is never that
    /// late (Tally retries for a day, Typeform for ten hours). Judged by the
    /// submission time the sender signed inside the body; Webflow signs its
    /// time (5 minutes), and Static Forms signs nothing.
    pub fn is_replay_past_retention(
        self,
        payload: &Value,
        now: std::time::SystemTime,
        retention: crate::Retention,
    ) -> bool {
        if !matches!(self, Sender::Tally | Sender::Typeform) {
            return false;
        }
        self.submitted_at(payload)
            .as_deref()
            .and_then(crate::receipt::parse_timestamp)
            .zip(now.checked_sub(retention.as_duration()))
            .is_some_and(|(submitted, oldest)| submitted < oldest)
    }

    /// A stored payload's answers as lead fields: the lead's own fields
    /// under their canonical names (`email`, `name`, `firstName`,
    /// `lastName`, `phone`, `company`, `message`), every other answer under
    /// its label, choices as their option text; and the other names each
    /// answer may be called by in `FIELD_MAP` (a key, a ref).
    pub fn answers(self, payload: &Value) -> Answers {
        match self {
            Sender::StaticForms => Answers {
                fields: match payload.pointer("/data/formData") {
                    Some(Value::Object(form)) => form.clone(),
                    _ => Map::new(),
                },
                aliases: Vec::new(),
            },
            Sender::Tally => tally::answers(payload),
            Sender::Typeform => typeform::answers(payload),
            Sender::Webflow => webflow::answers(payload),
        }
    }

    /// When the sender says the form was submitted, as receipt-timestamp
    /// text; `None` when it does not say.
    pub fn submitted_at(self, payload: &Value) -> Option<String> {
        let text = |pointer: &str| {
            payload
                .pointer(pointer)
                .and_then(Value::as_str)
                .and_then(crate::receipt::parse_timestamp)
                .map(crate::receipt::format_timestamp)
        };
        match self {
            Sender::StaticForms => payload.get("timestamp").and_then(unix_seconds),
            Sender::Tally => text("/data/createdAt"),
            Sender::Typeform => text("/form_response/submitted_at"),
            Sender::Webflow => text("/payload/submittedAt"),
        }
    }
}

/// A submission's answers, ready to become a lead.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answers {
    pub fields: Map<String, Value>,
    /// (another name of an answer, the name it has in `fields`).
    pub aliases: Vec<(String, String)>,
}

impl Answers {
    /// Adds one answer: under `canonical` when given and not taken yet,
    /// else under its label (a label already taken keeps its first answer,
    /// and this one is reachable by its key only). `keys` are its other
    /// names.
    pub(crate) fn add(
        &mut self,
        canonical: Option<&'static str>,
        label: &str,
        keys: &[&str],
        value: Value,
    ) {
        let name = match canonical {
            Some(name) if !self.fields.contains_key(name) => name.to_owned(),
            _ if !label.is_empty() && !self.fields.contains_key(label) => label.to_owned(),
            _ => match keys.iter().find(|k| !k.is_empty()) {
                Some(key) => (*key).to_owned(),
                None => return,
            },
        };
        self.fields.insert(name.clone(), value);
        for alias in keys
            .iter()
            .chain(std::iter::once(&label))
            .filter(|alias| !alias.is_empty() && **alias != name)
        {
            self.aliases.push(((*alias).to_owned(), name.clone()));
        }
    }
}

/// The lead field a label names, by its words: `E-mail address` is
/// `email`, `First name` is `firstName`, `Your message` is `message`...
/// `None` for any other label, which stays as it is.
pub fn canonical_field(label: &str) -> Option<&'static str> {
    let squashed: String = label
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    let squashed = squashed
        .strip_prefix("your")
        .filter(|rest| !rest.is_empty())
        .unwrap_or(&squashed);
    Some(match squashed {
        "email" | "emailaddress" | "mail" => "email",
        "name" | "fullname" => "name",
        "firstname" | "givenname" | "forename" => "firstName",
        "lastname" | "surname" | "familyname" => "lastName",
        "phone" | "phonenumber" | "telephone" | "tel" | "mobile" | "mobilephone" => "phone",
        "company" | "companyname" | "organisation" | "organization" | "business" => "company",
        "message" | "comment" | "comments" | "enquiry" | "inquiry" => "message",
        _ => return None,
    })
}

/// Where a vendor's envelope keeps its parts.
pub(crate) struct Shape {
    pub event: EventType,
    /// The top-level field that names the event.
    pub event_field: &'static str,
    /// The top-level object that holds the submission.
    pub content_field: &'static str,
    /// Where the stable id is (a JSON pointer), and its name in errors.
    pub id_pointer: &'static str,
    pub id_field: &'static str,
}

/// Parses a vendor's envelope of `shape`: a JSON object naming the event,
/// with the submission object and a usable stable id. Vendors send no
/// credentials in the body, so the payload is kept whole.
pub(crate) fn parse_shaped(body: &[u8], shape: &Shape) -> Result<FormSubmission, EnvelopeError> {
    let payload = object(body)?;
    expect_event(&payload, shape.event_field, shape.event.as_str())?;
    if !payload
        .get(shape.content_field)
        .is_some_and(Value::is_object)
    {
        return Err(EnvelopeError::MissingField(
            shape.content_field,
            "an object",
        ));
    }
    let submission_id = id_at(&payload, shape.id_pointer, shape.id_field)?;
    Ok(FormSubmission {
        event: shape.event,
        submission_id,
        payload,
        form_key: None,
    })
}

/// A stable id at `pointer`, checked by the same rules as Static Forms'
/// submission id; `field` names it in the error.
fn id_at(
    payload: &Value,
    pointer: &str,
    field: &'static str,
) -> Result<SubmissionId, EnvelopeError> {
    match payload.pointer(pointer) {
        Some(Value::String(raw)) => SubmissionId::parse(raw).map_err(|e| e.at_field(field)),
        _ => Err(EnvelopeError::MissingField(field, "a string")),
    }
}

/// `body` as a JSON object.
fn object(body: &[u8]) -> Result<Value, EnvelopeError> {
    let value = crate::exact_json::parse(body).map_err(|_| EnvelopeError::MalformedJson)?;
    if !value.is_object() {
        return Err(EnvelopeError::NotAnObject);
    }
    Ok(value)
}

/// The event field at `field` must be `expected`.
fn expect_event(
    payload: &Value,
    field: &'static str,
    expected: &'static str,
) -> Result<(), EnvelopeError> {
    match payload.get(field) {
        Some(Value::String(event)) if event == expected => Ok(()),
        Some(Value::String(_)) => Err(EnvelopeError::UnexpectedEvent { field, expected }),
        _ => Err(EnvelopeError::MissingField(field, "a string")),
    }
}

/// The envelope's `timestamp` (whole Unix seconds, as Static Forms sends
/// it) as receipt-timestamp text; `None` for anything else or a time
/// outside years 2000 to 9999.
fn unix_seconds(timestamp: &Value) -> Option<String> {
    const YEAR_2000: u64 = 946_684_800;
    const YEAR_10000: u64 = 253_402_300_800;
    let seconds = timestamp.as_u64()?;
    (YEAR_2000..YEAR_10000).contains(&seconds).then(|| {
        crate::receipt::format_timestamp(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keys_and_statuses() {
        for sender in Sender::ALL {
            assert_eq!(Sender::parse(sender.name()), Some(sender));
            let key = format!("{}event:id", sender.key_prefix());
            assert_eq!(Sender::of_key(&key), Some(sender));
            assert_eq!(Sender::of_event(sender.event()), sender);
        }
        assert_eq!(Sender::parse("zapier"), None);
        assert_eq!(Sender::of_key("gate#email:abc"), None);
        assert_eq!(Sender::of_key("tallyho:x:y"), None);
        assert_eq!(Sender::Webflow.accepted_status(), 200);
        assert_eq!(Sender::Tally.accepted_status(), 202);
    }

    #[test]
    fn labels_that_name_a_lead_field() {
        let rows = [
            ("Email", Some("email")),
            ("E-mail address", Some("email")),
            ("Your email", Some("email")),
            ("Full name", Some("name")),
            ("First Name", Some("firstName")),
            ("Last name", Some("lastName")),
            ("Phone Number", Some("phone")),
            ("Company", Some("company")),
            ("Your message", Some("message")),
            ("Your", None),
            ("Which plan?", None),
            ("", None),
        ];
        for (label, expected) in rows {
            assert_eq!(canonical_field(label), expected, "{label:?}");
        }
    }

    #[test]
    fn an_answer_goes_under_its_canonical_name_once_then_its_label() {
        let mut answers = Answers::default();
        answers.add(
            Some("email"),
            "Email",
            &["question_1"],
            "a@example.com".into(),
        );
        answers.add(
            Some("email"),
            "Work email",
            &["question_2"],
            "b@example.com".into(),
        );
        answers.add(None, "Plan", &["question_3"], "Business".into());
        answers.add(None, "Plan", &["question_4"], "Again".into());
        assert_eq!(answers.fields["email"], "a@example.com");
        assert_eq!(answers.fields["Work email"], "b@example.com");
        assert_eq!(answers.fields["Plan"], "Business");
        assert_eq!(answers.fields["question_4"], "Again");
        assert!(answers
            .aliases
            .contains(&("question_1".to_owned(), "email".to_owned())));
        assert!(answers
            .aliases
            .contains(&("Email".to_owned(), "email".to_owned())));
    }

    #[test]
    fn only_a_body_signed_without_its_time_and_older_than_the_retention_is_a_replay() {
        use serde_json::json;
        use std::time::{Duration, UNIX_EPOCH};
        let now = UNIX_EPOCH + Duration::from_secs(1_796_140_800); // 2026-12-01
        let retention = crate::Retention::default(); // 30 days
        let tally = |at: &str| json!({"data": {"createdAt": at}});
        let typeform = |at: &str| json!({"form_response": {"submitted_at": at}});
        let webflow = |at: &str| json!({"payload": {"submittedAt": at}});
        let rows = [
            (Sender::Tally, tally("2026-11-30T08:00:00.000Z"), false),
            (Sender::Tally, tally("2026-10-01T08:00:00.000Z"), true),
            (Sender::Tally, json!({"data": {}}), false),
            (Sender::Typeform, typeform("2026-10-01T08:00:00Z"), true),
            (Sender::Typeform, typeform("2026-11-20T08:00:00Z"), false),
            // Webflow signs its time (5 minutes); Static Forms signs nothing.
            (Sender::Webflow, webflow("2026-10-01T08:00:00.000Z"), false),
            (
                Sender::StaticForms,
                json!({"timestamp": 1_700_000_000}),
                false,
            ),
        ];
        for (sender, payload, replay) in rows {
            assert_eq!(
                sender.is_replay_past_retention(&payload, now, retention),
                replay,
                "{sender:?} {payload}"
            );
        }
    }
}
