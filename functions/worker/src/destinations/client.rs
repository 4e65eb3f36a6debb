//! What every CRM adapter over HTTP
//! shares: one client built the same way, an answer's `Retry-After`,
//! transport failures reported by kind only, and the URL checks of their
//! settings.

use std::time::{Duration, SystemTime};

use shared::config::{invalid, ConfigError};
use shared::delivery::parse_retry_after;
use shared::endpoint::BaseUrlProblem;

use crate::destinations::port::{CallDeadline, DestinationError};
use crate::destinations::token::BearerToken;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Built once per container: rustls, a connect timeout, a whole-request
/// `timeout`, and no redirects (a redirected write is a misconfigured URL,
/// and following it could send the token elsewhere).
pub fn client(timeout: Duration) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

/// The answer's `Retry-After` (seconds or an HTTP date), if it has one.
pub fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| parse_retry_after(value, SystemTime::now()))
}

/// A call that got no answer. reqwest's own text includes the URL, which
/// may carry a credential: only the kind of failure is reported.
pub fn transport_error(error: &reqwest::Error) -> DestinationError {
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
}

/// The most of a CRM's answer the worker reads: batch answers of 200
/// records are well under it, and a larger answer is not one we asked for.
pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// The answer's body as JSON, read to at most [`MAX_RESPONSE_BYTES`]:
/// `Null` when it is not JSON or is larger (then the rest is never read).
pub async fn json_capped(mut response: reqwest::Response) -> serde_json::Value {
    if response
        .content_length()
        .is_some_and(|length| length > MAX_RESPONSE_BYTES as u64)
    {
        tracing::warn!(
            limit = MAX_RESPONSE_BYTES,
            "the CRM's answer is larger than the limit; not read"
        );
        return serde_json::Value::Null;
    }
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) if body.len() + chunk.len() <= MAX_RESPONSE_BYTES => {
                body.extend_from_slice(&chunk)
            }
            Ok(Some(_)) => {
                tracing::warn!(
                    limit = MAX_RESPONSE_BYTES,
                    "the CRM's answer is larger than the limit; the rest was not read"
                );
                return serde_json::Value::Null;
            }
            Ok(None) => break,
            Err(_) => return serde_json::Value::Null,
        }
    }
    serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null)
}

pub use shared::destination::CRM_ALLOW_HTTP;

pub(crate) use shared::field_map::is_property_name;

/// A CRM's base URL: absolute, https (http only to loopback or with
/// `CRM_ALLOW_HTTP=true`), no query. Messages never quote it.
pub(crate) fn check_base_url(
    name: &'static str,
    url: &str,
    allow_http: bool,
) -> Result<(), ConfigError> {
    shared::endpoint::check_base_url(url, allow_http)
        .map(|_| ())
        .map_err(|problem| refused(name, problem))
}

/// https, or http to a loopback host or with `CRM_ALLOW_HTTP=true`.
pub(crate) fn check_scheme(
    name: &'static str,
    parsed: &reqwest::Url,
    allow_http: bool,
) -> Result<(), ConfigError> {
    shared::endpoint::check_scheme(parsed, allow_http).map_err(|problem| refused(name, problem))
}

fn refused(name: &'static str, problem: BaseUrlProblem) -> ConfigError {
    match problem {
        BaseUrlProblem::ClearText => invalid(
            name,
            format!("must be https:// (http:// sends the CRM token in clear text; it is allowed for loopback addresses, or with {CRM_ALLOW_HTTP}=true for local runs)"),
        ),
        other => invalid(name, other.to_string()),
    }
}

