//! The `http` destination: `PUT CRM_URL` with `{externalId}` filled in, the
//! lead as JSON and the receipt key as `Idempotency-Key` on every attempt.
//! This fits a CRM with a native upsert by external id, and one that honours
//! idempotency keys on create.
//!
//! A 401 or 403 may mean the token was rotated: the adapter renews it (see
//! `token`) and retries once.

use std::sync::Arc;
use std::time::Duration;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use shared::delivery::{classify_status, StatusClass};
use shared::{IdempotencyKey, Lead};

use shared::config::{invalid, ConfigError};

use crate::destinations::client::{self, check_scheme};
use crate::destinations::port::{
    DeliveredRecord, Destination, DestinationError, Forgotten, Person, Upserted,
};
use crate::destinations::token::TOKEN_REFRESH_INTERVAL;
use crate::destinations::token::{token_setting, TokenSetting};
use crate::destinations::token::{BearerToken, CrmToken, Source, TokenError};
use crate::destinations::{
    Boxed, BuildEnv, ConfiguredDestination, DestinationKind, DestinationSettings,
};
use crate::secrets::token_and_source;

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
    /// `CRM_ERASE_URL`: where a person is deleted (`http_erase`).
    erase_url: Option<String>,
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
            erase_url: None,
        })
    }

    /// A person is erased by `DELETE url` (`http_erase`).
    pub fn erasing_at(mut self, url: Option<String>) -> Self {
        self.erase_url = url;
        self
    }

    /// Re-reads the token from `source` after a 401/403, at most once per
    /// `interval` (counted from now: the token in force was just read).
    pub fn refreshing_from(
        mut self,
        source: Arc<dyn Source<CrmToken, TokenError>>,
        interval: Duration,
    ) -> Self {
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

    /// By `DELETE CRM_ERASE_URL` when set (`http_erase`); by hand else.
    async fn erase(&self, person: Person<'_>) -> Result<Forgotten, DestinationError> {
        self.erase_person(person).await
    }

    async fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> Result<Upserted, DestinationError> {
        // Ingest refuses these ids; a receipt stored before it did must
        // still never send the token to the parent path.
        if shared::envelope::is_dot_segment(&lead.external_id) {
            return Err(DestinationError::Permanent {
                status: None,
                reason: "submission-id-not-a-path-segment".to_owned(),
            });
        }
        self.token
            .call_renewing_once(
                || self.put(lead, key),
                |answer| matches!(answer, Err(DestinationError::Unauthorized { .. })),
            )
            .await
    }
}

impl HttpCrm {
    async fn put(&self, lead: &Lead, key: &IdempotencyKey) -> Result<Upserted, DestinationError> {
        let mut request = self
            .client
            .put(self.url_for(&lead.external_id))
            .header("Idempotency-Key", key.as_str())
            .json(lead);
        match self.token.current() {
            Ok(Some(token)) => request = request.bearer_auth(token.expose()),
            Ok(None) => {}
            Err(unavailable) => return Err(DestinationError::CredentialsUnavailable(unavailable)),
        }
        let response = request
            .send()
            .await
            .map_err(|error| client::transport_error(&error))?;
        let status = response.status().as_u16();
        match classify_status(status) {
            StatusClass::Success => Ok(Upserted::Written(record_of(
                &client::json_capped(response).await,
            ))),
            class => Err(failure(class, status, &response)),
        }
    }
}

/// What an answer that is no success means, as the contract says it for
/// every call (docs/destinations/README.md); a success is never asked
/// (were it, trying again is the answer that loses nothing).
fn failure(class: StatusClass, status: u16, response: &reqwest::Response) -> DestinationError {
    match class {
        StatusClass::Retryable | StatusClass::Success => DestinationError::Retryable {
            status: Some(status),
            retry_after: client::retry_after(response),
            reason: format!("HTTP {status}"),
        },
        StatusClass::Unauthorized => DestinationError::Unauthorized { status },
        StatusClass::Permanent => DestinationError::Permanent {
            status: Some(status),
            reason: format!("HTTP {status}"),
        },
    }
}

/// The erasure (`http_erase` says the contract).
impl HttpCrm {
    pub(super) async fn erase_person(
        &self,
        person: Person<'_>,
    ) -> Result<Forgotten, DestinationError> {
        let Some(url) = self.erase_url.as_deref() else {
            return Ok(Forgotten::ByHand(super::http_erase::ERASE_BY_HAND));
        };
        self.token
            .call_renewing_once(
                || self.delete(url, person.email),
                |answer| matches!(answer, Err(DestinationError::Unauthorized { .. })),
            )
            .await
    }

    async fn delete(&self, url: &str, email: &str) -> Result<Forgotten, DestinationError> {
        let mut request = self
            .client
            .delete(url)
            .json(&serde_json::json!({ "email": email }));
        match self.token.current() {
            Ok(Some(token)) => request = request.bearer_auth(token.expose()),
            Ok(None) => {}
            Err(unavailable) => return Err(DestinationError::CredentialsUnavailable(unavailable)),
        }
        let response = request
            .send()
            .await
            .map_err(|error| client::transport_error(&error))?;
        let status = response.status().as_u16();
        if status == 404 {
            return Ok(Forgotten::NotFound);
        }
        match classify_status(status) {
            StatusClass::Success => Ok(Forgotten::Deleted(1)),
            class => Err(failure(class, status, &response)),
        }
    }
}

