//! A batch written person by person: persons at once, at most
//! `concurrency`; one person's writes one after the other, oldest first, so
//! the newest fields are written last and two creates of one person never
//! race within a batch. For the destinations keyed by e-mail that write
//! one person per call (Pipedrive, Mailchimp).

use std::collections::HashMap;
use std::future::Future;
use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};

use super::port::{Answer, CallDeadline, DestinationError, Upserted, Write};

/// Answers every write of `writes` in order, each by `write_one` (not
/// started once the deadline leaves too little time: `NotSent`).
pub async fn write_by_person<'w, F, Fut>(
    writes: &[Write<'w>],
    concurrency: usize,
    deadline: CallDeadline,
    write_one: F,
) -> Vec<Answer>
where
    F: Fn(Write<'w>) -> Fut,
    Fut: Future<Output = Result<Upserted, DestinationError>>,
{
    let people = by_person(writes);
    let write_one = &write_one;
    let calls: Vec<_> = people
        .into_iter()
        .map(|slots| async move {
            let mut answers = Vec::with_capacity(slots.len());
            for slot in slots {
                let called = Instant::now();
                let result = match deadline.time_left() {
                    Some(_) => write_one(writes[slot]).await,
                    None => Err(DestinationError::NotSent),
                };
                answers.push((
                    slot,
                    Answer {
                        result,
                        latency: called.elapsed(),
                    },
                ));
            }
            answers
        })
        .collect();
    let mut answers: Vec<Option<Answer>> = vec![None; writes.len()];
    let done: Vec<Vec<(usize, Answer)>> = stream::iter(calls)
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    for (slot, answer) in done.into_iter().flatten() {
        answers[slot] = Some(answer);
    }
    answers
        .into_iter()
        .map(|answer| {
            answer.unwrap_or(Answer {
                result: Err(DestinationError::retryable("no answer")),
                latency: Duration::ZERO,
            })
        })
        .collect()
}

/// How many persons `writes` are for: the most calls a batch can make at
/// once.
pub fn person_count(writes: &[Write<'_>]) -> usize {
    by_person(writes).len()
}

/// The writes' positions, one list per person (by e-mail; a write with no
/// address alone), each list oldest first.
fn by_person(writes: &[Write<'_>]) -> Vec<Vec<usize>> {
    let mut people: Vec<Vec<usize>> = Vec::new();
    let mut by_email: HashMap<String, usize> = HashMap::new();
    for (slot, write) in writes.iter().enumerate() {
        match write.lead.normalised_email() {
            Some(email) => match by_email.get(&email) {
                Some(&person) => people[person].push(slot),
                None => {
                    by_email.insert(email, people.len());
                    people.push(vec![slot]);
                }
            },
            None => people.push(vec![slot]),
        }
    }
    for slots in &mut people {
        slots.sort_by(|a, b| {
            writes[*a]
                .lead
                .newest_by()
                .cmp(writes[*b].lead.newest_by())
                .then(a.cmp(b))
        });
    }
    people
}
