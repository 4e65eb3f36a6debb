//! Call slots in one process: what the DynamoDB adapter does, on a map
//! several destinations (several "instances") may share, for tests.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{order, CallSlots, Lease, SlotsError};

#[derive(Debug, Clone)]
pub struct InProcessSlots {
    total: u32,
    held: Arc<Mutex<HashMap<u32, Lease>>>,
}

impl InProcessSlots {
    pub fn new(total: u32) -> Self {
        InProcessSlots {
            total,
            held: Arc::new(Mutex::new(HashMap::new())),
        }
    }
}

impl CallSlots for InProcessSlots {
    fn total(&self) -> u32 {
        self.total
    }

    async fn take(&self, want: u32, lease: &Lease, now_ms: u64) -> Result<Vec<u32>, SlotsError> {
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut taken = Vec::new();
        for slot in order(self.total, fastrand::u32(..self.total.max(1))) {
            if taken.len() as u32 >= want {
                break;
            }
            let free = held.get(&slot).is_none_or(|other| other.until_ms <= now_ms);
            if free {
                held.insert(slot, lease.clone());
                taken.push(slot);
            }
        }
        Ok(taken)
    }

    async fn give_back(&self, slots: &[u32], lease: &Lease) -> Result<(), SlotsError> {
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for slot in slots {
            if held
                .get(slot)
                .is_some_and(|other| other.holder == lease.holder)
            {
                held.remove(slot);
            }
        }
        Ok(())
    }
}
