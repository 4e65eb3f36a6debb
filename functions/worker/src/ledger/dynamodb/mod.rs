//! The DynamoDB side of the worker: the SDK client, and the receipts table
//! as the ledger (claims and conditional updates of RECEIVED receipts); as
//! the queue of waiting ones (queries of the sparse, keys-only queue index)
//! in `queue`.

mod erasure;
mod identical;
mod lanes;
mod newest;
mod notice;
mod queue;
mod settle;

use std::time::Duration;

use aws_edge::CallLimits;
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::query::QueryError;
use aws_sdk_dynamodb::operation::update_item::{UpdateItemError, UpdateItemOutput};
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, ReturnValue};
use aws_sdk_dynamodb::Client;
use shared::duplicates::FirstSubmission;
use shared::receipt::Timestamp;
use shared::receipt::{attr, FAILED, NOTICE, PENDING, PERSONAL_ATTRIBUTES};
use shared::{IdempotencyKey, ReceiptStatus};

use super::{
    AttemptRecord, Claim, Completion, Ending, GatePass, LedgerError, Marked, NoticeClaim,
    NoticeSent, ReceiptLedger, UnreadableItem,
};
use crate::decide::AttemptError;

/// The SDK configuration with bounded retries and time limits: a stuck call
/// must end while the invocation still has time to report it. Tests add an
/// endpoint and credentials to it.
pub fn sdk_loader() -> aws_config::ConfigLoader {
    aws_edge::sdk_loader(CallLimits {
        attempts: 4,
        backoff: None,
        connect: Duration::from_secs(1),
        attempt: Some(Duration::from_secs(2)),
        call: Duration::from_secs(6),
    })
}

/// A gate's transaction cancelled by a concurrent one on the same gate is
/// tried again this many times, after 100, 200, 400 ms (and a jitter).
pub const GATE_CONFLICT_TRIES: u32 = 3;
const GATE_CONFLICT_PAUSE: Duration = Duration::from_millis(50);

pub struct DynamoLedger {
    client: Client,
    table: String,
}

impl DynamoLedger {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        DynamoLedger {
            client,
            table: table.into(),
        }
    }

    /// Opens the connection during init instead of on the first batch
    /// (`aws_edge::warm_up`).
    pub async fn warm_up(&self) {
        aws_edge::warm_up(&self.client, &self.table).await;
    }
}

/// What a conditional update of a receipt did: `Updated`, or `NotPending`
/// when its condition failed (gone, settled, or no longer this claim's).
fn marked(
    result: Result<UpdateItemOutput, SdkError<UpdateItemError, HttpResponse>>,
) -> Result<Marked, LedgerError> {
    match result {
        Ok(_) => Ok(Marked::Updated),
        Err(error) => conditional_failure(error).map(|()| Marked::NotPending),
    }
}

/// `Ok(())` for a failed condition; any other error as a `LedgerError`.
fn conditional_failure(error: SdkError<UpdateItemError, HttpResponse>) -> Result<(), LedgerError> {
    match error {
        SdkError::ServiceError(failure)
            if matches!(
                failure.err(),
                UpdateItemError::ConditionalCheckFailedException(_)
            ) =>
        {
            Ok(())
        }
        SdkError::ServiceError(failure) => Err(LedgerError(
            failure
                .err()
                .code()
                .unwrap_or("UnknownServiceError")
                .to_owned(),
        )),
        _ => Err(LedgerError("store unreachable".to_owned())),
    }
}

fn query_error(error: SdkError<QueryError, HttpResponse>) -> LedgerError {
    store_error(&error)
}

/// A failed call as the ledger says it: the store's error code (never its
/// message), or that the store could not be reached.
fn store_error<E: ProvideErrorMetadata>(error: &SdkError<E, HttpResponse>) -> LedgerError {
    LedgerError(match error.as_service_error() {
        Some(failure) => failure.code().unwrap_or("UnknownServiceError").to_owned(),
        None => "store unreachable".to_owned(),
    })
}

fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.to_owned())
}

fn n(number: impl ToString) -> AttributeValue {
    AttributeValue::N(number.to_string())
}

fn status_value(status: Option<u16>) -> AttributeValue {
    match status {
        Some(status) => n(status),
        None => AttributeValue::Null(true),
    }
}

impl ReceiptLedger for DynamoLedger {
    async fn admit_newest(
        &self,
        gate: &str,
        pass: &GatePass<'_>,
        expires_at: u64,
    ) -> Result<bool, LedgerError> {
        self.pass_gate(gate, pass, expires_at).await
    }

    async fn claim_notice(
        &self,
        key: &IdempotencyKey,
        until: &Timestamp,
        now: &Timestamp,
    ) -> Result<NoticeClaim, LedgerError> {
        self.take_notice(key, until, now).await
    }

