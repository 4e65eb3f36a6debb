//! The wall clock as a value, so tests move time instead of waiting. Both
//! functions take one; production passes [`system`].

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Now, as the function sees it.
pub type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// The machine's clock.
pub fn system() -> Clock {
    Arc::new(SystemTime::now)
}

/// A clock stopped at `seconds` after the Unix epoch.
pub fn fixed(seconds: u64) -> Clock {
    Arc::new(move || UNIX_EPOCH + Duration::from_secs(seconds))
}

/// The machine's clock plus an offset that tests move forward: "an hour
/// later" without waiting an hour. Clones share the offset.
#[derive(Debug, Clone, Default)]
pub struct Adjustable(Arc<std::sync::atomic::AtomicU64>);

impl Adjustable {
    pub fn advance(&self, by: Duration) {
        self.0
            .fetch_add(by.as_secs(), std::sync::atomic::Ordering::SeqCst);
    }

    pub fn clock(&self) -> Clock {
        let offset = Arc::clone(&self.0);
        Arc::new(move || {
            SystemTime::now()
                + Duration::from_secs(offset.load(std::sync::atomic::Ordering::SeqCst))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_stays_and_system_moves_on() {
        let stopped = fixed(1_800_000_000);
        assert_eq!(stopped(), stopped());
        assert_eq!(
            stopped().duration_since(UNIX_EPOCH).unwrap().as_secs(),
            1_800_000_000
        );
        assert!(system()() > stopped() - Duration::from_secs(1_800_000_000));
        let adjustable = Adjustable::default();
        let clock = adjustable.clock();
        adjustable.advance(Duration::from_secs(3600));
        assert!(clock() > SystemTime::now() + Duration::from_secs(3599));
    }
}
