//! The shared token in one process: what the DynamoDB adapter does, on a
//! value several destinations (several "instances") may share, for tests.

use std::sync::{Arc, Mutex};

use super::{StoreError, StoredToken, TokenStore};

#[derive(Debug, Clone, Default)]
pub struct InProcessTokenStore {
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    token: Option<StoredToken>,
    claimed_until_ms: u64,
}

impl InProcessTokenStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl TokenStore for InProcessTokenStore {
    async fn read(&self) -> Result<Option<StoredToken>, StoreError> {
        Ok(self.state().token.clone())
    }

    async fn claim_refresh(
        &self,
        seen: u64,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<bool, StoreError> {
        let mut state = self.state();
        let generation = state.token.as_ref().map_or(0, |t| t.generation);
        if generation != seen || state.claimed_until_ms > now_ms {
            return Ok(false);
        }
        state.claimed_until_ms = until_ms;
        Ok(true)
    }

    async fn store(&self, token: &str, refresh_at_ms: u64, seen: u64) -> Result<bool, StoreError> {
        let mut state = self.state();
        let generation = state.token.as_ref().map_or(0, |t| t.generation);
        if generation != seen {
            return Ok(false);
        }
        state.token = Some(StoredToken {
            token: token.to_owned(),
            refresh_at_ms,
            generation: seen + 1,
        });
        state.claimed_until_ms = 0;
        Ok(true)
    }
}
