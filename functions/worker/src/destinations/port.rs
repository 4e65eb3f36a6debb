//! The destination port: upsert leads so that running it again for the same
//! receipts changes nothing more. Every adapter implements it; the delivery
//! core hands a destination every lead of a stream batch or a pass page at
//! once (`upsert_batch`): a CRM with a batch API writes them in as few
//! calls as it can; the others write one by one, at most `concurrency` at a
//! time. Every call is bounded by the time left (`CallDeadline`), so an
//! answer that came is never thrown away with one that did not.

use std::future::Future;
use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};
use shared::newest::GateSecret;
pub use shared::record::DeliveredRecord;
use shared::{IdempotencyKey, Lead};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upserted {
    /// The lead now holds this submission's content, in this record (its
    /// id and link, where the destination's answer gives them).
    Written(DeliveredRecord),
    /// A newer submission already wrote this lead; this one was dropped.
    Stale,
}

/// Why an upsert did not happen. Reasons are short codes, never lead data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DestinationError {
    #[error("destination unavailable ({reason})")]
    Retryable {
        status: Option<u16>,
        retry_after: Option<Duration>,
        reason: String,
    },
    /// 401/403 even after the adapter renewed its credentials: ours to fix.
    #[error("destination refused our credentials (HTTP {status})")]
    Unauthorized { status: u16 },
    /// Our credentials were withdrawn at their source (the secret deleted
    /// or malformed): nothing was sent, and nothing is until they can be
    /// read again. Ours to fix, like a refusal.
    #[error("the destination's credentials are unavailable ({0})")]
    CredentialsUnavailable(shared::refresh::Unavailable),
    /// The destination refused our configuration for this lead (a field or
    /// object it does not have): ours to fix, never the lead's. It waits,
    /// pending, with the alarm of refused credentials.
    #[error("the destination refused our configuration ({reason})")]
    Misconfigured { status: Option<u16>, reason: String },
    #[error("destination refused the lead ({reason})")]
    Permanent { status: Option<u16>, reason: String },
    /// The destination refused this person for good, on purpose, and says
    /// so (a mailing list's member who unsubscribed or asked to be
    /// forgotten): its answer, not a fault. Settled REFUSED with `code`,
    /// the destination's own code, never its free text; never retried.
    #[error("the destination refuses this person ({code})")]
    Refused { status: Option<u16>, code: String },
    /// No call carried this lead: too little of the invocation was left to
    /// start one. Not an attempt; the lead waits for the next pass.
    #[error("not sent: no time was left in this invocation")]
    NotSent,
}

impl DestinationError {
    pub fn retryable(reason: impl Into<String>) -> Self {
        DestinationError::Retryable {
            status: None,
            retry_after: None,
            reason: reason.into(),
        }
    }
}

/// A call that starts with less time than this left would most likely be
/// cut off mid-way, leaving its lead written or not, unknown: not started.
pub const MIN_CALL_TIME: Duration = Duration::from_millis(500);

/// When every call to the destination must have ended: the invocation's
/// deadline less the time kept to record the answers. Each call gets the
/// time that is left as its timeout, and none starts with less than
/// [`MIN_CALL_TIME`] left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallDeadline(Instant);

impl CallDeadline {
    pub fn at(instant: Instant) -> Self {
        CallDeadline(instant)
    }

    /// `after` from now.
    pub fn after(after: Duration) -> Self {
        CallDeadline(Instant::now() + after)
    }

    /// No deadline but the HTTP client's own timeout: for a single
    /// `upsert`, which the delivery core bounds itself.
    pub fn client_timeout_only() -> Self {
        CallDeadline::after(Duration::from_secs(24 * 3600))
    }

    /// The time a call started now may take; `None` when it is less than
    /// [`MIN_CALL_TIME`].
    pub fn time_left(&self) -> Option<Duration> {
        Some(self.0.saturating_duration_since(Instant::now())).filter(|left| *left >= MIN_CALL_TIME)
    }

