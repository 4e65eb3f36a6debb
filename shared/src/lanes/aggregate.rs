//! The receipt's status from its lanes: one rule, table-tested.

use super::{Lane, LaneState};
use crate::receipt::ReceiptStatus;

/// What a receipt's lanes make of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Aggregate {
    /// A lane is still pending: RECEIVED, due at the earliest pending
    /// lane's next attempt (now, when one has none).
    Open { next_attempt_at: Option<String> },
    /// Every lane settled: the receipt's status.
    Settled(ReceiptStatus),
}

impl Aggregate {
    /// The receipt's status from its lanes' states:
    /// - a lane pending: still RECEIVED;
    /// - else one failed: FAILED (a redrive retries only the failed ones);
    /// - else one wrote it or found it stale (a refusal beside it shown per
    ///   lane): COMPLETED;
    /// - else one refused: REFUSED; else (every lane a duplicate): DUPLICATE.
    ///
    /// No lanes at all settle nothing: the receipt stays open.
    pub fn of<'a>(lanes: impl IntoIterator<Item = &'a Lane>) -> Aggregate {
        let lanes: Vec<&Lane> = lanes.into_iter().collect();
        let pending: Vec<&Lane> = lanes
            .iter()
            .copied()
            .filter(|lane| !lane.state.is_settled())
            .collect();
        if lanes.is_empty() || !pending.is_empty() {
            let due_now = pending.iter().any(|lane| lane.next_attempt_at.is_none());
            let earliest = pending
                .iter()
                .filter_map(|lane| lane.next_attempt_at.clone())
                .min();
            return Aggregate::Open {
                next_attempt_at: earliest.filter(|_| !due_now),
            };
        }
        let any = |state: LaneState| lanes.iter().any(|lane| lane.state == state);
        let status = if any(LaneState::Failed) {
            ReceiptStatus::Failed
        } else if lanes.iter().any(|lane| lane.state.has_lead()) {
            ReceiptStatus::Completed
        } else if any(LaneState::Refused) {
            ReceiptStatus::Refused
        } else {
            ReceiptStatus::Duplicate
        };
        Aggregate::Settled(status)
    }
}

#[cfg(test)]
mod tests {
    use super::super::lane;
    use super::*;
    use LaneState::*;

    #[test]
    fn a_receipts_status_follows_from_its_lanes() {
        let open = |next: Option<&str>| Aggregate::Open {
            next_attempt_at: next.map(str::to_owned),
        };
        let settled = Aggregate::Settled;
        let t1 = Some("2026-12-05T10:00:00.000Z");
        let t2 = Some("2026-12-05T11:00:00.000Z");
        #[rustfmt::skip]
        let cases: Vec<(&str, Vec<Lane>, Aggregate)> = vec![
            ("one written", vec![lane(Written, None)], settled(ReceiptStatus::Completed)),
            ("one stale", vec![lane(Stale, None)], settled(ReceiptStatus::Completed)),
            ("one refused", vec![lane(Refused, None)], settled(ReceiptStatus::Refused)),
            ("one failed", vec![lane(Failed, None)], settled(ReceiptStatus::Failed)),
            ("one duplicate", vec![lane(Duplicate, None)], settled(ReceiptStatus::Duplicate)),
            ("one pending, due now", vec![lane(Pending, None)], open(None)),
            ("one written, one pending later", vec![lane(Written, None), lane(Pending, t2)], open(t2)),
            ("the earliest pending", vec![lane(Pending, t2), lane(Pending, t1)], open(t1)),
            ("one due now beats a later one", vec![lane(Pending, t2), lane(Pending, None)], open(None)),
            ("failed waits for the pending", vec![lane(Failed, None), lane(Pending, t1)], open(t1)),
            ("written beside refused", vec![lane(Written, None), lane(Refused, None)], settled(ReceiptStatus::Completed)),
            ("stale beside refused", vec![lane(Stale, None), lane(Refused, None)], settled(ReceiptStatus::Completed)),
            ("every lane refused", vec![lane(Refused, None), lane(Refused, None)], settled(ReceiptStatus::Refused)),
            ("refused beside duplicate", vec![lane(Duplicate, None), lane(Refused, None)], settled(ReceiptStatus::Refused)),
            ("every lane a duplicate", vec![lane(Duplicate, None), lane(Duplicate, None)], settled(ReceiptStatus::Duplicate)),
            ("written beside failed", vec![lane(Written, None), lane(Failed, None)], settled(ReceiptStatus::Failed)),
            ("refused beside failed", vec![lane(Refused, None), lane(Failed, None)], settled(ReceiptStatus::Failed)),
            ("no lanes", vec![], open(None)),
        ];
        for (name, lanes, expected) in cases {
            assert_eq!(Aggregate::of(&lanes), expected, "{name}");
        }
    }

    /// Whatever the lanes, the receipt is settled only when each is, and
    /// COMPLETED only when one has the lead.
    #[test]
    fn settled_only_when_every_lane_is_and_completed_only_with_a_lead() {
        let states = [Pending, Written, Stale, Refused, Duplicate, Failed];
        for a in states {
            for b in states {
                for c in states {
                    let lanes = [lane(a, None), lane(b, None), lane(c, None)];
                    match Aggregate::of(&lanes) {
                        Aggregate::Open { .. } => {
                            assert!(lanes.iter().any(|l| !l.state.is_settled()))
                        }
                        Aggregate::Settled(status) => {
                            assert!(lanes.iter().all(|l| l.state.is_settled()));
                            if status == ReceiptStatus::Completed {
                                assert!(lanes.iter().any(|l| l.state.has_lead()));
                            }
                        }
                    }
                }
            }
        }
    }
}
