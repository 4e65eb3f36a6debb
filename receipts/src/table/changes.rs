//! The receipts table's changes that an operator asks for: erase, redrive,
//! release from quarantine, and removing a newest-wins gate. Each is one
//! conditional write, so a delivery running beside it is never overtaken.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use shared::receipt::{attr, PENDING, PERSONAL_ATTRIBUTES};
use shared::ReceiptStatus;

use super::{failed_condition, s, Reading, ReceiptsTable, TableError};

/// What a redrive did to one receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redriven {
    Queued,
    /// Delivered already, or refused by the destination for good (this
    /// status): never redriven.
    Settled(ReceiptStatus),
    /// Erased at a person's request: never delivered.
    Erased,
    /// RECEIVED and not due before this time: claimed by a delivery right
    /// now, or deferred to then. The worker delivers it; a redrive would
    /// run beside it.
    Waiting(String),
    Missing,
}

/// The claim's end of a receipt (as an item) that a delivery holds: RECEIVED
/// with a claim whose outcome is not recorded. Such a delivery may write the
/// lead to the CRM until its claim ends (or it died, and will not).
fn held_until(item: &HashMap<String, AttributeValue>) -> Option<String> {
    let text = |name: &str| match item.get(name) {
        Some(AttributeValue::S(text)) => Some(text.as_str()),
        _ => None,
    };
    let claimed =
        matches!(item.get(attr::UNRECORDED_CLAIMS), Some(AttributeValue::N(n)) if n != "0");
    (text(attr::STATUS) == Some(ReceiptStatus::Received.as_str()) && claimed).then(|| {
        text(attr::CLAIMED_UNTIL)
            .unwrap_or("the claim's end")
            .to_owned()
    })
}

/// What a release did to one receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Released {
    /// Was QUARANTINED: now RECEIVED and due, for the next pass to deliver.
    Queued,
    /// Released before (at this time): nothing changed.
    Already(String),
    /// Not quarantined (this status): nothing changed.
    NotQuarantined(ReceiptStatus),
    Missing,
}

/// What `erase` did to one receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Erased {
    /// RECEIVED or FAILED: now ERASED without its payload, out of every
    /// queue, never delivered by a later claim. `held_until`: the receipt
    /// as it was at the moment of the erase (the update's old image) was
    /// RECEIVED and claimed by a delivery that had recorded no outcome: its
    /// lead may still reach the CRM, until that claim's end.
    Settled { held_until: Option<String> },
    /// COMPLETED (its payload kept by KEEP_PAYLOAD_AFTER_DELIVERY or by an
    /// earlier version): the payload removed.
    PayloadRemoved,
    /// Nothing personal left (delivered or erased since it was read), or
    /// gone.
    NothingLeft,
}

