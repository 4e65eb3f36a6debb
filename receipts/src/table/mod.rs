//! The receipts table, as the CLI reads and changes it (the leads table is
//! `leads`; everything else is formatting and argument rules). Reads project
//! the operator's attributes only, unless `--payload` asks for the form data:
//! without it, personal data never leaves DynamoDB.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, Select};
use aws_sdk_dynamodb::Client;
use shared::receipt::{attr, OPERATOR_ATTRIBUTES, PENDING, PERSONAL_ATTRIBUTES};
use shared::{IdempotencyKey, Receipt, ReceiptStatus, SubmissionId};

use crate::cli::{StatusFilter, Window};

type Item = HashMap<String, AttributeValue>;

#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// A failed call, in one line (`aws_error::one_line`).
    #[error("{0}")]
    Store(String),
    #[error("{0:?} is not a submission id")]
    BadId(String),
}

fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.to_owned())
}

/// `Ok(true)` when an update's condition failed, `Ok(false)` when it was
/// written.
/// Of any conditional write (update, delete, of either table).
pub(crate) fn failed_condition<T, E, R>(
    result: Result<T, SdkError<E, R>>,
) -> Result<bool, TableError>
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match result {
        Ok(_) => Ok(false),
        Err(SdkError::ServiceError(failure))
            if failure.err().code() == Some("ConditionalCheckFailedException") =>
        {
            Ok(true)
        }
        Err(error) => Err(TableError::store(error)),
    }
}

impl TableError {
    /// A DynamoDB call that failed, in one line.
    pub fn store<E: ProvideErrorMetadata + std::error::Error + 'static, R: std::fmt::Debug>(
        error: SdkError<E, R>,
    ) -> TableError {
        TableError::Store(crate::aws_error::one_line("DynamoDB", &error))
    }
}

/// What a read brings back from DynamoDB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// [`OPERATOR_ATTRIBUTES`]: no personal data (the default).
    WithoutPersonalData,
    /// Those and the payload (`--payload`).
    WithPayload,
}

impl Reading {
    pub fn of(payload: bool) -> Self {
        if payload {
            Reading::WithPayload
        } else {
            Reading::WithoutPersonalData
        }
    }

    /// The projection expression and its names (`#a0`...: several of the
    /// attribute names are DynamoDB reserved words).
    fn projection(self) -> (String, HashMap<String, String>) {
        let personal: &[&str] = match self {
            Reading::WithoutPersonalData => &[],
            Reading::WithPayload => PERSONAL_ATTRIBUTES,
        };
        let names: HashMap<String, String> = OPERATOR_ATTRIBUTES
            .iter()
            .chain(personal)
            .enumerate()
            .map(|(n, attribute)| (format!("#a{n}"), (*attribute).to_owned()))
            .collect();
        let mut placeholders: Vec<&String> = names.keys().collect();
        placeholders.sort_by_key(|p| p[2..].parse::<usize>().unwrap_or(0));
        let expression = placeholders
            .into_iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ");
        (expression, names)
    }
}

/// Which receipts a scan selects.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub status: Option<StatusFilter>,
    pub window: Window,
    /// Only receipts whose lead has this normalised e-mail (read from the
    /// payload, so only with [`Reading::WithPayload`]).
    pub email: Option<String>,
    /// Stop after this many pages (each at most 1 MB, DynamoDB's page
    /// size): a bound on what the scan costs. `None`: the whole table.
    pub max_pages: Option<usize>,
}

/// How far a scan got: told after each page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanProgress {
    pub pages: usize,
    pub items_read: usize,
    pub matched: usize,
}

/// What the table says of its size (DescribeTable, which DynamoDB updates
/// about every six hours).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableSize {
    pub items: i64,
    pub bytes: i64,
}

impl TableSize {
    /// What DescribeTable says of `table`'s size.
    pub async fn of(client: &Client, table: &str) -> Result<TableSize, TableError> {
        let output = client
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(TableError::store)?;
        let table = output.table();
        Ok(TableSize {
            items: table.and_then(|t| t.item_count()).unwrap_or(0),
            bytes: table.and_then(|t| t.table_size_bytes()).unwrap_or(0),
        })
    }
}

