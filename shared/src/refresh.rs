//! A value kept in force and read again from where it lives: the one
//! refresh mechanism of both functions (ingest's webhook secrets, the
//! worker's CRM token and Salesforce credentials).
//!
//! `Refreshing<T, E>` holds the value; `renew_if_older` reads it again from
//! its `Source` when the last read is old enough, at most once per such age
//! however many callers ask at once (`RefreshGate`): a flood of refused
//! requests never becomes a flood of Secrets Manager calls. A read that
//! fails keeps the last good value. Each user keeps only its own policy:
//! the ages at which it asks, and what counts as a refusal.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// Where a value is read from again (Secrets Manager, in the functions).
/// Object-safe, so a holder needs no type parameter for its source.
pub trait Source<T, E>: Send + Sync {
    fn fetch(&self) -> Pin<Box<dyn Future<Output = Result<T, E>> + Send + '_>>;
}

/// A value in force, and where to read it again if it has a source.
pub struct Refreshing<T, E> {
    value: RwLock<T>,
    renewal: Option<Renewal<T, E>>,
    /// What the value is, for the log lines: never the value itself.
    what: &'static str,
}

struct Renewal<T, E> {
    source: Arc<dyn Source<T, E>>,
    gate: RefreshGate,
}

impl<T: Clone, E: std::fmt::Display> Refreshing<T, E> {
    /// A value that never changes while the container lives.
    pub fn fixed(value: T, what: &'static str) -> Self {
        Refreshing {
            value: RwLock::new(value),
            renewal: None,
            what,
        }
    }

    /// `value`, just read from `source`, which `renew_if_older` reads again.
    pub fn from_source(value: T, source: Arc<dyn Source<T, E>>, what: &'static str) -> Self {
        Refreshing {
            value: RwLock::new(value),
            renewal: Some(Renewal {
                source,
                // The age is the caller's, at each renewal.
                gate: RefreshGate::new(Duration::ZERO, Instant::now()),
            }),
            what,
        }
    }

    pub fn current(&self) -> T {
        self.value
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Reads the value again if the last read is at least `age` old and no
    /// other caller claimed the read: the new value, now in force; `None`
    /// when no read was due, there is no source, or the read failed (the
    /// last good value stays; a warning says why, for `reason`).
    pub async fn renew_if_older(&self, age: Duration, reason: &'static str) -> Option<T> {
        let renewal = self
            .renewal
            .as_ref()
            .filter(|r| r.gate.claim_if_older(Instant::now(), age))?;
        match renewal.source.fetch().await {
            Ok(value) => {
                tracing::info!(reason, "{} re-read", self.what);
                *self
                    .value
                    .write()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()) = value.clone();
                Some(value)
            }
            Err(error) => {
                tracing::warn!(
                    reason,
                    error = %error,
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
        assert_eq!(value.current(), 1);
        assert_eq!(
            block_on(value.renew_if_older(Duration::ZERO, "test")),
            Some(2)
        );
        assert_eq!(value.current(), 2);
        assert_eq!(
            block_on(value.renew_if_older(Duration::ZERO, "test")),
            None,
            "the read failed"
        );
        assert_eq!(value.current(), 2, "the last good value stays");
        assert_eq!(source.reads.load(std::sync::atomic::Ordering::SeqCst), 2);
        let fixed: Refreshing<u32, String> = Refreshing::fixed(7, "number");
        assert_eq!(block_on(fixed.renew_if_older(Duration::ZERO, "test")), None);
        assert_eq!(fixed.current(), 7);
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
