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
        let mut last = self
            .last_read
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if now.saturating_duration_since(*last) >= self.interval {
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
