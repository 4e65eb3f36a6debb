//! What a destination without idempotency keys records between attempts,
//! so that the next attempt (a retry, a stream replay, a pass, another
//! worker instance) sees what the last one did or may have done: the
//! person's record id once known, a create of that record in flight, and
//! each submission's items (its note, its CRM lead), started or written.
//!
//! It is kept on the person's newest-wins gate item (`gate#hmac:…`): one
//! item per person, keyed by a pseudonym, among the keys the worker may
//! write, and deleted with the person by `receipts forget`. Every write is
//! conditional on that item existing (the gate the delivery just passed
//! wrote it), so a delivery that outlives an erasure never re-creates it.
//! The port is here; its adapters beside it: `dynamodb` (the receipts
//! table) and `in_process` (a map, for tests of the logic).

pub mod dynamodb;
pub mod in_process;

use std::collections::BTreeMap;
use std::future::Future;

/// What is recorded for one person.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recalled {
    /// The destination's id of the person's record, once known.
    pub record_id: Option<String>,
    /// When a create of that record started (epoch seconds), while its
    /// outcome is unknown.
    pub create_started_at: Option<u64>,
    /// Each submission's items, by item key: `note:<receipt key>`,
    /// `lead:<receipt key>`.
    pub items: BTreeMap<String, ItemMark>,
}

/// What became of one submission's item (a note, a lead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemMark {
    /// A create started then (epoch seconds); its outcome is unknown.
    Started(u64),
    /// Written: the destination's id of it, and when it was recorded
    /// (epoch seconds; 0 for one recorded before times were kept).
    Written { id: String, at: u64 },
}

/// An item written, as `remember_item` records it.
#[derive(Debug, Clone, Copy)]
pub struct WrittenItem<'a> {
    /// Its id at the destination.
    pub id: &'a str,
    /// Now, epoch seconds.
    pub at: u64,
    /// Other items of the person exactly-once no longer needs
    /// (`history::prunable`), removed in the same write, so the person's
    /// item stays small whatever their number of submissions.
    pub pruned: &'a [String],
}

/// The answer to "may I start a create?".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begun {
    /// Recorded: this attempt starts the create now.
    Begun,
    /// Not recorded: another create started after the lag's start, or the
    /// thing is known meanwhile. Recall again to see which.
    Refused,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    /// The person's gate item is gone: `receipts forget` erased them while
    /// this delivery ran. Nothing was written.
    #[error("the person was erased meanwhile")]
    Erased,
    #[error("the receipts table is unavailable ({0})")]
    Unavailable(String),
}

pub trait PersonMemory: Send + Sync + 'static {
    /// What is recorded for the person behind `gate` (empty if nothing).
    fn recall(&self, gate: &str) -> impl Future<Output = Result<Recalled, MemoryError>> + Send;

    /// Records that a create of the person's record starts at `now`, if no
    /// record id is known and no other create started at or after
    /// `stale_before` (one that did may still be invisible to a search).
    fn begin_create(
        &self,
        gate: &str,
        now: u64,
        stale_before: u64,
    ) -> impl Future<Output = Result<Begun, MemoryError>> + Send;

    /// The person's record is `id` (found or created): no create in flight.
    fn remember_record(
        &self,
        gate: &str,
        id: &str,
    ) -> impl Future<Output = Result<(), MemoryError>> + Send;

    /// The record `id` is gone at the destination (deleted or merged
    /// there): forgets it, if it is still the one recorded.
    fn forget_record(
        &self,
        gate: &str,
        id: &str,
    ) -> impl Future<Output = Result<(), MemoryError>> + Send;

    /// Records that the create of `item` starts at `now`, if it is not
    /// written and no other create of it started at or after
    /// `stale_before`.
    fn begin_item(
        &self,
        gate: &str,
        item: &str,
        now: u64,
        stale_before: u64,
    ) -> impl Future<Output = Result<Begun, MemoryError>> + Send;

    /// `item` is written, as `written` says; `written.pruned` go.
    fn remember_item(
        &self,
        gate: &str,
        item: &str,
        written: WrittenItem<'_>,
    ) -> impl Future<Output = Result<(), MemoryError>> + Send;
}

/// One of the adapters, chosen at start-up: for a destination that is not
/// generic over its memory (HubSpot keeps notes only when by e-mail).
#[derive(Debug, Clone)]
pub enum AnyMemory {
    Dynamo(dynamodb::DynamoPersonMemory),
    InProcess(in_process::InProcessMemory),
}

impl PersonMemory for AnyMemory {
    async fn recall(&self, gate: &str) -> Result<Recalled, MemoryError> {
        match self {
            AnyMemory::Dynamo(memory) => memory.recall(gate).await,
            AnyMemory::InProcess(memory) => memory.recall(gate).await,
        }
    }

    async fn begin_create(
        &self,
        gate: &str,
        now: u64,
        stale_before: u64,
    ) -> Result<Begun, MemoryError> {
        match self {
            AnyMemory::Dynamo(memory) => memory.begin_create(gate, now, stale_before).await,
            AnyMemory::InProcess(memory) => memory.begin_create(gate, now, stale_before).await,
        }
    }

    async fn remember_record(&self, gate: &str, id: &str) -> Result<(), MemoryError> {
        match self {
            AnyMemory::Dynamo(memory) => memory.remember_record(gate, id).await,
            AnyMemory::InProcess(memory) => memory.remember_record(gate, id).await,
        }
    }

    async fn forget_record(&self, gate: &str, id: &str) -> Result<(), MemoryError> {
        match self {
            AnyMemory::Dynamo(memory) => memory.forget_record(gate, id).await,
            AnyMemory::InProcess(memory) => memory.forget_record(gate, id).await,
        }
    }

    async fn begin_item(
        &self,
        gate: &str,
        item: &str,
        now: u64,
        stale_before: u64,
    ) -> Result<Begun, MemoryError> {
        match self {
            AnyMemory::Dynamo(memory) => memory.begin_item(gate, item, now, stale_before).await,
            AnyMemory::InProcess(memory) => memory.begin_item(gate, item, now, stale_before).await,
        }
    }

    async fn remember_item(
        &self,
        gate: &str,
        item: &str,
        written: WrittenItem<'_>,
    ) -> Result<(), MemoryError> {
        match self {
            AnyMemory::Dynamo(memory) => memory.remember_item(gate, item, written).await,
            AnyMemory::InProcess(memory) => memory.remember_item(gate, item, written).await,
        }
    }
}