/// What a redrive did to one receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redriven {
    Queued,
    /// Delivered already: never redriven.
    Completed,
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
        text(attr::NEXT_ATTEMPT_AT)
            .unwrap_or("the claim's end")
            .to_owned()
    })
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

/// Receipts found, and items that did not read as receipts.
#[derive(Debug, Default)]
pub struct Found {
    pub receipts: Vec<Receipt>,
    pub unreadable: usize,
    /// `false` when `Selection::max_pages` stopped the scan first.
    pub complete: bool,
}

impl Found {
    /// Newest first: receipt timestamps sort as text; the submission id
    /// breaks ties so the order is the same on every run.
    fn newest_first(&mut self) {
        self.receipts.sort_by(|a, b| {
            b.received_at
                .cmp(&a.received_at)
                .then_with(|| a.submission_id.cmp(&b.submission_id))
        });
    }
}

pub struct ReceiptsTable {
    client: Client,
    table: String,
}

impl ReceiptsTable {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        ReceiptsTable {
            client,
            table: table.into(),
        }
    }

    pub fn name(&self) -> &str {
        &self.table
    }

    /// The key of a Static Forms submission id, or any sender's full key
    /// (`tally:FORM_RESPONSE:2wgx4n`) given as it is.
    pub fn key_of(id: &str) -> Result<String, TableError> {
        if shared::Sender::of_key(id).is_some() {
            return Ok(id.to_owned());
        }
        let id = SubmissionId::parse(id).map_err(|_| TableError::BadId(id.to_owned()))?;
        Ok(
            IdempotencyKey::for_submission(shared::Sender::StaticForms, &id)
                .as_str()
                .to_owned(),
        )
    }

    pub async fn get(&self, key: &str, reading: Reading) -> Result<Option<Receipt>, TableError> {
        let (projection, names) = reading.projection();
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, AttributeValue::S(key.to_owned()))
            .projection_expression(projection)
            .set_expression_attribute_names(Some(names))
            .consistent_read(true)
            .send()
            .await
            .map_err(TableError::store)?;
        Ok(output
            .item
            .and_then(|item| serde_dynamo::from_item(item).ok()))
    }

    /// What DescribeTable says of the table's size.
    pub async fn size(&self) -> Result<TableSize, TableError> {
        TableSize::of(&self.client, &self.table).await
    }

    /// The receipts `selection` names, read as `reading` says, newest first;
    /// `progress` is told after each page. A scan, which reads the whole
    /// table (a scan has no order, so every match is read before the newest
    /// can be told): an operator's tool, not a pass. (The worker's queue
    /// index holds keys only; reading receipts whole from it would cost a
    /// read per receipt on top.)
    pub async fn select(
        &self,
        selection: &Selection,
        reading: Reading,
        mut progress: impl FnMut(ScanProgress),
    ) -> Result<Found, TableError> {
        let status = selection.status;
        let window = &selection.window;
        let (projection, mut names) = reading.projection();
        let mut conditions = Vec::new();
        let mut values = HashMap::new();
        if selection.email.is_some() {
            // Only receipts that still hold form data can name anyone.
            conditions.push("attribute_exists(#payload)");
            names.insert("#payload".to_owned(), attr::PAYLOAD.to_owned());
        }
        let status_text = match status {
            Some(StatusFilter::Received) => Some(ReceiptStatus::Received.as_str()),
            Some(StatusFilter::Completed) => Some(ReceiptStatus::Completed.as_str()),
            Some(StatusFilter::Failed) => Some(ReceiptStatus::Failed.as_str()),
            Some(StatusFilter::Pending) | None => None,
        };
        if let Some(text) = status_text {
            conditions.push("#status = :status");
            names.insert("#status".to_owned(), attr::STATUS.to_owned());
            values.insert(":status".to_owned(), AttributeValue::S(text.to_owned()));
        }
        // Newest-wins gates share the table; they are no receipts.
        conditions.push("NOT begins_with(#pk, :gate)");
        names.insert("#pk".to_owned(), attr::PK.to_owned());
        values.insert(
            ":gate".to_owned(),
            AttributeValue::S(shared::newest::GATE_KEY_PREFIX.to_owned()),
        );
        if status == Some(StatusFilter::Pending) {
            conditions.push("#queue = :pending");
            names.insert("#queue".to_owned(), attr::QUEUE.to_owned());
            values.insert(":pending".to_owned(), AttributeValue::S(PENDING.to_owned()));
        }
        if let Some(since) = &window.since {
            conditions.push("#receivedAt >= :since");
            values.insert(":since".to_owned(), AttributeValue::S(since.clone()));
        }
        if let Some(until) = &window.until {
            conditions.push("#receivedAt <= :until");
            values.insert(":until".to_owned(), AttributeValue::S(until.clone()));
        }
        if window.since.is_some() || window.until.is_some() {
            names.insert("#receivedAt".to_owned(), attr::RECEIVED_AT.to_owned());
        }
        let filter = (!conditions.is_empty()).then(|| conditions.join(" AND "));

        let mut found = Found::default();
        let mut so_far = ScanProgress::default();
        let mut start: Option<Item> = None;
        loop {
            let (items, last, scanned) = {
                let output = self
                    .client
                    .scan()
                    .table_name(&self.table)
                    // Named, so a policy that allows only these attributes
                    // (docs/personal-data.md) lets the scan through.
                    .select(Select::SpecificAttributes)
                    .projection_expression(&projection)
                    .set_filter_expression(filter.clone())
                    .set_expression_attribute_names(Some(names.clone()))
                    .set_expression_attribute_values((!values.is_empty()).then(|| values.clone()))
                    .set_exclusive_start_key(start)
                    .send()
                    .await
                    .map_err(TableError::store)?;
                let scanned = output.scanned_count() as usize;
                (
                    output.items.unwrap_or_default(),
                    output.last_evaluated_key,
                    scanned,
                )
            };
            so_far.pages += 1;
            so_far.items_read += scanned;
            for item in items {
                match serde_dynamo::from_item::<_, Receipt>(item) {
                    Ok(receipt) => {
                        let wanted = selection.email.as_ref().is_none_or(|email| {
                            shared::lead::email_of(&receipt).as_ref() == Some(email)
                        });
                        if wanted {
                            so_far.matched += 1;
                            found.receipts.push(receipt);
                        }
                    }
                    Err(_) => found.unreadable += 1,
                }
            }
            progress(so_far);
            match last {
                Some(_) if selection.max_pages.is_some_and(|max| so_far.pages >= max) => {
                    found.newest_first();
                    return Ok(found);
                }
                Some(last) => start = Some(last),
                None => {
                    found.complete = true;
                    found.newest_first();
                    return Ok(found);
                }
            }
        }
    }

    /// Removes a receipt's personal data. A RECEIVED or FAILED receipt
    /// becomes ERASED (never delivered nor redriven; out of every queue;
    /// expiring at `expires_at`); a COMPLETED one loses its payload. Each
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
                 REMOVE {remove_personal}, #queue, #next, #unrecorded, #solo, #lastError, #lastStatus, \
                 #failedAt, #reason, #failureStatus"
            ))
            .condition_expression("#status = :received OR #status = :failed")
            .expression_attribute_names("#status", attr::STATUS)
            .expression_attribute_names("#erasedAt", attr::ERASED_AT)
            .expression_attribute_names("#expiresAt", attr::EXPIRES_AT)
            .expression_attribute_names("#queue", attr::QUEUE)
            .expression_attribute_names("#next", attr::NEXT_ATTEMPT_AT)
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
            .condition_expression("#status = :completed AND attribute_exists(#personal0)")
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

    /// Whether an item with this key exists (keys only are read).
    pub async fn exists(&self, key: &str) -> Result<bool, TableError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, AttributeValue::S(key.to_owned()))
            .projection_expression("#pk")
            .expression_attribute_names("#pk", attr::PK)
            .consistent_read(true)
            .send()
            .await
            .map_err(TableError::store)?;
        Ok(output.item.is_some())
    }

    /// Back into the reconciler's queue: RECEIVED, attempts reset, due at
    /// `now`, the age limit counted from now, no expiry (TTL only removes
    /// delivered receipts). Only a receipt that exists, is not COMPLETED,
    /// and, if RECEIVED, is due by `now`: a receipt claimed by a delivery
    /// (or deferred) is left to the worker. `now` is written in the table's
    /// timestamp format, the one its text order relies on.
    pub async fn redrive(&self, key: &str, now: &str) -> Result<Redriven, TableError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, AttributeValue::S(key.to_owned()))
            .update_expression(
                "SET #status = :received, #attempts = :zero, #next = :now, #queue = :pending, #redrivenAt = :now \
                 REMOVE #failedAt, #reason, #failureStatus, #lastError, #lastStatus, #expiresAt",
            )
            .condition_expression(
                "attribute_exists(#pk) AND (#status = :failed OR (#status = :received AND \
                 (attribute_not_exists(#next) OR #next <= :now)))",
            )
            .expression_attribute_names("#pk", attr::PK)
            .expression_attribute_names("#status", attr::STATUS)
            .expression_attribute_names("#attempts", attr::ATTEMPTS)
            .expression_attribute_names("#next", attr::NEXT_ATTEMPT_AT)
            .expression_attribute_names("#queue", attr::QUEUE)
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
            .expression_attribute_values(":pending", AttributeValue::S(PENDING.to_owned()))
            .send()
            .await;
        if !failed_condition(result)? {
            return Ok(Redriven::Queued);
        }
        // Say why: gone, delivered, erased, or claimed or deferred.
        Ok(match self.get(key, Reading::WithoutPersonalData).await? {
            Some(receipt) if receipt.status == ReceiptStatus::Received => {
                Redriven::Waiting(receipt.next_attempt_at.unwrap_or_default())
            }
            Some(receipt) if receipt.status == ReceiptStatus::Erased => Redriven::Erased,
            Some(_) => Redriven::Completed,
            None => Redriven::Missing,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_without_payload_names_every_operator_attribute_and_nothing_personal() {
        let (expression, names) = Reading::WithoutPersonalData.projection();
        let mut named: Vec<&str> = expression
            .split(", ")
            .map(|placeholder| names[placeholder].as_str())
            .collect();
        named.sort_unstable();
        let mut operator = OPERATOR_ATTRIBUTES.to_vec();
        operator.sort_unstable();
        assert_eq!(named, operator);
        for personal in PERSONAL_ATTRIBUTES {
            assert!(!names.values().any(|name| name == personal), "{personal}");
        }
        let (expression, names) = Reading::WithPayload.projection();
        let named: Vec<&str> = expression
            .split(", ")
            .map(|placeholder| names[placeholder].as_str())
            .collect();
        assert!(named.contains(&attr::PAYLOAD), "{expression}");
        assert_eq!(
            named.len(),
            OPERATOR_ATTRIBUTES.len() + PERSONAL_ATTRIBUTES.len()
        );
    }

    /// docs/personal-data.md's IAM policy allows exactly what the CLI reads
    /// without `--payload`: a policy that drifted would refuse a plain
    /// `list`, or allow the form data.
    #[test]
    fn the_documented_operator_policy_allows_exactly_the_operator_attributes() {
        let page = include_str!("../../docs/personal-data.md");
        let section = page
            .split("## An operator without personal data")
            .nth(1)
            .expect("the section");
        let json = section
            .split("```json")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("a JSON block");
        let policy: serde_json::Value = serde_json::from_str(json).expect("valid JSON");
        let statement = &policy["Statement"][0];
        let mut allowed: Vec<&str> = statement["Condition"]["ForAllValues:StringEquals"]
            ["dynamodb:Attributes"]
            .as_array()
            .expect("an attribute list")
            .iter()
            .map(|name| name.as_str().unwrap())
            .collect();
        allowed.sort_unstable();
        let mut operator = OPERATOR_ATTRIBUTES.to_vec();
        operator.sort_unstable();
        assert_eq!(allowed, operator);
        assert_eq!(
            statement["Condition"]["StringEqualsIfExists"]["dynamodb:Select"],
            "SPECIFIC_ATTRIBUTES"
        );
    }
}