/// What one call to a CRM's JSON API came to (Pipedrive's, Mailchimp's).
/// The one rule for an answer whose meaning a vendor does not define for
/// itself (docs/destinations/README.md, "What the worker does with each
/// answer"): 408, 409, 423, 425, 429 and every 5xx wait and are tried
/// again (after `retry_after` when given); 401 and 403 are our
/// credentials, the lead waits; any other status is permanent, `FAILED`
/// for a person. Each adapter keeps only what its vendor really does
/// differently (a refusal's body, a longer rate-limit wait) and sends
/// every other answer here.
pub fn by_status(status: u16, retry_after: Option<Duration>) -> DestinationError {
    use shared::delivery::{classify_status, StatusClass};
    match classify_status(status) {
        StatusClass::Retryable => DestinationError::Retryable {
            status: Some(status),
            retry_after,
            reason: format!("HTTP {status}"),
        },
        StatusClass::Unauthorized => DestinationError::Unauthorized { status },
        StatusClass::Success | StatusClass::Permanent => DestinationError::Permanent {
            status: Some(status),
            reason: format!("unexpected HTTP {status}"),
        },
    }
}

/// Statuses no vendor here gives a meaning of its own, for the adapters'
/// tests that each follows `by_status` for them.
#[cfg(test)]
pub(crate) const UNSPECIFIC: &[u16] = &[
    401, 403, 408, 409, 410, 418, 423, 425, 451, 500, 502, 503, 504,
];

#[derive(Debug, Clone, PartialEq)]
pub enum Called {
    /// 2xx, with the answer's body.
    Done(serde_json::Value),
    /// 404: the record is not there.
    NotFound,
    Failed(DestinationError),
}

/// One call within `deadline`; once more with a renewed token when the
/// first is refused as unauthorized (401: a rotated token).
pub async fn renewing_within<F, Fut>(token: &BearerToken, deadline: CallDeadline, call: F) -> Called
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Called>,
{
    token
        .call_renewing_once(
            || async {
                deadline
                    .bound(async { Ok(call().await) })
                    .await
                    .unwrap_or_else(Called::Failed)
            },
            |called| {
                matches!(
                    called,
                    Called::Failed(DestinationError::Unauthorized { status: 401 })
                )
            },
        )
        .await
}

/// Where an adapter's calls carry its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenPlace {
    /// `Authorization: Bearer <token>`.
    Bearer,
    /// The token alone in a header of the vendor's own (`api-key`).
    Header(&'static str),
}

/// A CRM's answer as the adapters read it: its status, its `Retry-After`,
/// its headers (a vendor's own rate limit ones), and its body as JSON
/// (`json_capped`).
#[derive(Debug)]
pub struct Answered {
    pub status: u16,
    pub retry_after: Option<Duration>,
    pub headers: reqwest::header::HeaderMap,
    pub body: serde_json::Value,
}

impl Answered {
    /// A header's value as whole seconds (a vendor's rate limit reset).
    pub fn seconds_in(&self, header: &str) -> Option<u64> {
        self.headers
            .get(header)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse().ok())
    }
}

/// The adapters' one request path: `request` with `body` as JSON and the
/// token in force where `place` says, sent; its answer read. A token
/// withdrawn at its source, or a call that got no answer, is the error.
pub async fn send_json(
    request: reqwest::RequestBuilder,
    body: Option<&serde_json::Value>,
    token: &BearerToken,
    place: TokenPlace,
) -> Result<Answered, DestinationError> {
    let mut request = request;
    if let Some(body) = body {
        request = request.json(body);
    }
    match token.current() {
        Ok(Some(token)) => {
            request = match place {
                TokenPlace::Bearer => request.bearer_auth(token.expose()),
                // Marked sensitive, as bearer_auth marks its own: never in
                // a debug print of the request.
                TokenPlace::Header(name) => {
                    let Ok(mut value) = reqwest::header::HeaderValue::from_str(token.expose())
                    else {
                        return Err(DestinationError::Permanent {
                            status: None,
                            reason: "request could not be built".to_owned(),
                        });
                    };
                    value.set_sensitive(true);
                    request.header(name, value)
                }
            }
        }
        Ok(None) => {}
        Err(unavailable) => return Err(DestinationError::CredentialsUnavailable(unavailable)),
    }
    let response = request
        .send()
        .await
        .map_err(|error| transport_error(&error))?;
    let status = response.status().as_u16();
    let retry_after = retry_after(&response);
    let headers = response.headers().clone();
    let body = json_capped(response).await;
    Ok(Answered {
        status,
        retry_after,
        headers,
        body,
    })
}

