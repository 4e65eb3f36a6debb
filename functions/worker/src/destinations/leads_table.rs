//! The `dynamodb` destination: a leads table we control. The write itself
//! decides, under a condition, so a replay updates the same lead and never
//! creates a second one:
//!
//! - `LEAD_KEY=submission`: one lead per submission id.
//! - `LEAD_KEY=email`: one lead per normalised email, and an older
//!   submission never overwrites a newer one. "Older" is by the sender's own
//!   time (`Lead::newest_by`: the envelope's `timestamp`, else the receive
//!   time), compared inside the condition, not read first.
//!
//! The write is one transaction with a check that its receipt is still
//! RECEIVED: a delivery that held a receipt while `receipts forget` erased
//! it (or another delivery settled it) writes no row. The check makes each
//! lead write a transaction (about four write units instead of one, for a
//! lead under 1 KB): the price of never re-creating an erased person.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use aws_sdk_dynamodb::Client;
use shared::store_errors::is_transient;
use shared::{IdempotencyKey, Lead};

use std::time::SystemTime;

use shared::config::{invalid, number_in, ConfigError};
use shared::receipt::parse_timestamp;
use shared::Retention;

use crate::destinations::port::{
    DeliveredRecord, Destination, DestinationError, Forgotten, Person, Upserted,
};
use crate::destinations::{
    Boxed, BuildEnv, ConfiguredDestination, DestinationKind, DestinationSettings,
};
use crate::ledger::dynamodb::still_received;

/// How the leads table identifies a lead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeadKey {
    /// One lead per submission.
    Submission,
    /// One lead per person (normalised email); the newest submission wins.
    Email,
}

/// Attribute names of a lead item (shared with `receipts forget`).
pub use shared::lead::attr;

/// Newer or equal wins: an equal time is a replay of the same submission.
/// Leads written before `newestBy` existed are ordered by `receivedAt`.
const NEWEST_WINS: &str = "attribute_not_exists(pk) OR newestBy <= :newestBy \
     OR (attribute_not_exists(newestBy) AND receivedAt <= :newestBy)";

pub struct LeadsTable {
    client: Client,
    table: String,
    lead_key: LeadKey,
    retention: Option<Retention>,
    /// Where each lead's receipt is, which must still be RECEIVED.
    receipts_table: String,
}

impl LeadsTable {
    /// Leads kept until someone deletes them (the table is the user's own
    /// lead store); see [`LeadsTable::expiring_after`]. Each lead is
    /// written only while its receipt in `receipts_table` is RECEIVED.
    pub fn new(
        client: Client,
        table: impl Into<String>,
        lead_key: LeadKey,
        receipts_table: impl Into<String>,
    ) -> Self {
        LeadsTable {
            client,
            table: table.into(),
            lead_key,
            retention: None,
            receipts_table: receipts_table.into(),
        }
    }

    /// Each write sets the lead's expiry to `retention` after its
    /// submission was received (`LEAD_RETENTION_DAYS`): TTL removes a lead
    /// that many days after the newest submission written to it.
    pub fn expiring_after(mut self, retention: Option<Retention>) -> Self {
        self.retention = retention;
        self
    }
}

/// A lead's expiry: `retention` after its receipt was received (after now
/// if that time is unreadable), in epoch seconds.
pub fn lead_expiry(lead: &Lead, retention: Retention) -> u64 {
    let received = parse_timestamp(&lead.received_at).unwrap_or_else(SystemTime::now);
    retention.expiry_after(received)
}

/// The lead's key in the table. A lead without an email cannot be keyed by
/// it, so it is keyed by its submission: it still exists, once.
pub fn lead_pk(lead: &Lead, lead_key: LeadKey) -> String {
    match (lead_key, lead.normalised_email()) {
        (LeadKey::Email, Some(email)) => format!("email#{email}"),
        _ => format!("{SUBMISSION_KEY_PREFIX}{}", lead.external_id),
    }
}

/// The record a receipt may name: the item's key when it is keyed by
/// submission. An item keyed by e-mail has the address in its key, which a
/// receipt never keeps (its `externalId` is the receipt's submission id).
fn record_of(pk: &str) -> DeliveredRecord {
    if pk.starts_with(SUBMISSION_KEY_PREFIX) {
        DeliveredRecord::with_id(pk)
    } else {
        DeliveredRecord::unknown()
    }
}

