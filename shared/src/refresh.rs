//! A value kept in force and read again from where it lives: the one
//! refresh mechanism of both functions (ingest's webhook secrets, the
//! worker's CRM tokens and client credentials).
//!
//! `Refreshing<T, E>` holds the value; `renew_if_older` reads it again from
//! its `Source` when the last read is old enough, at most once per such age
//! however many callers ask at once (`RefreshGate`): a flood of refused
//! requests never becomes a flood of Secrets Manager calls.
//!
//! Secrets fail closed. A read that says the value is gone or broken
//! (deleted, scheduled for deletion, access denied, malformed: a
//! [`SourceError::definitive`] error) withdraws the value in force at once:
//! [`Refreshing::current`] answers [`Unavailable`] until a good value is read
//! again. A read that fails for a moment (throttled, unreachable) keeps the
//! last good value, but for no longer than the holder's `max_stale`. Each
//! user keeps only its own policy: the ages at which it asks, how stale is
//! too stale, and what counts as a refusal.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// Where a value is read from again (Secrets Manager, in the functions).
/// Object-safe, so a holder needs no type parameter for its source.
pub trait Source<T, E>: Send + Sync {
    fn fetch(&self) -> Pin<Box<dyn Future<Output = Result<T, E>> + Send + '_>>;
}

/// Why a source could not give a value: whether it says the value is gone
/// or broken (withdraw it), or only failed for now (keep the last one).
pub trait SourceError: std::fmt::Display {
    fn definitive(&self) -> bool;
}

impl SourceError for String {
    /// Plain text errors, in tests, are passing failures.
    fn definitive(&self) -> bool {
        false
    }
}

/// Whether a Secrets Manager error code says the secret itself is gone or
/// out of reach on purpose, rather than the service failing for a moment:
/// a deleted or missing secret, one scheduled for deletion
/// (`InvalidRequestException`), a denied read or a key that cannot decrypt
/// it. Codes from the GetSecretValue API reference.
pub fn secret_error_is_definitive(code: &str) -> bool {
    matches!(
        code,
        "ResourceNotFoundException"
            | "InvalidRequestException"
            | "AccessDeniedException"
            | "DecryptionFailure"
    )
}

/// Why no value is in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    #[error("withdrawn: its source says it is gone or broken")]
    Withdrawn,
    #[error("too old: it could not be read again for longer than allowed")]
    Stale,
}

/// A value in force, and where to read it again if it has a source.
pub struct Refreshing<T, E> {
    state: RwLock<State<T>>,
    renewal: Option<Renewal<T, E>>,
    /// How long a value may stay in force after the last good read when
    /// reads fail; `None`: as long as reads fail for a moment.
    max_stale: Option<Duration>,
    /// What the value is, for the log lines: never the value itself.
    what: &'static str,
}

struct State<T> {
    /// `None` once withdrawn.
    value: Option<T>,
    /// When the value in force was read.
    good_at: Instant,
}

struct Renewal<T, E> {
    source: Arc<dyn Source<T, E>>,
    gate: RefreshGate,
}

impl<T: Clone, E: SourceError> Refreshing<T, E> {
    /// A value that never changes while the container lives.
    pub fn fixed(value: T, what: &'static str) -> Self {
        Refreshing {
            state: RwLock::new(State {
                value: Some(value),
                good_at: Instant::now(),
            }),
            renewal: None,
            max_stale: None,
            what,
        }
    }

    /// `value`, just read from `source`, which `renew_if_older` reads again.
    pub fn from_source(value: T, source: Arc<dyn Source<T, E>>, what: &'static str) -> Self {
        Refreshing {
            renewal: Some(Renewal {
                source,
                // The age is the caller's, at each renewal.
                gate: RefreshGate::new(Duration::ZERO, Instant::now()),
            }),
            ..Refreshing::fixed(value, what)
        }
    }

    /// No value yet: the first read from `source` failed. `current` answers
    /// [`Unavailable::Withdrawn`] until `renew_if_older` reads one.
    pub fn unread(source: Arc<dyn Source<T, E>>, what: &'static str) -> Self {
        Refreshing {
            state: RwLock::new(State {
                value: None,
                good_at: Instant::now(),
            }),
            renewal: Some(Renewal {
                source,
                gate: RefreshGate::new(Duration::ZERO, Instant::now()),
            }),
            max_stale: None,
            what,
        }
    }

    /// Refuses the value once its last good read is older than `max_stale`
    /// (reads failing for a moment keep it until then).
    pub fn with_max_stale(mut self, max_stale: Duration) -> Self {
        self.max_stale = Some(max_stale);
        self
    }

    /// The value in force, or why there is none: never a withdrawn value,
    /// nor one kept past `max_stale`.
    pub fn current(&self) -> Result<T, Unavailable> {
        self.current_at(Instant::now())
    }

