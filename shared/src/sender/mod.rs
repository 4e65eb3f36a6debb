//! The senders a deployment can take deliveries from. Each one's module
//! declares its whole profile once (`PROFILE`): its name, its envelope and
//! stable id, its event, how its answers become a lead, when it says the
//! form was submitted, what it needs to hear back, its own signature (both
//! verified by ingest and made by `receipts smoke`), and a sample delivery.
//! A receipt's key starts with its sender's name
//! (`tally:FORM_RESPONSE:2wgx4n`), so the worker reads the sender from the
//! receipt, whatever its own deployment takes.
//!
//! Adding a sender: its module, one `Sender` variant, its entry in `ALL`
//! and in `profile`; the catalog test (integration/tests/contract/catalog.rs) then
//! names every file outside the code that must list it.

pub mod formspree;
pub mod framer;
pub mod html;
pub mod jotform;
pub mod listing;
pub mod netlify;
pub mod signature;
pub mod staticforms;
pub mod tally;
pub mod typeform;
pub mod webflow;

use std::time::SystemTime;

use serde_json::{Map, Value};

use crate::envelope::{EnvelopeError, FormKey, SubmissionId};
pub use crate::form_body::BodyFormat;
pub use signature::{Signature, SignatureError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sender {
    StaticForms,
    Tally,
    Typeform,
    Webflow,
    Formspree,
    Netlify,
    Framer,
    Jotform,
    Html,
}

/// What makes a sender, declared once in its module.
pub struct Profile {
    /// Its name in `SENDER`, in the webhook route (`/webhooks/<name>`) and
    /// at the start of its receipts' keys.
    pub name: &'static str,
    /// How its settings and docs call it, and where its webhooks are set.
    pub title: &'static str,
    pub webhook_settings: &'static str,
    /// The one event of this sender that is a submission, as it names it.
    pub event: &'static str,
    /// Where in its payload a submission's content is: what the
    /// fingerprint covers (a JSON pointer), without the envelope fields
    /// that may change from one delivery attempt to the next.
    pub content_pointer: &'static str,
    /// Where its payload names the submission's form (a JSON pointer), the
    /// id a route's `form` matches; `None` for Static Forms, whose form is
    /// its `data.apiKey`, never kept in the payload.
    pub form_id_pointer: Option<&'static str>,
    /// The HTTP status a new receipt is answered with: 202, or 200 for a
    /// sender that counts anything else as a failure.
    pub accepted_status: u16,
    /// How its webhooks carry a submission: JSON, or a form post that
    /// ingest makes a JSON object of its fields (`form_body`) before
    /// `parse` reads it.
    pub body: BodyFormat,
    /// Posted by a visitor's browser from the user's own page rather than
    /// by a form backend: a page can keep no secret, so the page's origin
    /// and a bot check prove it instead, and the browser is answered with
    /// a redirect (or JSON to a script).
    pub browser: bool,
    /// Its own signature scheme, when it signs.
    pub signature: Option<Signature>,
    /// The header that carries its stable id, for a sender that sends the
    /// id beside the body rather than in it (Framer): ingest stores the
    /// body under `data` with the id beside it (`Sender::parse_delivery`).
    pub id_header: Option<&'static str>,
    pub parse: fn(&[u8]) -> Result<FormSubmission, EnvelopeError>,
    pub answers: fn(&Value) -> Answers,
    /// When it says the form was submitted, as receipt-timestamp text.
    pub submitted_at: fn(&Value) -> Option<String>,
    /// A delivery as it would send one (`receipts smoke`, the samples).
    pub sample: fn(&Sample) -> Value,
    /// Its API's list of a form's submissions, when it has one
    /// (`receipts audit` and `import`).
    pub api: Option<&'static listing::SenderApi>,
    /// How an operator deletes a person's submissions at the sender, which
    /// keeps them after `receipts forget` erased the person here: forget
    /// says it, and docs/personal-data.md lists it for every sender.
    pub erasure: &'static str,
}

/// What a sample delivery says: a submission with a name, an e-mail and a
/// message, made at `at`.
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    pub id: &'a str,
    pub at: SystemTime,
    pub name: &'a str,
    pub email: &'a str,
    pub message: &'a str,
    /// The form's key, for a sender that sends one in the body.
    pub form_key: Option<&'a str>,
}

impl Sender {
    pub const ALL: [Sender; 9] = [
        Sender::StaticForms,
        Sender::Tally,
        Sender::Typeform,
        Sender::Webflow,
        Sender::Formspree,
        Sender::Netlify,
        Sender::Framer,
        Sender::Jotform,
        Sender::Html,
    ];

