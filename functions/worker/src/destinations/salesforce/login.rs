//! The OAuth 2.0 client-credentials login: one session per container,
//! renewed once however many callers found it expired, the client secret
//! read again when the token endpoint refuses it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use reqwest::header::CONTENT_TYPE;
use serde_json::Value;
use shared::refresh::Refreshing;

use super::settings::ClientCredentials;
use crate::destinations::client;
use crate::destinations::port::DestinationError;
use crate::destinations::token::{CrmToken, TokenError};

/// What the credentials are called in log lines.
pub(super) const CREDENTIALS: &str = "Salesforce client credentials";

/// A token and where to use it; `generation` tells a renewed one apart.
#[derive(Debug)]
pub(super) struct Session {
    pub(super) token: CrmToken,
    pub(super) instance_url: String,
    pub(super) generation: u64,
}

/// The login: one session per container, renewed once however many callers
/// found it expired at the same time (they wait on the lock and share it).
pub(super) struct Login {
    pub(super) client: reqwest::Client,
    pub(super) token_url: String,
    /// Read again from Secrets Manager when the token endpoint refuses
    /// them: a rotated client secret then works without a cold start.
    pub(super) credentials: Refreshing<ClientCredentials, TokenError>,
    pub(super) refresh_interval: Duration,
    pub(super) session: tokio::sync::Mutex<Option<Arc<Session>>>,
    pub(super) generation: AtomicU64,
}

impl Login {
    /// The session token goes only to an https instance, or to plain http
    /// when the login itself is plain http (a local fake on loopback, or
    /// `CRM_ALLOW_HTTP`, which the login URL was checked against).
    pub(super) fn may_send_token_to(&self, instance_url: &str) -> bool {
        match reqwest::Url::parse(instance_url) {
            Ok(url) if url.host_str().is_some_and(|h| !h.is_empty()) => match url.scheme() {
                "https" => true,
                "http" => self.token_url.starts_with("http://"),
                _ => false,
            },
            _ => false,
        }
    }

    pub(super) async fn current(&self) -> Result<Arc<Session>, DestinationError> {
        let mut session = self.session.lock().await;
        if let Some(session) = session.as_ref() {
            return Ok(Arc::clone(session));
        }
        let fresh = Arc::new(self.fetch().await?);
        *session = Some(Arc::clone(&fresh));
        Ok(fresh)
    }

    /// A new session unless another caller already replaced `stale`.
    pub(super) async fn renew(&self, stale: &Session) -> Result<Arc<Session>, DestinationError> {
        let mut session = self.session.lock().await;
        if let Some(current) = session
            .as_ref()
            .filter(|s| s.generation != stale.generation)
        {
            return Ok(Arc::clone(current));
        }
        *session = None;
        let fresh = Arc::new(self.fetch().await?);
        *session = Some(Arc::clone(&fresh));
        Ok(fresh)
    }

    pub(super) fn sessions(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// A new session; credentials the token endpoint refuses are read
    /// again (at most once per interval) and tried once more.
    pub(super) async fn fetch(&self) -> Result<Session, DestinationError> {
        match self.request_token().await {
            Err(DestinationError::Unauthorized { .. }) if self.reread_credentials().await => {
                self.request_token().await
            }
            result => result,
        }
    }

    pub(super) async fn reread_credentials(&self) -> bool {
        self.credentials
            .renew_if_older(
                self.refresh_interval,
                "refused by Salesforce's token endpoint",
            )
            .await
            .is_some()
    }

    pub(super) async fn request_token(&self) -> Result<Session, DestinationError> {
        let encode = |text: &str| utf8_percent_encode(text, NON_ALPHANUMERIC).to_string();
        let body = {
            let credentials = self
                .credentials
                .current()
                .map_err(DestinationError::CredentialsUnavailable)?;
            format!(
                "grant_type=client_credentials&client_id={}&client_secret={}",
                encode(&credentials.client_id),
                encode(credentials.client_secret.expose())
            )
        };
        let response = self
            .client
            .post(&self.token_url)
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .map_err(|error| client::transport_error(&error))?;
        let status = response.status().as_u16();
        let answer: Value = client::json_capped(response).await;
        match (
            status,
            answer["access_token"].as_str(),
            answer["instance_url"].as_str(),
        ) {
            (200, Some(_), Some(instance_url)) if !self.may_send_token_to(instance_url) => {
                // The token would go to a URL weaker than the login's (or
                // no URL at all): never. Ours to fix; the leads wait.
                tracing::error!(
                    destination = "salesforce",
                    "Salesforce's token answer names an instance URL that is not https: nothing is sent to it"
                );
                Err(DestinationError::Unauthorized { status })
            }
            (200, Some(token), Some(instance_url)) => {
                let token = CrmToken::new(token)
                    .ok_or_else(|| DestinationError::retryable("blank access token"))?;
                let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
                tracing::info!(destination = "salesforce", "logged in to Salesforce");
                Ok(Session {
                    token,
                    instance_url: instance_url.trim_end_matches('/').to_owned(),
                    generation,
                })
            }
            (500..=599, _, _) => Err(DestinationError::Retryable {
                status: Some(status),
                retry_after: None,
                reason: format!("token endpoint HTTP {status}"),
            }),
            _ => {
                // Wrong credentials, a disabled app, no run-as user: ours to
                // fix, never the leads'. They stay pending.
                let error = answer["error"].as_str().unwrap_or("unreadable answer");
                tracing::error!(destination = "salesforce", http_status = status, error, "Salesforce refused the client credentials: check the External Client App, its client credentials flow and run-as user");
                Err(DestinationError::Unauthorized { status })
            }
        }
    }
}
