//! One HubSpot call outside the batch upsert (a note, a contact read, a
//! subscription status), within one delivery's deadline, once more with a
//! renewed token after a 401, its status read the same way for each.

use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use reqwest::Method;
use serde_json::Value;

use super::HubSpot;
use crate::destinations::client;
use crate::destinations::port::{Answer, CallDeadline, DestinationError};

/// Calls of one kind for one delivery.
pub(super) struct Calls<'a> {
    pub hubspot: &'a HubSpot,
    pub deadline: CallDeadline,
    /// The reason a 400 is given (`NOTE_REFUSED`): the request was built
    /// from the operator's settings, which HubSpot refused.
    pub refused: &'static str,
}

impl Calls<'_> {
    pub fn url(&self, path: &str) -> Result<reqwest::Url, DestinationError> {
        reqwest::Url::parse(&format!("{}{path}", self.hubspot.base_url)).map_err(|_| unbuildable())
    }

    /// One call; once more with a renewed token after a 401. `None` for a
    /// 404.
    pub async fn call(
        &self,
        method: Method,
        url: reqwest::Url,
        body: Option<&Value>,
    ) -> Result<Option<Value>, DestinationError> {
        self.hubspot
            .token
            .call_renewing_once(
                || async {
                    self.deadline
                        .bound(self.call_once(method.clone(), url.clone(), body))
                        .await
                },
                |answer| matches!(answer, Err(DestinationError::Unauthorized { status: 401 })),
            )
            .await
    }

    async fn call_once(
        &self,
        method: Method,
        url: reqwest::Url,
        body: Option<&Value>,
    ) -> Result<Option<Value>, DestinationError> {
        let mut request = self.hubspot.client.request(method, url);
        if let Some(body) = body {
            request = request.json(body);
        }
        match self.hubspot.token.current() {
            Ok(Some(token)) => request = request.bearer_auth(token.expose()),
            Ok(None) => {}
            Err(unavailable) => return Err(DestinationError::CredentialsUnavailable(unavailable)),
        }
        let response = request
            .send()
            .await
            .map_err(|error| client::transport_error(&error))?;
        let status = response.status().as_u16();
        let retry_after = client::retry_after(&response);
        let body = client::json_capped(response).await;
        answer(status, retry_after, self.refused).map(|found| found.then_some(body))
    }
}

/// What a call's status means: `true` found, `false` a 404. Pure.
fn answer(
    status: u16,
    retry_after: Option<Duration>,
    refused: &'static str,
) -> Result<bool, DestinationError> {
    match status {
        200..=299 => Ok(true),
        404 => Ok(false),
        401 | 403 => Err(DestinationError::Unauthorized { status }),
        429 => Err(DestinationError::Retryable {
            status: Some(429),
            retry_after: Some(retry_after.unwrap_or(super::answers::TEN_SECONDLY_WAIT)),
            reason: "rate-limited".to_owned(),
        }),
        400 => Err(DestinationError::Misconfigured {
            status: Some(400),
            reason: refused.to_owned(),
        }),
        _ => Err(DestinationError::Retryable {
            status: Some(status),
            retry_after,
            reason: format!("HTTP {status}"),
        }),
    }
}

/// Runs one call per write (`jobs`, each naming its write's slot), at
/// most `concurrency` at once; a call that fails makes its write's answer
/// that failure (the next attempt writes the contact again, then calls
/// again).
pub(super) async fn fail_where_failed<F>(answers: &mut [Answer], jobs: Vec<F>, concurrency: usize)
where
    F: std::future::Future<Output = (usize, Result<(), DestinationError>)>,
{
    let done: Vec<(usize, Result<(), DestinationError>)> = stream::iter(jobs)
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    for (slot, result) in done {
        if let Err(error) = result {
            answers[slot].result = Err(error);
        }
    }
}

pub(super) fn unbuildable() -> DestinationError {
    DestinationError::Permanent {
        status: None,
        reason: "request could not be built".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        let rows = [
            (201, None, Ok(true)),
            (404, None, Ok(false)),
            (
                401,
                None,
                Err(DestinationError::Unauthorized { status: 401 }),
            ),
            (
                403,
                None,
                Err(DestinationError::Unauthorized { status: 403 }),
            ),
            (
                400,
                None,
                Err(DestinationError::Misconfigured {
                    status: Some(400),
                    reason: "NOTE_REFUSED".into(),
                }),
            ),
            (
                429,
                Some(Duration::from_secs(3)),
                Err(DestinationError::Retryable {
                    status: Some(429),
                    retry_after: Some(Duration::from_secs(3)),
                    reason: "rate-limited".into(),
                }),
            ),
        ];
        for (status, wait, expected) in rows {
            assert_eq!(answer(status, wait, "NOTE_REFUSED"), expected, "{status}");
        }
    }
}
