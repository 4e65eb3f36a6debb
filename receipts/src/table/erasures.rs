//! An erasure's progress and record in the receipts table: one item per
//! person under `shared::erasure::plan::job_key` (a pseudonym), holding
//! every round as JSON and a version. Each save is one conditional write
//! on the version read, so two runs for the same person at once never
//! overwrite each other unseen: the second is told to run again.
//!
//! And the one read forget needs of a person memory: the record id a
//! destination's gate item keeps.

use aws_sdk_dynamodb::types::AttributeValue;
use shared::erasure::plan::Erasures;
use shared::receipt::attr;

use super::{failed_condition, s, ReceiptsTable, TableError};

/// The item's attributes.
mod stored {
    pub const ROUNDS: &str = "erasures";
    pub const VERSION: &str = "version";
}

/// A person's erasures as read, with the version a save must find.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoredErasures {
    pub erasures: Erasures,
    /// 0: none stored yet.
    pub version: u64,
}

impl ReceiptsTable {
    /// The erasures kept under `key` (none stored: empty, version 0).
    pub async fn erasures(&self, key: &str) -> Result<StoredErasures, TableError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, s(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(TableError::store)?;
        let Some(item) = output.item else {
            return Ok(StoredErasures::default());
        };
        let unreadable = |what: &str| {
            TableError::Store(format!("the erasure's record {key} is unreadable: {what}"))
        };
        let erasures = match item.get(stored::ROUNDS) {
            Some(AttributeValue::S(json)) => serde_json::from_str(json).ok(),
            _ => None,
        }
        .ok_or_else(|| unreadable("no rounds"))?;
        let version = match item.get(stored::VERSION) {
            Some(AttributeValue::N(number)) => number.parse().ok(),
            _ => None,
        }
        .ok_or_else(|| unreadable("no version"))?;
        Ok(StoredErasures { erasures, version })
    }

    /// Saves `stored` as its next version, if the item is still at the
    /// version read; `Ok(false)` when another run saved meanwhile.
    pub async fn save_erasures(
        &self,
        key: &str,
        stored: &mut StoredErasures,
    ) -> Result<bool, TableError> {
        let json = serde_json::to_string(&stored.erasures)
            .map_err(|error| TableError::Store(format!("the erasure's record: {error}")))?;
        let next = stored.version + 1;
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(attr::PK, s(key))
            .item(stored::ROUNDS, s(&json))
            .item(stored::VERSION, AttributeValue::N(next.to_string()));
        let put = match stored.version {
            0 => put
                .condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", attr::PK),
            read => put
                .condition_expression("#version = :read")
                .expression_attribute_names("#version", stored::VERSION)
                .expression_attribute_values(":read", AttributeValue::N(read.to_string())),
        };
        if failed_condition(put.send().await)? {
            return Ok(false);
        }
        stored.version = next;
        Ok(true)
    }

    /// The destination's record id a person memory keeps on `gate`'s item
    /// (its `recordId`), if any.
    pub async fn remembered_record(&self, gate: &str) -> Result<Option<String>, TableError> {
        const RECORD_ID: &str = "recordId";
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, s(gate))
            .projection_expression("#record")
            .expression_attribute_names("#record", RECORD_ID)
            .consistent_read(true)
            .send()
            .await
            .map_err(TableError::store)?;
        Ok(output.item.and_then(|item| match item.get(RECORD_ID) {
            Some(AttributeValue::S(id)) => Some(id.clone()),
            _ => None,
        }))
    }
}
