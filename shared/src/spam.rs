//! The spam rules: which submissions are held back from the CRM. A
//! submission that breaks one is stored and answered like any other (a bot
//! learns nothing), and kept out of the CRM until a person releases it;
//! these functions only decide, from its answers.
//!
//! - `honeypot`: fields a person never sees nor fills; any value that is
//!   not blank (a checked box, a number, text that is not only spaces)
//!   marks a bot.
//! - `block_email_domains`: the lead's e-mail domain, or any sub-domain of
//!   it, compared without case.
//! - `max_links`: the links in every text answer together, attribution
//!   fields (`page_url`, `referrer`...) aside, since they are URLs by
//!   nature.
//! - `min_fill_seconds` with `render_time_field`: the hidden field the page
//!   fills with the time it was shown; a submission sooner after it than
//!   this, or with a render time after its submission, came too fast for a
//!   person. A missing or unreadable render time is not judged (a page
//!   without the snippet holds nothing back).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::sender::{Answers, ATTRIBUTION_FIELDS};

/// One set of rules: a stack's, or a form's added to it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SpamRules {
    pub honeypot: Vec<String>,
    pub block_email_domains: Vec<String>,
    /// The most links the text answers may hold; no limit when `None`.
    pub max_links: Option<u32>,
    /// The fewest seconds a person takes from the page's render to its
    /// submit; no limit when `None`.
    pub min_fill_seconds: Option<u32>,
    /// The hidden field that holds the page's render time (Unix seconds or
    /// milliseconds, or an RFC 3339 time).
    pub render_time_field: Option<String>,
}

/// The rule a submission broke, named without any of its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpamRule {
    /// The honeypot field that was filled.
    Honeypot(String),
    BlockedDomain,
    Links,
    /// Submitted sooner after the page's render than `min_fill_seconds`.
    TooFast,
}

impl SpamRule {
    /// The rule's kind, without the field: the metric's dimension, from a
    /// set known in advance.
    pub fn kind(&self) -> &'static str {
        match self {
            SpamRule::Honeypot(_) => "honeypot",
            SpamRule::BlockedDomain => "blocked-domain",
            SpamRule::Links => "links",
            SpamRule::TooFast => "too-fast",
        }
    }
}

impl std::fmt::Display for SpamRule {
    /// `honeypot:<field>`, `blocked-domain`, `links` or `too-fast`: the receipt's
    /// reason and the metric's dimension.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpamRule::Honeypot(field) => write!(f, "honeypot:{field}"),
            SpamRule::BlockedDomain => f.write_str("blocked-domain"),
            SpamRule::Links => f.write_str("links"),
            SpamRule::TooFast => f.write_str("too-fast"),
        }
    }
}

impl SpamRules {
    /// No rule at all: nothing to check.
    pub fn is_empty(&self) -> bool {
        self.honeypot.is_empty()
            && self.block_email_domains.is_empty()
            && self.max_links.is_none()
            && self.min_fill_seconds.is_none()
    }
    /// These rules and `more` together (a form's own rules on top of the
    /// stack's): every honeypot and domain of both, the lower link limit,
    /// the longer fill time, the form's render-time field if it names one.
    pub fn with(&self, more: &SpamRules) -> SpamRules {
        let mut joined = self.clone();
        joined.honeypot.extend(more.honeypot.iter().cloned());
        joined
            .block_email_domains
            .extend(more.block_email_domains.iter().cloned());
        joined.max_links = match (self.max_links, more.max_links) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        joined.min_fill_seconds = match (self.min_fill_seconds, more.min_fill_seconds) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        joined.render_time_field = more
            .render_time_field
            .clone()
            .or_else(|| self.render_time_field.clone());
        joined
    }

