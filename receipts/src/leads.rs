//! The leads table (`Destination=dynamodb`), as `receipts forget` reads and
//! changes it: a person's rows are found by their `email` attribute, whatever
//! their key (`LEAD_KEY=submission` keys them by submission), and deleted.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use shared::lead::attr::{EMAIL, PK};

use crate::table::{failed_condition, ScanProgress, TableError, TableSize};

/// One row of the person's, as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadRow {
    pub pk: String,
    /// The address as stored (the delete is conditional on it).
    pub email: String,
}

/// The rows found, and whether the scan read the whole table.
#[derive(Debug, Default)]
pub struct Rows {
    pub rows: Vec<LeadRow>,
    pub complete: bool,
}

pub struct LeadsTable {
    client: Client,
    table: String,
}

impl LeadsTable {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        LeadsTable {
            client,
            table: table.into(),
        }
    }

    pub fn name(&self) -> &str {
        &self.table
    }

    pub async fn size(&self) -> Result<TableSize, TableError> {
        TableSize::of(&self.client, &self.table).await
    }

    /// The rows whose `email`, trimmed and lower-cased, is `email` (already
    /// normalised). A scan reading the key and the address only, at most
    /// `max_pages` pages of 1 MB.
    pub async fn rows_of(
        &self,
        email: &str,
        max_pages: usize,
        mut progress: impl FnMut(ScanProgress),
    ) -> Result<Rows, TableError> {
        let mut found = Rows::default();
        let mut so_far = ScanProgress::default();
        let mut start: Option<HashMap<String, AttributeValue>> = None;
        loop {
            let output = self
                .client
                .scan()
                .table_name(&self.table)
                .projection_expression("#pk, #email")
                .filter_expression("attribute_exists(#email)")
                .expression_attribute_names("#pk", PK)
                .expression_attribute_names("#email", EMAIL)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(TableError::store)?;
            so_far.pages += 1;
            so_far.items_read += output.scanned_count() as usize;
            for item in output.items() {
                let (Some(AttributeValue::S(pk)), Some(AttributeValue::S(stored))) =
                    (item.get(PK), item.get(EMAIL))
                else {
                    continue;
                };
                if shared::lead::normalise_email(stored).as_deref() == Some(email) {
                    so_far.matched += 1;
                    found.rows.push(LeadRow {
                        pk: pk.clone(),
                        email: stored.clone(),
                    });
                }
            }
            progress(so_far);
            match output.last_evaluated_key {
                Some(_) if so_far.pages >= max_pages => return Ok(found),
                Some(last) => start = Some(last),
                None => {
                    found.complete = true;
                    return Ok(found);
                }
            }
        }
    }

    /// Deletes a row if it still carries the address it was found with (a
    /// newer submission of someone else may have taken the key since);
    /// `true` if deleted.
    pub async fn delete(&self, row: &LeadRow) -> Result<bool, TableError> {
        let result = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(PK, AttributeValue::S(row.pk.clone()))
            .condition_expression("#email = :email")
            .expression_attribute_names("#email", EMAIL)
            .expression_attribute_values(":email", AttributeValue::S(row.email.clone()))
            .send()
            .await;
        failed_condition(result).map(|failed| !failed)
    }
}