    /// Runs `call` within the time left: `NotSent` when too little is
    /// left to start it, a retryable timeout when it is cut off (it may
    /// have been written: the next attempt upserts it again).
    pub async fn bound<T>(
        &self,
        call: impl Future<Output = Result<T, DestinationError>>,
    ) -> Result<T, DestinationError> {
        let Some(left) = self.time_left() else {
            return Err(DestinationError::NotSent);
        };
        tokio::time::timeout(left, call)
            .await
            .unwrap_or_else(|_| Err(DestinationError::retryable(CUT_OFF)))
    }
}

/// The reason of a call cut off at the invocation's deadline.
pub const CUT_OFF: &str = "timeout: the invocation's time ran out during the call";

/// One lead to write, with its receipt's key (the same on every attempt).
#[derive(Debug, Clone, Copy)]
pub struct Write<'a> {
    pub lead: &'a Lead,
    pub key: &'a IdempotencyKey,
    /// A newer submission of this person was already written: keep this
    /// submission on the person's history (its note) and never write its
    /// fields. Only a destination that [`Destination::keeps_history`] is
    /// handed one, and it answers `Stale` once the history holds it.
    pub history_only: bool,
    /// Whether its checked consent box may grant consent (a subscription
    /// status, a marketing permission, a new member's status): only the
    /// person's newest submission, delivered soon after it was made
    /// (`shared::consent::may_grant`). Otherwise the box is only recorded
    /// in its note.
    pub grants_consent: bool,
    /// Whether its submission was attempted before (an earlier delivery,
    /// or an earlier round of this one): what that attempt may have made
    /// is looked for before it is made again (`history::Keeping`).
    pub retried: bool,
}

impl<'a> Write<'a> {
    /// A write of the lead's fields (and history, where kept), its consent
    /// box granting what it says.
    pub fn lead(lead: &'a Lead, key: &'a IdempotencyKey) -> Self {
        Write {
            lead,
            key,
            history_only: false,
            grants_consent: true,
            retried: false,
        }
    }
}

/// A person to erase at a destination (`receipts forget --everywhere`):
/// their normalised address, and the ids of their records there that the
/// stack kept (its person memories, its receipts), which a destination
/// uses before it looks them up by the address.
#[derive(Debug, Clone, Copy)]
pub struct Person<'a> {
    pub email: &'a str,
    pub record_ids: &'a [String],
}

/// What a destination did with a person it was asked to erase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forgotten {
    /// Deleted there by the vendor's own deletion: this many records.
    Deleted(u32),
    /// Nothing of the person there (or deleted before: a repeat is no harm).
    NotFound,
    /// It cannot delete from here: what the operator must do there.
    ByHand(&'static str),
    /// Its copy is in the stack's own tables, which the stack's step erases
    /// (the leads table).
    WithTheStack,
}

impl Forgotten {
    /// `count` records deleted: `NotFound` for none.
    pub fn counted(count: u32) -> Self {
        match count {
            0 => Forgotten::NotFound,
            count => Forgotten::Deleted(count),
        }
    }
}

/// The answer for one write of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub result: Result<Upserted, DestinationError>,
    /// How long the call that carried this write took.
    pub latency: Duration,
}

pub trait Destination: Send + Sync {
    /// A short name for logs: `http`, `dynamodb`, `hubspot`.
    fn name(&self) -> &'static str;

    /// When several submissions of one person write one record, keyed by
    /// the e-mail (HubSpot contacts by email), the key of that person's
    /// newest-wins gate: only a submission at least as new as the last one
    /// written may write it, across calls too (`shared::newest`).
    /// Destinations keyed by submission never need one; the leads table
    /// keeps newest-wins in its own conditional write.
    fn newest_gates(&self) -> Option<&GateSecret> {
        None
    }

    /// Whether every submission is kept on its person's record (one note
    /// each), a stale one too. Then a lead its newest-wins gate holds back
    /// is still handed to `upsert_batch`, as `history_only`, and settled
    /// `Stale` once its history is kept; otherwise it is settled `Stale`
    /// with no call.
    fn keeps_history(&self) -> bool {
        false
    }

