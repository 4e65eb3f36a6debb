//! The bearer token a CRM destination sends (`http`, `hubspot`), and how it
//! is renewed: when the token comes from a [`TokenSource`] (Secrets
//! Manager), a refused call reads it again, at most once per interval per
//! container however many calls were refused, and the adapter retries once.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use shared::config::{invalid, ConfigError};
use shared::refresh::RefreshGate;

/// A CRM's bearer token. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct CrmToken(String);

impl CrmToken {
    /// Blank tokens are no tokens.
    pub fn new(token: &str) -> Option<Self> {
        let token = token.trim();
        (!token.is_empty()).then(|| CrmToken(token.to_owned()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for CrmToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CrmToken(***)")
    }
}

/// Why a token could not be read. Never carries its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the CRM token could not be read ({0})")]
pub struct TokenError(pub String);

/// Where the token is read from again after a refusal (Secrets Manager).
/// Object-safe, so an adapter needs no type parameter for it.
pub trait TokenSource: Send + Sync {
    fn fetch(&self) -> Pin<Box<dyn Future<Output = Result<CrmToken, TokenError>> + Send + '_>>;
}

/// How often a refused call may re-read the token, per container.
pub const TOKEN_REFRESH_INTERVAL: Duration = Duration::from_secs(60);

struct TokenRefresh {
    source: Arc<dyn TokenSource>,
    gate: RefreshGate,
}

/// The token in force, and where to read it again.
pub struct BearerToken {
    token: RwLock<Option<CrmToken>>,
    refresh: Option<TokenRefresh>,
}

impl BearerToken {
    pub fn new(token: Option<CrmToken>) -> Self {
        BearerToken {
            token: RwLock::new(token),
            refresh: None,
        }
    }

    /// Re-reads the token from `source` after a refusal, at most once per
    /// `interval` (counted from now: the token in force was just read).
    pub fn refreshing_from(mut self, source: Arc<dyn TokenSource>, interval: Duration) -> Self {
        self.refresh = Some(TokenRefresh {
            source,
            gate: RefreshGate::new(interval, Instant::now()),
        });
        self
    }

    pub fn current(&self) -> Option<CrmToken> {
        self.token
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Reads the token again if a read is due; `true` when a new token is in
    /// force and the refused call is worth retrying.
    pub async fn renew(&self) -> bool {
        let Some(refresh) = self
            .refresh
            .as_ref()
            .filter(|r| r.gate.claim(Instant::now()))
        else {
            return false;
        };
        match refresh.source.fetch().await {
            Ok(token) => {
                tracing::info!("CRM token re-read after the CRM refused it");
                *self
                    .token
                    .write()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(token);
                true
            }
            Err(error) => {
                tracing::warn!(error = %error, "CRM token could not be re-read");
                false
            }
        }
    }
}

/// Where the CRM token comes from, if the CRM needs one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSetting {
    None,
    /// `CRM_TOKEN`, for local use.
    Inline(CrmToken),
    /// `CRM_TOKEN_SECRET_ARN`: read from Secrets Manager once, at init.
    SecretsManager(String),
}

/// Where a CRM token comes from: `inline` (local use) or `arn` (Secrets
/// Manager), not both; `None` when neither is set.
pub(crate) fn token_setting(
    get: &impl Fn(&str) -> Option<String>,
    inline: &'static str,
    arn: &'static str,
) -> Result<TokenSetting, ConfigError> {
    match (get(inline).as_deref().and_then(CrmToken::new), get(arn)) {
        (None, None) => Ok(TokenSetting::None),
        (Some(token), None) => Ok(TokenSetting::Inline(token)),
        (None, Some(value)) if value.trim().starts_with("arn:") => {
            Ok(TokenSetting::SecretsManager(value.trim().to_owned()))
        }
        (None, Some(_)) => Err(invalid(
            arn,
            "must be a Secrets Manager secret ARN (arn:...)",
        )),
        (Some(_), Some(_)) => Err(invalid(
            arn,
            format!("set either {inline} or {arn}, not both"),
        )),
    }
}
