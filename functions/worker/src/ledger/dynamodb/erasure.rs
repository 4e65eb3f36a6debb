//! The erasure markers `receipts forget` leaves (`shared::erasure`), as the
//! worker reads them before any destination call: one item's `erasedAt`,
//! read consistently, nothing more of it.

use shared::receipt::attr;

use super::{s, store_error, DynamoLedger};
use crate::ledger::LedgerError;

impl DynamoLedger {
    pub(super) async fn erasure_of(&self, marker: &str) -> Result<Option<String>, LedgerError> {
        let read = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, s(marker))
            .consistent_read(true)
            .projection_expression("#erasedAt")
            .expression_attribute_names("#erasedAt", attr::ERASED_AT)
            .send()
            .await
            .map_err(|error| store_error(&error))?;
        Ok(read
            .item()
            .and_then(|item| item.get(attr::ERASED_AT))
            .and_then(|value| value.as_s().ok())
            .cloned())
    }
}
