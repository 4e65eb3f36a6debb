//! The inputs of one batch upsert: one per contact, the newest
//! submission's, and the writes held back. Pure.

use serde_json::{Map, Value};
use shared::field_map::FieldMap;

use super::settings::IdProperty;
use crate::destinations::port::Write;

/// One input of a request: its slot in the batch and what HubSpot gets.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Input {
    pub slot: usize,
    pub id: String,
    pub trace: String,
    pub properties: Map<String, Value>,
}

/// Why a write is not sent in this call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Held {
    /// `HUBSPOT_ID_PROPERTY=email` and the submission has none.
    NoEmail,
    /// A newer submission for the same contact is in the call (its slot).
    SameContactAs(usize),
}

/// The inputs for `writes`, and the writes held back. Pure.
pub(super) fn plan(
    writes: &[Write<'_>],
    id_property: &IdProperty,
    field_map: &FieldMap,
) -> (Vec<Input>, Vec<(usize, Held)>) {
    let mut held = Vec::new();
    // Each write's contact id, in slot order; the first slot of an id
    // holds its place in the request.
    let mut by_id: Vec<(String, Vec<usize>)> = Vec::new();
    for (slot, write) in writes.iter().enumerate() {
        let id = match id_property {
            IdProperty::Email => match write.lead.normalised_email() {
                Some(email) => email,
                None => {
                    held.push((slot, Held::NoEmail));
                    continue;
                }
            },
            IdProperty::Custom(_) => write.lead.external_id.clone(),
        };
        match by_id.iter_mut().find(|(known, _)| *known == id) {
            Some((_, slots)) => slots.push(slot),
            None => by_id.push((id, vec![slot])),
        }
    }
    let mut inputs = Vec::with_capacity(by_id.len());
    for (id, slots) in by_id {
        // The newest by the sender's time; on a tie, the later in the batch.
        let winner = slots
            .iter()
            .copied()
            .max_by(|a, b| {
                writes[*a]
                    .lead
                    .newest_by()
                    .cmp(writes[*b].lead.newest_by())
                    .then(a.cmp(b))
            })
            .unwrap_or(slots[0]);
        held.extend(
            slots
                .iter()
                .filter(|slot| **slot != winner)
                .map(|slot| (*slot, Held::SameContactAs(winner))),
        );
        let lead = writes[winner].lead;
        let mut properties = field_map.apply(lead);
        match id_property {
            IdProperty::Email => {
                properties.insert("email".to_owned(), Value::String(id.clone()));
            }
            // Set by `id` itself.
            IdProperty::Custom(name) => {
                properties.remove(name);
            }
        }
        inputs.push(Input {
            slot: winner,
            id,
            trace: lead.external_id.clone(),
            properties,
        });
    }
    (inputs, held)
}
