//! The `http` destination: `PUT CRM_URL` with `{externalId}` filled in, the
//! lead as JSON and the receipt key as `Idempotency-Key` on every attempt.
//! This fits a CRM with a native upsert by external id, and one that honours
//! idempotency keys on create.
//!
//! A 401 or 403 may mean the token was rotated: the adapter renews it (see
//! `token`) and retries once.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use reqwest::header::RETRY_AFTER;
use shared::delivery::{classify_status, parse_retry_after, StatusClass};
use shared::{IdempotencyKey, Lead};

use crate::destinations::client;
use crate::destinations::token::{BearerToken, CrmToken, TokenSource};
use crate::destinations::{Destination, DestinationError, Upserted};

/// The placeholder in `CRM_URL` replaced by the URL-encoded submission id.
pub const EXTERNAL_ID_PLACEHOLDER: &str = "{externalId}";

/// Characters left as they are in a path segment (RFC 3986 unreserved).
const PATH_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

pub struct HttpCrm {
    client: reqwest::Client,
    url_template: String,
    token: BearerToken,
}

impl HttpCrm {
    /// Builds the HTTP client once: rustls, connect and request timeouts,
    /// and no redirects (a redirected PUT is a misconfigured URL, and
    /// following it could send the token elsewhere).
    pub fn new(url_template: String, token: Option<CrmToken>) -> Result<Self, reqwest::Error> {
        let client = client::client(REQUEST_TIMEOUT)?;
        Ok(HttpCrm {
            client,
            url_template,
            token: BearerToken::new(token),
        })
    }

    /// Re-reads the token from `source` after a 401/403, at most once per
    /// `interval` (counted from now: the token in force was just read).
    pub fn refreshing_from(mut self, source: Arc<dyn TokenSource>, interval: Duration) -> Self {
        self.token = self.token.refreshing_from(source, interval);
        self
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
            Err(DestinationError::Unauthorized { .. }) if self.token.renew().await => {
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
        if let Some(token) = self.token.current() {
            request = request.bearer_auth(token.expose());
        }
        let response = request
            .send()
            .await
            .map_err(|error| client::transport_error(&error))?;
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