    /// Creates or updates the lead of `lead.external_id`. `key` is the
    /// receipt's key, the same on every attempt for this receipt.
    fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> impl Future<Output = Result<Upserted, DestinationError>> + Send;

    /// Writes every lead of `writes`: one answer per write, in order. No two
    /// writes are for the same receipt. Every call ends by `deadline`; a
    /// write no call carried is answered `NotSent`. The default writes them
    /// one by one, at most `concurrency` at once.
    fn upsert_batch(
        &self,
        writes: &[Write<'_>],
        concurrency: usize,
        deadline: CallDeadline,
    ) -> impl Future<Output = Vec<Answer>> + Send {
        // The futures are built first (they do nothing until polled): a
        // closure in the stream would not be general enough to be `Send`.
        let calls: Vec<_> = writes
            .iter()
            .map(|write| timed_upsert(self, *write, deadline))
            .collect();
        stream::iter(calls).buffered(concurrency.max(1)).collect()
    }

    /// Deletes the person at the destination by its own deletion (each
    /// kind says how, and which scope its token needs for it). A record
    /// already gone is `NotFound`, never an error, so a repeat is safe.
    fn erase(
        &self,
        person: Person<'_>,
    ) -> impl Future<Output = Result<Forgotten, DestinationError>> + Send;
}

/// One lead written through the destination's own `upsert_batch`, alone,
/// within `deadline`: `upsert` for a destination whose batch does the work
/// (its call slots, its rounds).
pub async fn upsert_alone<D: Destination + ?Sized>(
    destination: &D,
    lead: &Lead,
    key: &IdempotencyKey,
    deadline: CallDeadline,
) -> Result<Upserted, DestinationError> {
    let mut answers = destination
        .upsert_batch(&[Write::lead(lead, key)], 1, deadline)
        .await;
    answers
        .pop()
        .map_or(Err(DestinationError::retryable("no answer")), |answer| {
            answer.result
        })
}

/// One `upsert`, timed and bounded by `deadline`: the default batch's unit
/// of work.
pub async fn timed_upsert<D: Destination + ?Sized>(
    destination: &D,
    write: Write<'_>,
    deadline: CallDeadline,
) -> Answer {
    let called = Instant::now();
    let result = deadline
        .bound(destination.upsert(write.lead, write.key))
        .await;
    Answer {
        result,
        latency: called.elapsed(),
    }
}

/// A lead whose message is "Please call", for the field-map tests of the
/// CRMs' settings.
#[cfg(test)]
pub(crate) fn test_lead(name: &str, email: &str, fields: serde_json::Value) -> Lead {
    Lead {
        external_id: "sub_1".into(),
        name: name.into(),
        email: email.into(),
        message: "Please call".into(),
        fields: fields.as_object().cloned().unwrap_or_default(),
        aliases: Vec::new(),
        received_at: "2026-11-30T08:00:00.000Z".into(),
        submitted_at: None,
        sender_time_replaced: false,
        route: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_call_gets_the_time_left_and_none_starts_without_enough() {
        let quick = async { Ok::<_, DestinationError>(1) };
        assert_eq!(
            CallDeadline::after(Duration::from_secs(5))
                .bound(quick)
                .await,
            Ok(1)
        );

        let started = std::sync::atomic::AtomicBool::new(false);
        let never = async {
            started.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok::<_, DestinationError>(1)
        };
        let too_late = CallDeadline::after(MIN_CALL_TIME / 2);
        assert_eq!(too_late.bound(never).await, Err(DestinationError::NotSent));
        assert!(
            !started.load(std::sync::atomic::Ordering::SeqCst),
            "not started"
        );

        let slow = async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok::<_, DestinationError>(1)
        };
        let cut = Instant::now();
        let deadline = CallDeadline::after(MIN_CALL_TIME + Duration::from_millis(100));
        assert_eq!(
            deadline.bound(slow).await,
            Err(DestinationError::retryable(CUT_OFF))
        );
        assert!(
            cut.elapsed() < Duration::from_secs(2),
            "cut at the deadline"
        );
    }
}
