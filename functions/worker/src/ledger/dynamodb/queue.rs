//! The receipts table as the queue of waiting receipts: queries of the
//! sparse queue index, which holds keys and `receivedAt` only.

use std::collections::HashMap;

use aws_edge::item_size::item_size;
use aws_sdk_dynamodb::types::AttributeValue;
use shared::receipt::Timestamp;
use shared::receipt::{attr, FAILED, NOTICE, PENDING, QUEUE_INDEX};
use shared::IdempotencyKey;

use super::{query_error, s, DynamoLedger};
use crate::ledger::{Census, Cursor, DuePage, DueQuery, DueReceipt, LedgerError, PendingQueue};

impl DynamoLedger {
    /// Reads one partition of the queue index to the end or to `deadline`;
    /// `each` sees every entry (the keys and `receivedAt`: all the index
    /// holds, about 100 bytes).
    async fn read_queue(
        &self,
        queue: &str,
        deadline: std::time::Instant,
        census: &mut Census,
        mut each: impl FnMut(&HashMap<String, AttributeValue>),
    ) -> Result<bool, LedgerError> {
        let mut start = None;
        loop {
            let output = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(QUEUE_INDEX)
                .key_condition_expression("#queue = :queue")
                .expression_attribute_names("#queue", attr::QUEUE)
                .expression_attribute_values(":queue", s(queue))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(query_error)?;
            census.read += usize::try_from(output.scanned_count()).unwrap_or(0);
            census.bytes_read += output.items().iter().map(item_size).sum::<usize>();
            output.items().iter().for_each(&mut each);
            match output.last_evaluated_key {
                Some(last) if std::time::Instant::now() < deadline => start = Some(last),
                Some(_) => return Ok(false),
                None => return Ok(true),
            }
        }
    }
}

impl PendingQueue for DynamoLedger {
    async fn census(&self, deadline: std::time::Instant) -> Result<Census, LedgerError> {
        let mut census = Census::default();
        let mut oldest: Option<String> = None;
        let mut pending = 0;
        let pending_done = self
            .read_queue(PENDING, deadline, &mut census, |item| {
                pending += 1;
                if let Some(AttributeValue::S(received)) = item.get(attr::RECEIVED_AT) {
                    if oldest.as_ref().is_none_or(|o| received < o) {
                        oldest = Some(received.clone());
                    }
                }
            })
            .await?;
        let mut failed = 0;
        let failed_done = self
            .read_queue(FAILED, deadline, &mut census, |_| failed += 1)
            .await?;
        let mut notices = 0;
        let notices_done = self
            .read_queue(NOTICE, deadline, &mut census, |_| notices += 1)
            .await?;
        census.notices = notices;
        census.pending = pending;
        census.oldest_received_at = oldest;
        census.failed = failed;
        census.complete = pending_done && failed_done && notices_done;
        Ok(census)
    }

    async fn due(&self, query: &DueQuery, from: Option<&Cursor>) -> Result<DuePage, LedgerError> {
        let start = from.map(|cursor| {
            HashMap::from([
                (attr::PK.to_owned(), s(&cursor.key)),
                (attr::QUEUE.to_owned(), s(query.queue)),
                (attr::NEXT_ATTEMPT_AT.to_owned(), s(&cursor.next_attempt_at)),
            ])
        });
        let output = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(QUEUE_INDEX)
            .key_condition_expression("#queue = :pending AND #next <= :now")
            .filter_expression("#receivedAt <= :before")
            .expression_attribute_names("#queue", attr::QUEUE)
            .expression_attribute_names("#next", attr::NEXT_ATTEMPT_AT)
            .expression_attribute_names("#receivedAt", attr::RECEIVED_AT)
            .expression_attribute_values(":pending", s(query.queue))
            .expression_attribute_values(":now", s(&query.now))
            .expression_attribute_values(":before", s(&query.received_before))
            .limit(i32::try_from(query.page_size).unwrap_or(i32::MAX))
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(query_error)?;
        let text = |item: &HashMap<String, AttributeValue>, name: &str| match item.get(name) {
            Some(AttributeValue::S(text)) => Some(text.clone()),
            _ => None,
        };
        let next = output.last_evaluated_key().and_then(|last| {
            Some(Cursor {
                key: text(last, attr::PK)?,
                next_attempt_at: text(last, attr::NEXT_ATTEMPT_AT)?,
            })
        });
        let read = usize::try_from(output.scanned_count()).unwrap_or(0);
        let bytes_read = output.items().iter().map(item_size).sum();
        let due = output
            .items()
            .iter()
            .filter_map(|item| {
                Some(DueReceipt {
                    key: IdempotencyKey::from_stored(text(item, attr::PK)?),
                    next_attempt_at: Timestamp::from_stored(text(item, attr::NEXT_ATTEMPT_AT)?),
                })
            })
            .collect();
        Ok(DuePage {
            due,
            read,
            bytes_read,
            next,
        })
    }
}