    /// The first rule `answers`, submitted at `submitted_at`, break, in the
    /// order honeypot, domain, links, fill time; `None` for a submission
    /// that breaks none.
    pub fn verdict(&self, answers: &Answers, submitted_at: SystemTime) -> Option<SpamRule> {
        if let Some(field) = self
            .honeypot
            .iter()
            .find(|field| answer(answers, field).is_some_and(is_filled))
        {
            return Some(SpamRule::Honeypot(field.clone()));
        }
        let domain = answers
            .fields
            .get("email")
            .and_then(Value::as_str)
            .and_then(email_domain);
        if let Some(domain) = domain {
            if self
                .block_email_domains
                .iter()
                .any(|blocked| is_within(&domain, blocked))
            {
                return Some(SpamRule::BlockedDomain);
            }
        }
        if let Some(limit) = self.max_links {
            let links: usize = answers
                .fields
                .iter()
                .filter(|(name, _)| !ATTRIBUTION_FIELDS.contains(&name.as_str()))
                .map(|(_, value)| links_in(value))
                .sum();
            if links > limit as usize {
                return Some(SpamRule::Links);
            }
        }
        let least = Duration::from_secs(self.min_fill_seconds?.into());
        let rendered = answer(answers, self.render_time_field.as_deref()?).and_then(render_time)?;
        match submitted_at.duration_since(rendered) {
            Ok(took) if took >= least => None,
            // Sooner than a person fills it, or rendered after it was sent.
            _ => Some(SpamRule::TooFast),
        }
    }
}

/// A render time as a page writes it: Unix seconds or milliseconds (a
/// number, or digits in text; more than 10^11 is milliseconds), or an RFC
/// 3339 time in UTC (`new Date().toISOString()`).
pub fn render_time(value: &Value) -> Option<SystemTime> {
    let number = match value {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => {
            let text = text.trim();
            match text.parse::<f64>() {
                Ok(number) => Some(number),
                Err(_) => return crate::time::parse_timestamp(text),
            }
        }
        _ => None,
    }?;
    if !number.is_finite() || number <= 0.0 {
        return None;
    }
    let seconds = if number > 1e11 {
        number / 1000.0
    } else {
        number
    };
    Duration::try_from_secs_f64(seconds)
        .ok()
        .and_then(|since| UNIX_EPOCH.checked_add(since))
}

/// The answer named `field`, by its name in the lead or any other name it
/// has (a key, a ref, a label).
fn answer<'a>(answers: &'a Answers, field: &str) -> Option<&'a Value> {
    answers.fields.get(field).or_else(|| {
        answers
            .aliases
            .iter()
            .find(|(alias, _)| alias == field)
            .and_then(|(_, name)| answers.fields.get(name))
    })
}

fn is_filled(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => false,
        Value::String(text) => !text.trim().is_empty(),
        Value::Array(items) => items.iter().any(is_filled),
        Value::Object(fields) => fields.values().any(is_filled),
        Value::Bool(true) | Value::Number(_) => true,
    }
}

/// The domain of an address, lower-case, without a trailing dot.
fn email_domain(email: &str) -> Option<String> {
    let (_, domain) = email.trim().rsplit_once('@')?;
    let domain = domain.trim_end_matches('.').to_lowercase();
    (!domain.is_empty()).then_some(domain)
}

/// Whether `domain` is `blocked` or one of its sub-domains.
fn is_within(domain: &str, blocked: &str) -> bool {
    let blocked = blocked
        .trim()
        .trim_start_matches(['@', '.'])
        .trim_end_matches('.')
        .to_lowercase();
    !blocked.is_empty()
        && (domain == blocked
            || domain
                .strip_suffix(&blocked)
                .is_some_and(|rest| rest.ends_with('.')))
}

