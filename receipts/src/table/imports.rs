//! What `receipts audit` and `import` read and write: the status of many
//! receipts by key (batched, keys and status only: never form data), and
//! an imported receipt stored only where none is.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use shared::receipt::attr;
use shared::{Receipt, ReceiptStatus};

use super::{failed_condition, s, Item, ReceiptsTable, TableError};

/// BatchGetItem's most keys a request.
const KEYS_PER_BATCH: usize = 100;
/// How often keys DynamoDB left unprocessed are asked again.
const UNPROCESSED_TRIES: u32 = 8;

impl ReceiptsTable {
    /// The status of each receipt of `keys` that exists (consistent reads).
    pub async fn statuses(
        &self,
        keys: &[String],
    ) -> Result<HashMap<String, ReceiptStatus>, TableError> {
        let mut found = HashMap::new();
        for batch in keys.chunks(KEYS_PER_BATCH) {
            let mut asked: Vec<Item> = batch
                .iter()
                .map(|key| HashMap::from([(attr::PK.to_owned(), s(key))]))
                .collect();
            let mut tries = 0;
            while !asked.is_empty() {
                if tries == UNPROCESSED_TRIES {
                    return Err(TableError::Store(
                        "DynamoDB kept keys unprocessed (throttled): run it again later".to_owned(),
                    ));
                }
                if tries > 0 {
                    tokio::time::sleep(Duration::from_millis(100 << tries.min(5))).await;
                }
                tries += 1;
                let request = KeysAndAttributes::builder()
                    .set_keys(Some(std::mem::take(&mut asked)))
                    .projection_expression("#pk, #status")
                    .expression_attribute_names("#pk", attr::PK)
                    .expression_attribute_names("#status", attr::STATUS)
                    .consistent_read(true)
                    .build()
                    .map_err(|error| TableError::Store(error.to_string()))?;
                let output = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, request)
                    .send()
                    .await
                    .map_err(TableError::store)?;
                let items = output
                    .responses
                    .and_then(|mut tables| tables.remove(&self.table))
                    .unwrap_or_default();
                for item in items {
                    let text = |name| match item.get(name) {
                        Some(AttributeValue::S(text)) => Some(text.clone()),
                        _ => None,
                    };
                    let status = text(attr::STATUS).and_then(|status| {
                        serde_json::from_value(serde_json::Value::String(status)).ok()
                    });
                    if let (Some(key), Some(status)) = (text(attr::PK), status) {
                        found.insert(key, status);
                    }
                }
                asked = output
                    .unprocessed_keys
                    .and_then(|mut tables| tables.remove(&self.table))
                    .map(|left| left.keys)
                    .unwrap_or_default();
            }
        }
        Ok(found)
    }

    /// Stores an imported receipt unless one is under its key (a webhook's
    /// or an earlier import's): `Ok(true)` when this call stored it.
    pub async fn put_imported(&self, receipt: &Receipt) -> Result<bool, TableError> {
        let item: Item = serde_dynamo::to_item(receipt)
            .map_err(|error| TableError::Store(format!("receipt not storable: {error}")))?;
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", attr::PK)
            .send()
            .await;
        Ok(!failed_condition(put)?)
    }
}