    async fn settle_notice(
        &self,
        key: &IdempotencyKey,
        held: &Timestamp,
        sent: &NoticeSent,
    ) -> Result<Marked, LedgerError> {
        self.record_notice(key, held, sent).await
    }

    async fn first_of_identical(
        &self,
        item: &str,
        first: &FirstSubmission,
    ) -> Result<Option<String>, LedgerError> {
        self.first_identical(item, first).await
    }

    async fn erased_at(&self, marker: &str) -> Result<Option<String>, LedgerError> {
        self.erasure_of(marker).await
    }

    async fn claim(
        &self,
        key: &IdempotencyKey,
        seen: Option<&Timestamp>,
        until: &Timestamp,
        now: &Timestamp,
    ) -> Result<Claim, LedgerError> {
        // The claim is its own attribute, outside the queue index: taking
        // it rewrites no index entry (the next attempt stays as it is).
        let free = "(attribute_not_exists(#claimed) OR #claimed < :now)";
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(key.as_str()))
            .update_expression(
                "SET #claimed = :until, #unrecorded = if_not_exists(#unrecorded, :zero) + :one",
            )
            .expression_attribute_names("#status", attr::STATUS)
            .expression_attribute_names("#next", attr::NEXT_ATTEMPT_AT)
            .expression_attribute_names("#claimed", attr::CLAIMED_UNTIL)
            .expression_attribute_names("#unrecorded", attr::UNRECORDED_CLAIMS)
            .expression_attribute_values(":received", s(ReceiptStatus::Received.as_str()))
            .expression_attribute_values(":until", s(until.as_str()))
            .expression_attribute_values(":now", s(now.as_str()))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            // The receipt as stored, payload included: the index holds keys
            // only, and the stream's image may be older than the receipt.
            .return_values(ReturnValue::AllNew);
        request = match seen {
            Some(seen) => request
                .condition_expression(format!("#status = :received AND #next = :seen AND {free}"))
                .expression_attribute_values(":seen", s(seen.as_str())),
            None => request.condition_expression(format!(
                "#status = :received AND attribute_not_exists(#next) AND {free}"
            )),
        };
        claimed(request.send().await, key)
    }

    async fn claim_alone(
        &self,
        key: &IdempotencyKey,
        held: &Timestamp,
    ) -> Result<Claim, LedgerError> {
        let request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(key.as_str()))
            .update_expression("SET #solo = if_not_exists(#solo, :zero) + :one")
            .condition_expression("#status = :received AND #claimed = :held")
            .expression_attribute_names("#status", attr::STATUS)
            .expression_attribute_names("#claimed", attr::CLAIMED_UNTIL)
            .expression_attribute_names("#solo", attr::SOLO_CLAIMS)
            .expression_attribute_values(":received", s(ReceiptStatus::Received.as_str()))
            .expression_attribute_values(":held", s(held.as_str()))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .return_values(ReturnValue::AllNew);
        claimed(request.send().await, key)
    }

    async fn mark_completed(
        &self,
        key: &IdempotencyKey,
        attempt: &AttemptRecord,
        completion: &Completion,
    ) -> Result<Marked, LedgerError> {
        let key = key.as_str();
        // A receipt delivered after a failure keeps no failure fields, and,
        // unless kept on purpose, no personal data: in this same update, so
        // no delivered receipt ever holds it.
        // A notice that waits keeps the receipt in the queue index, in its
        // own partition and due now; otherwise it leaves the index.
        let mut remove = match completion.notice {
            Some(_) => " REMOVE #lastError, #lastHttpStatus, #failedAt, #reason, #failureStatus",
            None => " REMOVE #queue, #nextAttemptAt, #lastError, #lastHttpStatus, #failedAt, #reason, #failureStatus",
        }
        .to_owned();
        // A waiting notice's answers are set by this update, not removed.
        let notice_fields = completion
            .notice
            .as_ref()
            .and_then(|notice| notice.fields.as_deref());
        let personal: Vec<(String, &str)> = PERSONAL_ATTRIBUTES
            .iter()
            .enumerate()
            .filter(|_| !completion.keeps_payload())
            .filter(|(_, attribute)| notice_fields.is_none() || **attribute != attr::NOTICE_FIELDS)
            .map(|(n, attribute)| (format!("#personal{n}"), *attribute))
            .collect();
        for (placeholder, _) in &personal {
            remove.push_str(", ");
            remove.push_str(placeholder);
        }
        let mut names = vec![
            ("#completedAt", attr::COMPLETED_AT),
            ("#expiresAt", attr::EXPIRES_AT),
            ("#queue", attr::QUEUE),
            ("#nextAttemptAt", attr::NEXT_ATTEMPT_AT),
            ("#lastError", attr::LAST_ERROR),
            ("#lastHttpStatus", attr::LAST_HTTP_STATUS),
            ("#failedAt", attr::FAILED_AT),
            ("#reason", attr::FAILURE_REASON),
            ("#failureStatus", attr::FAILURE_HTTP_STATUS),
        ];
        names.extend(personal.iter().map(|(p, a)| (p.as_str(), *a)));
        // Where the lead went: the destination, and its record's id and
        // link where its answer gave them, or its refusal's code. One that
        // is unknown this time is removed, so a receipt never names another
        // delivery's record.
        let (status, record, refusal, duplicate_of) = match &completion.ending {
            Ending::Delivered(record) => (ReceiptStatus::Completed, Some(record), None, None),
            Ending::Refused(code) => (ReceiptStatus::Refused, None, Some(code.as_str()), None),
            Ending::Duplicate(of) => (ReceiptStatus::Duplicate, None, None, Some(of.as_str())),
            Ending::Erased => (ReceiptStatus::Erased, None, None, None),
        };
        let mut set = "#status = :status, #completedAt = :at, #expiresAt = :expires, #deliveredTo = :deliveredTo".to_owned();
        let mut values = vec![
            (":status", s(status.as_str())),
            (":expires", n(completion.expires_at)),
            (":deliveredTo", s(&completion.destination)),
        ];
        names.push(("#deliveredTo", attr::DELIVERED_TO));
        if completion.notice.is_some() {
            set.push_str(", #queue = :noticeQueue, #nextAttemptAt = :at, #notice = :noticePending");
            values.push((":noticeQueue", s(NOTICE)));
            values.push((":noticePending", s(shared::notice::PENDING)));
            names.push(("#notice", attr::NOTICE));
        }
        if let Some(fields) = notice_fields {
            set.push_str(", #noticeFields = :noticeFields");
            values.push((":noticeFields", s(fields)));
            names.push(("#noticeFields", attr::NOTICE_FIELDS));
        }
        let record = [
            (
                "#recordId",
                ":recordId",
                attr::RECORD_ID,
                record.and_then(|r| r.id()),
            ),
            (
                "#recordUrl",
                ":recordUrl",
                attr::RECORD_URL,
                record.and_then(|r| r.url()),
            ),
            ("#refusal", ":refusal", attr::REFUSAL, refusal),
            (
                "#duplicateOf",
                ":duplicateOf",
                attr::DUPLICATE_OF,
                duplicate_of,
            ),
        ];
        for (placeholder, value_placeholder, attribute, value) in record {
            names.push((placeholder, attribute));
            match value {
                Some(value) => {
                    set.push_str(&format!(", {placeholder} = {value_placeholder}"));
                    values.push((value_placeholder, s(value)));
                }
                None => {
                    remove.push_str(", ");
                    remove.push_str(placeholder);
                }
            }
        }
        self.settle(key, attempt, &set, &remove, &names, values)
            .await
    }

    async fn mark_failed(
        &self,
        key: &IdempotencyKey,
        failure: &AttemptError,
        attempt: &AttemptRecord,
    ) -> Result<Marked, LedgerError> {
        let key = key.as_str();
        self.settle(
            key,
            attempt,
            // The FAILED queue keeps `nextAttemptAt` as its sort key; no
            // expiry, so TTL never deletes a lead nobody handled.
            "#status = :failed, #failedAt = :at, #reason = :reason, #httpStatus = :httpStatus, #queue = :failedQueue",
            " REMOVE #expiresAt",
            &[
                ("#failedAt", attr::FAILED_AT),
                ("#reason", attr::FAILURE_REASON),
                ("#httpStatus", attr::FAILURE_HTTP_STATUS),
                ("#queue", attr::QUEUE),
                ("#expiresAt", attr::EXPIRES_AT),
            ],
            vec![
                (":failed", s(ReceiptStatus::Failed.as_str())),
                (":failedQueue", s(FAILED)),
                (":reason", s(&failure.code)),
                (":httpStatus", status_value(failure.status)),
            ],
        )
        .await
    }

    async fn save_lanes(
        &self,
        key: &IdempotencyKey,
        held: &Timestamp,
        lanes: &shared::lanes::Lanes,
    ) -> Result<Marked, LedgerError> {
        self.store_lanes(key, held, lanes).await
    }

    async fn defer(
        &self,
        key: &IdempotencyKey,
        next_attempt_at: &Timestamp,
        error: &AttemptError,
        attempt: &AttemptRecord,
    ) -> Result<Marked, LedgerError> {
        let key = key.as_str();
        let next_attempt_at = next_attempt_at.as_str();
        self.settle(
            key,
            attempt,
            "#nextAttemptAt = :next, #queue = :pending, #lastError = :error, #httpStatus = :httpStatus",
            // Receipts from before expiry-at-delivery lose theirs here.
            " REMOVE #expiresAt",
            &[
                ("#nextAttemptAt", attr::NEXT_ATTEMPT_AT),
                ("#queue", attr::QUEUE),
                ("#expiresAt", attr::EXPIRES_AT),
                ("#lastError", attr::LAST_ERROR),
                ("#httpStatus", attr::LAST_HTTP_STATUS),
            ],
            vec![
                (":next", s(next_attempt_at)),
                (":pending", s(PENDING)),
                (":error", s(&error.code)),
                (":httpStatus", status_value(error.status)),
            ],
        )
        .await
    }
}

