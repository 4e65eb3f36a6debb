//! The receipts by the day they arrived (`shared::receipt::DAY_INDEX`):
//! newest first, a page at a time, and a period's receipts for counting.
//! Each read is a `Query` of one day's partition, newest first, projecting
//! the index's attributes only (no personal data): what it costs grows
//! with the receipts of the days asked, never with the table.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use aws_sdk_dynamodb::types::{AttributeValue, Select};
use shared::receipt::{
    attr, format_timestamp, parse_timestamp, received_day, DAY_INDEX, DAY_INDEX_ATTRIBUTES,
};
use shared::Receipt;

use super::{s, Item, ReceiptsTable, TableError};

/// Where a page of the inbox starts: at the newest receipt received at or
/// before `at` (`after: None`), or just after the receipt `after`, which
/// was received at `at` (the last one of the page before).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub at: String,
    pub after: Option<String>,
}

/// A page of the inbox: the receipts found, newest first, and where the
/// next older page starts (`None`: nothing older within the period).
#[derive(Debug, Default)]
pub struct DayPage {
    pub receipts: Vec<Receipt>,
    pub older: Option<Position>,
    /// Index entries that did not read as receipts.
    pub unreadable: usize,
}

/// At most this many queries answer one page: a sparse filter over a long
/// period ends early, with a position to go on from.
const MOST_QUERIES: usize = 40;
/// Entries one query reads.
const QUERY_LIMIT: i32 = 200;

/// The day before `day` (`2026-12-05` → `2026-12-04`).
fn day_before(day: &str) -> Option<String> {
    let midnight = parse_timestamp(&format!("{day}T00:00:00.000Z"))?;
    let before = midnight
        .checked_sub(Duration::from_secs(86_400))
        .filter(|before| *before >= SystemTime::UNIX_EPOCH)?;
    received_day(&format_timestamp(before)).map(str::to_owned)
}

/// One day's partition, newest first, between `since` and `from`.
struct DayQuery<'a> {
    day: String,
    since: &'a str,
    until: &'a str,
    after: Option<Item>,
}

impl ReceiptsTable {
    /// One query of a day: its entries (newest first) and where it stopped.
    async fn day_query(&self, ask: &DayQuery<'_>) -> Result<(Vec<Item>, Option<Item>), TableError> {
        let mut names: HashMap<String, String> = HashMap::from([
            ("#day".to_owned(), attr::RECEIVED_DAY.to_owned()),
            ("#at".to_owned(), attr::RECEIVED_AT.to_owned()),
            ("#pk".to_owned(), attr::PK.to_owned()),
        ]);
        let mut projection = vec!["#pk", "#day", "#at"];
        let placeholders: Vec<String> = (0..DAY_INDEX_ATTRIBUTES.len())
            .map(|n| format!("#p{n}"))
            .collect();
        for (placeholder, attribute) in placeholders.iter().zip(DAY_INDEX_ATTRIBUTES) {
            names.insert(placeholder.clone(), (*attribute).to_owned());
            projection.push(placeholder);
        }
        let output = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(DAY_INDEX)
            .key_condition_expression("#day = :day AND #at BETWEEN :since AND :until")
            .expression_attribute_values(":day", s(&ask.day))
            .expression_attribute_values(":since", s(ask.since))
            .expression_attribute_values(":until", s(ask.until))
            .set_expression_attribute_names(Some(names))
            // Named, so a policy that allows only the operator's
            // attributes lets the query through.
            .select(Select::SpecificAttributes)
            .projection_expression(projection.join(", "))
            .scan_index_forward(false)
            .limit(QUERY_LIMIT)
            .set_exclusive_start_key(ask.after.clone())
            .send()
            .await
            .map_err(TableError::store)?;
        Ok((output.items.unwrap_or_default(), output.last_evaluated_key))
    }

    /// Up to `want` receipts received in `[since, from]` that `wanted`
    /// accepts, newest first, starting at `from` (now's position when
    /// `None`).
    pub async fn newest(
        &self,
        since: &str,
        from: &Position,
        want: usize,
        wanted: impl Fn(&Receipt) -> bool,
    ) -> Result<DayPage, TableError> {
        let mut page = DayPage::default();
        // A position before the period: nothing (a key condition's range
        // must not be empty).
        let Some(mut day) = received_day(&from.at)
            .filter(|_| from.at.as_str() >= since)
            .map(str::to_owned)
        else {
            return Ok(page);
        };
        let first_day = received_day(since).unwrap_or(day.as_str()).to_owned();
        let mut after = from.after.as_ref().map(|pk| start_key(pk, &from.at));
        let mut queries = 0;
        let mut last_seen: Option<Position> = None;
        loop {
            let ask = DayQuery {
                day: day.clone(),
                since,
                until: &from.at,
                after: after.take(),
            };
            let (items, next) = self.day_query(&ask).await?;
            queries += 1;
            for item in items {
                let position = position_of(&item);
                match serde_dynamo::from_item::<_, Receipt>(item) {
                    Ok(receipt) if wanted(&receipt) => page.receipts.push(receipt),
                    Ok(_) => {}
                    Err(_) => page.unreadable += 1,
                }
                last_seen = position.or(last_seen);
                if page.receipts.len() == want {
                    page.older = last_seen;
                    return Ok(page);
                }
            }
            match next {
                Some(key) => after = Some(key),
                None if day <= first_day => return Ok(page),
                None => {
                    day = match day_before(&day) {
                        Some(before) => before,
                        None => return Ok(page),
                    };
                    // Nothing seen past this day yet: the next page starts
                    // at its end.
                    last_seen = Some(Position {
                        at: format!("{day}T23:59:59.999Z"),
                        after: None,
                    });
                }
            }
            if queries == MOST_QUERIES {
                page.older = last_seen;
                return Ok(page);
            }
        }
    }

