//! The destination port: upsert a lead so that running it again for the
//! same receipt changes nothing more. One adapter per kind of destination
//! (`http_crm`, `leads_table`); HubSpot or Salesforce adapters implement the
//! same trait without touching the delivery logic. The choice between them
//! is wiring, in `main.rs`.

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
    /// 401/403 even after the adapter renewed its credentials: ours to fix.
    #[error("destination refused our credentials (HTTP {status})")]
    Unauthorized { status: u16 },
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
