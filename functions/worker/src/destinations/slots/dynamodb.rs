//! Call slots on the receipts table: one item per slot, keyed
//! `slot#<account>#<n>`, with `holder` (S) and `heldUntil` (N, epoch ms).
//! A slot is taken by a conditional update (free: never held, or held
//! until a time that has passed) and given back by one conditional on its
//! holder. No receipt is read or written, and the stream's filter, which
//! passes only the senders' receipts, never passes one.

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use shared::keys::SLOT_KEY_PREFIX;
use shared::receipt::attr;

use super::{order, CallSlots, Lease, SlotsError};

/// The slot item's attributes.
pub mod slot_attr {
    pub const HOLDER: &str = "holder";
    pub const HELD_UNTIL: &str = "heldUntil";
}

#[derive(Debug, Clone)]
pub struct DynamoCallSlots {
    client: Client,
    table: String,
    /// The account's name in the keys: `mailchimp`.
    account: &'static str,
    total: u32,
}

impl DynamoCallSlots {
    pub fn new(client: Client, table: &str, account: &'static str, total: u32) -> Self {
        DynamoCallSlots {
            client,
            table: table.to_owned(),
            account,
            total,
        }
    }

    fn key(&self, slot: u32) -> AttributeValue {
        AttributeValue::S(format!("{SLOT_KEY_PREFIX}{}#{slot}", self.account))
    }
}

impl CallSlots for DynamoCallSlots {
    fn total(&self) -> u32 {
        self.total
    }

    async fn take(&self, want: u32, lease: &Lease, now_ms: u64) -> Result<Vec<u32>, SlotsError> {
        let mut taken = Vec::new();
        for slot in order(self.total, fastrand::u32(..self.total.max(1))) {
            if taken.len() as u32 >= want {
                break;
            }
            let update = self
                .client
                .update_item()
                .table_name(&self.table)
                .key(attr::PK, self.key(slot))
                .update_expression("SET #holder = :holder, #until = :until")
                .condition_expression("attribute_not_exists(#until) OR #until <= :now")
                .expression_attribute_names("#holder", slot_attr::HOLDER)
                .expression_attribute_names("#until", slot_attr::HELD_UNTIL)
                .expression_attribute_values(":holder", AttributeValue::S(lease.holder.clone()))
                .expression_attribute_values(":until", number(lease.until_ms))
                .expression_attribute_values(":now", number(now_ms))
                .send()
                .await;
            match update {
                Ok(_) => taken.push(slot),
                Err(error) if held_elsewhere(&error) => {}
                Err(error) => {
                    // What was taken is given back: a half-taken lease must
                    // not hold slots until its deadline.
                    let _ = self.give_back(&taken, lease).await;
                    return Err(unavailable(&error));
                }
            }
        }
        Ok(taken)
    }

    async fn give_back(&self, slots: &[u32], lease: &Lease) -> Result<(), SlotsError> {
        let mut first_error = None;
        for slot in slots {
            let update = self
                .client
                .update_item()
                .table_name(&self.table)
                .key(attr::PK, self.key(*slot))
                .update_expression("SET #until = :free")
                .condition_expression("#holder = :holder")
                .expression_attribute_names("#holder", slot_attr::HOLDER)
                .expression_attribute_names("#until", slot_attr::HELD_UNTIL)
                .expression_attribute_values(":holder", AttributeValue::S(lease.holder.clone()))
                .expression_attribute_values(":free", number(0))
                .send()
                .await;
            match update {
                Ok(_) => {}
                // Taken by another since its lease ran out: theirs now.
                Err(error) if held_elsewhere(&error) => {}
                Err(error) => {
                    first_error.get_or_insert_with(|| unavailable(&error));
                }
            }
        }
        // One not given back is free again at the lease's end.
        first_error.map_or(Ok(()), Err)
    }
}

fn number(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn held_elsewhere<R>(error: &SdkError<UpdateItemError, R>) -> bool {
    matches!(
        error,
        SdkError::ServiceError(failure)
            if matches!(failure.err(), UpdateItemError::ConditionalCheckFailedException(_))
    )
}

fn unavailable<R>(error: &SdkError<UpdateItemError, R>) -> SlotsError {
    use aws_sdk_dynamodb::error::ProvideErrorMetadata;
    SlotsError(
        error
            .as_service_error()
            .and_then(|e| e.code())
            .unwrap_or("unreachable")
            .to_owned(),
    )
}
