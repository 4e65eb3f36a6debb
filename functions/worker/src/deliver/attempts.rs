//! The attempts within one invocation: every open delivery sent together,
//! round after round, until each succeeds, fails for good, runs out of
//! attempts, or the next wait would eat the deadline's margin. For a
//! destination where newest wins by e-mail, every retry round passes the
//! newest-wins gate again first: while a lead waited out a 429, a newer
//! lead of the same person may have been written by another invocation.

use std::time::Instant;

use shared::consent::may_grant;
use shared::IdempotencyKey;

use super::{Scope, Worker};
use crate::decide::Delivery;
use crate::destinations::port::{
    Answer, CallDeadline, Destination, DestinationError, Upserted, Write,
};
use crate::ledger::{GatePass, ReceiptLedger};

impl<D: Destination, L: ReceiptLedger> Worker<D, L> {
    /// Attempts every delivery until each succeeds, fails for good, runs
    /// out of attempts for this invocation, or its next wait would not
    /// leave the safety margin before the deadline. Each round sends the
    /// deliveries still open together, after the longest wait any of them
    /// needs, and only those that still pass their newest-wins gate.
    pub(super) async fn upsert_with_retries(
        &self,
        destination: &D,
        deliveries: &[Delivery],
        keys: &[IdempotencyKey],
        scopes: &[Scope],
        deadline: Instant,
    ) -> Vec<Attempts> {
        let retry = &self.retry;
        let mut scopes = scopes.to_vec();
        let mut attempts: Vec<Attempts> = deliveries.iter().map(|_| Attempts::none()).collect();
        let mut open: Vec<usize> = (0..deliveries.len()).collect();
        // Every call ends before the margin kept to record the answers: an
        // answer that came is recorded, whatever became of the others.
        let calls_end = CallDeadline::at(
            deadline
                .checked_sub(retry.safety_margin)
                .unwrap_or_else(Instant::now),
        );
        while !open.is_empty() && calls_end.time_left().is_some() {
            let writes: Vec<Write<'_>> = open
                .iter()
                .map(|&i| {
                    let history_only = scopes[i] == Scope::HistoryOnly;
                    let lead = &deliveries[i].lead;
                    Write {
                        lead,
                        key: &keys[i],
                        history_only,
                        grants_consent: !history_only && may_grant(lead.newest_by(), self.now()),
                        retried: attempted_before(&deliveries[i], destination.name())
                            || attempts[i].made > 0,
                    }
                })
                .collect();
            let called = Instant::now();
            let answers = destination
                .upsert_batch(&writes, self.concurrency, calls_end)
                .await;
            let answers = if answers.len() == writes.len() {
                answers
            } else {
                unanswered(
                    writes.len(),
                    "the destination answered for other leads",
                    called,
                )
            };
            let mut waits = Vec::new();
            let mut again = Vec::new();
            for (&i, answer) in open.iter().zip(answers) {
                if answer.result == Err(DestinationError::NotSent) {
                    // No call carried it: not an attempt, and no time for one.
                    continue;
                }
                let attempt = &mut attempts[i];
                attempt.made += 1;
                attempt
                    .latencies_ms
                    .push(answer.latency.as_secs_f64() * 1000.0);
                // A stale lead's history kept is still a stale delivery,
                // whatever the destination answered.
                attempt.result = match (scopes[i], answer.result) {
                    (Scope::HistoryOnly, Ok(_)) => Ok(Upserted::Stale),
                    (_, result) => result,
                };
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
            // A history-only write is stale already: no gate to pass again.
            let (history, leads): (Vec<usize>, Vec<usize>) = again
                .into_iter()
                .partition(|&i| scopes[i] == Scope::HistoryOnly);
            let (newest, overtaken) = self
                .still_newest(destination, deliveries, keys, leads, &attempts)
                .await;
            open = newest;
            if destination.keeps_history() {
                // Overtaken meanwhile: its fields are never written, but
                // its submission still goes on the person's history.
                for &i in &overtaken {
                    scopes[i] = Scope::HistoryOnly;
                }
                open.extend(overtaken);
            } else {
                for &i in &overtaken {
                    attempts[i].result = Ok(Upserted::Stale);
                }
            }
            open.extend(history);
            open.sort_unstable();
        }
        attempts
    }

    /// Of the deliveries about to be retried, those that still pass their
    /// newest-wins gate (all of them where newest does not win by e-mail),
    /// and those a newer lead of their person overtook meanwhile (never
    /// written: stale, or history-only). One whose gate could not be read
    /// keeps its last answer and waits for a pass, which gates it again. A lead held back by a newer one of its
    /// person in this batch that was refused for good (never written)
    /// passes over that one's stamp, and only over it.
    async fn still_newest(
        &self,
        destination: &D,
        deliveries: &[Delivery],
        keys: &[IdempotencyKey],
        again: Vec<usize>,
        attempts: &[Attempts],
    ) -> (Vec<usize>, Vec<usize>) {
        if destination.newest_gates().is_none() {
            return (again, Vec::new());
        }
        let retrying: Vec<&Delivery> = again.iter().map(|&i| &deliveries[i]).collect();
        let passes: Vec<GatePass<'_>> = again
            .iter()
            .map(|&i| {
                let lead = &deliveries[i].lead;
                let person = lead.normalised_email();
                let refused_sibling = deliveries
                    .iter()
                    .zip(attempts.iter())
                    .filter(|(other, attempt)| {
                        other.lead.normalised_email() == person
                            && matches!(
                                attempt.result,
                                Err(DestinationError::Permanent { .. }
                                    | DestinationError::Refused { .. })
                            )
                    })
                    .map(|(other, _)| other.lead.newest_by())
                    .max();
                GatePass {
                    receipt: &keys[i],
                    stamp: lead.newest_by(),
                    over: refused_sibling
                        .filter(|&sibling| sibling > lead.newest_by())
                        .unwrap_or(lead.newest_by()),
                }
            })
            .collect();
        let verdicts = self.pass_gates(destination, &retrying, &passes).await;
        let mut newest = Vec::new();
        let mut overtaken = Vec::new();
        for (i, verdict) in again.into_iter().zip(verdicts) {
            match verdict {
                Ok(true) => newest.push(i),
                Ok(false) => overtaken.push(i),
                Err(_) => {}
            }
        }
        (newest, overtaken)
    }
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
pub(crate) struct Attempts {
    /// The last answer.
    pub result: Result<Upserted, DestinationError>,
    pub made: u32,
    pub latencies_ms: Vec<f64>,
    /// Answers that were 429.
    pub rate_limited: u32,
}

impl Attempts {
    pub(crate) fn none() -> Self {
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

/// Whether `delivery` was attempted at `destination` before this one: its
/// lane's attempts in a receipt of several destinations (another
/// destination's say nothing of this one), else the receipt's.
fn attempted_before(delivery: &Delivery, destination: &str) -> bool {
    let receipt = &delivery.receipt;
    match receipt.destinations.get(destination) {
        Some(lane) => lane.attempts > 0,
        None => receipt.attempts > 0,
    }
}
