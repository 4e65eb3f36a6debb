//! The audit's rule: the submissions a sender lists beside the receipts
//! stored under their keys. A listed submission with no receipt never
//! reached the stack; one whose receipt is `COMPLETED` is delivered. Counted
//! per day (UTC, by the sender's submission time) and form; the missing
//! ones kept, in time order, for an import. Ids only: nothing here is
//! printed or logged but ids and counts.
//!
//! An import is a delivery by another door, so it may only find missing
//! what the receipts still remember. Receipts are removed on purpose (a
//! delivered one a retention after its delivery, an erased one a retention
//! after its erasure, a quarantined one a retention after its arrival),
//! and each of those happened after the submission. So a submission made
//! within the retention ([`Horizon`]) whose receipt is absent never had
//! one; an older one without a receipt may have been delivered, erased or
//! held back as spam, and is counted `expired`, never `missing`. A listed
//! submission without a time cannot be placed, and is unreadable.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::time::{Duration, SystemTime};

use crate::envelope::EnvelopeError;
use crate::newest::GateSecret;
use crate::sender::listing::Listed;
use crate::{FormSubmission, IdempotencyKey, Receipt, ReceiptStatus, Sender};

/// The item where the scheduled audit keeps where it ended, in the
/// receipts table beside the routes (its key is no receipt's).
pub const AUDIT_STATE_KEY: &str = "config#audit";
/// Its attribute: the end of the last window audited, as receipt text.
pub const AUDITED_UNTIL: &str = "auditedUntil";

/// How far back the receipts remember: a listed submission made before
/// [`Horizon::oldest`] may have had a receipt that is gone on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Horizon {
    pub oldest: SystemTime,
}

impl Horizon {
    /// A sender's clock ahead of ours could place a submission later than
    /// its receipt's arrival: an hour's margin for it. TTL's own lag only
    /// keeps receipts longer, which cannot make one look missing.
    pub const CLOCK_MARGIN: Duration = Duration::from_secs(60 * 60);

    /// What receipts kept for `retention` still remember at `now`.
    pub fn at(now: SystemTime, retention: crate::Retention) -> Self {
        let oldest = now
            .checked_sub(retention.as_duration())
            .map_or(SystemTime::UNIX_EPOCH, |at| at + Self::CLOCK_MARGIN);
        Horizon { oldest }
    }

    /// Whether a submission made `at` is within what the receipts remember.
    pub fn remembers(&self, at: SystemTime) -> bool {
        at >= self.oldest
    }
}

/// What the sender listed, read as its webhooks. A set: a submission
/// listed twice (a form named twice, an offset page that shifted while a
/// submission arrived) counts once.
#[derive(Debug, Default)]
pub struct Listing {
    entries: Vec<Entry>,
    seen: HashSet<String>,
    unreadable: Vec<Unreadable>,
    partial: usize,
}

/// One listed submission, under the key its webhook would have had.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// `YYYY-MM-DD` (UTC) of its submission.
    pub day: String,
    pub form: String,
    pub submitted_at: SystemTime,
    pub key: IdempotencyKey,
    pub submission: FormSubmission,
    /// The normalised e-mail of its lead, to find an erasure by; held in
    /// memory only, never printed.
    person: Option<String>,
}

impl Entry {
    pub fn submission_id(&self) -> &str {
        self.submission.submission_id.as_str()
    }
}

/// A listed submission that cannot be judged: no webhook its sender could
/// send (an id this stack refuses), or no time to place it by. Neither
/// counted nor importable.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    pub form: String,
    pub submission_id: String,
    pub why: WhyUnreadable,
}

#[derive(Debug, Clone, PartialEq)]
pub enum WhyUnreadable {
    Envelope(EnvelopeError),
    /// Its time is missing or no time: it could be older than the
    /// receipts remember, and could outrank newer data if imported.
    NoTime,
}

impl fmt::Display for WhyUnreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WhyUnreadable::Envelope(error) => error.fmt(f),
            WhyUnreadable::NoTime => f.write_str("the sender gives no readable submission time"),
        }
    }
}

/// One day's and form's counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub at_sender: usize,
    /// A receipt exists, whatever its status.
    pub received: usize,
    /// Its receipt is `COMPLETED`.
    pub delivered: usize,
    pub missing: usize,
    /// No receipt, and older than the receipts remember: never imported.
    pub expired: usize,
    /// No receipt, and its person was erased after it: never imported.
    pub erased: usize,
}