    /// The one place a sender is registered.
    pub fn profile(self) -> &'static Profile {
        match self {
            Sender::StaticForms => &staticforms::PROFILE,
            Sender::Tally => &tally::PROFILE,
            Sender::Typeform => &typeform::PROFILE,
            Sender::Webflow => &webflow::PROFILE,
            Sender::Formspree => &formspree::PROFILE,
            Sender::Netlify => &netlify::PROFILE,
            Sender::Framer => &framer::PROFILE,
            Sender::Jotform => &jotform::PROFILE,
            Sender::Html => &html::PROFILE,
        }
    }

    pub fn name(self) -> &'static str {
        self.profile().name
    }

    /// Every sender's name, for messages: `a, b, c or d`.
    pub fn names() -> String {
        Sender::names_where(|_| true)
    }

    /// The senders whose submissions can be listed, for messages (the
    /// audit needs one).
    pub fn listing_names() -> String {
        Sender::names_where(|sender| sender.api().is_some())
    }

    /// `a, b or c`, of the senders `keep` keeps, in catalog order.
    fn names_where(keep: impl Fn(Sender) -> bool) -> String {
        crate::text::or_list(
            Sender::ALL
                .into_iter()
                .filter(|s| keep(*s))
                .map(|s| s.name()),
        )
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

    /// The one event of this sender that is a submission, as it names it.
    pub fn event_name(self) -> &'static str {
        self.profile().event
    }

    /// Parses a stored payload, or a raw body, as this sender's delivery.
    pub fn parse_submission(self, body: &[u8]) -> Result<FormSubmission, EnvelopeError> {
        (self.profile().parse)(body)
    }

    /// Parses a delivery as received: its body and, for a sender that
    /// sends its stable id in a header (`Profile::id_header`), that
    /// header's one value (`header` gives it). Such a delivery is kept as
    /// `{"submissionId": <id>, "data": <body>}`, which `parse_submission`
    /// reads back.
    pub fn parse_delivery<'h>(
        self,
        body: &[u8],
        header: impl Fn(&'static str) -> Option<&'h str>,
    ) -> Result<FormSubmission, EnvelopeError> {
        let Some(id_header) = self.profile().id_header else {
            return self.parse_submission(body);
        };
        let data = object(body)?;
        let id = header(id_header).ok_or(EnvelopeError::MissingIdHeader(id_header))?;
        let envelope = serde_json::json!({"submissionId": id, "data": data});
        self.parse_submission(envelope.to_string().as_bytes())
    }

    /// The headers this sender sends beside its body for a submission
    /// `id` (Framer's id header); none for most.
    pub fn sample_headers(self, id: &str) -> Vec<(&'static str, String)> {
        self.profile()
            .id_header
            .map(|name| (name, id.to_owned()))
            .into_iter()
            .collect()
    }

    /// A delivery's body as the sender sends it: the stored envelope's
    /// `data` for a sender whose id travels in a header, else the
    /// envelope itself.
    pub fn sent_body(self, envelope: &Value) -> Value {
        match self.profile().id_header {
            Some(_) => envelope.get("data").cloned().unwrap_or(Value::Null),
            None => envelope.clone(),
        }
    }

    /// A delivery as the sender sends it, its Content-Type and its body:
    /// `sent_body` as JSON, or, for a sender whose webhooks are form posts,
    /// its fields urlencoded.
    pub fn sent_request(self, envelope: &Value) -> (&'static str, String) {
        let body = self.sent_body(envelope);
        match self.profile().body {
            BodyFormat::Json => ("application/json", body.to_string()),
            BodyFormat::Form => (
                "application/x-www-form-urlencoded",
                crate::form_body::urlencoded_of(&body),
            ),
        }
    }

    pub fn accepted_status(self) -> u16 {
        self.profile().accepted_status
    }

    /// Its submissions API, when it has one.
    pub fn api(self) -> Option<&'static listing::SenderApi> {
        self.profile().api
    }

    pub fn signature(self) -> Option<&'static Signature> {
        self.profile().signature.as_ref()
    }

    /// The sender whose own signature `mode` (a `WEBHOOK_AUTH` value) is.
    pub fn of_signature_mode(mode: &str) -> Option<Self> {
        Sender::ALL
            .into_iter()
            .find(|s| s.signature().is_some_and(|sig| sig.mode == mode))
    }

    /// Every sender's own signature mode, for messages.
    pub fn signature_modes() -> Vec<&'static str> {
        Sender::ALL
            .iter()
            .filter_map(|s| s.signature().map(|sig| sig.mode))
            .collect()
    }

    /// Whether a delivery older than the receipts are kept is a replay: the
    /// sender signs its body but no time, so a captured body verifies for
    /// ever, and once its receipt expired it would be stored and delivered
    /// again. A genuine first delivery is never that late (the senders
    /// that sign no time retry for a day at most). Judged by the
    /// submission time the sender signed inside the body; a sender that
    /// signs its time is held to that, and one that signs nothing cannot
    /// be judged.
    pub fn is_replay_past_retention(
        self,
        payload: &Value,
        now: SystemTime,
        retention: crate::time::Retention,
    ) -> bool {
        let signs_body_without_time = self.signature().is_some_and(|sig| !sig.signs_time());
        if !signs_body_without_time {
            return false;
        }
        self.submitted_at(payload)
            .as_deref()
            .and_then(crate::time::parse_timestamp)
            .zip(now.checked_sub(retention.as_duration()))
            .is_some_and(|(submitted, oldest)| submitted < oldest)
    }

    /// A stored payload's answers as lead fields: the lead's own fields
    /// under their canonical names (`email`, `name`, `firstName`,
    /// `lastName`, `phone`, `company`, `message`), every other answer under
    /// its label, choices as their option text; and the other names each
    /// answer may be called by in `FIELD_MAP` (a key, a ref).
    pub fn answers(self, payload: &Value) -> Answers {
        (self.profile().answers)(payload)
    }

    /// When the sender says the form was submitted, as receipt-timestamp
    /// text; `None` when it does not say.
    pub fn submitted_at(self, payload: &Value) -> Option<String> {
        (self.profile().submitted_at)(payload)
    }

    /// A delivery as this sender would send `sample`.
    pub fn sample(self, sample: &Sample) -> Value {
        (self.profile().sample)(sample)
    }
}

