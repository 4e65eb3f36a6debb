//! A person's newest-wins gate (`ReceiptLedger::admit_newest`): one
//! transaction that moves the gate only while the receipt is RECEIVED,
//! tried again briefly when another delivery's transaction conflicts.

use std::time::Duration;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{TransactWriteItem, Update};
use shared::receipt::attr;

use super::{n, s, still_received, DynamoLedger, GATE_CONFLICT_PAUSE, GATE_CONFLICT_TRIES};
use crate::ledger::{GatePass, LedgerError};

impl DynamoLedger {
    pub(super) async fn pass_gate(
        &self,
        gate: &str,
        pass: &GatePass<'_>,
        expires_at: u64,
    ) -> Result<bool, LedgerError> {
        // One transaction: the gate moves only while the receipt is
        // RECEIVED, so a delivery that held a receipt `receipts forget`
        // erased never re-creates the gate it deleted.
        let unbuilt = |_| LedgerError("request not built".to_owned());
        let receipt_received = still_received(&self.table, pass.receipt).map_err(unbuilt)?;
        let gate_update = Update::builder()
            .table_name(&self.table)
            .key(attr::PK, s(gate))
            .update_expression("SET #newest = :mine, #expires = :expires")
            .condition_expression("attribute_not_exists(#pk) OR #newest <= :over")
            .expression_attribute_names("#pk", attr::PK)
            .expression_attribute_names("#newest", attr::NEWEST_AT)
            .expression_attribute_names("#expires", attr::EXPIRES_AT)
            .expression_attribute_values(":mine", s(pass.stamp))
            .expression_attribute_values(":over", s(pass.over))
            .expression_attribute_values(":expires", n(expires_at))
            .build()
            .map_err(unbuilt)?;
        // Two leads of one person in one batch take their gates at once;
        // DynamoDB cancels one with TransactionConflict. Tried again here,
        // briefly, rather than left claimed until a pass ten minutes on.
        let mut conflicts = 0;
        loop {
            let result = self
                .client
                .transact_write_items()
                .transact_items(
                    TransactWriteItem::builder()
                        .condition_check(receipt_received.clone())
                        .build(),
                )
                .transact_items(
                    TransactWriteItem::builder()
                        .update(gate_update.clone())
                        .build(),
                )
                .send()
                .await;
            let reasons =
                |cancelled: &aws_sdk_dynamodb::types::error::TransactionCanceledException,
                 code: &str| {
                    cancelled
                        .cancellation_reasons()
                        .iter()
                        .any(|reason| reason.code() == Some(code))
                };
            return match result {
                Ok(_) => Ok(true),
                Err(SdkError::ServiceError(failure)) => match failure.err() {
                    TransactWriteItemsError::TransactionCanceledException(cancelled)
                        if reasons(cancelled, "ConditionalCheckFailed") =>
                    {
                        Ok(false)
                    }
                    TransactWriteItemsError::TransactionCanceledException(cancelled)
                        if reasons(cancelled, "TransactionConflict")
                            && conflicts < GATE_CONFLICT_TRIES =>
                    {
                        conflicts += 1;
                        let pause = GATE_CONFLICT_PAUSE * (1 << conflicts)
                            + Duration::from_millis(fastrand::u64(0..25));
                        tokio::time::sleep(pause).await;
                        continue;
                    }
                    error => Err(LedgerError(
                        error.code().unwrap_or("UnknownServiceError").to_owned(),
                    )),
                },
                Err(_) => Err(LedgerError("store unreachable".to_owned())),
            };
        }
    }
}