/// The comparison.
#[derive(Debug, Default)]
pub struct Audit {
    /// By (day, form).
    pub rows: BTreeMap<(String, String), Counts>,
    /// Oldest first within a day and form.
    pub missing: Vec<Entry>,
    /// No receipt, and older than the receipts remember.
    pub expired: usize,
    /// No receipt, and made before its person was erased.
    pub erased: usize,
    pub unreadable: Vec<Unreadable>,
    /// Listed as started, never submitted: no lead, not counted.
    pub partial: usize,
}

impl Listing {
    /// Adds what the sender listed for `form`.
    pub fn add(&mut self, sender: Sender, form: &str, listed: Vec<Listed>, partial: usize) {
        self.partial += partial;
        for item in listed {
            let unreadable = |why| Unreadable {
                form: form.to_owned(),
                submission_id: item.submission_id.clone(),
                why,
            };
            let submission = match item.submission(sender) {
                Ok(submission) => submission,
                Err(error) => {
                    self.unreadable
                        .push(unreadable(WhyUnreadable::Envelope(error)));
                    continue;
                }
            };
            let key = IdempotencyKey::for_submission(sender, &submission.submission_id);
            if !self.seen.insert(key.as_str().to_owned()) {
                continue;
            }
            let Some(submitted_at) = item.submitted_at else {
                self.unreadable.push(unreadable(WhyUnreadable::NoTime));
                continue;
            };
            // The lead's address as the worker and forget read it.
            let person = crate::lead::email_of(&Receipt::imported(&submission, submitted_at));
            self.entries.push(Entry {
                day: day_of(submitted_at),
                form: form.to_owned(),
                submitted_at,
                key,
                submission,
                person,
            });
        }
    }

    /// The keys to look up.
    pub fn keys(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|entry| entry.key.as_str().to_owned())
            .collect()
    }

    /// The keys of the erasure markers its people would have (each once).
    pub fn marker_keys(&self, secret: &GateSecret) -> Vec<String> {
        let mut keys: Vec<String> = self
            .entries
            .iter()
            .filter_map(|entry| entry.person.as_deref())
            .map(|person| crate::erasure::marker_key(secret, person))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// The listing beside the statuses of the receipts that exist, what
    /// they remember, and who was erased.
    pub fn compare(
        self,
        statuses: &HashMap<String, ReceiptStatus>,
        horizon: Horizon,
        erased: &ErasedPeople,
    ) -> Audit {
        let mut audit = Audit {
            partial: self.partial,
            unreadable: self.unreadable,
            ..Audit::default()
        };
        for entry in self.entries {
            let counts = audit
                .rows
                .entry((entry.day.clone(), entry.form.clone()))
                .or_default();
            counts.at_sender += 1;
            match statuses.get(entry.key.as_str()) {
                Some(status) => {
                    counts.received += 1;
                    if *status == ReceiptStatus::Completed {
                        counts.delivered += 1;
                    }
                }
                None if !horizon.remembers(entry.submitted_at) => {
                    counts.expired += 1;
                    audit.expired += 1;
                }
                None if erased.covers(&entry) => {
                    counts.erased += 1;
                    audit.erased += 1;
                }
                None => {
                    counts.missing += 1;
                    audit.missing.push(entry);
                }
            }
        }
        audit.missing.sort_by(|a, b| {
            (&a.day, &a.form, a.submitted_at).cmp(&(&b.day, &b.form, b.submitted_at))
        });
        audit
    }
}

/// Each form once, in the order first named (`--form a --form a`,
/// `AuditForms=a,a`): a form audited twice lists each submission twice.
pub fn distinct(forms: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut distinct: Vec<String> = Vec::new();
    for form in forms {
        if !distinct.contains(&form) {
            distinct.push(form);
        }
    }
    distinct
}

/// The people `receipts forget` erased, found by their markers.
#[derive(Debug, Default)]
pub struct ErasedPeople {
    secret: Option<GateSecret>,
    /// By marker key: when the person was erased.
    erased_at: HashMap<String, SystemTime>,
}

impl ErasedPeople {
    /// `erased_at` by marker key, as read under `secret`.
    pub fn new(secret: GateSecret, erased_at: HashMap<String, SystemTime>) -> Self {
        ErasedPeople {
            secret: Some(secret),
            erased_at,
        }
    }

    /// None known: no marker could be read (no key to find them by).
    pub fn none() -> Self {
        ErasedPeople::default()
    }

    fn covers(&self, entry: &Entry) -> bool {
        let (Some(secret), Some(person)) = (&self.secret, entry.person.as_deref()) else {
            return false;
        };
        self.erased_at
            .get(&crate::erasure::marker_key(secret, person))
            .is_some_and(|erased_at| crate::erasure::covers(*erased_at, entry.submitted_at))
    }
}