/// `base` with each of `segments` appended as one path segment (an
/// address is escaped, never read as a path) and the query.
pub fn url_of(base: &str, segments: &[&str], query: &[(&str, &str)]) -> Option<reqwest::Url> {
    let mut url = reqwest::Url::parse(base).ok()?;
    url.path_segments_mut()
        .ok()?
        .pop_if_empty()
        .extend(segments);
    if !query.is_empty() {
        url.query_pairs_mut().extend_pairs(query);
    }
    Some(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_one_rule_waits_retries_or_fails_by_status() {
        let wait = Some(Duration::from_secs(7));
        for (status, expected) in [
            (408, "retry"),
            (409, "retry"),
            (423, "retry"),
            (425, "retry"),
            (429, "retry"),
            (500, "retry"),
            (503, "retry"),
            (401, "auth"),
            (403, "auth"),
            (400, "fail"),
            (410, "fail"),
            (418, "fail"),
            (451, "fail"),
        ] {
            let said = match by_status(status, wait) {
                DestinationError::Retryable { retry_after, .. } => {
                    assert_eq!(retry_after, wait, "{status}: its Retry-After");
                    "retry"
                }
                DestinationError::Unauthorized { .. } => "auth",
                DestinationError::Permanent { .. } => "fail",
                other => panic!("{status}: {other:?}"),
            };
            assert_eq!(said, expected, "{status}");
        }
    }
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Serves one answer of `body` on loopback, with or without a length.
    async fn serve(body: Vec<u8>, with_length: bool) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 1024];
            let _ = socket.read(&mut request).await;
            let head = if with_length {
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                )
            } else {
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n"
                    .to_owned()
            };
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(&body).await;
        });
        format!("http://{address}/")
    }

    #[tokio::test]
    async fn an_answer_over_the_limit_is_not_read() {
        let client = client(Duration::from_secs(10)).unwrap();
        let small = br#"{"status":"COMPLETE"}"#.to_vec();
        // Valid JSON of 2 MB: parsed whole, it would be an answer.
        let large =
            format!("{{\"padding\":\"{}\"}}", "x".repeat(2 * MAX_RESPONSE_BYTES)).into_bytes();
        for with_length in [true, false] {
            let url = serve(small.clone(), with_length).await;
            let answer = json_capped(client.get(url).send().await.unwrap()).await;
            assert_eq!(answer["status"], "COMPLETE", "length given: {with_length}");
            let url = serve(large.clone(), with_length).await;
            let answer = json_capped(client.get(url).send().await.unwrap()).await;
            assert_eq!(
                answer,
                serde_json::Value::Null,
                "length given: {with_length}"
            );
        }
    }

    #[test]
    fn an_address_is_one_escaped_path_segment() {
        let rows = [
            (
                "https://api.brevo.com",
                vec!["v3", "contacts", "ada+news@example.com"],
                vec![("identifierType", "email_id")],
                "https://api.brevo.com/v3/contacts/ada+news@example.com?identifierType=email_id",
            ),
            (
                "http://127.0.0.1:4010",
                vec!["v3", "contacts", "../account?x=1#y"],
                vec![],
                "http://127.0.0.1:4010/v3/contacts/..%2Faccount%3Fx=1%23y",
            ),
        ];
        for (base, segments, query, expected) in rows {
            let url = url_of(base, &segments, &query).unwrap();
            assert_eq!(url.as_str(), expected);
        }
        assert!(url_of("not a url", &["v3"], &[]).is_none());
    }
}