/// A claim's answer: the receipt as stored now, or `Lost` when its
/// condition failed.
fn claimed(
    result: Result<UpdateItemOutput, SdkError<UpdateItemError, HttpResponse>>,
    key: &IdempotencyKey,
) -> Result<Claim, LedgerError> {
    match result {
        Ok(output) => {
            let item = output.attributes.unwrap_or_default();
            let key = match item.get(attr::PK) {
                Some(AttributeValue::S(key)) => Some(key.clone()),
                _ => Some(key.as_str().to_owned()),
            };
            Ok(Claim::Taken(Box::new(
                serde_dynamo::from_item(item).map_err(|_| UnreadableItem { key }),
            )))
        }
        Err(error) => conditional_failure(error).map(|()| Claim::Lost),
    }
}

/// A transaction's check that a receipt is still RECEIVED: what a write for
/// a receipt's person (its newest-wins gate, its leads-table row) is made
/// conditional on, so that it never happens for a person `receipts forget`
/// erased, or for a receipt another delivery settled.
pub fn still_received(
    receipts_table: &str,
    receipt: &IdempotencyKey,
) -> Result<ConditionCheck, aws_sdk_dynamodb::error::BuildError> {
    ConditionCheck::builder()
        .table_name(receipts_table)
        .key(attr::PK, s(receipt.as_str()))
        .condition_expression("#status = :received")
        .expression_attribute_names("#status", attr::STATUS)
        .expression_attribute_values(":received", s(ReceiptStatus::Received.as_str()))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::operation::transact_write_items::{
        TransactWriteItemsError, TransactWriteItemsOutput,
    };
    use aws_sdk_dynamodb::types::error::TransactionCanceledException;
    use aws_sdk_dynamodb::types::CancellationReason;
    use aws_smithy_mocks::{mock, mock_client, RuleMode};

    fn cancelled(code: &'static str) -> TransactWriteItemsError {
        TransactWriteItemsError::TransactionCanceledException(
            TransactionCanceledException::builder()
                .cancellation_reasons(CancellationReason::builder().code("None").build())
                .cancellation_reasons(CancellationReason::builder().code(code).build())
                .meta(
                    aws_sdk_dynamodb::error::ErrorMetadata::builder()
                        .code("TransactionCanceledException")
                        .build(),
                )
                .build(),
        )
    }

    async fn admit(outcomes: &[&'static str]) -> (Result<bool, LedgerError>, usize) {
        let mut answers = mock!(Client::transact_write_items).sequence();
        for outcome in outcomes {
            answers = match *outcome {
                "ok" => answers.output(|| TransactWriteItemsOutput::builder().build()),
                code => answers.error(move || cancelled(code)),
            };
        }
        let rule = answers.build();
        let client = mock_client!(aws_sdk_dynamodb, RuleMode::Sequential, [&rule]);
        let ledger = DynamoLedger::new(client, "receipts");
        let key = IdempotencyKey::from_stored("tally:FORM_RESPONSE:a".to_owned());
        let pass = GatePass {
            receipt: &key,
            stamp: "2026-12-01T10:00:00.000Z",
            over: "2026-12-01T10:00:00.000Z",
        };
        let admitted = ledger.admit_newest("gate#hmac:x", &pass, 1).await;
        (admitted, rule.num_calls())
    }

    /// Two leads of one person in one batch: the transaction DynamoDB
    /// cancelled for the other is tried again at once, not deferred to a
    /// pass; a gate taken by newer data is an answer, never retried; a
    /// conflict that does not clear is an error after a few tries.
    #[tokio::test]
    async fn a_gate_transaction_in_conflict_is_tried_again_briefly() {
        let rows: [(&[&str], Result<bool, LedgerError>, usize); 4] = [
            (&["ok"], Ok(true), 1),
            (&["TransactionConflict", "ok"], Ok(true), 2),
            (&["ConditionalCheckFailed"], Ok(false), 1),
            (
                &[
                    "TransactionConflict",
                    "TransactionConflict",
                    "TransactionConflict",
                    "TransactionConflict",
                ],
                Err(LedgerError("TransactionCanceledException".to_owned())),
                GATE_CONFLICT_TRIES as usize + 1,
            ),
        ];
        for (outcomes, expected, calls) in rows {
            assert_eq!(admit(outcomes).await, (expected, calls), "{outcomes:?}");
        }
    }
}
