//! Rules for delivering a lead to a destination that may fail: which answers
//! are worth retrying, and how long to wait before the next attempt without
//! running past the invocation's deadline.

use std::time::Duration;

/// What an HTTP status from a destination means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusClass {
    Success,
    /// Try again later: timeouts, in-flight conflicts, rate limits, 5xx.
    Retryable,
    /// Retrying the same request cannot help.
    Permanent,
}

/// 408 (timeout), 409 (a request with this idempotency key is still in
/// flight, as Stripe answers), 425 (too early), 429 and every 5xx pass with
/// time; any other non-2xx needs a person.
pub fn classify_status(status: u16) -> StatusClass {
    match status {
        200..=299 => StatusClass::Success,
        408 | 409 | 425 | 429 | 500..=599 => StatusClass::Retryable,
        _ => StatusClass::Permanent,
    }
}

/// Reads `Retry-After` as delay-seconds; an HTTP date counts from `now`.
/// Anything unreadable is ignored, as if the header were absent.
pub fn parse_retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Exponential backoff with full jitter, bounded by the time left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// Time kept free at the end of the invocation: the receipt update and
    /// the batch response must still fit after the last attempt.
    pub safety_margin: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(5),
            safety_margin: Duration::from_secs(2),
        }
    }
}

impl RetryPolicy {
    /// How long to wait before attempt `attempt + 1` after `attempt` failed
    /// (attempts count from 1), or `None` when that would not leave the
    /// safety margin before the deadline. `jitter` is uniform in [0, 1).
    /// A `Retry-After` from the destination replaces the backoff.
    pub fn wait_before_retry(
        &self,
        attempt: u32,
        retry_after: Option<Duration>,
        remaining: Duration,
        jitter: f64,
    ) -> Option<Duration> {
        let wait = match retry_after {
            Some(asked) => asked,
            None => {
                let exponent = attempt.saturating_sub(1).min(20);
                let ceiling = self
                    .base_delay
                    .saturating_mul(1 << exponent)
                    .min(self.max_delay);
                ceiling.mul_f64(jitter.clamp(0.0, 1.0))
            }
        };
        (wait + self.safety_margin < remaining).then_some(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    #[test]
    fn status_classes() {
        let rows = [
            (200, StatusClass::Success),
            (201, StatusClass::Success),
            (204, StatusClass::Success),
            (301, StatusClass::Permanent),
            (400, StatusClass::Permanent),
            (401, StatusClass::Permanent),
            (403, StatusClass::Permanent),
            (404, StatusClass::Permanent),
            (408, StatusClass::Retryable),
            (409, StatusClass::Retryable),
            (410, StatusClass::Permanent),
            (422, StatusClass::Permanent),
            (425, StatusClass::Retryable),
            (429, StatusClass::Retryable),
            (500, StatusClass::Retryable),
            (502, StatusClass::Retryable),
            (503, StatusClass::Retryable),
            (504, StatusClass::Retryable),
        ];
        for (status, class) in rows {
            assert_eq!(classify_status(status), class, "{status}");
        }
    }

    #[test]
    fn retry_after_forms() {
        let now = UNIX_EPOCH + Duration::from_secs(1_445_412_480); // Wed, 21 Oct 2015 07:28:00 GMT
        let rows = [
            ("3", Some(Duration::from_secs(3))),
            (" 0 ", Some(Duration::ZERO)),
            (
                "Wed, 21 Oct 2015 07:28:05 GMT",
                Some(Duration::from_secs(5)),
            ),
            ("Wed, 21 Oct 2015 07:27:00 GMT", Some(Duration::ZERO)),
            ("-1", None),
            ("soon", None),
            ("", None),
        ];
        for (value, expected) in rows {
            assert_eq!(parse_retry_after(value, now), expected, "{value:?}");
        }
        assert!(parse_retry_after("1.5", SystemTime::now()).is_none());
    }

    #[test]
    fn backoff_is_exponential_with_full_jitter_and_capped() {
        let policy = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
            safety_margin: Duration::from_secs(2),
        };
        let plenty = Duration::from_secs(60);
        let rows = [
            (1, 0.0, Duration::ZERO),
            (1, 0.5, Duration::from_millis(50)),
            (2, 0.5, Duration::from_millis(100)),
            (3, 0.99, Duration::from_millis(396)),
            (5, 1.0, Duration::from_secs(1)),  // 1.6 s capped at 1 s
            (40, 1.0, Duration::from_secs(1)), // no overflow
        ];
        for (attempt, jitter, expected) in rows {
            assert_eq!(
                policy.wait_before_retry(attempt, None, plenty, jitter),
                Some(expected),
                "attempt {attempt}"
            );
        }
    }

    #[test]
    fn retry_after_is_honoured_and_the_deadline_wins() {
        let policy = RetryPolicy::default();
        let asked = Some(Duration::from_secs(3));
        assert_eq!(
            policy.wait_before_retry(1, asked, Duration::from_secs(60), 0.1),
            Some(Duration::from_secs(3))
        );
        // 3 s wait + 2 s margin does not fit in 4 s: give up and let the stream retry.
        assert_eq!(
            policy.wait_before_retry(1, asked, Duration::from_secs(4), 0.1),
            None
        );
        assert_eq!(
            policy.wait_before_retry(1, None, Duration::from_secs(2), 0.0),
            None
        );
    }
}
