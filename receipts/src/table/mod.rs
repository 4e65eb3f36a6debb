//! The receipts table, as the CLI reads and changes it (the leads table is
//! `leads`; everything else is formatting and argument rules). Reads project
//! the operator's attributes only, unless `--payload` asks for the form data:
//! without it, personal data never leaves DynamoDB.

use std::borrow::Cow;
use std::collections::HashMap;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{AttributeValue, Select};
use aws_sdk_dynamodb::Client;
use shared::receipt::{attr, OPERATOR_ATTRIBUTES, PENDING, PERSONAL_ATTRIBUTES};
use shared::{IdempotencyKey, Receipt, ReceiptStatus, SubmissionId};

use crate::cli::{StatusFilter, Window};

pub mod by_day;
pub mod changes;
pub mod config;
pub mod erasures;

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
    /// With `email`: also the delivered receipts whose waiting notice
    /// names this person (their erasure marker's key,
    /// `shared::notice::WaitingAnswers::person`), which hold the answers
    /// the notice will show but no payload to find them by.
    pub person: Option<String>,
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

    /// For the calls the CLI shares with the functions (`sender_audit::audit`).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The key of `sender`'s submission id, or any sender's full key
    /// (`tally:FORM_RESPONSE:2wgx4n`) given as it is.
    pub fn key_of(id: &str, sender: shared::Sender) -> Result<String, TableError> {
        if shared::Sender::of_key(id).is_some() {
            return Ok(id.to_owned());
        }
        let id = SubmissionId::parse(id).map_err(|_| TableError::BadId(id.to_owned()))?;
        Ok(IdempotencyKey::for_submission(sender, &id)
            .as_str()
            .to_owned())
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
        let mut conditions: Vec<Cow<str>> = Vec::new();
        let mut values = HashMap::new();
        if selection.email.is_some() {
            // Only receipts that still hold form data can name anyone.
            names.insert("#payload".to_owned(), attr::PAYLOAD.to_owned());
            if selection.person.is_some() {
                conditions.push(Cow::from(
                    "(attribute_exists(#payload) OR attribute_exists(#noticeFields))",
                ));
                names.insert("#noticeFields".to_owned(), attr::NOTICE_FIELDS.to_owned());
            } else {
                conditions.push(Cow::from("attribute_exists(#payload)"));
            }
        }
        let status_text = match status {
            Some(StatusFilter::Received) => Some(ReceiptStatus::Received.as_str()),
            Some(StatusFilter::Completed) => Some(ReceiptStatus::Completed.as_str()),
            Some(StatusFilter::Failed) => Some(ReceiptStatus::Failed.as_str()),
            Some(StatusFilter::Quarantined) => Some(ReceiptStatus::Quarantined.as_str()),
            Some(StatusFilter::Refused) => Some(ReceiptStatus::Refused.as_str()),
            Some(StatusFilter::Duplicate) => Some(ReceiptStatus::Duplicate.as_str()),
            Some(StatusFilter::Pending) | None => None,
        };
        if let Some(text) = status_text {
            conditions.push(Cow::from("#status = :status"));
            names.insert("#status".to_owned(), attr::STATUS.to_owned());
            values.insert(":status".to_owned(), AttributeValue::S(text.to_owned()));
        }
        // Newest-wins gates and the routes share the table; they are no
        // receipts.
        names.insert("#pk".to_owned(), attr::PK.to_owned());
        for (n, prefix) in shared::receipt::NOT_RECEIPT_PREFIXES.iter().enumerate() {
            conditions.push(Cow::from(format!("NOT begins_with(#pk, :notReceipt{n})")));
            values.insert(
                format!(":notReceipt{n}"),
                AttributeValue::S((*prefix).to_owned()),
            );
        }
        if status == Some(StatusFilter::Pending) {
            conditions.push(Cow::from("#queue = :pending"));
            names.insert("#queue".to_owned(), attr::QUEUE.to_owned());
            values.insert(":pending".to_owned(), AttributeValue::S(PENDING.to_owned()));
        }
        if let Some(since) = &window.since {
            conditions.push(Cow::from("#receivedAt >= :since"));
            values.insert(":since".to_owned(), AttributeValue::S(since.clone()));
        }
        if let Some(until) = &window.until {
            conditions.push(Cow::from("#receivedAt <= :until"));
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
                                || notice_names(&receipt, selection.person.as_deref())
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
}

/// Whether `receipt`'s waiting notice keeps the answers of `person` (their
/// erasure marker's key).
fn notice_names(receipt: &Receipt, person: Option<&str>) -> bool {
    let Some(person) = person else {
        return false;
    };
    receipt
        .notice_fields
        .as_deref()
        .and_then(shared::notice::WaitingAnswers::from_stored)
        .and_then(|waiting| waiting.person)
        .is_some_and(|named| named == person)
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
        let page = include_str!("../../../docs/personal-data.md");
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
        // The console's inbox and counts query the day index.
        let day_index = format!("/index/{}", shared::receipt::DAY_INDEX);
        assert!(statement["Action"]
            .as_array()
            .unwrap()
            .contains(&"dynamodb:Query".into()));
        assert!(statement["Resource"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().unwrap().ends_with(&day_index)));
    }
}
