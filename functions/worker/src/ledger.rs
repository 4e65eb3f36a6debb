//! The receipt ledger capability: record what became of a receipt. Updates
//! only touch a receipt that still exists, so a receipt TTL already deleted
//! is never re-created (it would have no `expiresAt` and live forever).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

use shared::ReceiptStatus;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marked {
    Updated,
    /// The receipt no longer exists; nothing was written. Counts as done.
    ReceiptGone,
}

/// What an operator sees on a receipt that could not be delivered: a short
/// reason and the destination's HTTP status, no personal data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub reason: String,
    pub status: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("receipt ledger unavailable ({0})")]
pub struct LedgerError(pub String);

pub trait ReceiptLedger: Send + Sync {
    fn mark_completed(
        &self,
        key: &str,
        at: &str,
    ) -> impl Future<Output = Result<Marked, LedgerError>> + Send;

    fn mark_failed(
        &self,
        key: &str,
        failure: &Failure,
        at: &str,
    ) -> impl Future<Output = Result<Marked, LedgerError>> + Send;
}

/// A receipt's state as the in-memory ledger keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerEntry {
    pub status: ReceiptStatus,
    pub failure: Option<Failure>,
}

/// Receipts in a map, with the same "only if it exists" rule, for logic tests.
#[derive(Debug, Default)]
pub struct MemoryLedger {
    entries: Mutex<HashMap<String, LedgerEntry>>,
}

impl MemoryLedger {
    pub fn with_received<'a>(keys: impl IntoIterator<Item = &'a str>) -> Self {
        let ledger = MemoryLedger::default();
        for key in keys {
            ledger.insert_received(key);
        }
        ledger
    }

    pub fn insert_received(&self, key: &str) {
        self.lock().insert(
            key.to_owned(),
            LedgerEntry {
                status: ReceiptStatus::Received,
                failure: None,
            },
        );
    }

    pub fn remove(&self, key: &str) {
        self.lock().remove(key);
    }

    pub fn get(&self, key: &str) -> Option<LedgerEntry> {
        self.lock().get(key).cloned()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, LedgerEntry>> {
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn update(&self, key: &str, entry: LedgerEntry) -> Marked {
        match self.lock().get_mut(key) {
            Some(existing) => {
                *existing = entry;
                Marked::Updated
            }
            None => Marked::ReceiptGone,
        }
    }
}

impl ReceiptLedger for MemoryLedger {
    async fn mark_completed(&self, key: &str, _at: &str) -> Result<Marked, LedgerError> {
        Ok(self.update(
            key,
            LedgerEntry {
                status: ReceiptStatus::Completed,
                failure: None,
            },
        ))
    }

    async fn mark_failed(
        &self,
        key: &str,
        failure: &Failure,
        _at: &str,
    ) -> Result<Marked, LedgerError> {
        Ok(self.update(
            key,
            LedgerEntry {
                status: ReceiptStatus::Failed,
                failure: Some(failure.clone()),
            },
        ))
    }
}
