//! The person memory on a map, with the DynamoDB adapter's conditions: for
//! tests of the adapters' logic. A gate is known once `admit` (the
//! newest-wins gate's first pass) or any `begin_*` saw it; `erase` deletes
//! it, as `receipts forget` does.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use super::{Begun, ItemMark, MemoryError, PersonMemory, Recalled, WrittenItem};

#[derive(Debug, Clone, Default)]
pub struct InProcessMemory(Arc<Mutex<Items>>);

#[derive(Debug, Default)]
struct Items {
    recorded: HashMap<String, Recalled>,
    erased: HashSet<String>,
}

impl InProcessMemory {
    pub fn new() -> Self {
        Self::default()
    }

    /// What is recorded for `gate`, if its item exists.
    pub fn get(&self, gate: &str) -> Option<Recalled> {
        self.items().recorded.get(gate).cloned()
    }

    /// Deletes the person's item, as `receipts forget` does: no write
    /// re-creates it.
    pub fn erase(&self, gate: &str) {
        let mut items = self.items();
        items.recorded.remove(gate);
        items.erased.insert(gate.to_owned());
    }

    fn items(&self) -> std::sync::MutexGuard<'_, Items> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `change` on the existing item, as a conditional update does.
    fn update<T>(
        &self,
        gate: &str,
        change: impl FnOnce(&mut Recalled) -> T,
    ) -> Result<T, MemoryError> {
        let mut items = self.items();
        if items.erased.contains(gate) {
            return Err(MemoryError::Erased);
        }
        // The gate the delivery passed wrote the item: a test that never
        // erased it sees it exist.
        let item = items.recorded.entry(gate.to_owned()).or_default();
        Ok(change(item))
    }
}

impl PersonMemory for InProcessMemory {
    async fn recall(&self, gate: &str) -> Result<Recalled, MemoryError> {
        Ok(self.get(gate).unwrap_or_default())
    }

    async fn begin_create(
        &self,
        gate: &str,
        now: u64,
        stale_before: u64,
    ) -> Result<Begun, MemoryError> {
        self.update(gate, |item| {
            let in_flight = item.create_started_at.is_some_and(|at| at >= stale_before);
            if item.record_id.is_some() || in_flight {
                Begun::Refused
            } else {
                item.create_started_at = Some(now);
                Begun::Begun
            }
        })
    }

    async fn remember_record(&self, gate: &str, id: &str) -> Result<(), MemoryError> {
        self.update(gate, |item| {
            item.record_id = Some(id.to_owned());
            item.create_started_at = None;
        })
    }

    async fn forget_record(&self, gate: &str, id: &str) -> Result<(), MemoryError> {
        self.update(gate, |item| {
            if item.record_id.as_deref() == Some(id) {
                item.record_id = None;
            }
        })
    }

    async fn begin_item(
        &self,
        gate: &str,
        item: &str,
        now: u64,
        stale_before: u64,
    ) -> Result<Begun, MemoryError> {
        self.update(gate, |recorded| match recorded.items.get(item) {
            Some(ItemMark::Written { .. }) => Begun::Refused,
            Some(ItemMark::Started(at)) if *at >= stale_before => Begun::Refused,
            _ => {
                recorded
                    .items
                    .insert(item.to_owned(), ItemMark::Started(now));
                Begun::Begun
            }
        })
    }

    async fn remember_item(
        &self,
        gate: &str,
        item: &str,
        written: WrittenItem<'_>,
    ) -> Result<(), MemoryError> {
        self.update(gate, |recorded| {
            for pruned in written.pruned {
                recorded.items.remove(pruned);
            }
            recorded.items.insert(
                item.to_owned(),
                ItemMark::Written {
                    id: written.id.to_owned(),
                    at: written.at,
                },
            );
        })
    }
}
