//! The bearer token a CRM destination sends (`http`, `hubspot`), and how it
//! is renewed: when the token comes from a [`Source`] (Secrets Manager), a
//! refused call reads it again, at most once per interval per
//! container however many calls were refused, and the adapter retries once.

use std::sync::Arc;
use std::time::Duration;

use shared::config::{invalid, secret_arn, ConfigError};
use shared::refresh::{Refreshing, SourceError};
pub use shared::refresh::{Source, Unavailable};

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

/// Why a token (or credentials) could not be read. Never carries its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the CRM credentials could not be read ({reason})")]
pub struct TokenError {
    pub reason: String,
    /// The source says they are gone, out of reach on purpose or
    /// malformed: withdraw the ones in force (fail closed).
    pub definitive: bool,
}

impl TokenError {
    /// A Secrets Manager error code, or a transport failure's description.
    pub fn unreadable(code: impl Into<String>) -> Self {
        let reason = code.into();
        TokenError {
            definitive: shared::refresh::secret_error_is_definitive(&reason),
            reason,
        }
    }

    /// A secret that was read but holds no usable value.
    pub fn malformed(reason: impl Into<String>) -> Self {
        TokenError {
            reason: reason.into(),
            definitive: true,
        }
    }
}

impl SourceError for TokenError {
    fn definitive(&self) -> bool {
        self.definitive
    }
}

/// How often a refused call may re-read the token, per container.
pub const TOKEN_REFRESH_INTERVAL: Duration = Duration::from_secs(60);

/// The token in force, if the CRM needs one, and where to read it again.
pub struct BearerToken {
    token: Option<Refreshing<CrmToken, TokenError>>,
    interval: Duration,
}

impl BearerToken {
    pub fn new(token: Option<CrmToken>) -> Self {
        BearerToken {
            token: token.map(|token| Refreshing::fixed(token, TOKEN)),
            interval: TOKEN_REFRESH_INTERVAL,
        }
    }

    /// Re-reads the token from `source` after a refusal, at most once per
    /// `interval` (counted from now: the token in force was just read).
    pub fn refreshing_from(
        mut self,
        source: Arc<dyn Source<CrmToken, TokenError>>,
        interval: Duration,
    ) -> Self {
        self.token = self.token.map(|token| match token.current() {
            Ok(current) => Refreshing::from_source(current, source, TOKEN),
            Err(_) => token,
        });
        self.interval = interval;
        self
    }

    /// The token to send (`None`: the CRM needs none), or why none may be
    /// sent: withdrawn at its source. The adapters then call nothing.
    pub fn current(&self) -> Result<Option<CrmToken>, Unavailable> {
        self.token.as_ref().map(Refreshing::current).transpose()
    }

    /// Reads the token again if a read is due; `true` when a new token is in
    /// force and the refused call is worth retrying.
    pub async fn renew(&self) -> bool {
        match &self.token {
            Some(token) => token
                .renew_if_older(self.interval, "refused by the CRM")
                .await
                .is_some(),
            None => false,
        }
    }
}

impl BearerToken {
    /// Makes `call`; when its answer is `refused` and a renewed token is in
    /// force, makes it once more with that token: the one
    /// renew-and-retry-once step of the adapters that send this token.
    pub async fn call_renewing_once<T, F, Fut>(&self, call: F, refused: impl Fn(&T) -> bool) -> T
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = T>,
    {
        let answer = call().await;
        if refused(&answer) && self.renew().await {
            call().await
        } else {
            answer
        }
    }
}

/// What the token is called in log lines.
const TOKEN: &str = "CRM token";

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
        (None, Some(value)) => secret_arn(arn, &value).map(TokenSetting::SecretsManager),
        (Some(_), Some(_)) => Err(invalid(
            arn,
            format!("set either {inline} or {arn}, not both"),
        )),
    }
}
