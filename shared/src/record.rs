//! Where a delivered lead went: the destination's own id for the record it
//! wrote (a HubSpot contact, a Salesforce Lead, a leads-table item, the HTTP
//! API's answer where it gives one) and, where the adapter knows one, a link
//! to it. A COMPLETED receipt keeps both, so `receipts show` can say where
//! the lead is.
//!
//! Both are kept on a receipt that outlives the person's data, so neither
//! may be personal data: an id is an opaque token of a few safe characters
//! (an e-mail address, which a leads table keyed by e-mail would give, is
//! refused), and a link is https, short, and carries no query.

/// The longest record id kept. Real ones are far shorter: HubSpot's are
/// digits, Salesforce's 18 characters.
pub const MAX_ID_CHARS: usize = 128;
/// The longest link kept.
pub const MAX_URL_CHARS: usize = 512;

/// A written record's id and link, both checked; either may be unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveredRecord {
    id: Option<String>,
    url: Option<String>,
}

impl DeliveredRecord {
    /// Nothing known about the record (a destination that answers no id).
    pub fn unknown() -> Self {
        DeliveredRecord::default()
    }

    /// The record `id`, when it is a plain id ([`record_id`]); unknown
    /// otherwise.
    pub fn with_id(id: &str) -> Self {
        DeliveredRecord {
            id: record_id(id),
            url: None,
        }
    }

    /// Adds a link, when it is one that may be kept ([`record_url`]).
    pub fn linked(mut self, url: &str) -> Self {
        self.url = record_url(url);
        self
    }

    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    pub fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }
}

/// `text` as a record id that may be stored and printed: 1 to
/// [`MAX_ID_CHARS`] ASCII letters, digits and `- _ . : #`. Anything else
/// (an e-mail address, a CRM's free text, control characters) is `None`.
pub fn record_id(text: &str) -> Option<String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '#');
    (!text.is_empty() && text.len() <= MAX_ID_CHARS && text.chars().all(plain))
        .then(|| text.to_owned())
}

/// `text` as a link that may be stored and printed: an https URL of at
/// most [`MAX_URL_CHARS`] characters, with a host, no credentials, no
/// query and no fragment (where personal data would travel).
pub fn record_url(text: &str) -> Option<String> {
    if text.len() > MAX_URL_CHARS {
        return None;
    }
    let url = url::Url::parse(text).ok()?;
    let clean = url.scheme() == "https"
        && url.host_str().is_some_and(|host| !host.is_empty())
        && url.username().is_empty()
        && url.password().is_none()
        && url.query().is_none()
        && url.fragment().is_none()
        && !url.path().contains('@');
    clean.then(|| url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_ids_are_kept() {
        let long = "1".repeat(MAX_ID_CHARS);
        let too_long = "1".repeat(MAX_ID_CHARS + 1);
        let rows: &[(&str, Option<&str>)] = &[
            ("12345", Some("12345")),
            ("00Q5g00000AbCdEFGH", Some("00Q5g00000AbCdEFGH")),
            ("submission#sub_1", Some("submission#sub_1")),
            ("lead-7.2:a", Some("lead-7.2:a")),
            (&long, Some(&long)),
            ("", None),
            (&too_long, None),
            ("ada@example.com", None),
            ("email#ada@example.com", None),
            ("two words", None),
            ("line\nbreak", None),
            ("ünïcode", None),
            ("a/b", None),
        ];
        for (text, kept) in rows {
            assert_eq!(record_id(text).as_deref(), *kept, "{text:?}");
        }
    }

    #[test]
    fn only_clean_https_links_are_kept() {
        let rows: &[(&str, Option<&str>)] = &[
            (
                "https://acme.my.salesforce.com/lightning/r/Lead/00Q1/view",
                Some("https://acme.my.salesforce.com/lightning/r/Lead/00Q1/view"),
            ),
            ("http://acme.my.salesforce.com/x", None),
            ("https://user:pw@acme.example/x", None),
            ("https://acme.example/x?email=ada@example.com", None),
            ("https://acme.example/x#ada", None),
            ("https://acme.example/ada@example.com", None),
            ("not a url", None),
            ("", None),
        ];
        for (text, kept) in rows {
            assert_eq!(record_url(text).as_deref(), *kept, "{text:?}");
        }
        let long = format!("https://acme.example/{}", "a".repeat(MAX_URL_CHARS));
        assert_eq!(record_url(&long), None);
    }

    #[test]
    fn a_record_keeps_only_what_passes() {
        let record = DeliveredRecord::with_id("ada@example.com").linked("ftp://x");
        assert_eq!(record, DeliveredRecord::unknown());
        let record = DeliveredRecord::with_id("42").linked("https://crm.example/r/42");
        assert_eq!(record.id(), Some("42"));
        assert_eq!(record.url(), Some("https://crm.example/r/42"));
    }
}
