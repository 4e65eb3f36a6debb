//! Rules for delivering a lead to a destination that may fail: which answers
//! are worth retrying, how long to wait before the next attempt inside one
//! invocation without running past its deadline, and when the next attempt
//! is due across invocations.

use std::time::Duration;

/// What an HTTP status from a destination means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusClass {
    Success,
    /// Try again later: timeouts, in-flight conflicts, locks, rate limits, 5xx.
    Retryable,
    /// 401 or 403: our credentials, not the lead. A configuration fault that
    /// a rotated token fixes; the lead waits.
    Unauthorized,
    /// Retrying the same request cannot help.
    Permanent,
}

/// 408 (timeout), 409 (a request with this idempotency key is still in
/// flight, as Stripe answers), 423 (locked), 425 (too early), 429 and every
/// 5xx pass with time; 401 and 403 are ours to fix; any other non-2xx needs
/// a person.
pub fn classify_status(status: u16) -> StatusClass {
    match status {
        200..=299 => StatusClass::Success,
        408 | 409 | 423 | 425 | 429 | 500..=599 => StatusClass::Retryable,
        401 | 403 => StatusClass::Unauthorized,
        _ => StatusClass::Permanent,
    }
}

/// The longest `Retry-After` taken as asked. A larger one (or a date years
/// ahead) is read as this: time arithmetic on it cannot overflow, and the
/// delivery's own age limit ends the wait anyway.
/// The longest reason kept from a destination's answer.
pub const MAX_REASON_CHARS: usize = 200;

/// A destination's reason as it may be stored on a receipt, logged and
/// printed: one line (control characters dropped, whitespace runs made one
/// space) of at most [`MAX_REASON_CHARS`] characters. A CRM's error text is
/// not ours to trust with a terminal or a log parser.
pub fn bounded_reason(reason: &str) -> String {
    reason
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(MAX_REASON_CHARS)
        .collect()
}

pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// Reads `Retry-After` as delay-seconds; an HTTP date counts from `now`.
/// Anything unreadable is ignored, as if the header were absent.
pub fn parse_retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    let asked = match value.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        // All digits but too many for a u64: a very long wait.
        Err(_) if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => MAX_RETRY_AFTER,
        Err(_) => {
            let at = httpdate::parse_http_date(value).ok()?;
            at.duration_since(now).unwrap_or(Duration::ZERO)
        }
    };
    Some(asked.min(MAX_RETRY_AFTER))
}

/// Exponential backoff with full jitter, bounded by the time left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// Time kept free at the end of the invocation: the receipt update and
    /// the batch response must still fit after the last attempt.
    pub safety_margin: Duration,
    /// Attempts per record in one invocation. Past them the receipt records
    /// when the next attempt is due and the reconciler owns it, so one
    /// failing CRM holds a shard for seconds, not for the whole timeout.
    pub max_attempts: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(5),
            safety_margin: Duration::from_secs(2),
            max_attempts: 3,
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
        if attempt >= self.max_attempts {
            return None;
        }
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
        (wait.saturating_add(self.safety_margin) < remaining).then_some(wait)
    }
}

/// When the next attempt is due after a failed one, across invocations:
/// exponential from `base` up to `cap`, each wait drawn from its upper half
/// (so never sooner than half the step, and retries of many receipts spread
/// out), and never before what the destination asked with `Retry-After`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Redelivery {
    pub base: Duration,
    pub cap: Duration,
}

impl Default for Redelivery {
    fn default() -> Self {
        Redelivery {
            base: Duration::from_secs(120),
            cap: Duration::from_secs(4 * 60 * 60),
        }
    }
}

impl Redelivery {
    /// The wait after `attempts` failed attempts in all (counting from 1).
    /// `jitter` is uniform in [0, 1).
    pub fn wait(&self, attempts: u32, retry_after: Option<Duration>, jitter: f64) -> Duration {
        let exponent = attempts.saturating_sub(1).min(30);
        let step = self.base.saturating_mul(1 << exponent).min(self.cap);
        let drawn = step.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0));
        drawn.max(retry_after.unwrap_or(Duration::ZERO).min(MAX_RETRY_AFTER))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_one_bounded_line() {
        let rows = [
            ("HTTP 503", "HTTP 503".to_owned()),
            ("a\nb\r\n c\u{1b}[31m", "a b c [31m".to_owned()),
            ("\t  padded  ", "padded".to_owned()),
            ("", String::new()),
            (&"é".repeat(300), "é".repeat(200)),
        ];
        for (raw, expected) in rows {
            assert_eq!(bounded_reason(raw), expected, "{raw:?}");
        }
    }
    use std::time::{SystemTime, UNIX_EPOCH};

    #[test]
    fn status_classes() {
        let rows = [
            (200, StatusClass::Success),
            (201, StatusClass::Success),
            (204, StatusClass::Success),
            (301, StatusClass::Permanent),
            (400, StatusClass::Permanent),
            (401, StatusClass::Unauthorized),
            (403, StatusClass::Unauthorized),
            (404, StatusClass::Permanent),
            (408, StatusClass::Retryable),
            (409, StatusClass::Retryable),
            (410, StatusClass::Permanent),
            (422, StatusClass::Permanent),
            (423, StatusClass::Retryable),
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
            ("604800", Some(MAX_RETRY_AFTER)),
            ("604801", Some(MAX_RETRY_AFTER)),
            ("18446744073709551615", Some(MAX_RETRY_AFTER)),
            ("99999999999999999999999999", Some(MAX_RETRY_AFTER)),
            ("Fri, 31 Dec 9999 23:59:59 GMT", Some(MAX_RETRY_AFTER)),
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
            max_attempts: 100,
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
        // The largest Retry-After cannot overflow the arithmetic.
        assert_eq!(
            policy.wait_before_retry(1, Some(Duration::MAX), Duration::MAX, 0.1),
            None
        );
    }

    #[test]
    fn attempts_in_one_invocation_are_bounded() {
        let policy = RetryPolicy::default();
        let plenty = Duration::from_secs(60);
        assert!(policy.wait_before_retry(1, None, plenty, 0.5).is_some());
        assert!(policy.wait_before_retry(2, None, plenty, 0.5).is_some());
        assert_eq!(policy.wait_before_retry(3, None, plenty, 0.5), None);
    }

    #[test]
    fn redelivery_backs_off_from_minutes_to_hours() {
        let policy = Redelivery::default();
        let min = |m: u64| Duration::from_secs(m * 60);
        let rows = [
            // attempts, jitter, Retry-After, wait
            (1, 0.0, None, min(1)),
            (1, 1.0, None, min(2)),
            (2, 0.0, None, min(2)),
            (3, 0.5, None, min(6)),
            (8, 1.0, None, min(240)),
            (9, 1.0, None, min(240)),
            (u32::MAX, 1.0, None, min(240)),
            (9, 0.0, None, min(120)),
            // A Retry-After longer than the backoff is honoured.
            (1, 0.0, Some(min(10)), min(10)),
            (1, 0.0, Some(Duration::from_secs(5)), min(1)),
            (1, 0.0, Some(Duration::MAX), MAX_RETRY_AFTER),
        ];
        for (attempts, jitter, retry_after, expected) in rows {
            assert_eq!(
                policy.wait(attempts, retry_after, jitter),
                expected,
                "attempts {attempts}, jitter {jitter}, {retry_after:?}"
            );
        }
    }
}
