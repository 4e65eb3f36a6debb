//! Double submits (`duplicate_window`): a submission with the same form,
//! the same e-mail address and the same answers as the person's nearest
//! submission to that form within the window (the one just before it, or
//! just after it when delivered late) is a duplicate of that one, settled
//! DUPLICATE and never delivered. A double click gets two submission ids
//! from its sender, so deduplication by submission cannot see it.
//!
//! A repeat of an older submission with another one of the person in
//! between is new data, not a duplicate: plan Pro, then Basic, then Pro
//! again is three submissions, and the newest-wins gate leaves the record
//! at Pro. Only a neighbour counts, so a duplicate never hides the
//! person's latest answers.
//!
//! The worker decides, at delivery, with one item per person and form in
//! the receipts table (a gate item, `gate#double:`): its key is an HMAC,
//! under the stack's gate key, of the form and the address, and it holds
//! the receipt key, the submission time and an HMAC digest of the answers
//! of each submission delivered (never one set aside), the latest
//! [`KEPT_FIRSTS`] by time; the table never holds the answers twice, and
//! whoever reads it without the key learns nothing. It lasts the receipts'
//! retention past the later of its last submission and its last judgement,
//! so a twin delivered late (an import after an outage, a release from
//! quarantine) is still found. Times are the sender's submission time where
//! it states one (else the arrival): an import that stores two clicks made
//! ten minutes apart in the same second still finds them ten minutes apart.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::duplicate_window::{Window, DEFAULT_WINDOW, MAX_WINDOW};

use crate::lead::Lead;
use crate::newest::{GateSecret, GATE_KEY_PREFIX};
use crate::routes::Routes;
use crate::time::{format_timestamp, parse_timestamp};

/// The window of a lead's form: its route's, else the file's, else
/// [`DEFAULT_WINDOW`].
pub fn window_of(routes: &Routes, lead: &Lead) -> Window {
    lead.route
        .as_ref()
        .and_then(|route| route.duplicate_window)
        .or(routes.duplicate_window)
        .unwrap_or_default()
}

/// The item that holds a person's submissions to a form: `gate#double:`
/// and the HMAC of its form reference and normalised address. `None` for
/// a lead without an address: nothing says two are one person.
pub fn item_key(secret: &GateSecret, form_ref: Option<&str>, lead: &Lead) -> Option<String> {
    let email = lead.normalised_email()?;
    let form = form_ref.unwrap_or("");
    Some(format!(
        "{GATE_KEY_PREFIX}double:{}",
        secret.hmac_hex(&["double-person\0", form, "\0", &email])
    ))
}

/// The digest of a lead's answers (name, message and every field, in
/// name order, trimmed): equal for equal answers, and saying nothing of
/// them without the key.
pub fn answers_digest(secret: &GateSecret, lead: &Lead) -> String {
    let fields: std::collections::BTreeMap<&String, &Value> = lead.fields.iter().collect();
    let answers = serde_json::json!({
        "name": lead.name.trim(),
        "message": lead.message.trim(),
        "fields": fields,
    })
    .to_string();
    let mut digest = secret.hmac_hex(&["answers\0", &answers]);
    digest.truncate(ANSWERS_DIGEST_CHARS);
    digest
}

/// 128 bits of the digest: two different answers never meet.
const ANSWERS_DIGEST_CHARS: usize = 32;

/// The submissions an item keeps: at most this many, the latest by time.
pub const KEPT_FIRSTS: usize = 16;

/// One submission of the person that was delivered (the first of its
/// identical ones).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct First {
    /// Its receipt's key.
    pub receipt: String,
    /// Its submission time (`Lead::newest_by`), RFC 3339 in UTC.
    pub at: String,
    /// Its [`answers_digest`].
    pub answers: String,
}