/// Links in a value's text: `http://`, `https://`, and `www.` not already
/// part of one of those.
fn links_in(value: &Value) -> usize {
    match value {
        Value::String(text) => {
            let text = text.to_lowercase();
            let schemes = text.matches("http://").count() + text.matches("https://").count();
            let bare = text
                .match_indices("www.")
                .filter(|(at, _)| !text[..*at].ends_with("//"))
                .count();
            schemes + bare
        }
        Value::Array(items) => items.iter().map(links_in).sum(),
        Value::Object(fields) => fields.values().map(links_in).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answers(fields: Value) -> Answers {
        Answers {
            fields: fields.as_object().unwrap().clone(),
            aliases: vec![("question_hp".to_owned(), "Website".to_owned())],
        }
    }

    fn rules(honeypot: &[&str], domains: &[&str], max_links: Option<u32>) -> SpamRules {
        SpamRules {
            honeypot: honeypot.iter().map(|s| s.to_string()).collect(),
            block_email_domains: domains.iter().map(|s| s.to_string()).collect(),
            max_links,
            ..SpamRules::default()
        }
    }

    impl SpamRules {
        /// The verdict on rules that read no time.
        fn verdict_now(&self, answers: &Answers) -> Option<SpamRule> {
            self.verdict(answers, SystemTime::now())
        }
    }

    #[test]
    fn too_fast_for_a_person() {
        let sent = UNIX_EPOCH + Duration::from_secs(1_796_140_800);
        let stack = SpamRules {
            min_fill_seconds: Some(3),
            render_time_field: Some("rendered_at".to_owned()),
            ..SpamRules::default()
        };
        let rows = [
            (json!(1_796_140_799), Some(SpamRule::TooFast)),
            (json!(1_796_140_797), None),
            (json!("1796140797"), None),
            (json!(1_796_140_799_000_u64), Some(SpamRule::TooFast)),
            (json!(1_796_140_790_500_u64), None),
            (json!("2026-12-01T16:00:00Z"), Some(SpamRule::TooFast)),
            (json!("2026-12-01T15:59:50.000Z"), None),
            // Rendered after it was sent: no person did that.
            (json!(1_796_140_860), Some(SpamRule::TooFast)),
            // Unreadable or missing: not judged.
            (json!("soon"), None),
            (json!(-5), None),
            (json!(null), None),
        ];
        for (rendered, expected) in rows {
            let got = stack.verdict(&answers(json!({"rendered_at": rendered})), sent);
            assert_eq!(got, expected, "{rendered}");
        }
        assert_eq!(stack.verdict(&answers(json!({})), sent), None);
        // Without the field named, the limit judges nothing.
        let no_field = SpamRules {
            render_time_field: None,
            ..stack.clone()
        };
        let fast = answers(json!({"rendered_at": 1_796_140_800}));
        assert_eq!(no_field.verdict(&fast, sent), None);
        // A form's rules: the longer time, its own field.
        let form = SpamRules {
            min_fill_seconds: Some(10),
            render_time_field: Some("t0".to_owned()),
            ..SpamRules::default()
        };
        let joined = stack.with(&form);
        assert_eq!(joined.min_fill_seconds, Some(10));
        assert_eq!(joined.render_time_field.as_deref(), Some("t0"));
        assert_eq!(SpamRule::TooFast.to_string(), "too-fast");
        assert_eq!(SpamRule::TooFast.kind(), "too-fast");
    }

    #[test]
    fn honeypots() {
        let stack = rules(&["website_url", "question_hp"], &[], None);
        let rows = [
            (
                json!({"website_url": "http://spam.example"}),
                Some("honeypot:website_url"),
            ),
            (json!({"website_url": ""}), None),
            (json!({"website_url": "   \t\n"}), None),
            (json!({"website_url": null}), None),
            (json!({"website_url": false}), None),
            (json!({"website_url": true}), Some("honeypot:website_url")),
            (json!({"website_url": 0}), Some("honeypot:website_url")),
            (json!({"website_url": [" ", ""]}), None),
            (json!({"website_url": ["x"]}), Some("honeypot:website_url")),
            // Reached by another of its names (a Tally key, a Typeform ref).
            (json!({"Website": "x"}), Some("honeypot:question_hp")),
            (json!({"name": "Ada"}), None),
        ];
        for (fields, expected) in rows {
            let got = stack.verdict_now(&answers(fields.clone()));
            assert_eq!(got.map(|r| r.to_string()).as_deref(), expected, "{fields}");
        }
    }

    #[test]
    fn blocked_domains() {
        let stack = rules(&[], &["mailinator.com", "@Trash-Mail.example."], None);
        let rows = [
            ("bot@mailinator.com", true),
            ("Bot@MAILINATOR.COM", true),
            ("bot@mail.mailinator.com", true),
            ("bot@mailinator.com.", true),
            ("  bot@mailinator.com  ", true),
            ("a@trash-mail.example", true),
            ("ada@notmailinator.com", false),
            ("ada@mailinator.com.example", false),
            ("ada@example.com", false),
            ("mailinator.com", false),
            ("", false),
        ];
        for (email, blocked) in rows {
            let got = stack.verdict_now(&answers(json!({"email": email})));
            assert_eq!(got == Some(SpamRule::BlockedDomain), blocked, "{email:?}");
        }
        let nothing = rules(&[], &["", "  "], None);
        assert_eq!(
            nothing.verdict_now(&answers(json!({"email": "a@b.c"}))),
            None
        );
    }

    #[test]
    fn links_are_counted_in_every_text_answer() {
        let stack = rules(&[], &[], Some(2));
        let rows = [
            (
                json!({"message": "see https://a.example and http://b.example"}),
                false,
            ),
            (
                json!({"message": "https://a.example", "company": "www.b.example", "extra": ["HTTPS://c.example"]}),
                true,
            ),
            (
                json!({"message": "https://www.a.example https://www.b.example"}),
                false,
            ),
            (
                json!({"message": "https://a.example,https://b.example,https://c.example"}),
                true,
            ),
            (json!({"message": "www.a www.b www.c"}), true),
            // Attribution fields are URLs by nature and do not count.
            (
                json!({"message": "https://a.example", "page_url": "https://x.example/?ref=https://y", "referrer": "https://z.example"}),
                false,
            ),
            (json!({"message": "no links", "count": 5}), false),
        ];
        for (fields, held) in rows {
            let got = stack.verdict_now(&answers(fields.clone()));
            assert_eq!(got == Some(SpamRule::Links), held, "{fields}");
        }
        let unlimited = rules(&[], &[], None);
        assert_eq!(
            unlimited.verdict_now(&answers(
                json!({"message": "https://a https://b https://c"})
            )),
            None
        );
    }

    #[test]
    fn the_first_broken_rule_is_named() {
        let stack = rules(&["fax"], &["mailinator.com"], Some(0));
        let all = answers(json!({"fax": "1", "email": "x@mailinator.com", "message": "https://a"}));
        assert_eq!(
            stack.verdict_now(&all),
            Some(SpamRule::Honeypot("fax".into()))
        );
        assert_eq!(SpamRule::Honeypot("fax".into()).kind(), "honeypot");
        assert_eq!(
            SpamRule::BlockedDomain.kind(),
            SpamRule::BlockedDomain.to_string()
        );
        assert_eq!(SpamRule::Links.kind(), SpamRule::Links.to_string());
        let two = answers(json!({"email": "x@mailinator.com", "message": "https://a"}));
        assert_eq!(stack.verdict_now(&two), Some(SpamRule::BlockedDomain));
    }

    #[test]
    fn a_forms_rules_add_to_the_stacks() {
        let stack = rules(&["website_url"], &["mailinator.com"], Some(3));
        let form = rules(&["fax"], &["spam.example"], Some(1));
        let joined = stack.with(&form);
        assert_eq!(joined.honeypot, ["website_url", "fax"]);
        assert_eq!(
            joined.block_email_domains,
            ["mailinator.com", "spam.example"]
        );
        assert_eq!(joined.max_links, Some(1));
        assert_eq!(
            stack.with(&SpamRules::default()).max_links,
            Some(3),
            "a form without a limit keeps the stack's"
        );
        assert_eq!(SpamRules::default().with(&form).max_links, Some(1));
    }
}
