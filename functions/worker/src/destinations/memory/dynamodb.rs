//! The person memory on the receipts table: attributes of the person's
//! gate item. `recordId` (S) and `createStartedAt` (N) for the person's
//! record; for each submission's item (its note, its lead),
//! `itemStarted:<item>` (N) while its create's outcome is unknown and
//! `itemId:<item>` (S: `<id>@<epoch seconds>`, or `<id>` as recorded before
//! times were kept) once written; the write of one removes the items
//! exactly-once no longer needs. Every update is conditional on the item
//! existing.

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use shared::receipt::attr;

use super::{Begun, ItemMark, MemoryError, PersonMemory, Recalled, WrittenItem};

/// The gate item's attributes this memory writes.
pub mod gate_attr {
    /// The destination's id of the person's record.
    pub const RECORD_ID: &str = "recordId";
    /// When a create of that record started, while its outcome is unknown.
    pub const CREATE_STARTED_AT: &str = "createStartedAt";
    /// Before an item key: when its create started.
    pub const ITEM_STARTED: &str = "itemStarted:";
    /// Before an item key: its id at the destination.
    pub const ITEM_ID: &str = "itemId:";
}

#[derive(Debug, Clone)]
pub struct DynamoPersonMemory {
    client: Client,
    table: String,
}

impl DynamoPersonMemory {
    pub fn new(client: Client, table: &str) -> Self {
        DynamoPersonMemory {
            client,
            table: table.to_owned(),
        }
    }

    /// An update of `gate`'s item, only while it exists.
    fn update(&self, gate: &str) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(gate))
            .expression_attribute_names("#pk", attr::PK)
    }

    /// Sends a conditional update: `Refused` when its condition failed on
    /// an item that exists, `Erased` when the item is gone.
    async fn conditional(
        &self,
        gate: &str,
        update: UpdateItemFluentBuilder,
    ) -> Result<Begun, MemoryError> {
        match update.send().await {
            Ok(_) => Ok(Begun::Begun),
            Err(SdkError::ServiceError(failure))
                if matches!(
                    failure.err(),
                    UpdateItemError::ConditionalCheckFailedException(_)
                ) =>
            {
                if self.exists(gate).await? {
                    Ok(Begun::Refused)
                } else {
                    Err(MemoryError::Erased)
                }
            }
            Err(error) => Err(unavailable(error)),
        }
    }

    /// A conditional update that only fails when the item is gone.
    async fn unconditional(
        &self,
        gate: &str,
        update: UpdateItemFluentBuilder,
    ) -> Result<(), MemoryError> {
        match self.conditional(gate, update).await? {
            Begun::Begun => Ok(()),
            // Only `attribute_exists(#pk)` was asked: it held after all.
            Begun::Refused => Ok(()),
        }
    }

    async fn exists(&self, gate: &str) -> Result<bool, MemoryError> {
        let item = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, s(gate))
            .consistent_read(true)
            .projection_expression("#pk")
            .expression_attribute_names("#pk", attr::PK)
            .send()
            .await
            .map_err(|error| MemoryError::Unavailable(service_code(&error)))?;
        Ok(item.item().is_some())
    }
}

impl DynamoPersonMemory {
    /// The one rule of a create whose outcome a lost answer can hide:
    /// records its start at `now`, if nothing is recorded as done
    /// (`names.0`, the id) and no other start (`names.1`) is at or after
    /// `stale_before`.
    async fn begin(
        &self,
        gate: &str,
        names: (&str, &str),
        now: u64,
        stale_before: u64,
    ) -> Result<Begun, MemoryError> {
        let update = self
            .update(gate)
            .update_expression("SET #started = :now")
            .condition_expression(
                "attribute_exists(#pk) AND attribute_not_exists(#done) \
                 AND (attribute_not_exists(#started) OR #started < :stale)",
            )
            .expression_attribute_names("#done", names.0)
            .expression_attribute_names("#started", names.1)
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":stale", n(stale_before));
        self.conditional(gate, update).await
    }

    /// The create is done, as `value`: no start in flight any more; the
    /// attributes `pruned` go in the same write.
    async fn remember(
        &self,
        gate: &str,
        names: (&str, &str),
        value: &str,
        pruned: &[String],
    ) -> Result<(), MemoryError> {
        let mut removed = String::from("#started");
        let mut update = self
            .update(gate)
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#done", names.0)
            .expression_attribute_names("#started", names.1)
            .expression_attribute_values(":value", s(value));
        for (n, name) in pruned.iter().enumerate() {
            removed.push_str(&format!(", #pruned{n}"));
            update = update.expression_attribute_names(format!("#pruned{n}"), name);
        }
        let update = update.update_expression(format!("SET #done = :value REMOVE {removed}"));
        self.unconditional(gate, update).await
    }
}

