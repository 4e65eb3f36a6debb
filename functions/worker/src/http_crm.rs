//! The `http` destination: `PUT CRM_URL` with `{externalId}` filled in, the
//! lead as JSON and the receipt key as `Idempotency-Key` on every attempt.
//! This fits a CRM with a native upsert by external id, and one that honours
//! idempotency keys on create.
//!
//! A 401 or 403 may mean the token was rotated: when the token comes from a
//! [`TokenSource`], the adapter reads it again (at most once per interval
//! per container, however many calls were refused) and retries once.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime};

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use reqwest::header::RETRY_AFTER;
use shared::delivery::{classify_status, parse_retry_after, StatusClass};
use shared::refresh::RefreshGate;
use shared::{IdempotencyKey, Lead};

use crate::destination::{Destination, DestinationError, Upserted};

/// The placeholder in `CRM_URL` replaced by the URL-encoded submission id.
pub const EXTERNAL_ID_PLACEHOLDER: &str = "{externalId}";

/// The CRM's bearer token. Its `Debug` never shows it.
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
/// Object-safe, so the adapter needs no type parameter for it.
pub trait TokenSource: Send + Sync {
    fn fetch(&self) -> Pin<Box<dyn Future<Output = Result<CrmToken, TokenError>> + Send + '_>>;
}

/// How often a refused call may re-read the token, per container.
pub const TOKEN_REFRESH_INTERVAL: Duration = Duration::from_secs(60);

struct TokenRefresh {
    source: Arc<dyn TokenSource>,
    gate: RefreshGate,
}

/// Characters left as they are in a path segment (RFC 3986 unreserved).
const PATH_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

pub struct HttpCrm {
    client: reqwest::Client,
    url_template: String,
    token: RwLock<Option<CrmToken>>,
    refresh: Option<TokenRefresh>,
}

impl HttpCrm {
    /// Builds the HTTP client once: rustls, connect and request timeouts,
    /// and no redirects (a redirected PUT is a misconfigured URL, and
    /// following it could send the token elsewhere).
    pub fn new(url_template: String, token: Option<CrmToken>) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(HttpCrm {
            client,
            url_template,
            token: RwLock::new(token),
            refresh: None,
        })
    }

    /// Re-reads the token from `source` after a 401/403, at most once per
    /// `interval` (counted from now: the token in force was just read).
    pub fn refreshing_from(mut self, source: Arc<dyn TokenSource>, interval: Duration) -> Self {
        self.refresh = Some(TokenRefresh {
            source,
            gate: RefreshGate::new(interval, Instant::now()),
        });
        self
    }

    fn token(&self) -> Option<CrmToken> {
        self.token
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Reads the token again if a read is due; `true` when a new token is in
    /// force and the call is worth retrying.
    async fn renew_token(&self) -> bool {
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

    fn url_for(&self, external_id: &str) -> String {
        let encoded = utf8_percent_encode(external_id, PATH_SEGMENT).to_string();
        self.url_template.replace(EXTERNAL_ID_PLACEHOLDER, &encoded)
    }
}

impl Destination for HttpCrm {
    fn name(&self) -> &'static str {
        "http"
    }

    async fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> Result<Upserted, DestinationError> {
        match self.put(lead, key).await {
            Err(DestinationError::Unauthorized { .. }) if self.renew_token().await => {
                self.put(lead, key).await
            }
            result => result,
        }
    }
}

impl HttpCrm {
    async fn put(&self, lead: &Lead, key: &IdempotencyKey) -> Result<Upserted, DestinationError> {
        let mut request = self
            .client
            .put(self.url_for(&lead.external_id))
            .header("Idempotency-Key", key.as_str())
            .json(lead);
        if let Some(token) = self.token() {
            request = request.bearer_auth(token.expose());
        }
        // reqwest's own error text includes the URL, which may carry a
        // credential: report only the kind of failure.
        let response = request.send().await.map_err(|error| {
            if error.is_builder() {
                DestinationError::Permanent {
                    status: None,
                    reason: "request could not be built".to_owned(),
                }
            } else if error.is_timeout() {
                DestinationError::retryable("timeout")
            } else if error.is_connect() {
                DestinationError::retryable("connection failed")
            } else {
                DestinationError::retryable("transport error")
            }
        })?;
        let status = response.status().as_u16();
        match classify_status(status) {
            StatusClass::Success => Ok(Upserted::Written),
            StatusClass::Retryable => Err(DestinationError::Retryable {
                status: Some(status),
                retry_after: response
                    .headers()
                    .get(RETRY_AFTER)
                    .and_then(|value| value.to_str().ok())
                    .and_then(|value| parse_retry_after(value, SystemTime::now())),
                reason: format!("HTTP {status}"),
            }),
            StatusClass::Unauthorized => Err(DestinationError::Unauthorized { status }),
            StatusClass::Permanent => Err(DestinationError::Permanent {
                status: Some(status),
                reason: format!("HTTP {status}"),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_id_is_encoded_as_one_path_segment() {
        let crm = HttpCrm::new(
            "https://crm.example.com/leads/{externalId}?upsert=1".into(),
            None,
        )
        .unwrap();
        let rows = [
            ("sub_123", "https://crm.example.com/leads/sub_123?upsert=1"),
            ("a/b", "https://crm.example.com/leads/a%2Fb?upsert=1"),
            ("a?b#c", "https://crm.example.com/leads/a%3Fb%23c?upsert=1"),
            ("x y", "https://crm.example.com/leads/x%20y?upsert=1"),
            (
                "../admin",
                "https://crm.example.com/leads/..%2Fadmin?upsert=1",
            ),
        ];
        for (id, url) in rows {
            assert_eq!(crm.url_for(id), url, "{id}");
        }
    }
}