const SUBMISSION_KEY_PREFIX: &str = "submission#";

impl Destination for LeadsTable {
    fn name(&self) -> &'static str {
        "dynamodb"
    }

    /// Its rows are the stack's own: the stack's step erases them.
    async fn erase(&self, _person: Person<'_>) -> Result<Forgotten, DestinationError> {
        Ok(Forgotten::WithTheStack)
    }

    async fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> Result<Upserted, DestinationError> {
        let s = |text: &str| AttributeValue::S(text.to_owned());
        let fields = serde_json::Value::Object(lead.fields.clone()).to_string();
        let pk = lead_pk(lead, self.lead_key);
        let mut item = HashMap::from([
            (attr::PK.to_owned(), s(&pk)),
            ("externalId".to_owned(), s(&lead.external_id)),
            ("name".to_owned(), s(&lead.name)),
            (attr::EMAIL.to_owned(), s(&lead.email)),
            ("message".to_owned(), s(&lead.message)),
            ("fields".to_owned(), s(&fields)),
            (attr::RECEIVED_AT.to_owned(), s(&lead.received_at)),
            (attr::NEWEST_BY.to_owned(), s(lead.newest_by())),
            ("idempotencyKey".to_owned(), s(key.as_str())),
        ]);
        if let Some(submitted_at) = &lead.submitted_at {
            item.insert(attr::SUBMITTED_AT.to_owned(), s(submitted_at));
        }
        if let Some(retention) = self.retention {
            item.insert(
                attr::EXPIRES_AT.to_owned(),
                AttributeValue::N(lead_expiry(lead, retention).to_string()),
            );
        }
        let unavailable = || DestinationError::retryable("request not built");
        let receipt_received =
            still_received(&self.receipts_table, key).map_err(|_| unavailable())?;
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(NEWEST_WINS)
            .expression_attribute_values(":newestBy", s(lead.newest_by()))
            .build()
            .map_err(|_| unavailable())?;
        let result = self
            .client
            .transact_write_items()
            .transact_items(
                TransactWriteItem::builder()
                    .condition_check(receipt_received)
                    .build(),
            )
            .transact_items(TransactWriteItem::builder().put(put).build())
            .send()
            .await;
        match result {
            Ok(_) => Ok(Upserted::Written(record_of(&pk))),
            Err(SdkError::ServiceError(failure)) => match failure.err() {
                // Either the receipt is no longer RECEIVED (erased, or
                // settled by another delivery: its outcome write will find
                // it so), or a newer submission holds the lead. Nothing was
                // written either way.
                TransactWriteItemsError::TransactionCanceledException(cancelled)
                    if cancelled
                        .cancellation_reasons()
                        .iter()
                        .any(|reason| reason.code() == Some("ConditionalCheckFailed")) =>
                {
                    Ok(Upserted::Stale)
                }
                error => {
                    let code = error.code().unwrap_or("UnknownServiceError").to_owned();
                    // A missing table or denied access is fixed by an
                    // operator; retrying (then the DLQ) keeps the lead.
                    // Only a lead the table cannot hold is permanent.
                    if is_transient(error.code(), failure.raw().status().as_u16())
                        || !matches!(error.code(), Some("ValidationException"))
                    {
                        Err(DestinationError::retryable(code))
                    } else {
                        Err(DestinationError::Permanent {
                            status: None,
                            reason: code,
                        })
                    }
                }
            },
            Err(_) => Err(DestinationError::retryable("store unreachable")),
        }
    }
}

pub use shared::destination::leads_table::{LEADS_TABLE, LEAD_KEY, LEAD_RETENTION_DAYS};

/// `DESTINATION=dynamodb`'s settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadsTableSettings {
    pub table: String,
    pub lead_key: LeadKey,
    /// `None`: leads never expire.
    pub retention: Option<Retention>,
}