impl Audit {
    /// The missing submissions of each form.
    pub fn missing_by_form(&self) -> BTreeMap<&str, usize> {
        let mut by_form = BTreeMap::new();
        for entry in &self.missing {
            *by_form.entry(entry.form.as_str()).or_default() += 1;
        }
        by_form
    }
}

fn day_of(at: SystemTime) -> String {
    let mut text = crate::receipt::format_timestamp(at);
    text.truncate(10);
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn listed(id: &str, at: u64) -> Listed {
        Listed {
            submission_id: id.to_owned(),
            submitted_at: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(at)),
            webhook_body: json!({"eventType": "FORM_RESPONSE",
                "data": {"submissionId": id, "formId": "f", "fields": []}}),
        }
    }

    const DAY_ONE: u64 = 1_795_910_400; // 2026-11-29T00:00:00Z

    /// Remembers everything listed in these tests.
    fn all_remembered() -> Horizon {
        Horizon {
            oldest: SystemTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn counts_per_day_and_form_and_the_missing_in_time_order() {
        let mut listing = Listing::default();
        listing.add(
            Sender::Tally,
            "f",
            vec![
                listed("b", DAY_ONE + 200),
                listed("a", DAY_ONE + 100),
                listed("c", DAY_ONE + 86_400),
                listed("..", DAY_ONE),
            ],
            1,
        );
        listing.add(Sender::Tally, "g", vec![listed("d", DAY_ONE + 5)], 0);
        assert_eq!(
            listing.keys(),
            [
                "tally:FORM_RESPONSE:b",
                "tally:FORM_RESPONSE:a",
                "tally:FORM_RESPONSE:c",
                "tally:FORM_RESPONSE:d"
            ]
        );
        let statuses = HashMap::from([
            ("tally:FORM_RESPONSE:c".to_owned(), ReceiptStatus::Completed),
            ("tally:FORM_RESPONSE:d".to_owned(), ReceiptStatus::Received),
        ]);
        let audit = listing.compare(&statuses, all_remembered(), &ErasedPeople::none());
        let row = |day: &str, form: &str| audit.rows[&(day.to_owned(), form.to_owned())];
        let counts = |at_sender, received, delivered, missing| Counts {
            at_sender,
            received,
            delivered,
            missing,
            ..Counts::default()
        };
        assert_eq!(row("2026-11-29", "f"), counts(2, 0, 0, 2));
        assert_eq!(row("2026-11-30", "f"), counts(1, 1, 1, 0));
        assert_eq!(row("2026-11-29", "g"), counts(1, 1, 0, 0));
        let missing: Vec<&str> = audit.missing.iter().map(Entry::submission_id).collect();
        assert_eq!(missing, ["a", "b"]);
        assert_eq!(audit.missing_by_form(), BTreeMap::from([("f", 2)]));
        assert_eq!(audit.unreadable.len(), 1);
        assert_eq!(audit.unreadable[0].submission_id, "..");
        assert_eq!(audit.partial, 1);
    }

    #[test]
    fn the_audit_state_is_no_receipt() {
        assert!(AUDIT_STATE_KEY.starts_with(crate::routes::CONFIG_KEY_PREFIX));
        assert!(!crate::receipt::is_receipt_key(AUDIT_STATE_KEY));
    }

    /// Untimed, a submission could be older than the receipts remember, and
    /// once imported it would be ordered by its import time.
    #[test]
    fn a_submission_without_a_time_is_unreadable_and_never_missing() {
        let mut listing = Listing::default();
        let mut item = listed("a", 0);
        item.submitted_at = None;
        listing.add(Sender::Tally, "f", vec![item], 0);
        let audit = listing.compare(&HashMap::new(), all_remembered(), &ErasedPeople::none());
        assert!(audit.missing.is_empty());
        assert_eq!(audit.unreadable[0].why, WhyUnreadable::NoTime);
        assert!(audit.rows.is_empty());
    }

    #[test]
    fn a_submission_listed_twice_counts_once() {
        let mut listing = Listing::default();
        listing.add(
            Sender::Tally,
            "f",
            vec![listed("a", DAY_ONE), listed("a", DAY_ONE)],
            0,
        );
        // The same form named twice.
        listing.add(Sender::Tally, "f", vec![listed("a", DAY_ONE)], 0);
        assert_eq!(listing.keys(), ["tally:FORM_RESPONSE:a"]);
        let audit = listing.compare(&HashMap::new(), all_remembered(), &ErasedPeople::none());
        assert_eq!(audit.missing.len(), 1);
        assert_eq!(
            audit.rows[&("2026-11-29".to_owned(), "f".to_owned())].at_sender,
            1
        );
    }

    /// A receipt removed on purpose (delivered, erased, quarantined, each a
    /// retention after an event later than its submission) must not make
    /// its submission look missing.
    #[test]
    fn only_a_submission_within_the_retention_can_be_missing() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(DAY_ONE + 40 * 86_400);
        let horizon = Horizon::at(now, crate::Retention::days(30).unwrap());
        let days_ago = |days: u64, seconds: i64| {
            (now - Duration::from_secs(days * 86_400))
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_secs()
                .saturating_add_signed(seconds)
        };
        let margin = Horizon::CLOCK_MARGIN.as_secs() as i64;
        let rows = [
            ("a day old", days_ago(1, 0), true),
            ("at the horizon", days_ago(30, margin), true),
            ("within the clock margin", days_ago(30, margin - 1), false),
            ("a retention old", days_ago(30, 0), false),
            ("40 days old", days_ago(40, 0), false),
        ];
        for (what, at, missing) in rows {
            let mut listing = Listing::default();
            listing.add(Sender::Tally, "f", vec![listed("a", at)], 0);
            let audit = listing.compare(&HashMap::new(), horizon, &ErasedPeople::none());
            assert_eq!(audit.missing.len(), usize::from(missing), "{what}");
            assert_eq!(audit.expired, usize::from(!missing), "{what}");
            let counts = audit.rows.values().next().copied().unwrap();
            assert_eq!(counts.expired, usize::from(!missing), "{what}");
        }
        // A receipt still there is received, however old.
        let mut listing = Listing::default();
        listing.add(Sender::Tally, "f", vec![listed("a", days_ago(40, 0))], 0);
        let stored = HashMap::from([("tally:FORM_RESPONSE:a".to_owned(), ReceiptStatus::Erased)]);
        let audit = listing.compare(&stored, horizon, &ErasedPeople::none());
        assert_eq!((audit.expired, audit.missing.len()), (0, 0));
        assert_eq!(audit.rows.values().next().unwrap().received, 1);
    }

    /// A person erased after their submission: counted erased, never
    /// missing, whatever form it came by; their submission after the
    /// erasure is a new lead, and someone else's is untouched.
    #[test]
    fn a_submission_made_before_its_person_was_erased_is_never_missing() {
        let with_email = |id: &str, email: &str, at: u64| Listed {
            submission_id: id.to_owned(),
            submitted_at: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(at)),
            webhook_body: json!({"eventType": "FORM_RESPONSE",
                "data": {"submissionId": id, "formId": "f", "fields": [
                    {"key": "question_e", "label": "Email", "type": "INPUT_EMAIL", "value": email}]}}),
        };
        let secret = GateSecret::new(&"k".repeat(GateSecret::MIN_LEN)).unwrap();
        let erased_at = SystemTime::UNIX_EPOCH + Duration::from_secs(DAY_ONE + 1000);
        let mut listing = Listing::default();
        listing.add(
            Sender::Tally,
            "f",
            vec![
                with_email("before", " Ada@Example.com", DAY_ONE + 10),
                with_email("after", "ada@example.com", DAY_ONE + 2000),
                with_email("other", "bob@example.com", DAY_ONE + 10),
            ],
            0,
        );
        listing.add(
            Sender::Tally,
            "g",
            vec![with_email("elsewhere", "ADA@example.com", DAY_ONE)],
            0,
        );
        let ada = crate::erasure::marker_key(&secret, "ada@example.com");
        assert_eq!(listing.marker_keys(&secret).len(), 2, "each person once");
        assert!(listing.marker_keys(&secret).contains(&ada));
        let erased = ErasedPeople::new(secret, HashMap::from([(ada, erased_at)]));
        let audit = listing.compare(&HashMap::new(), all_remembered(), &erased);
        let missing: Vec<&str> = audit.missing.iter().map(Entry::submission_id).collect();
        assert_eq!(missing, ["other", "after"]);
        assert_eq!(audit.erased, 2);
        // Without the key, nobody can be found erased.
        let mut listing = Listing::default();
        listing.add(
            Sender::Tally,
            "f",
            vec![with_email("before", "ada@example.com", DAY_ONE)],
            0,
        );
        let audit = listing.compare(&HashMap::new(), all_remembered(), &ErasedPeople::none());
        assert_eq!(audit.missing.len(), 1);
    }
}
