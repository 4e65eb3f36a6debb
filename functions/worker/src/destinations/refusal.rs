//! What a CRM's refusal of our configuration says to the operator: a
//! property the CRM does not have is named with where the lead's property
//! came from (its route by name, or the field map), so they know what to
//! change. Shared by the adapters whose refusals name a property.

use shared::field_map::FieldMap;
use shared::Lead;

use super::port::{DestinationError, Upserted};

/// A refusal of a property of our configuration, told where the lead's
/// property came from (its route by name, or the field map), so the
/// operator knows what to change. Pure.
pub(super) fn traced(
    result: Result<Upserted, DestinationError>,
    lead: &Lead,
    field_map: &FieldMap,
) -> Result<Upserted, DestinationError> {
    match result {
        Err(DestinationError::Misconfigured { status, reason }) => {
            let source = reason.split_once(": ").and_then(|(_, property)| {
                shared::field_map::property_source(property, lead.route.as_deref(), field_map)
            });
            Err(DestinationError::Misconfigured {
                status,
                reason: match source {
                    Some(source) => format!("{reason} from {source}"),
                    None => reason,
                },
            })
        }
        other => other,
    }
}
