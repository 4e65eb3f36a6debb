//! A `destinations` list, top-level or a route's, read and checked: the
//! names of destinations (`DESTINATION`'s), each once. Whether the stack
//! has them is `Routes::check_destinations`'s question, asked where the
//! stack's destinations are known.

use super::Problems;
use crate::destination::DestinationKind;

/// `destinations = ["hubspot", "mailchimp"]`: one or more destination
/// names, each once.
pub(super) fn destinations(
    value: &toml::Value,
    place: &str,
    problems: &mut Problems,
) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let list = value.as_array().filter(|items| !items.is_empty());
    let Some(items) = list else {
        problems.add(
            place,
            "destinations",
            "must be a list of one or more destinations: destinations = [\"hubspot\"]",
        );
        return names;
    };
    for item in items {
        match item.as_str().map(str::trim).map(DestinationKind::parse) {
            Some(Some(kind)) if names.iter().any(|name| name == kind.name()) => problems.add(
                place,
                "destinations",
                &format!("{:?} is listed twice", kind.name()),
            ),
            Some(Some(kind)) => names.push(kind.name().to_owned()),
            _ => problems.add(
                place,
                "destinations",
                &format!(
                    "each must be a destination's name: {}",
                    DestinationKind::names()
                ),
            ),
        }
    }
    names
}
