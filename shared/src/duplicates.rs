//! Double submits (`duplicate_window`): a submission with the same form,
//! the same e-mail address and the same answers as one submitted within
//! the window before or after it is a duplicate of that one, settled
//! DUPLICATE and never delivered. A double click gets two submission ids
//! from its sender, so deduplication by submission cannot see it.
//!
//! The worker decides, at delivery, with one item per set of answers in
//! the receipts table (a gate item, `gate#double:`): its key is an HMAC,
//! under the stack's gate key, of the form, the address and the answers,
//! so the table never holds the answers twice, and whoever reads its keys
//! without the key learns nothing. The item holds only the receipt keys
//! and submission times of the firsts (each submission that repeated none
//! within its window), so a repeat is found whichever of the two is
//! delivered first, and expires a day after the window. Times are the sender's submission time where it states one
//! (else the arrival): an import that stores two clicks made ten minutes
//! apart in the same second still finds them ten minutes apart.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::duplicate_window::{Window, DEFAULT_WINDOW, MAX_WINDOW};

use crate::lead::Lead;
use crate::newest::{GateSecret, GATE_KEY_PREFIX};
use crate::routes::Routes;
use crate::time::{format_timestamp, parse_timestamp};

/// How long an item outlives its window (TTL deletes it some time after).
const KEPT_PAST_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// The window of a lead's form: its route's, else the file's, else
/// [`DEFAULT_WINDOW`].
pub fn window_of(routes: &Routes, lead: &Lead) -> Window {
    lead.route
        .as_ref()
        .and_then(|route| route.duplicate_window)
        .or(routes.duplicate_window)
        .unwrap_or_default()
}

/// The item that holds the first of a lead's identical submissions:
/// `gate#double:` and the HMAC of its form reference, its normalised
/// address and its answers (name, message and every field, in name order).
/// `None` for a lead without an address: nothing says two are one person.
pub fn item_key(secret: &GateSecret, form_ref: Option<&str>, lead: &Lead) -> Option<String> {
    let email = lead.normalised_email()?;
    let fields: std::collections::BTreeMap<&String, &Value> = lead.fields.iter().collect();
    let answers = serde_json::json!({
        "name": lead.name.trim(),
        "message": lead.message.trim(),
        "fields": fields,
    })
    .to_string();
    let form = form_ref.unwrap_or("");
    Some(format!(
        "{GATE_KEY_PREFIX}double:{}",
        secret.hmac_hex(&["double\0", form, "\0", &email, "\0", &answers])
    ))
}

/// The firsts an item keeps: at most this many, the latest by time.
pub const KEPT_FIRSTS: usize = 16;

/// One submission an item holds as the first of its identical ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct First {
    /// Its receipt's key.
    pub receipt: String,
    /// Its submission time (`Lead::newest_by`), RFC 3339 in UTC.
    pub at: String,
}

/// A submission about to be compared with the firsts of its item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstSubmission {
    /// The receipt's key.
    pub receipt: String,
    /// Its submission time, as the item keeps it: text order is time order.
    pub at: String,
    /// A first submitted at or after this time, and at or before
    /// `latest_other`, is within its window.
    pub earliest_other: String,
    pub latest_other: String,
    /// When TTL may delete the item (epoch seconds): a while after the
    /// window, counted from `now` so that an import of old submissions
    /// still keeps its item.
    pub expires_at: u64,
}

/// What an item's firsts say of a submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// It repeats the first with this receipt key: DUPLICATE of it.
    Repeats(String),
    /// It is a first itself (already held, or to be written: the item's
    /// firsts with it, when they change).
    StandsFirst(Option<Vec<First>>),
}

