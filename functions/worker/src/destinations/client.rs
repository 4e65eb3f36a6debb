//! What every CRM adapter over HTTP (`http`, `hubspot`, `salesforce`)
//! shares: one client built the same way, an answer's `Retry-After`,
//! transport failures reported by kind only, and the URL checks of their
//! settings.

use std::time::{Duration, SystemTime};

use shared::config::{invalid, ConfigError};
use shared::delivery::parse_retry_after;

use crate::destinations::DestinationError;

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

/// `CRM_ALLOW_HTTP=true` allows `http://` to any host: local runs only.
pub const CRM_ALLOW_HTTP: &str = "CRM_ALLOW_HTTP";

/// A CRM's internal name for a property or field, as `FIELD_MAP` and the
/// id settings must give it: letters, digits and `_` (labels have spaces).
pub(crate) fn is_property_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A CRM's base URL: absolute, https (http only to loopback or with
/// `CRM_ALLOW_HTTP=true`), no query. Messages never quote it.
pub(crate) fn check_base_url(
    name: &'static str,
    url: &str,
    allow_http: bool,
) -> Result<(), ConfigError> {
    let parsed = reqwest::Url::parse(url).map_err(|_| invalid(name, "is not an absolute URL"))?;
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(invalid(name, "must have no query or fragment"));
    }
    check_scheme(name, &parsed, allow_http)
}

/// https, or http to a loopback host or with `CRM_ALLOW_HTTP=true`.
pub(crate) fn check_scheme(
    name: &'static str,
    parsed: &reqwest::Url,
    allow_http: bool,
) -> Result<(), ConfigError> {
    let Some(host) = parsed.host_str().filter(|host| !host.is_empty()) else {
        return Err(invalid(name, "must be an https:// URL with a host"));
    };
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback());
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback || allow_http => Ok(()),
        "http" => Err(invalid(
            name,
            format!("must be https:// (http:// sends the CRM token in clear text; it is allowed for loopback addresses, or with {CRM_ALLOW_HTTP}=true for local runs)"),
        )),
        _ => Err(invalid(name, "must be an https:// URL with a host")),
    }
}
