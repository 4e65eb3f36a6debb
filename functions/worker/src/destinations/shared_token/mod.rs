//! An OAuth access token shared by every running instance of the worker,
//! refreshed once per expiry across all of them (Zoho caps how many access
//! tokens one refresh token may have live at once: 30, the oldest deleted
//! when a 31st is made, so instances refreshing each for itself would
//! revoke each other's).
//!
//! The token is stored with a generation. An instance uses its own copy
//! while it is fresh, else the stored one; when that is due for refresh
//! (or the API refused it), one instance claims the refresh of that
//! generation (a conditional write, which no other instance can also win),
//! calls the token endpoint, and stores the next generation; the others
//! wait briefly and read it. A claim whose holder died lapses after
//! [`REFRESH_LEASE`]. The adapters sit beside this: `dynamodb` (one item in
//! the receipts table) and `in_process` (for tests of several "instances").

pub mod dynamodb;
pub mod in_process;
pub mod seal;

use std::future::Future;
use std::time::Duration;

use tokio::sync::Mutex;

use crate::destinations::port::DestinationError;
use crate::destinations::slots::now_ms;

/// How long a claim to refresh holds before another instance may try.
pub const REFRESH_LEASE: Duration = Duration::from_secs(15);

/// How often, and how many times, an instance that lost the claim reads
/// the store again for the token the winner is fetching.
const WAIT_PAUSE: Duration = Duration::from_millis(200);
const WAIT_TRIES: u32 = 50;

/// The longest a token is used before its refresh: a tenth of its life
/// before it expires, at most five minutes (an hour's token: refreshed
/// after 55 minutes; a two-minute one after 108 seconds).
pub fn refresh_after(expires_in: Duration) -> Duration {
    let margin = (expires_in / 10).min(Duration::from_secs(300));
    expires_in.saturating_sub(margin)
}

/// The token as stored: its text, when it is due for refresh (epoch ms),
/// and its generation (1 for the first; 0 means none stored).
#[derive(Clone, PartialEq, Eq)]
pub struct StoredToken {
    pub token: String,
    pub refresh_at_ms: u64,
    pub generation: u64,
}

impl std::fmt::Debug for StoredToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredToken")
            .field("token", &"<redacted>")
            .field("refresh_at_ms", &self.refresh_at_ms)
            .field("generation", &self.generation)
            .finish()
    }
}

/// Why the store could not be read or written: a short code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("token store unavailable ({0})")]
pub struct StoreError(pub String);

pub trait TokenStore: Send + Sync {
    /// The stored token, read strongly consistent; `None` before the first.
    fn read(&self) -> impl Future<Output = Result<Option<StoredToken>, StoreError>> + Send;