/// A submission about to be compared with the person's submissions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstSubmission {
    /// The receipt's key.
    pub receipt: String,
    /// Its submission time, as the item keeps it: text order is time order.
    pub at: String,
    /// Its [`answers_digest`].
    pub answers: String,
    /// A neighbour submitted at or after this time, and at or before
    /// `latest_other`, is within its window.
    pub earliest_other: String,
    pub latest_other: String,
    /// When TTL may delete the item (epoch seconds): the receipts'
    /// retention after the window, counted from `now` so that an import
    /// of old submissions still keeps its item.
    pub expires_at: u64,
}

/// What an item's submissions say of a submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// It repeats its neighbour with this receipt key: DUPLICATE of it.
    Repeats(String),
    /// It is delivered (already held, or to be written: the item's
    /// submissions with it, when they change).
    StandsFirst(Option<Vec<First>>),
}

impl FirstSubmission {
    /// `receipt`, submitted `at` with `answers`, for `window`, its item
    /// kept for `kept_for` (the receipts' retention), compared `now`;
    /// `None` when `at` is no timestamp.
    pub fn new(
        receipt: &str,
        (at, answers): (&str, &str),
        window: Window,
        kept_for: Duration,
        now: SystemTime,
    ) -> Option<FirstSubmission> {
        let time = parse_timestamp(at)?;
        let earliest = time
            .checked_sub(window.duration())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let latest = time + window.duration();
        let expires = now.max(latest) + window.duration() + kept_for;
        Some(FirstSubmission {
            receipt: receipt.to_owned(),
            at: format_timestamp(time),
            answers: answers.to_owned(),
            earliest_other: format_timestamp(earliest),
            latest_other: format_timestamp(latest),
            expires_at: expires
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |since| since.as_secs()),
        })
    }

    /// Compares it with the person's submissions an item holds: its
    /// nearest one before it (else, delivered late, after it), within its
    /// window and with the same answers, makes it a repeat; otherwise it is
    /// delivered, kept beside the others (the latest [`KEPT_FIRSTS`] by
    /// time).
    pub fn judge(&self, firsts: &[First]) -> Judgement {
        if firsts.iter().any(|first| first.receipt == self.receipt) {
            return Judgement::StandsFirst(None);
        }
        let at = self.at.as_str();
        let before = firsts
            .iter()
            .filter(|first| first.at.as_str() <= at)
            .max_by(|a, b| a.at.cmp(&b.at));
        let after = firsts
            .iter()
            .filter(|first| first.at.as_str() > at)
            .min_by(|a, b| a.at.cmp(&b.at));
        let repeated = [before, after].into_iter().flatten().find(|first| {
            first.answers == self.answers
                && first.at.as_str() >= self.earliest_other.as_str()
                && first.at.as_str() <= self.latest_other.as_str()
        });
        if let Some(first) = repeated {
            return Judgement::Repeats(first.receipt.clone());
        }
        let mut kept = firsts.to_vec();
        kept.push(First {
            receipt: self.receipt.clone(),
            at: self.at.clone(),
            answers: self.answers.clone(),
        });
        kept.sort_by(|a, b| a.at.cmp(&b.at));
        let extra = kept.len().saturating_sub(KEPT_FIRSTS);
        kept.drain(..extra);
        Judgement::StandsFirst(Some(kept))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_window_is_a_short_duration_written_back_in_seconds() {
        let rows: [(&str, Option<u64>); 11] = [
            ("2m", Some(120)),
            ("90s", Some(90)),
            ("1h", Some(3600)),
            ("24h", Some(86_400)),
            ("0s", Some(0)),
            (" 5m ", Some(300)),
            ("25h", None),
            ("2", None),
            ("m", None),
            ("-1s", None),
            ("1.5m", None),
        ];
        for (text, seconds) in rows {
            let parsed = Window::parse(text).map(Window::duration).ok();
            assert_eq!(parsed, seconds.map(Duration::from_secs), "{text:?}");
        }
        let window = Window::parse("2m").unwrap();
        let json = serde_json::to_string(&window).unwrap();
        assert_eq!(json, "\"120s\"");
        assert_eq!(serde_json::from_str::<Window>(&json).unwrap(), window);
        assert!(Window::parse("0s").unwrap().is_off());
        assert_eq!(Window::default().duration(), DEFAULT_WINDOW);
    }

    fn lead(email: &str, message: &str, fields: &[(&str, &str)]) -> Lead {
        Lead {
            external_id: "sub_1".into(),
            name: "Ada".into(),
            email: email.into(),
            message: message.into(),
            fields: fields
                .iter()
                .map(|(name, value)| ((*name).to_owned(), Value::from(*value)))
                .collect(),
            aliases: Vec::new(),
            received_at: "2026-12-04T08:00:00.000Z".into(),
            submitted_at: None,
            sender_time_replaced: false,
            route: None,
        }
    }

    #[test]
    fn a_person_and_form_share_one_item_and_equal_answers_one_digest() {
        let secret = GateSecret::new("a-test-gate-key-of-at-least-32-characters!").unwrap();
        let other_secret = GateSecret::new("another-gate-key-of-at-least-32-characters").unwrap();
        let first = lead(
            "Ada@Example.com",
            "Call me",
            &[("plan", "pro"), ("size", "10")],
        );
        let key = item_key(&secret, Some("f1"), &first).unwrap();
        let digest = answers_digest(&secret, &first);
        assert!(key.starts_with("gate#double:"), "{key}");
        assert!(!key.contains("example"), "no address in the key");
        assert_eq!(digest.len(), 32);
        let same = [
            lead(
                " ada@example.com",
                "Call me",
                &[("size", "10"), ("plan", "pro")],
            ),
            lead(
                "ada@example.com",
                " Call me ",
                &[("plan", "pro"), ("size", "10")],
            ),
        ];
        for again in same {
            assert_eq!(item_key(&secret, Some("f1"), &again).as_ref(), Some(&key));
            assert_eq!(answers_digest(&secret, &again), digest);
        }
        // Other answers of the person: the same item, another digest.
        let other_answers = [
            lead(
                "ada@example.com",
                "Call me later",
                &[("plan", "pro"), ("size", "10")],
            ),
            lead(
                "ada@example.com",
                "Call me",
                &[("plan", "team"), ("size", "10")],
            ),
            lead("ada@example.com", "Call me", &[("plan", "pro")]),
        ];
        for (row, other) in other_answers.iter().enumerate() {
            assert_eq!(
                item_key(&secret, Some("f1"), other).as_ref(),
                Some(&key),
                "row {row}"
            );
            assert_ne!(answers_digest(&secret, other), digest, "row {row}");
        }
        assert_ne!(answers_digest(&other_secret, &first), digest);
        let other_items = [
            item_key(&secret, Some("f2"), &first),
            item_key(&secret, None, &first),
            item_key(&other_secret, Some("f1"), &first),
            item_key(
                &secret,
                Some("f1"),
                &lead(
                    "bo@example.com",
                    "Call me",
                    &[("plan", "pro"), ("size", "10")],
                ),
            ),
        ];
        for (row, other) in other_items.iter().enumerate() {
            assert_ne!(other.as_ref(), Some(&key), "row {row}");
        }
        assert_eq!(
            item_key(&secret, Some("f1"), &lead(" ", "Call me", &[])),
            None
        );
    }

    fn first(receipt: &str, at: &str, answers: &str) -> First {
        First {
            receipt: receipt.into(),
            at: at.into(),
            answers: answers.into(),
        }
    }

    const DAY: Duration = Duration::from_secs(86_400);

    #[test]
    fn a_submission_repeats_its_neighbour_within_its_window_in_either_order() {
        let window = Window::parse("2m").unwrap();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_000_000);
        let mine =
            FirstSubmission::new("r2", ("2026-12-04T10:00:10.000Z", "pro"), window, DAY, now)
                .unwrap();
        assert_eq!(mine.earliest_other, "2026-12-04T09:58:10.000Z");
        assert_eq!(mine.latest_other, "2026-12-04T10:02:10.000Z");
        let click = first("r1", "2026-12-04T10:00:00.000Z", "pro");
        let later = first("r3", "2026-12-04T10:10:00.000Z", "pro");
        let mine_kept = first("r2", &mine.at, "pro");
        let rows: Vec<(Vec<First>, Judgement)> = vec![
            (
                vec![],
                Judgement::StandsFirst(Some(vec![mine_kept.clone()])),
            ),
            (vec![mine_kept.clone()], Judgement::StandsFirst(None)),
            (vec![click.clone()], Judgement::Repeats("r1".into())),
            // The later one was delivered first: the click is still found.
            (
                vec![click.clone(), later.clone()],
                Judgement::Repeats("r1".into()),
            ),
            // Delivered late: its twin just after it.
            (
                vec![first("r0", "2026-12-04T10:02:10.000Z", "pro")],
                Judgement::Repeats("r0".into()),
            ),
            (
                vec![
                    later.clone(),
                    first("r0", "2026-12-04T09:50:00.000Z", "pro"),
                ],
                Judgement::StandsFirst(Some(vec![
                    first("r0", "2026-12-04T09:50:00.000Z", "pro"),
                    mine_kept.clone(),
                    later.clone(),
                ])),
            ),
            // Pro, Basic, Pro: the person changed their mind in between, so
            // the second Pro is new data, delivered.
            (
                vec![
                    first("r0", "2026-12-04T09:59:00.000Z", "pro"),
                    first("r1", "2026-12-04T09:59:30.000Z", "basic"),
                ],
                Judgement::StandsFirst(Some(vec![
                    first("r0", "2026-12-04T09:59:00.000Z", "pro"),
                    first("r1", "2026-12-04T09:59:30.000Z", "basic"),
                    mine_kept.clone(),
                ])),
            ),
            // Other answers just after it, its twin after those: not a
            // neighbour, so not a repeat.
            (
                vec![
                    first("r4", "2026-12-04T10:00:20.000Z", "basic"),
                    first("r5", "2026-12-04T10:00:30.000Z", "pro"),
                ],
                Judgement::StandsFirst(Some(vec![
                    mine_kept.clone(),
                    first("r4", "2026-12-04T10:00:20.000Z", "basic"),
                    first("r5", "2026-12-04T10:00:30.000Z", "pro"),
                ])),
            ),
        ];
        for (firsts, judgement) in rows {
            assert_eq!(mine.judge(&firsts), judgement, "{firsts:?}");
        }
        let many: Vec<First> = (0..KEPT_FIRSTS)
            .map(|n| {
                first(
                    &format!("old{n:02}"),
                    &format!("2026-12-03T{n:02}:00:00.000Z"),
                    "pro",
                )
            })
            .collect();
        let Judgement::StandsFirst(Some(kept)) = mine.judge(&many) else {
            panic!("a first");
        };
        assert_eq!(kept.len(), KEPT_FIRSTS);
        assert_eq!(kept[0].receipt, "old01", "the oldest goes");
        assert_eq!(kept.last().unwrap().receipt, "r2");
        assert_eq!(
            FirstSubmission::new("r", ("yesterday", "pro"), window, DAY, now),
            None
        );
        // Kept for the retention given, past the window.
        let month =
            FirstSubmission::new("r", (mine.at.as_str(), "pro"), window, 30 * DAY, now).unwrap();
        assert_eq!(
            month.expires_at - mine.expires_at,
            29 * DAY.as_secs(),
            "a twin delivered weeks later is still found"
        );
        assert!(mine.expires_at >= 1_796_000_000 + 120 + DAY.as_secs());
    }

    #[test]
    fn a_route_window_wins_over_the_files_and_the_files_over_the_default() {
        let mut routes = Routes::default();
        let mut lead = lead("ada@example.com", "", &[]);
        assert_eq!(window_of(&routes, &lead), Window::default());
        routes.duplicate_window = Some(Window::parse("5m").unwrap());
        assert_eq!(window_of(&routes, &lead).duration().as_secs(), 300);
        let route = crate::routes::Route {
            duplicate_window: Some(Window::OFF),
            ..Default::default()
        };
        lead.route = Some(Arc::new(route));
        assert!(window_of(&routes, &lead).is_off());
    }
}