impl ReceiptsTable {
    /// Removes a receipt's personal data. A RECEIVED, FAILED or
    /// QUARANTINED receipt becomes ERASED (never delivered nor redriven;
    /// out of every queue; expiring at `expires_at`); a COMPLETED one loses
    /// its payload. Each
    /// is one conditional update, so a receipt delivered meanwhile is
    /// handled as delivered, and running it twice changes nothing more.
    pub async fn erase(&self, key: &str, now: &str, expires_at: u64) -> Result<Erased, TableError> {
        let personal = |request: aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder| {
            PERSONAL_ATTRIBUTES
                .iter()
                .enumerate()
                .fold(request, |request, (n, attribute)| {
                    request.expression_attribute_names(format!("#personal{n}"), *attribute)
                })
        };
        let remove_personal: String = (0..PERSONAL_ATTRIBUTES.len())
            .map(|n| format!("#personal{n}"))
            .collect::<Vec<_>>()
            .join(", ");
        let settle = personal(self.client.update_item())
            .table_name(&self.table)
            .key(attr::PK, AttributeValue::S(key.to_owned()))
            .update_expression(format!(
                "SET #status = :erased, #erasedAt = :now, #expiresAt = :expires \
                 REMOVE {remove_personal}, #queue, #next, #claimed, #unrecorded, #solo, #lastError, \
                 #lastStatus, #failedAt, #reason, #failureStatus"
            ))
            .condition_expression(
                "#status = :received OR #status = :failed OR #status = :quarantined",
            )
            .expression_attribute_names("#status", attr::STATUS)
            .expression_attribute_names("#erasedAt", attr::ERASED_AT)
            .expression_attribute_names("#expiresAt", attr::EXPIRES_AT)
            .expression_attribute_names("#queue", attr::QUEUE)
            .expression_attribute_names("#next", attr::NEXT_ATTEMPT_AT)
            .expression_attribute_names("#claimed", attr::CLAIMED_UNTIL)
            .expression_attribute_names("#unrecorded", attr::UNRECORDED_CLAIMS)
            .expression_attribute_names("#solo", attr::SOLO_CLAIMS)
            .expression_attribute_names("#lastError", attr::LAST_ERROR)
            .expression_attribute_names("#lastStatus", attr::LAST_HTTP_STATUS)
            .expression_attribute_names("#failedAt", attr::FAILED_AT)
            .expression_attribute_names("#reason", attr::FAILURE_REASON)
            .expression_attribute_names("#failureStatus", attr::FAILURE_HTTP_STATUS)
            .expression_attribute_values(":erased", s(ReceiptStatus::Erased.as_str()))
            .expression_attribute_values(":received", s(ReceiptStatus::Received.as_str()))
            .expression_attribute_values(":failed", s(ReceiptStatus::Failed.as_str()))
            .expression_attribute_values(
                ":quarantined",
                s(ReceiptStatus::Quarantined.as_str()),
            )
            .expression_attribute_values(":now", s(now))
            .expression_attribute_values(":expires", AttributeValue::N(expires_at.to_string()))
            // Decided from the receipt as the erase found it, not from the
            // copy read before: a pass may have claimed it since.
            .return_values(ReturnValue::AllOld)
            .send()
            .await;
        let old = match settle {
            Ok(output) => Some(output.attributes.unwrap_or_default()),
            Err(error) => {
                failed_condition(Err::<(), _>(error))?;
                None
            }
        };
        if let Some(old) = old {
            return Ok(Erased::Settled {
                held_until: held_until(&old),
            });
        }
        // Delivered (perhaps since it was read): only the payload goes.
        let strip = personal(self.client.update_item())
            .table_name(&self.table)
            .key(attr::PK, AttributeValue::S(key.to_owned()))
            .update_expression(format!("SET #erasedAt = :now REMOVE {remove_personal}"))
            .condition_expression(format!(
                "#status = :completed AND ({})",
                (0..PERSONAL_ATTRIBUTES.len())
                    .map(|n| format!("attribute_exists(#personal{n})"))
                    .collect::<Vec<_>>()
                    .join(" OR ")
            ))
            .expression_attribute_names("#status", attr::STATUS)
            .expression_attribute_names("#erasedAt", attr::ERASED_AT)
            .expression_attribute_values(":completed", s(ReceiptStatus::Completed.as_str()))
            .expression_attribute_values(":now", s(now))
            .send()
            .await;
        Ok(if failed_condition(strip)? {
            Erased::NothingLeft
        } else {
            Erased::PayloadRemoved
        })
    }

    /// Deletes an item that is no receipt (a newest-wins gate) by its key;
    /// `true` if there was one.
    pub async fn delete_gate(&self, key: &str) -> Result<bool, TableError> {
        let output = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(attr::PK, AttributeValue::S(key.to_owned()))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(TableError::store)?;
        Ok(output.attributes.is_some_and(|old| !old.is_empty()))
    }

