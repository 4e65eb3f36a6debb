//! The lanes of a receipt with several destinations (`shared::lanes`), as
//! the receipts table holds them: one map attribute by destination name,
//! written whole with each outcome, and saved under the claim while other
//! destinations are under way.

use aws_sdk_dynamodb::types::AttributeValue;
use shared::lanes::Lanes;
use shared::receipt::{attr, Timestamp};
use shared::{IdempotencyKey, ReceiptStatus};

use super::{marked, s, DynamoLedger};
use crate::ledger::{LedgerError, Marked};

impl DynamoLedger {
    /// A receipt's lanes as the attribute that holds them.
    pub(super) fn lanes_value(lanes: &Lanes) -> Result<AttributeValue, LedgerError> {
        serde_dynamo::to_attribute_value(lanes)
            .map_err(|_| LedgerError("the destinations' lanes could not be written".to_owned()))
    }

    /// The lanes, while the receipt is RECEIVED and the claim ending at
    /// `held` is still this delivery's (`ReceiptLedger::save_lanes`).
    pub(super) async fn store_lanes(
        &self,
        key: &IdempotencyKey,
        held: &Timestamp,
        lanes: &Lanes,
    ) -> Result<Marked, LedgerError> {
        let request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(key.as_str()))
            .update_expression("SET #lanes = :lanes")
            .condition_expression("#status = :received AND #claimed = :held")
            .expression_attribute_names("#status", attr::STATUS)
            .expression_attribute_names("#claimed", attr::CLAIMED_UNTIL)
            .expression_attribute_names("#lanes", attr::DESTINATIONS)
            .expression_attribute_values(":received", s(ReceiptStatus::Received.as_str()))
            .expression_attribute_values(":held", s(held.as_str()))
            .expression_attribute_values(":lanes", Self::lanes_value(lanes)?);
        marked(request.send().await)
    }
}