impl LeadsTableSettings {
    pub fn from_lookup(get: &impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let table = get(LEADS_TABLE).ok_or(ConfigError::Missing(LEADS_TABLE))?;
        let lead_key = match get(LEAD_KEY).as_deref().map(str::trim) {
            None | Some("submission") => LeadKey::Submission,
            Some("email") => LeadKey::Email,
            Some(_) => return Err(invalid(LEAD_KEY, "expected submission or email")),
        };
        let retention = match get(LEAD_RETENTION_DAYS) {
            None => None,
            Some(raw) => match number_in(&raw, 0..=Retention::MAX_DAYS) {
                Some(0) => None,
                Some(days) => Retention::days(days),
                None => {
                    return Err(invalid(
                        LEAD_RETENTION_DAYS,
                        format!(
                            "expected a whole number of days from 0 (kept) to {}",
                            Retention::MAX_DAYS
                        ),
                    ))
                }
            },
        };
        Ok(LeadsTableSettings {
            table: table.trim().to_owned(),
            lead_key,
            retention,
        })
    }
}

impl DestinationSettings for LeadsTableSettings {
    fn kind(&self) -> DestinationKind {
        DestinationKind::LeadsTable
    }

    fn build<'a>(
        self: Box<Self>,
        env: BuildEnv<'a>,
    ) -> Boxed<'a, Result<ConfiguredDestination, ConfigError>> {
        let table = LeadsTable::new(
            env.dynamodb.clone(),
            self.table,
            self.lead_key,
            env.receipts_table,
        )
        .expiring_after(self.retention);
        Box::pin(async move { Ok(ConfiguredDestination::new(table)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lead(email: &str) -> Lead {
        Lead {
            external_id: "sub_1".into(),
            name: String::new(),
            email: email.into(),
            message: String::new(),
            fields: Default::default(),
            aliases: Vec::new(),
            received_at: String::new(),
            submitted_at: None,
            sender_time_replaced: false,
            route: None,
        }
    }

    #[test]
    fn settings() {
        let read = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            LeadsTableSettings::from_lookup(&move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
            })
        };
        let days = |n| Retention::days(n);
        let retention_refused = invalid(
            LEAD_RETENTION_DAYS,
            "expected a whole number of days from 0 (kept) to 3650",
        );
        type Expected = Result<(LeadKey, Option<Retention>), ConfigError>;
        #[rustfmt::skip]
        let rows: Vec<(&[(&str, &str)], Expected)> = vec![
            (&[(LEADS_TABLE, " leads ")], Ok((LeadKey::Submission, None))),
            (&[(LEADS_TABLE, "leads"), (LEAD_KEY, "email")], Ok((LeadKey::Email, None))),
            (&[(LEADS_TABLE, "leads"), (LEAD_RETENTION_DAYS, "0")], Ok((LeadKey::Submission, None))),
            (&[(LEADS_TABLE, "leads"), (LEAD_RETENTION_DAYS, "365")], Ok((LeadKey::Submission, days(365)))),
            (&[(LEADS_TABLE, "leads"), (LEAD_RETENTION_DAYS, "3651")], Err(retention_refused.clone())),
            (&[(LEADS_TABLE, "leads"), (LEAD_RETENTION_DAYS, "a year")], Err(retention_refused)),
            (&[(LEADS_TABLE, "leads"), (LEAD_KEY, "phone")], Err(invalid(LEAD_KEY, "expected submission or email"))),
            (&[], Err(ConfigError::Missing(LEADS_TABLE))),
        ];
        for (pairs, expected) in rows {
            let got = read(pairs);
            assert_eq!(
                got.clone().map(|s| (s.lead_key, s.retention)),
                expected,
                "{pairs:?}"
            );
            if let Ok(settings) = got {
                assert_eq!(settings.table, "leads");
            }
        }
        let mut lead = lead("a@example.com");
        lead.received_at = "2026-12-01T00:00:00.000Z".into();
        assert_eq!(
            lead_expiry(&lead, days(1).unwrap()),
            parse_timestamp("2026-12-02T00:00:00Z")
                .unwrap()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs()
        );
    }

    #[test]
    fn lead_keys() {
        let rows = [
            (LeadKey::Submission, "ada@example.com", "submission#sub_1"),
            (LeadKey::Email, " Ada@Example.com", "email#ada@example.com"),
            (LeadKey::Email, "", "submission#sub_1"),
        ];
        for (lead_key, email, pk) in rows {
            assert_eq!(
                lead_pk(&lead(email), lead_key),
                pk,
                "{lead_key:?} {email:?}"
            );
        }
    }
}
