//! The deployment contract, checked without a server: template.yaml
//! against the code (`functions`, `tables`, `iam`, `alarms`, `audit`), and
//! the catalogs of senders and destinations against everything that must
//! follow them (`catalog`, each destination's deploy surface in `surface`,
//! every secret's grant in `grants`, `Destination` as a list in
//! `destination_list`, what a new kind must bring in `recipe`). One test
//! binary: one link.

mod alarms;
mod audit;
mod catalog;
mod destination_list;
mod functions;
mod grants;
mod iam;
mod recipe;
mod surface;
mod tables;

pub(crate) use devtools::template::{self, filter_matches, Evaluator};
pub(crate) use serde_norway::Value;
pub(crate) use shared::receipt::attr;

/// Every sender's name, in catalog order.
pub(crate) fn senders() -> Vec<&'static str> {
    shared::Sender::ALL
        .iter()
        .map(|sender| sender.name())
        .collect()
}

/// Every destination's name, in catalog order.
pub(crate) fn destinations() -> Vec<&'static str> {
    shared::destination::DestinationKind::ALL
        .iter()
        .map(|kind| kind.name())
        .collect()
}

pub(crate) fn load() -> Value {
    template::load(&template::workspace_template()).expect("template.yaml parses")
}

pub(crate) fn resource<'a>(template: &'a Value, name: &str) -> &'a Value {
    &template["Resources"][name]
}

/// A template scalar as text.
pub(crate) fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Number(number) => number.to_string(),
        other => panic!("not a scalar: {other:?}"),
    }
}
