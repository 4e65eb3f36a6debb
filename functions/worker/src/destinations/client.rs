//! What every CRM adapter over HTTP (`http`, `hubspot`, `salesforce`)
//! shares: one client built the same way, and transport failures reported
//! by kind only.

use std::time::Duration;

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
