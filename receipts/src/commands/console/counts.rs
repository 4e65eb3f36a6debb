//! The console's counts of a period: receipts per bucket (5 minutes, an
//! hour or a day, as the period asks) by status, per destination by its
//! state there, and the quarantined ones, all from one read of the
//! period's entries of the day index (`table::by_day`). Plain rules here;
//! the reads are the table's.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use shared::Receipt;

/// A period the console counts over: how far back, in buckets of what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Period {
    pub name: &'static str,
    pub bucket: Duration,
    pub buckets: usize,
    pub said: &'static str,
}

const MINUTE: u64 = 60;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;

pub(super) const PERIODS: &[Period] = &[
    Period {
        name: "1h",
        bucket: Duration::from_secs(5 * MINUTE),
        buckets: 12,
        said: "per 5 minutes over the last hour",
    },
    Period {
        name: "24h",
        bucket: Duration::from_secs(HOUR),
        buckets: 24,
        said: "per hour over the last day",
    },
    Period {
        name: "7d",
        bucket: Duration::from_secs(DAY),
        buckets: 7,
        said: "per day over the last week",
    },
    Period {
        name: "30d",
        bucket: Duration::from_secs(DAY),
        buckets: 30,
        said: "per day over the last 30 days",
    },
];

impl Period {
    pub fn named(name: &str) -> Option<Period> {
        PERIODS.iter().copied().find(|p| p.name == name)
    }

    /// Its length.
    pub fn span(&self) -> Duration {
        self.bucket * u32::try_from(self.buckets).unwrap_or(u32::MAX)
    }
}

/// One quarantined receipt, as the quarantine list shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Held {
    pub pk: String,
    pub submission_id: String,
    pub received_at: String,
    pub rule: Option<String>,
}

/// A period's counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Counts {
    pub period: &'static str,
    pub said: &'static str,
    pub bucket_seconds: u64,
    /// Oldest first; each bucket's counts by status.
    pub buckets: Vec<BTreeMap<String, usize>>,
    pub by_status: BTreeMap<String, usize>,
    /// By destination, its lanes' states (a stack of one destination: the
    /// receipts delivered there, by status).
    pub by_destination: BTreeMap<String, BTreeMap<String, usize>>,
    pub quarantine: Vec<Held>,
}

impl Counts {
    pub fn new(period: Period) -> Self {
        Counts {
            period: period.name,
            said: period.said,
            bucket_seconds: period.bucket.as_secs(),
            buckets: vec![BTreeMap::new(); period.buckets],
            by_status: BTreeMap::new(),
            by_destination: BTreeMap::new(),
            quarantine: Vec::new(),
        }
    }

    /// Counts `receipt`, the period ending at `now`; one received outside
    /// it, or at no readable time, is not counted.
    pub fn add(&mut self, receipt: &Receipt, now: SystemTime) {
        let Some(age) = receipt
            .received_time()
            .and_then(|at| now.duration_since(at).ok())
        else {
            return;
        };
        let bucket =
            usize::try_from(age.as_secs() / self.bucket_seconds.max(1)).unwrap_or(usize::MAX);
        let Some(newest_first) = self.buckets.len().checked_sub(1 + bucket) else {
            return;
        };
        let status = receipt.status.as_str().to_owned();
        *self.buckets[newest_first]
            .entry(status.clone())
            .or_default() += 1;
        *self.by_status.entry(status.clone()).or_default() += 1;
        if receipt.destinations.is_empty() {
            if let Some(to) = &receipt.delivered_to {
                *self
                    .by_destination
                    .entry(to.clone())
                    .or_default()
                    .entry(status)
                    .or_default() += 1;
            }
        } else {
            for (name, lane) in receipt.destinations.iter() {
                let state = lane.state.as_str().to_owned();
                *self
                    .by_destination
                    .entry(name.clone())
                    .or_default()
                    .entry(state)
                    .or_default() += 1;
            }
        }
        if receipt.status == shared::ReceiptStatus::Quarantined {
            self.quarantine.push(Held {
                pk: receipt.pk.clone(),
                submission_id: receipt.submission_id.clone(),
                received_at: receipt.received_at.clone(),
                rule: receipt.quarantine_rule.clone(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::lanes::{Lane, LaneState};
    use shared::ReceiptStatus;

    fn receipt(status: ReceiptStatus, age_secs: u64, now: SystemTime) -> Receipt {
        let submission = shared::Sender::StaticForms
            .parse_submission(
                br#"{"event":"form.submitted","data":{"submissionId":"sub_1","formData":{"email":"a@example.com"}}}"#,
            )
            .unwrap();
        Receipt {
            status,
            ..Receipt::new(&submission, now - Duration::from_secs(age_secs))
        }
    }

    #[test]
    fn each_receipt_lands_in_its_bucket_oldest_first_and_outside_the_period_in_none() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut counts = Counts::new(Period::named("24h").unwrap());
        for (status, age) in [
            (ReceiptStatus::Completed, 0),
            (ReceiptStatus::Completed, HOUR - 1),
            (ReceiptStatus::Failed, HOUR),
            (ReceiptStatus::Quarantined, 23 * HOUR + 59 * MINUTE),
            (ReceiptStatus::Completed, DAY),
            (ReceiptStatus::Completed, 3 * DAY),
        ] {
            counts.add(&receipt(status, age, now), now);
        }
        assert_eq!(counts.buckets.len(), 24);
        assert_eq!(
            counts.buckets[23].get("COMPLETED"),
            Some(&2),
            "the newest hour"
        );
        assert_eq!(counts.buckets[22].get("FAILED"), Some(&1));
        assert_eq!(
            counts.buckets[0].get("QUARANTINED"),
            Some(&1),
            "the oldest hour"
        );
        assert_eq!(
            counts.by_status.values().sum::<usize>(),
            4,
            "a day old and older: none"
        );
        assert_eq!(counts.quarantine.len(), 1);
        assert_eq!(counts.quarantine[0].submission_id, "sub_1");
        let future = receipt(ReceiptStatus::Completed, 0, now + Duration::from_secs(60));
        counts.add(&future, now);
        assert_eq!(
            counts.by_status.values().sum::<usize>(),
            4,
            "from the future: none"
        );
    }

    #[test]
    fn destinations_count_by_lane_or_by_where_a_single_one_delivered() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut counts = Counts::new(Period::named("1h").unwrap());
        let mut single = receipt(ReceiptStatus::Completed, 60, now);
        single.delivered_to = Some("hubspot".to_owned());
        let mut lanes = receipt(ReceiptStatus::Failed, 60, now);
        for (name, state) in [
            ("hubspot", LaneState::Written),
            ("mailchimp", LaneState::Failed),
        ] {
            lanes.destinations.insert(
                name.to_owned(),
                Lane {
                    state,
                    ..Lane::pending()
                },
            );
        }
        counts.add(&single, now);
        counts.add(&lanes, now);
        assert_eq!(counts.by_destination["hubspot"].get("COMPLETED"), Some(&1));
        assert_eq!(counts.by_destination["hubspot"].get("WRITTEN"), Some(&1));
        assert_eq!(counts.by_destination["mailchimp"].get("FAILED"), Some(&1));
        assert!(counts.quarantine.is_empty());
    }

    #[test]
    fn every_period_the_page_offers_is_known_and_spans_its_name() {
        for (name, hours) in [("1h", 1), ("24h", 24), ("7d", 168), ("30d", 720)] {
            assert_eq!(
                Period::named(name).unwrap().span(),
                Duration::from_secs(hours * HOUR),
                "{name}"
            );
        }
        assert_eq!(Period::named("1y"), None);
    }
}
