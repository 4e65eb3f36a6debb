//! The verifier in force, and how it is renewed when its secrets live
//! elsewhere (a `Source` of their text: Secrets Manager when deployed),
//! through `shared::refresh`; this module keeps only its policy.
//!
//! Secrets are re-read before a delivery once they are older than the
//! refresh interval, even when every delivery succeeds, so a secret revoked
//! at the source stops being accepted within that interval. A failed
//! delivery may re-read sooner (at most once a minute), so a rotated secret
//! works at once. One reader at a time; a flood of requests is never a
//! flood of reads.
//!
//! It fails closed: a re-read that finds the secret deleted, scheduled for
//! deletion, out of reach on purpose or malformed withdraws the set at once,
//! and every delivery is answered 503 (the sender retries) until a good set
//! is read; while withdrawn, a delivery may re-read at most once a minute. A
//! re-read that fails for a moment keeps the last good set for at most
//! `WEBHOOK_SECRETS_MAX_STALE_SECONDS`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use shared::refresh::{secret_error_is_definitive, Refreshing, SourceError};
pub use shared::refresh::{Source, Unavailable};

use super::secret_text::{Scheme, SecretTextError};
use super::verifier::{Presented, Unauthenticated, Verifier};

/// How soon after the last read a refused delivery may trigger another.
pub const REREAD_AFTER_REFUSAL: Duration = Duration::from_secs(60);

/// Why a secret could not be read. Never carries its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("could not be read ({0})")]
    Unreadable(String),
    #[error("has no text value")]
    NotText,
}

