//! The receipt store capability the handler needs: put a receipt unless one
//! with its key exists. The DynamoDB adapter is in `dynamo`; the in-memory
//! one here enforces the same condition for logic tests.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

use shared::Receipt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutOutcome {
    /// The receipt is now durable.
    Stored,
    /// A receipt with this key already exists; it was not changed.
    AlreadyExists {
        payload_fingerprint: Option<String>,
        /// Stored by `receipts import` (`shared::receipt::IMPORTED`).
        imported: bool,
    },
}

/// Why the store could not decide. The texts are error codes, never data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// Throttled, timed out or unreachable: worth retrying later.
    #[error("receipt store unavailable ({0})")]
    Unavailable(String),
    #[error("receipt store failed ({0})")]
    Failed(String),
    /// The receipt would be larger than the store keeps in one item:
    /// retrying cannot help; nothing was stored.
    #[error("the receipt would be {bytes} bytes; DynamoDB stores at most {limit} bytes in one item: send a smaller body")]
    TooLarge { bytes: usize, limit: usize },
}

pub trait ReceiptStore: Send + Sync {
    fn put_if_absent(
        &self,
        receipt: &Receipt,
    ) -> impl Future<Output = Result<PutOutcome, StoreError>> + Send;
}

/// Receipts in a map behind a lock: the check and the insert are one step,
/// as DynamoDB's conditional put is.
#[derive(Debug, Default)]
pub struct MemoryReceiptStore {
    receipts: Mutex<HashMap<String, Receipt>>,
}

impl MemoryReceiptStore {
    /// A store that holds `receipt` already (an import, a test's setup).
    pub fn holding(receipt: Receipt) -> Self {
        let store = MemoryReceiptStore::default();
        store.lock().insert(receipt.pk.clone(), receipt);
        store
    }

    pub fn receipts(&self) -> Vec<Receipt> {
        self.lock().values().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Receipt>> {
        // A panic elsewhere in a test must not hide this store's contents.
        self.receipts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl ReceiptStore for MemoryReceiptStore {
    async fn put_if_absent(&self, receipt: &Receipt) -> Result<PutOutcome, StoreError> {
        let mut receipts = self.lock();
        if let Some(existing) = receipts.get(&receipt.pk) {
            return Ok(PutOutcome::AlreadyExists {
                payload_fingerprint: Some(existing.payload_fingerprint.clone()),
                imported: existing.is_imported(),
            });
        }
        receipts.insert(receipt.pk.clone(), receipt.clone());
        Ok(PutOutcome::Stored)
    }
}
