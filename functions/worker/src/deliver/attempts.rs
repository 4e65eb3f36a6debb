//! The attempts within one invocation: every open delivery sent together,
//! round after round, until each succeeds, fails for good, runs out of
//! attempts, or the next wait would eat the deadline's margin.

use std::time::Instant;

use shared::IdempotencyKey;

use shared::delivery::RetryPolicy;

use crate::decide::Delivery;
use crate::destinations::{Answer, Destination, DestinationError, Upserted, Write};

/// Attempts every delivery until each succeeds, fails for good, runs out
/// of attempts for this invocation, or its next wait would not leave the
/// safety margin before the deadline. Each round sends the deliveries
/// still open together, after the longest wait any of them needs.
pub(super) async fn upsert_with_retries<D: Destination>(
    destination: &D,
    retry: &RetryPolicy,
    concurrency: usize,
    deliveries: &[Delivery],
    keys: &[IdempotencyKey],
    deadline: Instant,
) -> Vec<Attempts> {
    let mut attempts: Vec<Attempts> = deliveries.iter().map(|_| Attempts::none()).collect();
    let mut open: Vec<usize> = (0..deliveries.len()).collect();
    while !open.is_empty() {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let Some(budget) = remaining
            .checked_sub(retry.safety_margin)
            .filter(|b| !b.is_zero())
        else {
            break;
        };
        let writes: Vec<Write<'_>> = open
            .iter()
            .map(|&i| Write {
                lead: &deliveries[i].lead,
                key: &keys[i],
            })
            .collect();
        let called = Instant::now();
        let answers = match tokio::time::timeout(
            budget,
            destination.upsert_batch(&writes, concurrency),
        )
        .await
        {
            Ok(answers) if answers.len() == writes.len() => answers,
            Ok(_) => unanswered(
                writes.len(),
                "the destination answered for other leads",
                called,
            ),
            Err(_) => unanswered(writes.len(), "attempt ran out of invocation time", called),
        };
        let mut waits = Vec::new();
        let mut again = Vec::new();
        for (&i, answer) in open.iter().zip(answers) {
            let attempt = &mut attempts[i];
            attempt.made += 1;
            attempt
                .latencies_ms
                .push(answer.latency.as_secs_f64() * 1000.0);
            attempt.result = answer.result;
            let Err(DestinationError::Retryable {
                retry_after,
                status,
                ..
            }) = &attempt.result
            else {
                continue;
            };
            if *status == Some(429) {
                attempt.rate_limited += 1;
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            if let Some(wait) =
                retry.wait_before_retry(attempt.made, *retry_after, remaining, fastrand::f64())
            {
                waits.push(wait);
                again.push(i);
            }
        }
        // Each waited at least its own wait, and the longest still
        // leaves its margin: it was computed against the same deadline.
        let Some(wait) = waits.into_iter().max() else {
            break;
        };
        tokio::time::sleep(wait).await;
        open = again;
    }
    attempts
}

/// The same retryable answer for every write of a call that gave none.
fn unanswered(count: usize, reason: &str, called: Instant) -> Vec<Answer> {
    let latency = called.elapsed();
    (0..count)
        .map(|_| Answer {
            result: Err(DestinationError::retryable(reason)),
            latency,
        })
        .collect()
}

/// What one delivery's attempts came to.
pub(super) struct Attempts {
    /// The last answer.
    pub result: Result<Upserted, DestinationError>,
    pub made: u32,
    pub latencies_ms: Vec<f64>,
    /// Answers that were 429.
    pub rate_limited: u32,
}

impl Attempts {
    fn none() -> Self {
        Attempts {
            result: Err(DestinationError::retryable(
                "no time left in this invocation",
            )),
            made: 0,
            latencies_ms: Vec::new(),
            rate_limited: 0,
        }
    }
}
