//! The one update every outcome of a RECEIVED receipt is written with:
//! conditional on RECEIVED, counting the attempt, ending the claim, and
//! writing the lanes of a receipt with several destinations.

use aws_sdk_dynamodb::types::AttributeValue;
use shared::receipt::attr;
use shared::ReceiptStatus;

use super::{marked, n, s, DynamoLedger};
use crate::ledger::{AttemptRecord, LedgerError, Marked};

impl DynamoLedger {
    /// An update of a receipt that is still RECEIVED, counting `attempt`.
    /// A failed condition means the receipt is gone or already settled.
    pub(super) async fn settle(
        &self,
        key: &str,
        attempt: &AttemptRecord,
        set: &str,
        remove: &str,
        names: &[(&str, &str)],
        values: Vec<(&str, AttributeValue)>,
    ) -> Result<Marked, LedgerError> {
        // Every recorded outcome ends the claim and clears the counts of
        // unrecorded claims.
        let remove = if remove.is_empty() {
            " REMOVE #claimed, #unrecorded, #solo".to_owned()
        } else {
            format!("{remove}, #claimed, #unrecorded, #solo")
        };
        // A receipt of several destinations: its lanes, whole, in the same
        // update.
        let lanes = match &attempt.lanes {
            Some(lanes) => Some(Self::lanes_value(lanes)?),
            None => None,
        };
        let set_lanes = if lanes.is_some() {
            ", #lanes = :lanes"
        } else {
            ""
        };
        let expression = format!(
            "SET #attempts = if_not_exists(#attempts, :zero) + :attempts, #lastAttemptAt = :at, {set}{set_lanes}{remove}"
        );
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(key))
            .update_expression(expression)
            .condition_expression("#status = :received")
            .expression_attribute_names("#status", attr::STATUS)
            .expression_attribute_names("#attempts", attr::ATTEMPTS)
            .expression_attribute_names("#lastAttemptAt", attr::LAST_ATTEMPT_AT)
            .expression_attribute_names("#claimed", attr::CLAIMED_UNTIL)
            .expression_attribute_names("#unrecorded", attr::UNRECORDED_CLAIMS)
            .expression_attribute_names("#solo", attr::SOLO_CLAIMS)
            .expression_attribute_values(":received", s(ReceiptStatus::Received.as_str()))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":attempts", n(attempt.attempts))
            .expression_attribute_values(":at", s(attempt.at.as_str()));
        for (placeholder, attribute) in names {
            request = request.expression_attribute_names(*placeholder, *attribute);
        }
        for (placeholder, value) in values {
            request = request.expression_attribute_values(placeholder, value);
        }
        if let Some(lanes) = lanes {
            request = request
                .expression_attribute_names("#lanes", attr::DESTINATIONS)
                .expression_attribute_values(":lanes", lanes);
        }
        marked(request.send().await)
    }
}
