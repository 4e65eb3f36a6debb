//! A submission's note on its person's record: what a CRM that keeps every
//! submission (Pipedrive, HubSpot by e-mail) writes once per submission.
//! The message and every field the map sends nowhere else, then when it
//! was submitted and which submission it was, ending in a reference (a
//! hash of the receipt's key) by which a later attempt finds the note an
//! earlier one wrote and lost the answer to.

use sha2::{Digest, Sha256};

use crate::field_map::FieldMap;
use crate::{IdempotencyKey, Lead};

/// One submission's note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmissionNote {
    /// Plain text, lines separated by `\n`.
    pub text: String,
    /// What the note's content holds and no other submission's does:
    /// `(ref <16 hex digits>)`.
    pub reference: String,
    /// When it was submitted (the sender's time, else the arrival), as
    /// the receipt keeps it: the note's own time where a CRM has one.
    pub submitted_at: String,
}

impl SubmissionNote {
    /// The note of `lead`, received as `key`, with `field_map` (by the
    /// lead's route, where it has one).
    pub fn of(lead: &Lead, key: &IdempotencyKey, field_map: &FieldMap) -> Self {
        let reference = reference(key);
        let mut body = field_map.history_text(lead);
        if let Some(consent) = consent_given(lead) {
            if !body.trim().is_empty() {
                body.push('\n');
            }
            body.push_str(&consent);
        }
        let submitted = lead.submitted_at.as_deref().unwrap_or(&lead.received_at);
        let footer = format!(
            "Submitted {submitted} · submission {} {reference}",
            lead.external_id
        );
        let text = if body.trim().is_empty() {
            footer
        } else {
            format!("{body}\n\n{footer}")
        };
        SubmissionNote {
            text,
            reference,
            submitted_at: submitted.to_owned(),
        }
    }

    /// The text in at most `max_chars` characters (a CRM that caps its
    /// notes: Mailchimp's hold 1,000): the body cut with `…`, the line with
    /// the submission and its reference always whole, so a later attempt
    /// still finds the note.
    pub fn text_within(&self, max_chars: usize) -> String {
        if self.text.chars().count() <= max_chars {
            return self.text.clone();
        }
        let (body, footer) = self.text.rsplit_once("\n\n").unwrap_or(("", &self.text));
        let room = max_chars.saturating_sub(footer.chars().count() + 3);
        let cut: String = body.chars().take(room).collect();
        if cut.is_empty() {
            footer.to_owned()
        } else {
            format!("{cut}…\n\n{footer}")
        }
    }

    /// The text as HTML (CRMs' notes are HTML): escaped, a paragraph per
    /// blank-line block, `<br>` between its lines.
    pub fn html(&self) -> String {
        self.text
            .split("\n\n")
            .map(|block| {
                let lines: Vec<String> = block.lines().map(escape).collect();
                format!("<p>{}</p>", lines.join("<br>"))
            })
            .collect()
    }
}

/// `(ref <the first 16 hex digits of the SHA-256 of the key>)`: fixed
/// length, so one never contains another.
pub fn reference(key: &IdempotencyKey) -> String {
    let digest = Sha256::digest(key.as_str().as_bytes());
    format!("(ref {})", &hex::encode(digest)[..16])
}

fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// The line a checked consent box adds to its submission's note: what the
/// person agreed to (the route's explanation) and on what legal basis; the
/// note's footer holds when. `None` without a consent box, or unchecked.
fn consent_given(lead: &Lead) -> Option<String> {
    let consent = lead.route.as_deref()?.consent.as_ref()?;
    if !crate::consent::is_checked(lead.answer(&consent.field)) {
        return None;
    }
    let what = consent
        .explanation
        .as_deref()
        .unwrap_or("the form's consent box was checked");
    Some(format!("Consent: {what} ({})", consent.legal_basis()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field_map::Source;
    use crate::{Sender, SubmissionId};

    fn key(id: &str) -> IdempotencyKey {
        IdempotencyKey::for_submission(Sender::StaticForms, &SubmissionId::parse(id).unwrap())
    }

    fn lead(message: &str, fields: serde_json::Value, submitted_at: Option<&str>) -> Lead {
        Lead {
            external_id: "sub_1".into(),
            name: "Ada Lovelace".into(),
            email: "ada@example.com".into(),
            message: message.into(),
            fields: fields.as_object().cloned().unwrap_or_default(),
            aliases: Vec::new(),
            received_at: "2026-12-04T08:00:00.000Z".into(),
            submitted_at: submitted_at.map(str::to_owned),
            sender_time_replaced: false,
            route: None,
        }
    }

    /// A checked consent box's note says what was agreed to and on what
    /// basis, beside when; an unchecked one says nothing of consent.
    #[test]
    fn a_checked_consent_box_is_on_the_note() {
        let routes = crate::routes::parse(
            "[[route]]\nform = \"f\"\n[route.consent]\nfield = \"newsletter\"\n\
             subscription_id = \"12345\"\nexplanation = \"Send me news\"\n",
        )
        .unwrap();
        let route = std::sync::Arc::new(routes.route("f").unwrap().clone());
        let with = |answer: serde_json::Value| Lead {
            route: Some(std::sync::Arc::clone(&route)),
            ..lead(
                "Hi",
                serde_json::json!({"newsletter": answer}),
                Some("2026-12-04T07:59:00.000Z"),
            )
        };
        let map = FieldMap::new(vec![]);
        let note = SubmissionNote::of(&with(serde_json::json!("on")), &key("sub_1"), &map);
        assert!(
            note.text
                .contains("Consent: Send me news (CONSENT_WITH_NOTICE)")
                && note.text.contains("Submitted 2026-12-04T07:59:00.000Z"),
            "{}",
            note.text
        );
        let note = SubmissionNote::of(&with(serde_json::json!(false)), &key("sub_1"), &map);
        assert!(!note.text.contains("Consent"), "{}", note.text);
    }

    #[test]
    fn a_capped_note_keeps_its_reference_whole() {
        let map = FieldMap::new(vec![]);
        let long = "word ".repeat(400);
        let note = SubmissionNote::of(
            &lead(&long, serde_json::json!({}), None),
            &key("sub_1"),
            &map,
        );
        for max in [1_000, 200, 10] {
            let text = note.text_within(max);
            assert!(text.ends_with(&note.reference), "{max}: {text}");
            let footer = note.text.rsplit_once("\n\n").unwrap().1;
            assert!(
                text.chars().count() <= max.max(footer.chars().count()),
                "{max}: {} chars",
                text.chars().count()
            );
        }
        assert!(note.text_within(1_000).contains("…\n\nSubmitted"));
        let short = SubmissionNote::of(
            &lead("Hi", serde_json::json!({}), None),
            &key("sub_1"),
            &map,
        );
        assert_eq!(short.text_within(1_000), short.text);
    }

    #[test]
    fn the_note_holds_the_message_the_unmapped_fields_the_time_and_the_reference() {
        let map = FieldMap::new(vec![
            ("name".into(), Source::Field("name".into())),
            ("email".into(), Source::Field("email".into())),
            ("phone".into(), Source::Field("phone".into())),
        ]);
        let key = key("sub_1");
        let rows = [
            (
                lead("Catering for 40 <b>please</b>", serde_json::json!({"phone": "+44 1", "guests": 40}), Some("2026-12-04T07:59:58.000Z")),
                "Catering for 40 <b>please</b>\n\nguests: 40\n\nSubmitted 2026-12-04T07:59:58.000Z · submission sub_1 ",
            ),
            (
                lead("", serde_json::json!({}), None),
                "Submitted 2026-12-04T08:00:00.000Z · submission sub_1 ",
            ),
        ];
        for (lead, starts) in rows {
            let note = SubmissionNote::of(&lead, &key, &map);
            assert_eq!(note.text, format!("{starts}{}", note.reference));
            assert!(
                !note.text.contains("+44"),
                "a mapped field stays on the person"
            );
        }
        let note = SubmissionNote::of(&rows_lead(), &key, &map);
        assert_eq!(
            note.html(),
            format!("<p>a &lt;b&gt; &amp; &quot;c&quot;<br>second line</p><p>Submitted 2026-12-04T08:00:00.000Z · submission sub_1 {}</p>", note.reference)
        );
    }

    fn rows_lead() -> Lead {
        lead("a <b> & \"c\"\nsecond line", serde_json::json!({}), None)
    }

    #[test]
    fn references_are_fixed_length_and_differ_per_submission() {
        let one = reference(&key("sub_1"));
        let ten = reference(&key("sub_10"));
        assert_eq!(one.len(), "(ref )".len() + 16);
        assert_ne!(one, ten);
        assert!(!ten.contains(&one) && !one.contains(&ten));
        assert_eq!(one, reference(&key("sub_1")), "the same on every attempt");
    }
}
