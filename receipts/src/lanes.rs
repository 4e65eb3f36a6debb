//! A receipt's destinations as the operator selects and redrives them
//! (`shared::lanes`): `list --destination NAME` finds the receipts whose
//! lane there is in a state, and `redrive --destination NAME` puts back only
//! that destination's lane, never one already written.

use shared::lanes::{LaneState, Lanes};
use shared::{Receipt, ReceiptStatus};

use crate::cli::StatusFilter;

/// Whether `receipt` goes to `destination` and stands there as `status`
/// says (any, with `None`). A receipt with lanes is judged by its lane
/// there; one without (a stack of one destination) by itself, where it
/// was delivered to `destination` or is not delivered yet.
pub fn at_destination(receipt: &Receipt, destination: &str, status: Option<StatusFilter>) -> bool {
    if receipt.destinations.is_empty() {
        let there = receipt
            .delivered_to
            .as_deref()
            .is_none_or(|to| to == destination);
        return there && status.is_none_or(|status| receipt_is(receipt, status));
    }
    let Some(lane) = receipt.destinations.get(destination) else {
        return false;
    };
    let Some(status) = status else {
        return true;
    };
    match (status, lane.state) {
        (StatusFilter::Received, LaneState::Pending) => true,
        // Pending there, and the receipt waits in the queue.
        (StatusFilter::Pending, LaneState::Pending) => receipt.pending.is_some(),
        (StatusFilter::Completed, state) => state.has_lead(),
        (StatusFilter::Failed, LaneState::Failed) => true,
        (StatusFilter::Refused, LaneState::Refused) => true,
        (StatusFilter::Duplicate, LaneState::Duplicate) => true,
        (StatusFilter::Quarantined, _) => receipt.status == ReceiptStatus::Quarantined,
        _ => false,
    }
}

/// Whether `receipt` itself stands as `status` says.
pub fn receipt_is(receipt: &Receipt, status: StatusFilter) -> bool {
    match status {
        StatusFilter::Received => receipt.status == ReceiptStatus::Received,
        StatusFilter::Pending => {
            receipt.status == ReceiptStatus::Received && receipt.pending.is_some()
        }
        StatusFilter::Completed => receipt.status == ReceiptStatus::Completed,
        StatusFilter::Failed => receipt.status == ReceiptStatus::Failed,
        StatusFilter::Quarantined => receipt.status == ReceiptStatus::Quarantined,
        StatusFilter::Refused => receipt.status == ReceiptStatus::Refused,
        StatusFilter::Duplicate => receipt.status == ReceiptStatus::Duplicate,
    }
}

/// The lanes a redrive leaves: every FAILED lane pending again, or with
/// `destination` that one alone. `Ok(None)`: the receipt has no lanes (it
/// is redriven whole). An error says why that destination is not put back.
pub fn redriven(receipt: &Receipt, destination: Option<&str>) -> Result<Option<Lanes>, String> {
    if receipt.destinations.is_empty() {
        return Ok(None);
    }
    let mut lanes = receipt.destinations.clone();
    match destination {
        None => {
            for lane in lanes.values_mut() {
                if lane.state == LaneState::Failed {
                    lane.state = LaneState::Pending;
                    lane.next_attempt_at = None;
                    lane.settled_at = None;
                }
            }
        }
        Some(name) => {
            let Some(lane) = lanes.get_mut(name) else {
                return Err(format!("it does not go to {name}"));
            };
            match lane.state {
                LaneState::Failed | LaneState::Pending => {
                    lane.state = LaneState::Pending;
                    lane.next_attempt_at = None;
                    lane.settled_at = None;
                }
                settled => {
                    return Err(format!(
                        "{name} is {}, never delivered again",
                        settled.as_str()
                    ))
                }
            }
        }
    }
    Ok(Some(lanes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::lanes::Lane;
    use shared::FormSubmission;
    use std::time::SystemTime;

    fn receipt(lanes: &[(&str, LaneState)]) -> Receipt {
        let body = br#"{"event":"form.submitted","data":{"submissionId":"s1","formData":{"email":"a@b.c"}}}"#;
        let mut receipt = Receipt::new(&FormSubmission::parse(body).unwrap(), SystemTime::now());
        for (name, state) in lanes {
            let lane = Lane {
                state: *state,
                ..Lane::pending()
            };
            receipt.destinations.insert((*name).to_owned(), lane);
        }
        receipt
    }

    #[test]
    fn a_receipt_is_selected_by_its_lane_at_the_destination() {
        let two = receipt(&[
            ("hubspot", LaneState::Written),
            ("mailchimp", LaneState::Failed),
        ]);
        #[rustfmt::skip]
        let rows = [
            ("mailchimp", Some(StatusFilter::Failed), true),
            ("mailchimp", None, true),
            ("hubspot", Some(StatusFilter::Failed), false),
            ("hubspot", Some(StatusFilter::Completed), true),
            ("mailchimp", Some(StatusFilter::Completed), false),
            ("zoho", None, false),
        ];
        for (destination, status, selected) in rows {
            assert_eq!(
                at_destination(&two, destination, status),
                selected,
                "{destination} {status:?}"
            );
        }
        let mut alone = receipt(&[]);
        assert!(at_destination(
            &alone,
            "hubspot",
            Some(StatusFilter::Received)
        ));
        alone.status = ReceiptStatus::Completed;
        alone.delivered_to = Some("mailchimp".into());
        assert!(!at_destination(&alone, "hubspot", None));
        assert!(at_destination(
            &alone,
            "mailchimp",
            Some(StatusFilter::Completed)
        ));
    }

    #[test]
    fn a_redrive_puts_back_failed_lanes_and_never_a_written_one() {
        let failed = receipt(&[
            ("hubspot", LaneState::Failed),
            ("mailchimp", LaneState::Failed),
            ("dynamodb", LaneState::Written),
        ]);
        let states = |lanes: Lanes| -> Vec<(String, LaneState)> {
            lanes
                .into_iter()
                .map(|(name, lane)| (name, lane.state))
                .collect()
        };
        assert_eq!(
            states(redriven(&failed, None).unwrap().unwrap()),
            [
                ("dynamodb".to_owned(), LaneState::Written),
                ("hubspot".to_owned(), LaneState::Pending),
                ("mailchimp".to_owned(), LaneState::Pending),
            ]
        );
        assert_eq!(
            states(redriven(&failed, Some("mailchimp")).unwrap().unwrap()),
            [
                ("dynamodb".to_owned(), LaneState::Written),
                ("hubspot".to_owned(), LaneState::Failed),
                ("mailchimp".to_owned(), LaneState::Pending),
            ]
        );
        assert_eq!(
            redriven(&failed, Some("dynamodb")),
            Err("dynamodb is WRITTEN, never delivered again".to_owned())
        );
        assert_eq!(
            redriven(&failed, Some("zoho")),
            Err("it does not go to zoho".to_owned())
        );
        assert_eq!(redriven(&receipt(&[]), Some("hubspot")), Ok(None));
    }
}
