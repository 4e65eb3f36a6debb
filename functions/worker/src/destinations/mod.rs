//! The destination port: upsert leads so that running it again for the same
//! receipts changes nothing more. One adapter per kind of destination, each
//! in its own module with its settings (`http`, `leads_table`, `hubspot`,
//! `salesforce`), and what the HTTP adapters share (`client`, `token`).
//! The choice between them is wiring (`startup`); this file holds only the
//! trait and its types.

//!
//! The delivery core hands a destination every lead of a stream batch or a pass
//! page at once (`upsert_batch`): a CRM with a batch API writes them in as
//! few calls as it can; the others write one by one, at most `concurrency`
//! at a time.

pub mod client;
pub mod http;
pub mod hubspot;
pub mod leads_table;
pub mod salesforce;
pub mod token;

use std::future::Future;
use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};
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
    /// Our credentials were withdrawn at their source (the secret deleted
    /// or malformed): nothing was sent, and nothing is until they can be
    /// read again. Ours to fix, like a refusal.
    #[error("the destination's credentials are unavailable ({0})")]
    CredentialsUnavailable(shared::refresh::Unavailable),
    /// The destination refused our configuration for this lead (a field or
    /// object it does not have): ours to fix, never the lead's. It waits,
    /// pending, with the alarm of refused credentials.
    #[error("the destination refused our configuration ({reason})")]
    Misconfigured { status: Option<u16>, reason: String },
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

/// One lead to write, with its receipt's key (the same on every attempt).
#[derive(Debug, Clone, Copy)]
pub struct Write<'a> {
    pub lead: &'a Lead,
    pub key: &'a IdempotencyKey,
}

/// The answer for one write of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub result: Result<Upserted, DestinationError>,
    /// How long the call that carried this write took.
    pub latency: Duration,
}

pub trait Destination: Send + Sync {
    /// A short name for logs: `http`, `dynamodb`, `hubspot`.
    fn name(&self) -> &'static str;

    /// Whether several submissions of one person write one record, keyed by
    /// the e-mail (HubSpot contacts by email): then only a submission at
    /// least as new as the last one written may write it, across calls too
    /// (`shared::newest`). Destinations keyed by submission never need it;
    /// the leads table keeps newest-wins in its own conditional write.
    fn newest_wins_by_email(&self) -> bool {
        false
    }

    /// Creates or updates the lead of `lead.external_id`. `key` is the
    /// receipt's key, the same on every attempt for this receipt.
    fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> impl Future<Output = Result<Upserted, DestinationError>> + Send;

    /// Writes every lead of `writes`: one answer per write, in order. No two
    /// writes are for the same receipt. The default writes them one by one,
    /// at most `concurrency` at once.
    fn upsert_batch(
        &self,
        writes: &[Write<'_>],
        concurrency: usize,
    ) -> impl Future<Output = Vec<Answer>> + Send {
        // The futures are built first (they do nothing until polled): a
        // closure in the stream would not be general enough to be `Send`.
        let calls: Vec<_> = writes
            .iter()
            .map(|write| timed_upsert(self, *write))
            .collect();
        stream::iter(calls).buffered(concurrency.max(1)).collect()
    }
}

/// One `upsert`, timed: the default batch's unit of work.
pub async fn timed_upsert<D: Destination + ?Sized>(destination: &D, write: Write<'_>) -> Answer {
    let called = Instant::now();
    let result = destination.upsert(write.lead, write.key).await;
    Answer {
        result,
        latency: called.elapsed(),
    }
}