    fn current_at(&self, now: Instant) -> Result<T, Unavailable> {
        let state = self
            .state
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let value = state.value.clone().ok_or(Unavailable::Withdrawn)?;
        match self.max_stale {
            Some(max) if now.saturating_duration_since(state.good_at) > max => {
                Err(Unavailable::Stale)
            }
            _ => Ok(value),
        }
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State<T>> {
        self.state
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Reads the value again if the last read is at least `age` old and no
    /// other caller claimed the read: the new value, now in force; `None`
    /// when no read was due, there is no source, or the read failed. A
    /// definitive failure withdraws the value (an error line says so, for
    /// `reason`); a passing one keeps it, within `max_stale` (a warning).
    pub async fn renew_if_older(&self, age: Duration, reason: &'static str) -> Option<T> {
        let renewal = self
            .renewal
            .as_ref()
            .filter(|r| r.gate.claim_if_older(Instant::now(), age))?;
        match renewal.source.fetch().await {
            Ok(value) => {
                tracing::info!(reason, "{} re-read", self.what);
                let mut state = self.write();
                state.value = Some(value.clone());
                state.good_at = Instant::now();
                Some(value)
            }
            Err(error) if error.definitive() => {
                tracing::error!(
                    reason,
                    error = %error,
                    "{} withdrawn: its source says it is gone or broken; everything that needs it is refused until it can be read again",
                    self.what
                );
                self.write().value = None;
                None
            }
            Err(error) => {
                tracing::warn!(
                    reason,
                    error = %error,
                    max_stale_seconds = self.max_stale.map(|d| d.as_secs()),
                    "{} could not be re-read; the last good value stays in force",
                    self.what
                );
                None
            }
        }
    }
}

#[derive(Debug)]
pub struct RefreshGate {
    interval: Duration,
    last_read: Mutex<Instant>,
}

impl RefreshGate {
    /// `read_at` is when the value in force was read (init).
    pub fn new(interval: Duration, read_at: Instant) -> Self {
        RefreshGate {
            interval,
            last_read: Mutex::new(read_at),
        }
    }

    /// Claims the next read if one is due at `now`: only one caller gets it,
    /// and the next is due an interval later.
    pub fn claim(&self, now: Instant) -> bool {
        self.claim_if_older(now, self.interval)
    }

    /// Claims a read if the value in force was read at least `age` before
    /// `now`: for a caller with its own, shorter or longer, reason to read.
    pub fn claim_if_older(&self, now: Instant, age: Duration) -> bool {
        let mut last = self
            .last_read
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if now.saturating_duration_since(*last) >= age {
            *last = now;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source that counts its reads and answers from a script.
    struct Scripted {
        answers: Mutex<Vec<Result<u32, String>>>,
        reads: std::sync::atomic::AtomicUsize,
    }

    impl Source<u32, String> for Scripted {
        fn fetch(&self) -> Pin<Box<dyn Future<Output = Result<u32, String>> + Send + '_>> {
            self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let answer = self.answers.lock().unwrap().remove(0);
            Box::pin(async move { answer })
        }
    }

    fn block_on<F: Future>(future: F) -> F::Output {
        // The futures here never wait: one poll finishes them.
        let waker = std::task::Waker::noop();
        let mut context = std::task::Context::from_waker(waker);
        let mut future = std::pin::pin!(future);
        match future.as_mut().poll(&mut context) {
            std::task::Poll::Ready(output) => output,
            std::task::Poll::Pending => panic!("a scripted source never waits"),
        }
    }

    #[test]
    fn a_value_is_read_again_once_old_enough_and_kept_when_the_read_fails() {
        let source = Arc::new(Scripted {
            answers: Mutex::new(vec![Ok(2), Err("gone".into())]),
            reads: Default::default(),
        });
        let value = Refreshing::from_source(
            1,
            Arc::clone(&source) as Arc<dyn Source<u32, String>>,
            "number",
        );
        let hour = Duration::from_secs(3600);
        assert_eq!(
            block_on(value.renew_if_older(hour, "test")),
            None,
            "not old enough"
        );
        assert_eq!(value.current(), Ok(1));
        assert_eq!(
            block_on(value.renew_if_older(Duration::ZERO, "test")),
            Some(2)
        );
        assert_eq!(value.current(), Ok(2));
        assert_eq!(
            block_on(value.renew_if_older(Duration::ZERO, "test")),
            None,
            "the read failed"
        );
        assert_eq!(value.current(), Ok(2), "the last good value stays");
        assert_eq!(source.reads.load(std::sync::atomic::Ordering::SeqCst), 2);
        let fixed: Refreshing<u32, String> = Refreshing::fixed(7, "number");
        assert_eq!(block_on(fixed.renew_if_older(Duration::ZERO, "test")), None);
        assert_eq!(fixed.current(), Ok(7));
    }

    #[test]
    fn an_unread_value_is_unavailable_until_a_read_succeeds() {
        let source = Arc::new(Scripted {
            answers: Mutex::new(vec![Err("throttled".into()), Ok(3)]),
            reads: Default::default(),
        });
        let value: Refreshing<u32, String> = Refreshing::unread(
            Arc::clone(&source) as Arc<dyn Source<u32, String>>,
            "number",
        );
        assert_eq!(value.current(), Err(Unavailable::Withdrawn));
        assert_eq!(block_on(value.renew_if_older(Duration::ZERO, "test")), None);
        assert_eq!(value.current(), Err(Unavailable::Withdrawn), "still none");
        assert_eq!(
            block_on(value.renew_if_older(Duration::ZERO, "test")),
            Some(3)
        );
        assert_eq!(value.current(), Ok(3));
    }

    /// A source whose errors say whether they are definitive.
    #[derive(Debug)]
    struct Gone(bool);

    impl std::fmt::Display for Gone {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(if self.0 {
                "ResourceNotFoundException"
            } else {
                "ThrottlingException"
            })
        }
    }

    impl SourceError for Gone {
        fn definitive(&self) -> bool {
            self.0
        }
    }

    struct Answers(Mutex<Vec<Result<u32, Gone>>>);

    impl Source<u32, Gone> for Answers {
        fn fetch(&self) -> Pin<Box<dyn Future<Output = Result<u32, Gone>> + Send + '_>> {
            let answer = self.0.lock().unwrap().remove(0);
            Box::pin(async move { answer })
        }
    }

    #[test]
    fn a_definitive_failure_withdraws_the_value_until_a_good_read() {
        let source = Arc::new(Answers(Mutex::new(vec![
            Err(Gone(false)),
            Err(Gone(true)),
            Err(Gone(false)),
            Ok(5),
        ])));
        let value = Refreshing::from_source(1, source as Arc<dyn Source<u32, Gone>>, "secret");
        let renew = || block_on(value.renew_if_older(Duration::ZERO, "test"));
        assert_eq!((renew(), value.current()), (None, Ok(1)), "throttled: kept");
        assert_eq!(
            (renew(), value.current()),
            (None, Err(Unavailable::Withdrawn)),
            "deleted: withdrawn at once"
        );
        assert_eq!(
            (renew(), value.current()),
            (None, Err(Unavailable::Withdrawn)),
            "a passing failure never brings a withdrawn value back"
        );
        assert_eq!((renew(), value.current()), (Some(5), Ok(5)), "restored");
    }

    #[test]
    fn a_value_kept_through_failing_reads_expires_at_max_stale() {
        let source = Arc::new(Answers(Mutex::new(vec![])));
        let value = Refreshing::from_source(1, source as Arc<dyn Source<u32, Gone>>, "secret")
            .with_max_stale(Duration::from_secs(3600));
        let read_at = Instant::now();
        assert_eq!(value.current_at(read_at + Duration::from_secs(3599)), Ok(1));
        assert_eq!(
            value.current_at(read_at + Duration::from_secs(3602)),
            Err(Unavailable::Stale)
        );
        for (code, definitive) in [
            ("ResourceNotFoundException", true),
            ("InvalidRequestException", true),
            ("AccessDeniedException", true),
            ("DecryptionFailure", true),
            ("ThrottlingException", false),
            ("InternalServiceError", false),
            ("Secrets Manager unreachable", false),
        ] {
            assert_eq!(secret_error_is_definitive(code), definitive, "{code}");
        }
    }

    #[test]
    fn one_claim_per_interval() {
        let start = Instant::now();
        let minute = Duration::from_secs(60);
        let gate = RefreshGate::new(minute, start);
        let rows = [
            (Duration::ZERO, false),
            (Duration::from_secs(59), false),
            (minute, true),
            (minute, false),
            (Duration::from_secs(119), false),
            (Duration::from_secs(120), true),
        ];
        for (after, expected) in rows {
            assert_eq!(gate.claim(start + after), expected, "{after:?}");
        }
    }

    #[test]
    fn a_claim_for_another_age_moves_the_same_clock() {
        let start = Instant::now();
        let gate = RefreshGate::new(Duration::from_secs(300), start);
        let minute = Duration::from_secs(60);
        assert!(!gate.claim_if_older(start + Duration::from_secs(59), minute));
        assert!(gate.claim_if_older(start + minute, minute));
        assert!(
            !gate.claim(start + Duration::from_secs(300)),
            "read at 60 s"
        );
        assert!(gate.claim(start + Duration::from_secs(360)));
    }

    #[test]
    fn concurrent_callers_get_one_claim() {
        let start = Instant::now();
        let gate = std::sync::Arc::new(RefreshGate::new(Duration::from_secs(60), start));
        let later = start + Duration::from_secs(61);
        let claims: usize = (0..8)
            .map(|_| {
                let gate = std::sync::Arc::clone(&gate);
                std::thread::spawn(move || gate.claim(later))
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| usize::from(t.join().unwrap()))
            .sum();
        assert_eq!(claims, 1);
    }
}