impl FirstSubmission {
    /// `receipt`, submitted `at`, for `window`, compared `now`; `None`
    /// when `at` is no timestamp.
    pub fn new(
        receipt: &str,
        at: &str,
        window: Window,
        now: SystemTime,
    ) -> Option<FirstSubmission> {
        let time = parse_timestamp(at)?;
        let earliest = time
            .checked_sub(window.duration())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let latest = time + window.duration();
        let expires = now.max(latest) + window.duration() + KEPT_PAST_WINDOW;
        Some(FirstSubmission {
            receipt: receipt.to_owned(),
            at: format_timestamp(time),
            earliest_other: format_timestamp(earliest),
            latest_other: format_timestamp(latest),
            expires_at: expires
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |since| since.as_secs()),
        })
    }

    /// Compares it with the firsts an item holds: a first within its window
    /// (the earliest such) makes it a repeat, whatever order the two are
    /// delivered in; otherwise it is a first too, kept beside the others
    /// (the latest [`KEPT_FIRSTS`] by time).
    pub fn judge(&self, firsts: &[First]) -> Judgement {
        if firsts.iter().any(|first| first.receipt == self.receipt) {
            return Judgement::StandsFirst(None);
        }
        let within = firsts
            .iter()
            .filter(|first| {
                first.at.as_str() >= self.earliest_other.as_str()
                    && first.at.as_str() <= self.latest_other.as_str()
            })
            .min_by(|a, b| a.at.cmp(&b.at));
        if let Some(first) = within {
            return Judgement::Repeats(first.receipt.clone());
        }
        let mut kept = firsts.to_vec();
        kept.push(First {
            receipt: self.receipt.clone(),
            at: self.at.clone(),
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
    fn the_same_form_address_and_answers_share_one_item_and_nothing_else_does() {
        let secret = GateSecret::new("a-test-gate-key-of-at-least-32-characters!").unwrap();
        let other_secret = GateSecret::new("another-gate-key-of-at-least-32-characters").unwrap();
        let first = lead(
            "Ada@Example.com",
            "Call me",
            &[("plan", "pro"), ("size", "10")],
        );
        let key = item_key(&secret, Some("f1"), &first).unwrap();
        assert!(key.starts_with("gate#double:"), "{key}");
        assert!(!key.contains("example"), "no address in the key");
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
        }
        let different = [
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
            item_key(
                &secret,
                Some("f1"),
                &lead(
                    "ada@example.com",
                    "Call me later",
                    &[("plan", "pro"), ("size", "10")],
                ),
            ),
            item_key(
                &secret,
                Some("f1"),
                &lead(
                    "ada@example.com",
                    "Call me",
                    &[("plan", "team"), ("size", "10")],
                ),
            ),
            item_key(
                &secret,
                Some("f1"),
                &lead("ada@example.com", "Call me", &[("plan", "pro")]),
            ),
        ];
        for (row, other) in different.iter().enumerate() {
            assert_ne!(other.as_ref(), Some(&key), "row {row}");
        }
        assert_eq!(
            item_key(&secret, Some("f1"), &lead(" ", "Call me", &[])),
            None
        );
    }

    fn first(receipt: &str, at: &str) -> First {
        First {
            receipt: receipt.into(),
            at: at.into(),
        }
    }

    #[test]
    fn a_submission_repeats_a_first_within_its_window_in_either_order() {
        let window = Window::parse("2m").unwrap();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_000_000);
        let mine = FirstSubmission::new("r2", "2026-12-04T10:00:10.000Z", window, now).unwrap();
        assert_eq!(mine.earliest_other, "2026-12-04T09:58:10.000Z");
        assert_eq!(mine.latest_other, "2026-12-04T10:02:10.000Z");
        let click = first("r1", "2026-12-04T10:00:00.000Z");
        let later = first("r3", "2026-12-04T10:10:00.000Z");
        let rows: Vec<(Vec<First>, Judgement)> = vec![
            (
                vec![],
                Judgement::StandsFirst(Some(vec![first("r2", &mine.at)])),
            ),
            (vec![first("r2", &mine.at)], Judgement::StandsFirst(None)),
            (vec![click.clone()], Judgement::Repeats("r1".into())),
            // The later one was delivered first: the click is still found.
            (
                vec![click.clone(), later.clone()],
                Judgement::Repeats("r1".into()),
            ),
            (
                vec![first("r0", "2026-12-04T10:02:10.000Z")],
                Judgement::Repeats("r0".into()),
            ),
            (
                vec![later.clone(), first("r0", "2026-12-04T09:50:00.000Z")],
                Judgement::StandsFirst(Some(vec![
                    first("r0", "2026-12-04T09:50:00.000Z"),
                    first("r2", &mine.at),
                    later.clone(),
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
                )
            })
            .collect();
        let Judgement::StandsFirst(Some(kept)) = mine.judge(&many) else {
            panic!("a first");
        };
        assert_eq!(kept.len(), KEPT_FIRSTS);
        assert_eq!(kept[0].receipt, "old01", "the oldest goes");
        assert_eq!(kept.last().unwrap().receipt, "r2");
        assert_eq!(FirstSubmission::new("r", "yesterday", window, now), None);
        assert!(mine.expires_at > 1_796_000_000 + 120);
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