/// A valid delivery: its identity and its payload with credentials removed.
#[derive(Debug, Clone, PartialEq)]
pub struct FormSubmission {
    pub sender: Sender,
    pub submission_id: SubmissionId,
    /// The whole envelope as sent, minus credential fields.
    pub payload: Value,
    /// Static Forms' `data.apiKey`, when it is a string; not part of the
    /// payload.
    pub form_key: Option<FormKey>,
}

impl FormSubmission {
    /// Parses a raw body as Static Forms, the default sender, sends it.
    pub fn parse(body: &[u8]) -> Result<Self, EnvelopeError> {
        staticforms::parse(body)
    }

    /// The sender's id of the submission's form, which a route's `form`
    /// matches: Tally's `data.formId`, Typeform's `form_response.form_id`,
    /// Webflow's `payload.formId`, Static Forms' `data.apiKey`.
    pub fn form_id(&self) -> Option<&str> {
        match self.sender.profile().form_id_pointer {
            Some(pointer) => self.payload.pointer(pointer).and_then(Value::as_str),
            None => self.form_key.as_ref().map(FormKey::as_str),
        }
    }

    /// The part of the payload that identifies the content of a submission
    /// (`Profile::content_pointer`).
    pub fn data(&self) -> &Value {
        self.payload
            .pointer(self.sender.profile().content_pointer)
            .unwrap_or(&Value::Null)
    }
}

/// A receipt-timestamp text of the string at `pointer`; `None` when there
/// is none or it is no time.
fn timestamp_at(payload: &Value, pointer: &str) -> Option<String> {
    payload
        .pointer(pointer)
        .and_then(Value::as_str)
        .and_then(crate::time::parse_timestamp)
        .map(crate::time::format_timestamp)
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

/// Where a lead came from, as forms carry it in hidden fields (Typeform's
/// `hidden`, Tally's `HIDDEN_FIELDS`, a plain field on Static Forms or
/// Webflow): lead fields under these names, however the form spells them.
pub const ATTRIBUTION_FIELDS: [&str; 7] = [
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_term",
    "utm_content",
    "page_url",
    "referrer",
];

/// The attribution field a label names (`UTM Source`, `utm-source` and
/// `utmSource` are `utm_source`); `None` for any other label.
pub fn attribution_field(label: &str) -> Option<&'static str> {
    Some(match squashed(label).as_str() {
        "utmsource" => "utm_source",
        "utmmedium" => "utm_medium",
        "utmcampaign" => "utm_campaign",
        "utmterm" => "utm_term",
        "utmcontent" => "utm_content",
        "pageurl" | "landingpage" | "landingpageurl" => "page_url",
        "referrer" | "referer" | "referrerurl" | "refererurl" => "referrer",
        _ => return None,
    })
}

