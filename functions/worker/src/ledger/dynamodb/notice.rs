//! A delivered receipt's new-lead notice (`shared::notice`) in the receipts
//! table: its claim (one send at a time; one that ended unrecorded is
//! settled UNCONFIRMED, never sent again) and the record of each send.

use aws_sdk_dynamodb::types::ReturnValue;
use shared::receipt::{attr, Timestamp, NOTICE};
use shared::IdempotencyKey;

use super::{conditional_failure, marked, n, s, DynamoLedger};
use crate::ledger::{LedgerError, Marked, NoticeClaim, NoticeSent};

impl DynamoLedger {
    pub(super) async fn take_notice(
        &self,
        key: &IdempotencyKey,
        until: &Timestamp,
        now: &Timestamp,
    ) -> Result<NoticeClaim, LedgerError> {
        let taken = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(key.as_str()))
            .update_expression("SET #claim = :until")
            .condition_expression("#notice = :pending AND attribute_not_exists(#claim)")
            .expression_attribute_names("#notice", attr::NOTICE)
            .expression_attribute_names("#claim", attr::NOTICE_CLAIMED_UNTIL)
            .expression_attribute_values(":pending", s(shared::notice::PENDING))
            .expression_attribute_values(":until", s(until.as_str()))
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        match taken {
            Ok(output) => {
                let item = output.attributes.unwrap_or_default();
                return match serde_dynamo::from_item(item) {
                    Ok(receipt) => Ok(NoticeClaim::Taken(Box::new(receipt))),
                    Err(_) => Err(LedgerError("receipt unreadable".to_owned())),
                };
            }
            Err(error) => conditional_failure(error)?,
        }
        // Held: by a send still running, or by one that ended before it
        // recorded anything (its request may have reached the endpoint).
        let lapsed = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(key.as_str()))
            .update_expression("SET #notice = :unconfirmed REMOVE #queue, #next, #claim, #fields")
            .condition_expression("#notice = :pending AND #claim < :now")
            .expression_attribute_names("#fields", attr::NOTICE_FIELDS)
            .expression_attribute_names("#notice", attr::NOTICE)
            .expression_attribute_names("#claim", attr::NOTICE_CLAIMED_UNTIL)
            .expression_attribute_names("#queue", attr::QUEUE)
            .expression_attribute_names("#next", attr::NEXT_ATTEMPT_AT)
            .expression_attribute_values(":pending", s(shared::notice::PENDING))
            .expression_attribute_values(":unconfirmed", s(shared::notice::UNCONFIRMED))
            .expression_attribute_values(":now", s(now.as_str()))
            .send()
            .await;
        match lapsed {
            Ok(_) => Ok(NoticeClaim::Unconfirmed),
            Err(error) => conditional_failure(error).map(|()| NoticeClaim::Lost),
        }
    }

    pub(super) async fn record_notice(
        &self,
        key: &IdempotencyKey,
        held: &Timestamp,
        sent: &NoticeSent,
    ) -> Result<Marked, LedgerError> {
        let request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(key.as_str()))
            .condition_expression("#notice = :pending AND #claim = :held")
            .expression_attribute_names("#notice", attr::NOTICE)
            .expression_attribute_names("#claim", attr::NOTICE_CLAIMED_UNTIL)
            .expression_attribute_values(":pending", s(shared::notice::PENDING))
            .expression_attribute_values(":held", s(held.as_str()));
        let request = match sent {
            NoticeSent::Accepted { at } => request
                .update_expression(
                    "SET #notice = :sent, #noticedAt = :at REMOVE #queue, #next, #claim, #fields",
                )
                .expression_attribute_names("#fields", attr::NOTICE_FIELDS)
                .expression_attribute_names("#noticedAt", attr::NOTICED_AT)
                .expression_attribute_names("#queue", attr::QUEUE)
                .expression_attribute_names("#next", attr::NEXT_ATTEMPT_AT)
                .expression_attribute_values(":sent", s(shared::notice::SENT))
                .expression_attribute_values(":at", s(at.as_str())),
            NoticeSent::Again { at } => request
                .update_expression(
                    "SET #queue = :queue, #next = :at, #attempts = if_not_exists(#attempts, :zero) + :one REMOVE #claim",
                )
                .expression_attribute_names("#queue", attr::QUEUE)
                .expression_attribute_names("#next", attr::NEXT_ATTEMPT_AT)
                .expression_attribute_names("#attempts", attr::NOTICE_ATTEMPTS)
                .expression_attribute_values(":queue", s(NOTICE))
                .expression_attribute_values(":at", s(at.as_str()))
                .expression_attribute_values(":zero", n(0))
                .expression_attribute_values(":one", n(1)),
            NoticeSent::Unconfirmed => request
                .update_expression(
                    "SET #notice = :unconfirmed REMOVE #queue, #next, #claim, #fields",
                )
                .expression_attribute_names("#fields", attr::NOTICE_FIELDS)
                .expression_attribute_names("#queue", attr::QUEUE)
                .expression_attribute_names("#next", attr::NEXT_ATTEMPT_AT)
                .expression_attribute_values(":unconfirmed", s(shared::notice::UNCONFIRMED)),
        };
        marked(request.send().await)
    }
}
