//! Where `forget --everywhere` gets what the places' deletions need: each
//! destination built by the worker's own adapters from the settings the
//! worker reads, and the sender's API client as `receipts audit` makes it.
//!
//! (The sender's side is `audit::sender_side`.)
//!
//! With `--stack`, the worker's variables are derived from the stack's
//! parameters and outputs through each destination's deploy surface in
//! the catalog (`Profile::settings`), and each secret is read by its ARN
//! with the operator's own AWS credentials, as the smoke test reads the
//! webhook secret. With a table alone (locally, in tests) they are the
//! environment's, as the worker takes them.

use std::collections::HashMap;

use aws_config::SdkConfig;
use shared::destination::set::DestinationSet;
use shared::destination::{DestinationKind, Source};
use shared::newest::GATE_KEY_SECRET_ARN;
use worker::destinations::ConfiguredDestination;

use super::super::Failed;
use crate::stack::{output, parameter, Stack};
use crate::table::ReceiptsTable;

/// The worker variables a deployed stack of `set` gives its worker, as
/// far as they come from its parameters and outputs (the rest have the
/// worker's defaults). Pure.
pub fn stack_variables(stack: &Stack, set: &DestinationSet) -> HashMap<&'static str, String> {
    let mut variables = HashMap::from([("DESTINATION", set.to_string())]);
    if let Ok(arn) = stack.output(output::GATE_KEY_SECRET_ARN) {
        variables.insert(GATE_KEY_SECRET_ARN, arn.to_owned());
    }
    for kind in set.kinds() {
        let profile = kind.profile();
        for setting in profile.settings {
            let value = match setting.source {
                Source::Resource(_) => stack.output(output::LEADS_TABLE).unwrap_or_default(),
                source => source
                    .parameter()
                    .map(|name| stack.parameter(name))
                    .unwrap_or_default(),
            };
            if !value.trim().is_empty() {
                variables.insert(setting.variable, value.to_owned());
            }
        }
        if profile.maps_fields {
            let field_map = stack.parameter("FieldMap");
            if !field_map.trim().is_empty() {
                variables.insert(shared::field_map::FIELD_MAP, field_map.to_owned());
            }
        }
    }
    variables
}

/// The stack's destinations: the stack's `Destination`, else
/// `$DESTINATION`.
pub fn destination_set(stack: Option<&Stack>) -> Result<DestinationSet, Failed> {
    let raw = match stack {
        Some(stack) => stack.parameter(parameter::DESTINATION).to_owned(),
        None => std::env::var("DESTINATION").unwrap_or_default(),
    };
    let raw =
        match raw.trim() {
            // The template's default.
            "" if stack.is_some() => DestinationKind::LeadsTable.name().to_owned(),
            "" => return Err(Failed::Usage(
                "forget --everywhere erases at each destination of the stack: give --stack, or \
                 set DESTINATION (and each destination's settings, as the worker takes them)"
                    .to_owned(),
            )),
            raw => raw.to_owned(),
        };
    DestinationSet::parse(&raw).map_err(|error| Failed::Usage(format!("DESTINATION={raw} {error}")))
}

/// Each destination of `set`, built by the worker's adapters from
/// `variables` (`None`: the environment).
pub async fn destinations(
    config: &SdkConfig,
    table: &ReceiptsTable,
    set: &DestinationSet,
    variables: Option<HashMap<&'static str, String>>,
) -> Result<Vec<(DestinationKind, ConfiguredDestination)>, Failed> {
    let get = |name: &str| -> Option<String> {
        let value = match &variables {
            Some(variables) => variables.get(name).cloned(),
            None => std::env::var(name).ok(),
        };
        value.filter(|value| !value.trim().is_empty())
    };
    let allow_http = matches!(
        get(shared::destination::CRM_ALLOW_HTTP).as_deref(),
        Some("true" | "1")
    );
    let settings = worker::destinations::read_all(set, &get, allow_http)
        .map_err(|error| Failed::Usage(format!("the destinations' settings: {error}")))?;
    let built = settings
        .build(table.name(), config, table.client())
        .await
        .map_err(|error| Failed::Run(format!("the destinations: {error}")))?;
    Ok(set.kinds().iter().copied().zip(built).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_stacks_worker_variables_come_from_its_parameters_and_outputs() {
        let stack = Stack {
            name: "s".into(),
            outputs: BTreeMap::from([(
                output::GATE_KEY_SECRET_ARN.to_owned(),
                "arn:gate".to_owned(),
            )]),
            parameters: BTreeMap::from([
                ("Destination".to_owned(), "hubspot,pipedrive".to_owned()),
                ("HubSpotTokenSecretArn".to_owned(), "arn:hs".to_owned()),
                ("HubSpotIdProperty".to_owned(), "email".to_owned()),
                ("PipedriveApiTokenSecretArn".to_owned(), "arn:pd".to_owned()),
                ("FieldMap".to_owned(), String::new()),
                ("ZohoModule".to_owned(), "Leads".to_owned()),
            ]),
        };
        let set = DestinationSet::parse("hubspot,pipedrive").unwrap();
        let variables = stack_variables(&stack, &set);
        assert_eq!(variables["DESTINATION"], "hubspot,pipedrive");
        assert_eq!(variables[GATE_KEY_SECRET_ARN], "arn:gate");
        assert_eq!(variables["HUBSPOT_TOKEN_SECRET_ARN"], "arn:hs");
        assert_eq!(variables["HUBSPOT_ID_PROPERTY"], "email");
        assert_eq!(variables["PIPEDRIVE_API_TOKEN_SECRET_ARN"], "arn:pd");
        assert!(!variables.contains_key("FIELD_MAP"), "empty: unset");
        assert!(
            !variables.contains_key("ZOHO_MODULE"),
            "another destination's"
        );
    }
}