/// An item's two attributes: its id once written, its create's start.
fn item_names(item: &str) -> (String, String) {
    (
        format!("{}{item}", gate_attr::ITEM_ID),
        format!("{}{item}", gate_attr::ITEM_STARTED),
    )
}

impl PersonMemory for DynamoPersonMemory {
    async fn recall(&self, gate: &str) -> Result<Recalled, MemoryError> {
        let answer = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, s(gate))
            .consistent_read(true)
            .send()
            .await
            .map_err(|error| MemoryError::Unavailable(service_code(&error)))?;
        let mut recalled = Recalled::default();
        for (name, value) in answer.item().into_iter().flatten() {
            if name == gate_attr::RECORD_ID {
                recalled.record_id = value.as_s().ok().cloned();
            } else if name == gate_attr::CREATE_STARTED_AT {
                recalled.create_started_at = number(value);
            } else if let Some(item) = name.strip_prefix(gate_attr::ITEM_ID) {
                if let Ok(value) = value.as_s() {
                    recalled.items.insert(item.to_owned(), written_mark(value));
                }
            } else if let Some(item) = name.strip_prefix(gate_attr::ITEM_STARTED) {
                if let Some(at) = number(value) {
                    // A written item outranks its start.
                    recalled
                        .items
                        .entry(item.to_owned())
                        .or_insert(ItemMark::Started(at));
                }
            }
        }
        Ok(recalled)
    }

    async fn begin_create(
        &self,
        gate: &str,
        now: u64,
        stale_before: u64,
    ) -> Result<Begun, MemoryError> {
        let names = (gate_attr::RECORD_ID, gate_attr::CREATE_STARTED_AT);
        self.begin(gate, names, now, stale_before).await
    }

    async fn remember_record(&self, gate: &str, id: &str) -> Result<(), MemoryError> {
        let names = (gate_attr::RECORD_ID, gate_attr::CREATE_STARTED_AT);
        self.remember(gate, names, id, &[]).await
    }

    async fn forget_record(&self, gate: &str, id: &str) -> Result<(), MemoryError> {
        let update = self
            .update(gate)
            .update_expression("REMOVE #record")
            .condition_expression("attribute_exists(#pk) AND #record = :id")
            .expression_attribute_names("#record", gate_attr::RECORD_ID)
            .expression_attribute_values(":id", s(id));
        // Refused: another record is recorded now, which stays.
        self.conditional(gate, update).await.map(|_| ())
    }

    async fn begin_item(
        &self,
        gate: &str,
        item: &str,
        now: u64,
        stale_before: u64,
    ) -> Result<Begun, MemoryError> {
        let names = item_names(item);
        self.begin(gate, (&names.0, &names.1), now, stale_before)
            .await
    }

    async fn remember_item(
        &self,
        gate: &str,
        item: &str,
        written: WrittenItem<'_>,
    ) -> Result<(), MemoryError> {
        let names = item_names(item);
        let pruned: Vec<String> = written
            .pruned
            .iter()
            .filter(|other| other.as_str() != item)
            .flat_map(|other| {
                let (id, started) = item_names(other);
                [id, started]
            })
            .collect();
        let value = format!("{}@{}", written.id, written.at);
        self.remember(gate, (&names.0, &names.1), &value, &pruned)
            .await
    }
}

/// A written item's mark from its stored value: `<id>@<epoch seconds>`, or
/// `<id>` alone as recorded before times were kept (time 0). An id never
/// holds `@` (the CRMs' ids are digits, letters and `-`).
fn written_mark(value: &str) -> ItemMark {
    match value
        .rsplit_once('@')
        .and_then(|(id, at)| Some((id, at.parse().ok()?)))
    {
        Some((id, at)) => ItemMark::Written {
            id: id.to_owned(),
            at,
        },
        None => ItemMark::Written {
            id: value.to_owned(),
            at: 0,
        },
    }
}

fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.to_owned())
}

fn n(number: u64) -> AttributeValue {
    AttributeValue::N(number.to_string())
}

fn number(value: &AttributeValue) -> Option<u64> {
    value.as_n().ok().and_then(|text| text.parse().ok())
}

fn service_code<E: aws_sdk_dynamodb::error::ProvideErrorMetadata, R>(
    error: &SdkError<E, R>,
) -> String {
    match error {
        SdkError::ServiceError(failure) => failure
            .err()
            .code()
            .unwrap_or("UnknownServiceError")
            .to_owned(),
        _ => "store unreachable".to_owned(),
    }
}

fn unavailable<R>(error: SdkError<UpdateItemError, R>) -> MemoryError {
    MemoryError::Unavailable(service_code(&error))
}