    /// Leaves an erasure's marker (`shared::erasure`) under `key`: when the
    /// person was erased, kept until `expires_at` (as long as receipts).
    /// A later erasure of the same person moves it later.
    pub async fn leave_erasure_marker(
        &self,
        key: &str,
        erased_at: &str,
        expires_at: u64,
    ) -> Result<(), TableError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item(attr::PK, AttributeValue::S(key.to_owned()))
            .item(attr::ERASED_AT, AttributeValue::S(erased_at.to_owned()))
            .item(attr::EXPIRES_AT, AttributeValue::N(expires_at.to_string()))
            .send()
            .await
            .map_err(TableError::store)?;
        Ok(())
    }

    /// Back into the reconciler's queue: RECEIVED, attempts reset, due at
    /// `now`, the age limit counted from now, no expiry (TTL only removes
    /// delivered receipts). Only a receipt that exists, is not COMPLETED,
    /// and, if RECEIVED, is due by `now`: a receipt claimed by a delivery
    /// (or deferred) is left to the worker. `now` is written in the table's
    /// timestamp format, the one its text order relies on.
    pub async fn redrive(
        &self,
        key: &str,
        now: &str,
        lanes: Option<&shared::lanes::Lanes>,
    ) -> Result<Redriven, TableError> {
        // A receipt of several destinations: its lanes as the redrive
        // leaves them (the failed, or the one named, pending again).
        let (set_lanes, lanes) = match lanes.map(serde_dynamo::to_attribute_value) {
            Some(Ok(value)) => (", #lanes = :lanes", Some(value)),
            Some(Err(_)) => {
                return Err(TableError::Store(
                    "the destinations' lanes could not be written".to_owned(),
                ))
            }
            None => ("", None),
        };
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, AttributeValue::S(key.to_owned()))
            .update_expression(format!(
                "SET #status = :received, #attempts = :zero, #next = :now, #queue = :pending, #redrivenAt = :now{set_lanes} \
                 REMOVE #failedAt, #reason, #failureStatus, #lastError, #lastStatus, #expiresAt",
            ))
            .condition_expression(
                "attribute_exists(#pk) AND (#status = :failed OR (#status = :received AND \
                 (attribute_not_exists(#next) OR #next <= :now) AND \
                 (attribute_not_exists(#claimed) OR #claimed <= :now)))",
            )
            .expression_attribute_names("#pk", attr::PK)
            .expression_attribute_names("#status", attr::STATUS)
            .expression_attribute_names("#attempts", attr::ATTEMPTS)
            .expression_attribute_names("#next", attr::NEXT_ATTEMPT_AT)
            .expression_attribute_names("#queue", attr::QUEUE)
            .expression_attribute_names("#claimed", attr::CLAIMED_UNTIL)
            .expression_attribute_names("#redrivenAt", attr::REDRIVEN_AT)
            .expression_attribute_names("#failedAt", attr::FAILED_AT)
            .expression_attribute_names("#reason", attr::FAILURE_REASON)
            .expression_attribute_names("#failureStatus", attr::FAILURE_HTTP_STATUS)
            .expression_attribute_names("#lastError", attr::LAST_ERROR)
            .expression_attribute_names("#lastStatus", attr::LAST_HTTP_STATUS)
            .expression_attribute_names("#expiresAt", attr::EXPIRES_AT)
            .expression_attribute_values(":received", AttributeValue::S(ReceiptStatus::Received.as_str().to_owned()))
            .expression_attribute_values(":failed", AttributeValue::S(ReceiptStatus::Failed.as_str().to_owned()))
            .expression_attribute_values(":zero", AttributeValue::N("0".to_owned()))
            .expression_attribute_values(":now", AttributeValue::S(now.to_owned()))
            .expression_attribute_values(":pending", AttributeValue::S(PENDING.to_owned()));
        if let Some(lanes) = lanes {
            request = request
                .expression_attribute_names("#lanes", attr::DESTINATIONS)
                .expression_attribute_values(":lanes", lanes);
        }
        let result = request.send().await;
        if !failed_condition(result)? {
            return Ok(Redriven::Queued);
        }
        // Say why: gone, delivered, erased, or claimed or deferred.
        Ok(match self.get(key, Reading::WithoutPersonalData).await? {
            Some(receipt) if receipt.status == ReceiptStatus::Received => Redriven::Waiting(
                // Claimed until, or deferred to: whichever is later.
                receipt
                    .next_attempt_at
                    .into_iter()
                    .chain(receipt.claimed_until)
                    .max()
                    .unwrap_or_default(),
            ),
            Some(receipt) if receipt.status == ReceiptStatus::Erased => Redriven::Erased,
            Some(receipt) => Redriven::Settled(receipt.status),
            None => Redriven::Missing,
        })
    }

    /// Out of quarantine: RECEIVED, in the reconciler's queue, due at `now`,
    /// the delivery age limit counted from now; `releasedAt` records it.
    /// One conditional update on QUARANTINED, so of two releases, or a
    /// release racing an erase, only one changes the receipt, and the
    /// pass delivers it once.
    pub async fn release(&self, key: &str, now: &str) -> Result<Released, TableError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(key))
            .update_expression(
                "SET #status = :received, #queue = :pending, #next = :now, #releasedAt = :now, \
                 #redrivenAt = :now REMOVE #expiresAt",
            )
            .condition_expression("#status = :quarantined")
            .expression_attribute_names("#status", attr::STATUS)
            .expression_attribute_names("#queue", attr::QUEUE)
            .expression_attribute_names("#next", attr::NEXT_ATTEMPT_AT)
            .expression_attribute_names("#releasedAt", attr::RELEASED_AT)
            .expression_attribute_names("#redrivenAt", attr::REDRIVEN_AT)
            .expression_attribute_names("#expiresAt", attr::EXPIRES_AT)
            .expression_attribute_values(":received", s(ReceiptStatus::Received.as_str()))
            .expression_attribute_values(":quarantined", s(ReceiptStatus::Quarantined.as_str()))
            .expression_attribute_values(":pending", s(PENDING))
            .expression_attribute_values(":now", s(now))
            .send()
            .await;
        if !failed_condition(result)? {
            return Ok(Released::Queued);
        }
        Ok(match self.get(key, Reading::WithoutPersonalData).await? {
            None => Released::Missing,
            Some(receipt) => match receipt.released_at {
                Some(at) => Released::Already(at),
                None => Released::NotQuarantined(receipt.status),
            },
        })
    }
}
