//! At most one re-read of a credential per interval, however many callers
//! ask at once: a flood of refused requests must not become a flood of
//! Secrets Manager calls. Used by ingest (webhook secrets) and the worker
//! (the CRM token).

use std::sync::Mutex;
use std::time::{Duration, Instant};

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
