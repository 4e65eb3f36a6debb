//! The audit's rule: the submissions a sender lists beside the receipts
//! stored under their keys. A listed submission with no receipt never
//! reached the stack; one whose receipt is `COMPLETED` is delivered. Counted
//! per day (UTC, by the sender's submission time) and form; the missing
//! ones kept, in time order, for an import. Ids only: nothing here is
//! printed or logged but ids and counts.

use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;

use crate::envelope::EnvelopeError;
use crate::sender::listing::Listed;
use crate::{FormSubmission, IdempotencyKey, ReceiptStatus, Sender};

/// The item where the scheduled audit keeps where it ended, in the
/// receipts table beside the routes (its key is no receipt's).
pub const AUDIT_STATE_KEY: &str = "config#audit";
/// Its attribute: the end of the last window audited, as receipt text.
pub const AUDITED_UNTIL: &str = "auditedUntil";

/// What the sender listed, read as its webhooks.
#[derive(Debug, Default)]
pub struct Listing {
    entries: Vec<Entry>,
    unreadable: Vec<Unreadable>,
    partial: usize,
}

/// One listed submission, under the key its webhook would have had.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// `YYYY-MM-DD` (UTC) of its submission, or `unknown`.
    pub day: String,
    pub form: String,
    pub submitted_at: Option<SystemTime>,
    pub key: IdempotencyKey,
    pub submission: FormSubmission,
}

impl Entry {
    pub fn submission_id(&self) -> &str {
        self.submission.submission_id.as_str()
    }
}

/// A listed submission that is no webhook its sender could send (an id
/// this stack refuses): neither counted nor importable.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    pub form: String,
    pub submission_id: String,
    pub error: EnvelopeError,
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
}

/// The comparison.
#[derive(Debug, Default)]
pub struct Audit {
    /// By (day, form).
    pub rows: BTreeMap<(String, String), Counts>,
    /// Oldest first within a day and form.
    pub missing: Vec<Entry>,
    pub unreadable: Vec<Unreadable>,
    /// Listed as started, never submitted: no lead, not counted.
    pub partial: usize,
}

impl Listing {
    /// Adds what the sender listed for `form`.
    pub fn add(&mut self, sender: Sender, form: &str, listed: Vec<Listed>, partial: usize) {
        self.partial += partial;
        for item in listed {
            match item.submission(sender) {
                Ok(submission) => self.entries.push(Entry {
                    day: day_of(item.submitted_at),
                    form: form.to_owned(),
                    submitted_at: item.submitted_at,
                    key: IdempotencyKey::for_submission(sender, &submission.submission_id),
                    submission,
                }),
                Err(error) => self.unreadable.push(Unreadable {
                    form: form.to_owned(),
                    submission_id: item.submission_id,
                    error,
                }),
            }
        }
    }

    /// The keys to look up.
    pub fn keys(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|entry| entry.key.as_str().to_owned())
            .collect()
    }

    /// The listing beside the statuses of the receipts that exist.
    pub fn compare(self, statuses: &HashMap<String, ReceiptStatus>) -> Audit {
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

fn day_of(at: Option<SystemTime>) -> String {
    at.map(crate::receipt::format_timestamp)
        .and_then(|text| text.get(..10).map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
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
        let audit = listing.compare(&statuses);
        let row = |day: &str, form: &str| audit.rows[&(day.to_owned(), form.to_owned())];
        let counts = |at_sender, received, delivered, missing| Counts {
            at_sender,
            received,
            delivered,
            missing,
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

    #[test]
    fn a_submission_without_a_time_is_counted_under_unknown() {
        let mut listing = Listing::default();
        let mut item = listed("a", 0);
        item.submitted_at = None;
        listing.add(Sender::Tally, "f", vec![item], 0);
        let audit = listing.compare(&HashMap::new());
        assert_eq!(audit.missing[0].day, "unknown");
    }
}
