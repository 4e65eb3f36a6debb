//! Calls in flight at one destination account, held to its limit across
//! every running instance of the worker (Mailchimp allows 10 connections
//! at once per account; stream batches, a pass and more instances of each
//! can run at the same time, so one instance's own count is not enough).
//!
//! The account's limit is a set of numbered slots, shared by every
//! instance: a delivery takes as many free ones as it can use (at most one
//! per person of its batch), holds them until its invocation's deadline,
//! makes at most that many calls at once, and gives them back. A slot whose
//! holder died is free again at its deadline. The adapters sit beside
//! this: `dynamodb` (one item per slot in the receipts table) and
//! `in_process` (a map, for tests of several "instances" in one process).

pub mod dynamodb;
pub mod in_process;

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Why slots could not be taken or given back: a short code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("call slots unavailable ({0})")]
pub struct SlotsError(pub String);

/// One taking of slots: who holds them, until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// A random id of this taking, so only its holder gives them back.
    pub holder: String,
    /// When the slots are free again if never given back (epoch ms).
    pub until_ms: u64,
}

impl Lease {
    /// A new lease until `left` from now.
    pub fn for_the_next(left: Duration) -> Self {
        Lease {
            holder: format!("{:016x}", fastrand::u64(..)),
            until_ms: now_ms().saturating_add(u64::try_from(left.as_millis()).unwrap_or(u64::MAX)),
        }
    }
}

pub trait CallSlots: Send + Sync {
    /// How many slots the account has.
    fn total(&self) -> u32;

    /// Takes up to `want` of the slots free at `now_ms` for `lease`: the
    /// numbers of those taken (none when every slot is held).
    fn take(
        &self,
        want: u32,
        lease: &Lease,
        now_ms: u64,
    ) -> impl Future<Output = Result<Vec<u32>, SlotsError>> + Send;

    /// Gives `slots` back, where `lease` still holds them.
    fn give_back(
        &self,
        slots: &[u32],
        lease: &Lease,
    ) -> impl Future<Output = Result<(), SlotsError>> + Send;
}

/// The slots of the one adapter a deployment uses, or of a test's.
#[derive(Debug, Clone)]
pub enum AnySlots {
    Dynamo(dynamodb::DynamoCallSlots),
    InProcess(in_process::InProcessSlots),
}

impl CallSlots for AnySlots {
    fn total(&self) -> u32 {
        match self {
            AnySlots::Dynamo(slots) => slots.total(),
            AnySlots::InProcess(slots) => slots.total(),
        }
    }

    async fn take(&self, want: u32, lease: &Lease, now_ms: u64) -> Result<Vec<u32>, SlotsError> {
        match self {
            AnySlots::Dynamo(slots) => slots.take(want, lease, now_ms).await,
            AnySlots::InProcess(slots) => slots.take(want, lease, now_ms).await,
        }
    }

    async fn give_back(&self, slots: &[u32], lease: &Lease) -> Result<(), SlotsError> {
        match self {
            AnySlots::Dynamo(adapter) => adapter.give_back(slots, lease).await,
            AnySlots::InProcess(adapter) => adapter.give_back(slots, lease).await,
        }
    }
}

/// The slot numbers to try, starting at a random one, so instances that
/// take at once spread over the slots instead of all trying slot 0 first.
pub fn order(total: u32, start: u32) -> impl Iterator<Item = u32> {
    (0..total).map(move |n| (start + n) % total.max(1))
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slot_is_tried_once_from_any_start() {
        for start in [0, 3, 9] {
            let mut tried: Vec<u32> = order(10, start).collect();
            assert_eq!(tried[0], start);
            tried.sort_unstable();
            assert_eq!(tried, (0..10).collect::<Vec<_>>());
        }
    }
}
