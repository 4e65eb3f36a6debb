//! The `dynamodb` destination: a leads table we control. The write itself
//! decides, under a condition, so a replay updates the same lead and never
//! creates a second one:
//!
//! - `LEAD_KEY=submission`: one lead per submission id.
//! - `LEAD_KEY=email`: one lead per normalised email, and an older
//!   submission never overwrites a newer one. "Older" is by the sender's own
//!   time (`Lead::newest_by`: the envelope's `timestamp`, else the receive
//!   time), compared inside the condition, not read first.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use shared::store_errors::is_transient;
use shared::{IdempotencyKey, Lead};

use shared::config::{invalid, ConfigError};

use crate::destinations::{Destination, DestinationError, Upserted};

/// How the leads table identifies a lead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeadKey {
    /// One lead per submission.
    Submission,
    /// One lead per person (normalised email); the newest submission wins.
    Email,
}

/// Attribute names of a lead item.
pub mod attr {
    pub const PK: &str = "pk";
    pub const RECEIVED_AT: &str = "receivedAt";
    pub const SUBMITTED_AT: &str = "submittedAt";
    /// The time that orders submissions (`Lead::newest_by`).
    pub const NEWEST_BY: &str = "newestBy";
}

/// Newer or equal wins: an equal time is a replay of the same submission.
/// Leads written before `newestBy` existed are ordered by `receivedAt`.
const NEWEST_WINS: &str = "attribute_not_exists(pk) OR newestBy <= :newestBy \
     OR (attribute_not_exists(newestBy) AND receivedAt <= :newestBy)";

pub struct LeadsTable {
    client: Client,
    table: String,
    lead_key: LeadKey,
}

impl LeadsTable {
    pub fn new(client: Client, table: impl Into<String>, lead_key: LeadKey) -> Self {
        LeadsTable {
            client,
            table: table.into(),
            lead_key,
        }
    }
}

/// The lead's key in the table. A lead without an email cannot be keyed by
/// it, so it is keyed by its submission: it still exists, once.
pub fn lead_pk(lead: &Lead, lead_key: LeadKey) -> String {
    match (lead_key, lead.normalised_email()) {
        (LeadKey::Email, Some(email)) => format!("email#{email}"),
        _ => format!("submission#{}", lead.external_id),
    }
}

impl Destination for LeadsTable {
    fn name(&self) -> &'static str {
        "dynamodb"
    }

    async fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> Result<Upserted, DestinationError> {
        let s = |text: &str| AttributeValue::S(text.to_owned());
        let fields = serde_json::Value::Object(lead.fields.clone()).to_string();
        let mut request = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(attr::PK, s(&lead_pk(lead, self.lead_key)))
            .item("externalId", s(&lead.external_id))
            .item("name", s(&lead.name))
            .item("email", s(&lead.email))
            .item("message", s(&lead.message))
            .item("fields", s(&fields))
            .item(attr::RECEIVED_AT, s(&lead.received_at))
            .item(attr::NEWEST_BY, s(lead.newest_by()))
            .item("idempotencyKey", s(key.as_str()))
            .condition_expression(NEWEST_WINS)
            .expression_attribute_values(":newestBy", s(lead.newest_by()));
        if let Some(submitted_at) = &lead.submitted_at {
            request = request.item(attr::SUBMITTED_AT, s(submitted_at));
        }
        let result = request.send().await;
        match result {
            Ok(_) => Ok(Upserted::Written),
            Err(SdkError::ServiceError(failure)) => match failure.err() {
                PutItemError::ConditionalCheckFailedException(_) => Ok(Upserted::Stale),
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

/// The leads table.
pub const LEADS_TABLE: &str = "LEADS_TABLE";
/// `submission` or `email`: what makes two submissions one lead.
pub const LEAD_KEY: &str = "LEAD_KEY";

/// `DESTINATION=dynamodb`'s settings: the table and its key.
pub fn settings_from_lookup(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<(String, LeadKey), ConfigError> {
    let leads_table = get(LEADS_TABLE).ok_or(ConfigError::Missing(LEADS_TABLE))?;
    let lead_key = match get(LEAD_KEY).as_deref().map(str::trim) {
        None | Some("submission") => LeadKey::Submission,
        Some("email") => LeadKey::Email,
        Some(_) => return Err(invalid(LEAD_KEY, "expected submission or email")),
    };
    Ok((leads_table.trim().to_owned(), lead_key))
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
            received_at: String::new(),
            submitted_at: None,
        }
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
