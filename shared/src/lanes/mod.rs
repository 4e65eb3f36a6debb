//! One receipt, several destinations: each destination a receipt goes to is
//! a **lane** with its own state, attempts, next attempt, last error and
//! record. A lane settles on its own; the receipt's status is derived from
//! its lanes by one rule (`aggregate::Aggregate::of`), so a stack with one
//! destination keeps exactly the statuses it always had.
//!
//! A receipt of a stack with one destination stores none of this (its lane
//! is the receipt's own attributes, as before lanes existed); a receipt of
//! a stack with several keeps its lanes (one for each destination its
//! route chose) in `destinations` (`attr::DESTINATIONS`), a map by
//! destination name, written whole by the one delivery that holds the
//! receipt's claim.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub mod aggregate;

/// Where one destination of a receipt stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum LaneState {
    /// Not written yet: due at its `nextAttemptAt` (now, when absent).
    Pending,
    /// The destination holds the lead (`recordId`, `recordUrl`).
    Written,
    /// A newer submission of the person was already written there.
    Stale,
    /// The destination refused the person for good (`lastError`: its code).
    Refused,
    /// A double submit of another receipt: never sent.
    Duplicate,
    /// Failed for good (`lastError`): waits for `receipts redrive`.
    Failed,
}

impl LaneState {
    /// Settled: no delivery calls the destination for it again (a redrive
    /// makes a failed lane pending).
    pub fn is_settled(self) -> bool {
        self != LaneState::Pending
    }

    /// The destination has the lead, this submission's or a newer one.
    pub fn has_lead(self) -> bool {
        matches!(self, LaneState::Written | LaneState::Stale)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LaneState::Pending => "PENDING",
            LaneState::Written => "WRITTEN",
            LaneState::Stale => "STALE",
            LaneState::Refused => "REFUSED",
            LaneState::Duplicate => "DUPLICATE",
            LaneState::Failed => "FAILED",
        }
    }
}

/// One destination's delivery of a receipt, as stored. Reasons are codes,
/// never lead data; record ids are the destination's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lane {
    pub state: LaneState,
    /// Calls made to this destination for this receipt.
    #[serde(default)]
    pub attempts: u32,
    /// When a pending lane is due again; absent: now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_http_status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_url: Option<String>,
    /// When it settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_at: Option<String>,
}

impl Lane {
    /// A lane no delivery has touched: pending, due now.
    pub fn pending() -> Self {
        Lane {
            state: LaneState::Pending,
            attempts: 0,
            next_attempt_at: None,
            last_error: None,
            last_http_status: None,
            record_id: None,
            record_url: None,
            settled_at: None,
        }
    }

    /// Whether a delivery at `now` (a receipt timestamp) calls it: pending
    /// and due.
    pub fn is_due(&self, now: &str) -> bool {
        self.state == LaneState::Pending
            && self
                .next_attempt_at
                .as_deref()
                .is_none_or(|next| next <= now)
    }
}

/// A receipt's lanes, by destination name.
pub type Lanes = BTreeMap<String, Lane>;

/// Why a lane for a destination the stack no longer has is FAILED (its
/// `lastError`, and the receipt's reason once nothing else is pending): an
/// operator adds the destination back and redrives it, or leaves it.
pub const DESTINATION_NOT_IN_STACK: &str = "destination-not-in-stack";

/// A lane in `state`, due at `next`, for the rules' tables.
#[cfg(test)]
pub(crate) fn lane(state: LaneState, next: Option<&str>) -> Lane {
    Lane {
        state,
        next_attempt_at: next.map(str::to_owned),
        ..Lane::pending()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use LaneState::*;

    #[test]
    fn a_lane_is_due_when_pending_and_its_time_has_come() {
        let now = "2026-12-05T10:00:00.000Z";
        assert!(lane(Pending, None).is_due(now));
        assert!(lane(Pending, Some("2026-12-05T09:59:59.999Z")).is_due(now));
        assert!(lane(Pending, Some(now)).is_due(now));
        assert!(!lane(Pending, Some("2026-12-05T10:00:00.001Z")).is_due(now));
        assert!(!lane(Written, None).is_due(now));
        assert!(!lane(Failed, None).is_due(now));
    }

    #[test]
    fn a_lane_round_trips_with_its_stored_names() {
        let stored = serde_json::json!({
            "state": "WRITTEN", "attempts": 2, "recordId": "101", "recordUrl": "https://crm/101",
            "settledAt": "2026-12-05T10:00:00.000Z"
        });
        let lane: Lane = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(lane.state, Written);
        assert_eq!(serde_json::to_value(&lane).unwrap(), stored);
        let bare: Lane = serde_json::from_value(serde_json::json!({"state": "PENDING"})).unwrap();
        assert_eq!(bare, Lane::pending());
    }
}