    /// Every receipt received in `[since, until]`, each told to `seen`:
    /// for counting a period. Reads the period's days, a query a page.
    pub async fn each_received(
        &self,
        since: SystemTime,
        until: SystemTime,
        mut seen: impl FnMut(Receipt),
    ) -> Result<(), TableError> {
        let (since, until) = (format_timestamp(since), format_timestamp(until));
        let Some(mut day) = received_day(&until)
            .filter(|_| until >= since)
            .map(str::to_owned)
        else {
            return Ok(());
        };
        let first_day = received_day(&since).unwrap_or(day.as_str()).to_owned();
        let mut after = None;
        loop {
            let ask = DayQuery {
                day: day.clone(),
                since: &since,
                until: &until,
                after: after.take(),
            };
            let (items, next) = self.day_query(&ask).await?;
            items
                .into_iter()
                .filter_map(|item| serde_dynamo::from_item::<_, Receipt>(item).ok())
                .for_each(&mut seen);
            match next {
                Some(key) => after = Some(key),
                None if day <= first_day => return Ok(()),
                None => match day_before(&day) {
                    Some(before) => day = before,
                    None => return Ok(()),
                },
            }
        }
    }
}

/// What `reindex` did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Reindexed {
    /// Receipts given their day.
    pub set: usize,
    /// Gone (TTL) or given a day by another run in the meantime.
    pub passed: usize,
}

impl ReceiptsTable {
    /// The receipts stored before the day index (no `receivedDay`), each
    /// told to `each` with its `receivedAt`. A scan of the whole table,
    /// keys and times only: once, after an upgrade.
    pub async fn unindexed(&self, mut each: impl FnMut(String, String)) -> Result<(), TableError> {
        let mut start = None;
        loop {
            let output = self
                .client
                .scan()
                .table_name(&self.table)
                .filter_expression("attribute_not_exists(#day) AND attribute_exists(#at)")
                .projection_expression("#pk, #at")
                .expression_attribute_names("#pk", attr::PK)
                .expression_attribute_names("#at", attr::RECEIVED_AT)
                .expression_attribute_names("#day", attr::RECEIVED_DAY)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(TableError::store)?;
            for item in output.items.unwrap_or_default() {
                let text = |name: &str| match item.get(name) {
                    Some(AttributeValue::S(value)) => Some(value.clone()),
                    _ => None,
                };
                if let (Some(pk), Some(at)) = (text(attr::PK), text(attr::RECEIVED_AT)) {
                    if shared::receipt::is_receipt_key(&pk) {
                        each(pk, at);
                    }
                }
            }
            match output.last_evaluated_key {
                Some(last) => start = Some(last),
                None => return Ok(()),
            }
        }
    }

    /// Gives the receipt `pk` its day, unless it is gone or has one:
    /// `Ok(false)` then. Never creates an item.
    pub async fn set_day(&self, pk: &str, day: &str) -> Result<bool, TableError> {
        let written = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, s(pk))
            .update_expression("SET #day = :day")
            .condition_expression("attribute_exists(#pk) AND attribute_not_exists(#day)")
            .expression_attribute_names("#pk", attr::PK)
            .expression_attribute_names("#day", attr::RECEIVED_DAY)
            .expression_attribute_values(":day", s(day))
            .send()
            .await;
        Ok(!super::failed_condition(written)?)
    }
}

/// The index's key of the receipt `pk` received at `at`.
fn start_key(pk: &str, at: &str) -> Item {
    HashMap::from([
        (attr::PK.to_owned(), s(pk)),
        (
            attr::RECEIVED_DAY.to_owned(),
            s(received_day(at).unwrap_or_default()),
        ),
        (attr::RECEIVED_AT.to_owned(), s(at)),
    ])
}

fn position_of(item: &Item) -> Option<Position> {
    let text = |name: &str| match item.get(name) {
        Some(AttributeValue::S(value)) => Some(value.clone()),
        _ => None,
    };
    Some(Position {
        at: text(attr::RECEIVED_AT)?,
        after: Some(text(attr::PK)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_go_back_across_months_years_and_leap_days() {
        for (day, before) in [
            ("2026-12-05", Some("2026-12-04")),
            ("2026-03-01", Some("2026-02-28")),
            ("2024-03-01", Some("2024-02-29")),
            ("2027-01-01", Some("2026-12-31")),
            ("1970-01-01", None),
            ("not a day", None),
        ] {
            assert_eq!(day_before(day).as_deref(), before, "{day}");
        }
    }
}
