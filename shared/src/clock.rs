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
    }
}