/// The record a 2xx answer names: its JSON body's `id`, a string or a
/// number (see docs/destinations/http.md); unknown for any other body.
fn record_of(answer: &serde_json::Value) -> DeliveredRecord {
    match &answer["id"] {
        serde_json::Value::String(id) => DeliveredRecord::with_id(id),
        serde_json::Value::Number(id) => DeliveredRecord::with_id(&id.to_string()),
        _ => DeliveredRecord::unknown(),
    }
}

pub use shared::destination::http::{CRM_TOKEN, CRM_TOKEN_SECRET_ARN, CRM_URL};

/// `DESTINATION=http`'s settings: the upsert URL and where its token comes
/// from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpConfig {
    pub url: String,
    pub token: TokenSetting,
    /// `CRM_ERASE_URL`, when set.
    pub erase_url: Option<String>,
}

impl HttpConfig {
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<Self, ConfigError> {
        let url = get(CRM_URL).ok_or(ConfigError::Missing(CRM_URL))?;
        check_crm_url(url.trim(), allow_http)?;
        let token = token_setting(get, CRM_TOKEN, CRM_TOKEN_SECRET_ARN)?;
        Ok(HttpConfig {
            url: url.trim().to_owned(),
            token,
            erase_url: super::http_erase::erase_url(get, allow_http)?,
        })
    }
}

impl DestinationSettings for HttpConfig {
    fn kind(&self) -> DestinationKind {
        DestinationKind::Http
    }

    fn build<'a>(
        self: Box<Self>,
        env: BuildEnv<'a>,
    ) -> Boxed<'a, Result<ConfiguredDestination, ConfigError>> {
        Box::pin(async move {
            let crm = build(
                self.url,
                self.token,
                || env.secrets_client(),
                TOKEN_REFRESH_INTERVAL,
            )
            .await?;
            Ok(ConfiguredDestination::new(crm.erasing_at(self.erase_url)))
        })
    }
}

/// `CRM_URL` must be an absolute URL with `{externalId}` exactly once, in
/// its path (or every lead would be written to one URL and overwrite the
/// others), and https, since the token travels with every call: plain http
/// only to a loopback address, or with `CRM_ALLOW_HTTP=true` (local runs in
/// containers, whose host is not loopback). Messages never quote the URL: it
/// may carry a credential.
pub(crate) fn check_crm_url(url: &str, allow_http: bool) -> Result<(), ConfigError> {
    const MARKER: &str = "externalid-placeholder-marker";
    if url.matches(EXTERNAL_ID_PLACEHOLDER).count() != 1 {
        return Err(invalid(
            CRM_URL,
            "must contain {externalId} exactly once, in the path: each lead needs its own URL",
        ));
    }
    let filled = url.replace(EXTERNAL_ID_PLACEHOLDER, MARKER);
    let parsed =
        reqwest::Url::parse(&filled).map_err(|_| invalid(CRM_URL, "is not an absolute URL"))?;
    if !parsed.path().contains(MARKER) {
        return Err(invalid(
            CRM_URL,
            "must contain {externalId} exactly once, in the path: each lead needs its own URL",
        ));
    }
    check_scheme(CRM_URL, &parsed, allow_http)
}

/// The `http` destination as `main` builds it: the token read now, and, when
/// it lives in Secrets Manager, read again after a 401/403 at most once per
/// `refresh_interval`.
pub async fn build(
    url: String,
    setting: TokenSetting,
    client: impl FnOnce() -> aws_sdk_secretsmanager::Client,
    refresh_interval: Duration,
) -> Result<HttpCrm, ConfigError> {
    let (token, source) = token_and_source(setting, CRM_TOKEN_SECRET_ARN, client).await?;
    let crm = HttpCrm::new(url, token).map_err(|_| ConfigError::Invalid {
        name: CRM_URL,
        reason: "the HTTP client could not be built".to_owned(),
    })?;
    Ok(match source {
        Some(source) => crm.refreshing_from(source, refresh_interval),
        None => crm,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_names_its_record_by_id_where_it_gives_one() {
        let rows: &[(serde_json::Value, Option<&str>)] = &[
            (serde_json::json!({"id": "lead_7"}), Some("lead_7")),
            (serde_json::json!({"id": 42}), Some("42")),
            (serde_json::json!({"id": "ada@example.com"}), None),
            (serde_json::json!({"id": null}), None),
            (serde_json::json!({"ok": true}), None),
            (serde_json::json!([1, 2]), None),
            (serde_json::Value::Null, None),
        ];
        for (answer, id) in rows {
            assert_eq!(record_of(answer).id(), *id, "{answer}");
        }
    }

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

    #[tokio::test]
    async fn a_dot_segment_id_is_refused_before_any_request() {
        // Nothing listens here: a request would be a retryable error.
        let crm = HttpCrm::new("http://127.0.0.1:9/leads/{externalId}".into(), None).unwrap();
        for id in [".", ".."] {
            let lead = Lead {
                external_id: id.to_owned(),
                name: String::new(),
                email: "a@example.com".to_owned(),
                message: String::new(),
                fields: serde_json::Map::new(),
                aliases: Vec::new(),
                received_at: "2026-12-01T00:00:00.000Z".to_owned(),
                submitted_at: None,
                sender_time_replaced: false,
                route: None,
            };
            let key = IdempotencyKey::from_stored(format!("staticforms:form.submitted:{id}"));
            assert_eq!(
                crm.upsert(&lead, &key).await,
                Err(DestinationError::Permanent {
                    status: None,
                    reason: "submission-id-not-a-path-segment".to_owned()
                }),
                "{id}"
            );
        }
    }
}
