//! The destination capability: upsert a lead so that running it again for
//! the same receipt changes nothing more. One adapter per kind of
//! destination (`http_crm`, `leads_table`); HubSpot or Salesforce adapters
//! implement the same trait without touching the batch logic.

use std::future::Future;
use std::time::Duration;

use shared::{IdempotencyKey, Lead};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upserted {
    /// The lead now holds this submission's content.
    Written,
    /// A newer submission already wrote this lead; this one was dropped.
    Stale,
}

/// Why an upsert did not happen. Reasons are short codes, never lead data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DestinationError {
    #[error("destination unavailable ({reason})")]
    Retryable {
        status: Option<u16>,
        retry_after: Option<Duration>,
        reason: String,
    },
    #[error("destination refused the lead ({reason})")]
    Permanent { status: Option<u16>, reason: String },
}

impl DestinationError {
    pub fn retryable(reason: impl Into<String>) -> Self {
        DestinationError::Retryable {
            status: None,
            retry_after: None,
            reason: reason.into(),
        }
    }
}

pub trait Destination: Send + Sync {
    /// A short name for logs: `http`, `dynamodb`.
    fn name(&self) -> &'static str;

    /// Creates or updates the lead of `lead.external_id`. `key` is the
    /// receipt's key, the same on every attempt for this receipt.
    fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> impl Future<Output = Result<Upserted, DestinationError>> + Send;
}

/// The destination chosen by `DESTINATION`, as one type for the handler.
pub enum ConfiguredDestination {
    Http(crate::http_crm::HttpCrm),
    LeadsTable(crate::leads_table::LeadsTable),
}

impl Destination for ConfiguredDestination {
    fn name(&self) -> &'static str {
        match self {
            ConfiguredDestination::Http(crm) => crm.name(),
            ConfiguredDestination::LeadsTable(table) => table.name(),
        }
    }

    async fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> Result<Upserted, DestinationError> {
        match self {
            ConfiguredDestination::Http(crm) => crm.upsert(lead, key).await,
            ConfiguredDestination::LeadsTable(table) => table.upsert(lead, key).await,
        }
    }
}