/// Why the secrets could not be loaded at start-up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretLoadError {
    #[error("the secret {0}")]
    Unreadable(#[from] SecretError),
    #[error(transparent)]
    Malformed(#[from] SecretTextError),
}

impl SourceError for SecretLoadError {
    /// Gone, out of reach on purpose, or not a set of secrets: withdraw.
    fn definitive(&self) -> bool {
        match self {
            SecretLoadError::Unreadable(SecretError::Unreadable(code)) => {
                secret_error_is_definitive(code)
            }
            SecretLoadError::Unreadable(SecretError::NotText) | SecretLoadError::Malformed(_) => {
                true
            }
        }
    }
}

/// Why a delivery was not authenticated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error(transparent)]
    Unauthenticated(#[from] Unauthenticated),
    /// No secrets in force: withdrawn at the source, or too long unread.
    #[error("the webhook secrets are unavailable ({0}); retry later")]
    SecretsUnavailable(Unavailable),
}

/// Verifiers built from the source's text: what the authenticator keeps
/// in force and reads again.
struct VerifierSource {
    source: Arc<dyn Source<String, SecretError>>,
    scheme: Scheme,
}

impl Source<Arc<Verifier>, SecretLoadError> for VerifierSource {
    fn fetch(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<Arc<Verifier>, SecretLoadError>> + Send + '_>> {
        Box::pin(async move {
            let text = self.source.fetch().await?;
            Ok(Arc::new(self.scheme.verifier(&text)?))
        })
    }
}

/// The verifier in force for every delivery of this container.
pub struct Authenticator {
    verifier: Refreshing<Arc<Verifier>, SecretLoadError>,
    /// The refresh interval, and how soon a refusal may re-read; `None` for
    /// secrets that never change.
    ages: Option<(Duration, Duration)>,
}

/// What the secrets are called in log lines.
const SECRETS: &str = "webhook secrets";

impl Authenticator {
    /// Secrets that never change while the container lives (inline, or none).
    pub fn fixed(verifier: Verifier) -> Self {
        Authenticator {
            verifier: Refreshing::fixed(Arc::new(verifier), SECRETS),
            ages: None,
        }
    }

    /// Reads the secrets from `source` now and re-reads them at least every
    /// `interval`; a set that could not be re-read for `max_stale` is no
    /// longer accepted (see the module's rules).
    pub async fn from_source(
        source: Arc<dyn Source<String, SecretError>>,
        scheme: Scheme,
        interval: Duration,
        max_stale: Duration,
    ) -> Result<Self, SecretLoadError> {
        let source = VerifierSource { source, scheme };
        let verifier = source.fetch().await?;
        Ok(Authenticator {
            verifier: Refreshing::from_source(verifier, Arc::new(source), SECRETS)
                .with_max_stale(max_stale),
            ages: Some((interval, interval.min(REREAD_AFTER_REFUSAL))),
        })
    }

    pub async fn authenticate(&self, presented: Presented<'_>) -> Result<(), AuthError> {
        let Some((interval, after_refusal)) = self.ages else {
            return Ok(self.in_force()?.verify(presented)?);
        };
        self.verifier.renew_if_older(interval, "interval").await;
        let verifier = match self.verifier.current() {
            Ok(verifier) => verifier,
            Err(unavailable) => match self
                .verifier
                .renew_if_older(after_refusal, "secrets unavailable")
                .await
            {
                Some(verifier) => verifier,
                None => return Err(AuthError::SecretsUnavailable(unavailable)),
            },
        };
        let refused = match verifier.verify(presented) {
            Ok(()) => return Ok(()),
            Err(refused) => refused,
        };
        match self
            .verifier
            .renew_if_older(after_refusal, "refused delivery")
            .await
        {
            Some(verifier) => Ok(verifier.verify(presented)?),
            // The re-read may just have withdrawn the set.
            None => match self.in_force() {
                Ok(_) => Err(refused.into()),
                Err(unavailable) => Err(unavailable),
            },
        }
    }

    fn in_force(&self) -> Result<Arc<Verifier>, AuthError> {
        self.verifier
            .current()
            .map_err(AuthError::SecretsUnavailable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    use std::time::SystemTime;

    use http::HeaderMap;

    /// A source in memory: its text, or a failure, and how often it was read.
    struct Scripted {
        answer: Mutex<Result<String, SecretError>>,
        reads: AtomicUsize,
    }

    impl Scripted {
        fn new(text: &str) -> Arc<Self> {
            Arc::new(Scripted {
                answer: Mutex::new(Ok(text.to_owned())),
                reads: AtomicUsize::new(0),
            })
        }
        fn answer(&self, answer: Result<&str, SecretError>) {
            *self.answer.lock().unwrap() = answer.map(str::to_owned);
        }
        fn reads(&self) -> usize {
            self.reads.load(Ordering::SeqCst)
        }
    }

    impl Source<String, SecretError> for Scripted {
        fn fetch(&self) -> Pin<Box<dyn Future<Output = Result<String, SecretError>> + Send + '_>> {
            self.reads.fetch_add(1, Ordering::SeqCst);
            let answer = self.answer.lock().unwrap().clone();
            Box::pin(async move { answer })
        }
    }

    const OLD: &str = "old-token-000000001";
    const NEW: &str = "new-token-000000002";

    const HOUR: Duration = Duration::from_secs(3600);

    async fn authenticate(auth: &Authenticator, token: &str) -> Result<(), AuthError> {
        let mut headers = HeaderMap::new();
        headers.insert("authorization", format!("Bearer {token}").parse().unwrap());
        auth.authenticate(Presented {
            headers: &headers,
            query: None,
            body: b"",
            now: SystemTime::now(),
        })
        .await
    }

    async fn accepts(auth: &Authenticator, token: &str) -> bool {
        authenticate(auth, token).await.is_ok()
    }

    #[tokio::test]
    async fn a_revoked_secret_stops_working_after_the_interval_though_deliveries_succeed() {
        let source = Scripted::new(&format!("{OLD},{NEW}"));
        let interval = Duration::from_millis(40);
        let auth = Authenticator::from_source(source.clone(), Scheme::Bearer, interval, HOUR)
            .await
            .unwrap();
        assert!(accepts(&auth, OLD).await);
        source.answer(Ok(NEW));
        assert!(accepts(&auth, OLD).await, "within the interval");
        assert_eq!(source.reads(), 1);

        tokio::time::sleep(interval).await;
        assert!(!accepts(&auth, OLD).await, "revoked");
        assert!(accepts(&auth, NEW).await);
        assert_eq!(
            source.reads(),
            2,
            "one read for the interval, none for the refusal"
        );
    }

    #[tokio::test]
    async fn a_throttled_reread_keeps_the_last_good_set_and_a_malformed_one_withdraws_it() {
        let source = Scripted::new(OLD);
        let interval = Duration::from_millis(20);
        let auth = Authenticator::from_source(
            source.clone(),
            Scheme::Bearer,
            interval,
            Duration::from_secs(3600),
        )
        .await
        .unwrap();
        source.answer(Err(SecretError::Unreadable("ThrottlingException".into())));
        tokio::time::sleep(interval).await;
        assert!(accepts(&auth, OLD).await, "the last good set stays");
        assert!(
            !accepts(&auth, "anything-else-00000001").await,
            "and nothing opens"
        );
        for broken in [Ok("short"), Ok(""), Err(SecretError::NotText)] {
            source.answer(Ok(OLD));
            tokio::time::sleep(interval).await;
            assert!(accepts(&auth, OLD).await, "a good read restores the set");
            source.answer(broken.clone());
            tokio::time::sleep(interval).await;
            assert!(
                matches!(
                    authenticate(&auth, OLD).await,
                    Err(AuthError::SecretsUnavailable(Unavailable::Withdrawn))
                ),
                "{broken:?} withdraws the set: the old secret is refused"
            );
        }
    }

    #[tokio::test]
    async fn a_refusal_rereads_sooner_than_the_interval_but_at_most_once_a_minute() {
        let source = Scripted::new(OLD);
        let auth = Authenticator::from_source(
            source.clone(),
            Scheme::Bearer,
            Duration::from_secs(300),
            HOUR,
        )
        .await
        .unwrap();
        source.answer(Ok(NEW));
        for _ in 0..20 {
            assert!(!accepts(&auth, NEW).await, "read less than a minute ago");
        }
        assert_eq!(source.reads(), 1);
    }

    #[tokio::test]
    async fn a_source_that_cannot_be_read_at_start_up_says_why() {
        let source = Scripted::new(OLD);
        source.answer(Err(SecretError::NotText));
        let error =
            Authenticator::from_source(source, Scheme::Bearer, Duration::from_secs(60), HOUR)
                .await
                .err()
                .unwrap();
        assert_eq!(error.to_string(), "the secret has no text value");
        let short = Scripted::new("short");
        let error =
            Authenticator::from_source(short, Scheme::Bearer, Duration::from_secs(60), HOUR)
                .await
                .err()
                .unwrap();
        assert_eq!(error.to_string(), "entry 1 is shorter than 16 characters");
    }
}