    /// Claims the refresh of generation `seen` (0: none stored) until
    /// `until_ms`: `true` for one claimant only, while the stored token is
    /// still that generation and no other claim holds at `now_ms`.
    fn claim_refresh(
        &self,
        seen: u64,
        now_ms: u64,
        until_ms: u64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Stores `token` as generation `seen + 1`, while `seen` is still the
    /// stored one, and ends the claim: `false` when another got there first.
    fn store(
        &self,
        token: &str,
        refresh_at_ms: u64,
        seen: u64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

/// The store of the one adapter a deployment uses, or of a test's.
#[derive(Debug, Clone)]
pub enum AnyTokenStore {
    Dynamo(dynamodb::DynamoTokenStore),
    InProcess(in_process::InProcessTokenStore),
}

impl TokenStore for AnyTokenStore {
    async fn read(&self) -> Result<Option<StoredToken>, StoreError> {
        match self {
            AnyTokenStore::Dynamo(store) => store.read().await,
            AnyTokenStore::InProcess(store) => store.read().await,
        }
    }

    async fn claim_refresh(
        &self,
        seen: u64,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<bool, StoreError> {
        match self {
            AnyTokenStore::Dynamo(store) => store.claim_refresh(seen, now_ms, until_ms).await,
            AnyTokenStore::InProcess(store) => store.claim_refresh(seen, now_ms, until_ms).await,
        }
    }

    async fn store(&self, token: &str, refresh_at_ms: u64, seen: u64) -> Result<bool, StoreError> {
        match self {
            AnyTokenStore::Dynamo(store) => store.store(token, refresh_at_ms, seen).await,
            AnyTokenStore::InProcess(store) => store.store(token, refresh_at_ms, seen).await,
        }
    }
}

/// A token endpoint's answer: the access token and how long it lasts.
pub struct Refreshed {
    pub token: String,
    pub expires_in: Duration,
}

/// The shared token of one destination, with this instance's copy.
pub struct SharedToken<S> {
    store: S,
    mine: Mutex<Option<StoredToken>>,
}

impl<S: TokenStore> SharedToken<S> {
    pub fn new(store: S) -> Self {
        SharedToken {
            store,
            mine: Mutex::new(None),
        }
    }

    /// A fresh token, and its generation. `refused` is a generation the API
    /// refused (its token is never used again); `refresh` fetches a new
    /// token, and is called by one instance per generation at most.
    pub async fn token<F, Fut>(
        &self,
        refused: Option<u64>,
        refresh: F,
    ) -> Result<StoredToken, DestinationError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<Refreshed, DestinationError>>,
    {
        let usable = |token: &StoredToken, now: u64| {
            now < token.refresh_at_ms && Some(token.generation) != refused
        };
        let mut mine = self.mine.lock().await;
        if let Some(token) = mine.as_ref().filter(|t| usable(t, now_ms())) {
            return Ok(token.clone());
        }
        for _ in 0..WAIT_TRIES {
            let stored = self.store.read().await.map_err(unavailable)?;
            let now = now_ms();
            if let Some(token) = stored.as_ref().filter(|t| usable(t, now)) {
                *mine = Some(token.clone());
                return Ok(token.clone());
            }
            let seen = stored.as_ref().map_or(0, |t| t.generation);
            let until = now.saturating_add(millis(REFRESH_LEASE));
            if self
                .store
                .claim_refresh(seen, now, until)
                .await
                .map_err(unavailable)?
            {
                let refreshed = refresh().await?;
                let token = StoredToken {
                    token: refreshed.token,
                    refresh_at_ms: now_ms()
                        .saturating_add(millis(refresh_after(refreshed.expires_in))),
                    generation: seen + 1,
                };
                // Stored, or another stored one first (this claim lapsed):
                // either way this token is valid and used here.
                self.store
                    .store(&token.token, token.refresh_at_ms, seen)
                    .await
                    .map_err(unavailable)?;
                *mine = Some(token.clone());
                return Ok(token);
            }
            // Another instance is fetching it: read again shortly.
            tokio::time::sleep(WAIT_PAUSE).await;
        }
        Err(DestinationError::retryable("token-refresh-in-progress"))
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn unavailable(error: StoreError) -> DestinationError {
    DestinationError::retryable(format!("receipts table unavailable ({})", error.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    use in_process::InProcessTokenStore;

    /// A token endpoint that counts its calls and answers `token-<n>`.
    async fn endpoint(calls: &AtomicU32) -> Result<Refreshed, DestinationError> {
        let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok(Refreshed {
            token: format!("token-{n}"),
            expires_in: Duration::from_secs(3600),
        })
    }

    #[tokio::test]
    async fn eight_instances_share_one_refresh_and_a_refused_token_is_refreshed_once() {
        let store = InProcessTokenStore::new();
        let calls = AtomicU32::new(0);
        let instances: Vec<SharedToken<InProcessTokenStore>> =
            (0..8).map(|_| SharedToken::new(store.clone())).collect();
        let first = futures_util::future::join_all(
            instances
                .iter()
                .map(|shared| shared.token(None, || endpoint(&calls))),
        )
        .await;
        assert_eq!(calls.load(Ordering::SeqCst), 1, "one refresh for all");
        for token in &first {
            assert_eq!(token.as_ref().unwrap().token, "token-1");
        }
        // The API refuses generation 1 at every instance at once.
        let again = futures_util::future::join_all(
            instances
                .iter()
                .map(|shared| shared.token(Some(1), || endpoint(&calls))),
        )
        .await;
        assert_eq!(
            calls.load(Ordering::SeqCst),
            2,
            "one refresh per refused token"
        );
        for token in &again {
            let token = token.as_ref().unwrap();
            assert_eq!((token.token.as_str(), token.generation), ("token-2", 2));
        }
        // Fresh: no call at all.
        instances[3].token(None, || endpoint(&calls)).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_token_is_refreshed_a_tenth_of_its_life_early_at_most_five_minutes() {
        let rows = [(3600, 3300), (600, 540), (120, 108), (10, 9), (0, 0)];
        for (life, used) in rows {
            assert_eq!(
                refresh_after(Duration::from_secs(life)),
                Duration::from_secs(used),
                "{life}"
            );
        }
    }
}