/// A label's letters and digits, lower-case.
fn squashed(label: &str) -> String {
    label
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The lead field a label names, by its words: `E-mail address` is
/// `email`, `First name` is `firstName`, `Your message` is `message`, and
/// `UTM Source` is `utm_source` (`attribution_field`). `None` for any other
/// label, which stays as it is.
pub fn canonical_field(label: &str) -> Option<&'static str> {
    if let Some(attribution) = attribution_field(label) {
        return Some(attribution);
    }
    let squashed = squashed(label);
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
    pub sender: Sender,
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
    expect_event(&payload, shape.event_field, shape.sender.event_name())?;
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
        sender: shape.sender,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keys_and_statuses() {
        for sender in Sender::ALL {
            assert_eq!(Sender::parse(sender.name()), Some(sender));
            let key = format!("{}event:id", sender.key_prefix());
            assert_eq!(Sender::of_key(&key), Some(sender));
        }
        assert_eq!(Sender::parse("zapier"), None);
        assert_eq!(Sender::of_key("gate#email:abc"), None);
        assert_eq!(Sender::of_key("tallyho:x:y"), None);
        // Every name, the last after "or": never today's list written out,
        // which a new sender would break for the wrong reason.
        let names = Sender::names();
        let last = Sender::ALL[Sender::ALL.len() - 1].name();
        assert!(names.ends_with(&format!(" or {last}")), "{names}");
        assert!(
            Sender::ALL.iter().all(|s| names.contains(s.name())),
            "{names}"
        );
        let listing = Sender::listing_names();
        for sender in Sender::ALL {
            assert_eq!(
                listing.contains(sender.name()),
                sender.api().is_some(),
                "{listing}"
            );
        }
        for mode in Sender::signature_modes() {
            let sender = Sender::of_signature_mode(mode).unwrap();
            assert_eq!(sender.signature().unwrap().mode, mode);
        }
        assert_eq!(Sender::of_signature_mode("bearer"), None);
    }

    /// The form id a route matches, where each sender puts it (Webflow's
    /// and Tally's from their documented examples).
    #[test]
    fn each_senders_form_id() {
        let rows = [
            (
                Sender::StaticForms,
                r#"{"event":"form.submitted","timestamp":1764403128,"data":{"submissionId":"sub_1","apiKey":"sf_key_1","formData":{}}}"#,
                Some("sf_key_1"),
            ),
            (
                Sender::StaticForms,
                r#"{"event":"form.submitted","timestamp":1764403128,"data":{"submissionId":"sub_1","formData":{}}}"#,
                None,
            ),
            (
                Sender::Tally,
                r#"{"eventId":"e","eventType":"FORM_RESPONSE","createdAt":"2023-06-28T15:00:21.889Z","data":{"submissionId":"2wgx4n","formId":"VwbNEw","fields":[]}}"#,
                Some("VwbNEw"),
            ),
            (
                Sender::Typeform,
                r#"{"event_id":"e","event_type":"form_response","form_response":{"form_id":"lT4Z3j","token":"t1","answers":[]}}"#,
                Some("lT4Z3j"),
            ),
            (
                Sender::Webflow,
                r#"{"triggerType":"form_submission","payload":{"id":"66a9","formId":"65429eadebe8a9f3a30f62d0","data":{}}}"#,
                Some("65429eadebe8a9f3a30f62d0"),
            ),
            (
                Sender::Formspree,
                r#"{"form":"mvzvldzo","submission":{"_date":"2026-12-01T08:00:00.123456"}}"#,
                Some("mvzvldzo"),
            ),
            (
                Sender::Netlify,
                r#"{"id":"5ec8","form_id":"5ec7","data":{}}"#,
                Some("5ec7"),
            ),
            // Framer sends no form id (its stored envelope).
            (
                Sender::Framer,
                r#"{"submissionId":"0fbbb90e","data":{}}"#,
                None,
            ),
        ];
        for (sender, body, expected) in rows {
            let submission = sender
                .parse_submission(body.as_bytes())
                .unwrap_or_else(|e| panic!("{sender:?}: {e}"));
            assert_eq!(submission.form_id(), expected, "{sender:?}");
        }
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
            ("utm_source", Some("utm_source")),
            ("UTM Campaign", Some("utm_campaign")),
            ("utmMedium", Some("utm_medium")),
            ("utm-term", Some("utm_term")),
            ("UTM_CONTENT", Some("utm_content")),
            ("Page URL", Some("page_url")),
            ("Referer", Some("referrer")),
            ("utm", None),
            ("Your", None),
            ("Which plan?", None),
            ("", None),
        ];
        for (label, expected) in rows {
            assert_eq!(canonical_field(label), expected, "{label:?}");
        }
        for name in ATTRIBUTION_FIELDS {
            assert_eq!(attribution_field(name), Some(name));
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
