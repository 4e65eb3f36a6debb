//! Each destination's deploy surface, as its profile declares it
//! (`shared::destination`), against the template: for every kind and every
//! mode that changes what it reads (one record per e-mail address or not,
//! a field map or not), the worker's environment holds each variable the
//! profile says a parameter or resource feeds, the gate key exactly when
//! always (every stack compares double submits with it), `FIELD_MAP` exactly when it maps fields and one is
//! given, no variable of another kind, and the worker's own configuration
//! reads it as that kind. Walks the catalog, so a new kind is checked
//! without a row of its own, and a stack of every kind at once; the
//! doctored-template test shows that deleting any one variable, grant or
//! condition membership fails. Needs no server.

use devtools::template::{self, Evaluator};
use serde_norway::Value;
use shared::destination::{Check, DestinationKind, Gates, Source};
use shared::field_map::FIELD_MAP;
use shared::newest::GATE_KEY_SECRET_ARN;

const WORKER: &str = "WorkerFunction";

fn arn(parameter: &str) -> String {
    format!("arn:aws:secretsmanager:us-east-1:123456789012:secret:{parameter}")
}

/// One way to deploy a kind: its parameters, and what its worker must get.
pub(crate) struct Mode {
    pub(crate) label: String,
    pub(crate) kind: DestinationKind,
    overrides: Vec<(String, String)>,
    keeps_gates: bool,
    field_map: bool,
}

impl Mode {
    /// Its template parameters, for an `Evaluator`.
    pub(crate) fn overrides(&self) -> Vec<(&str, &str)> {
        self.overrides
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect()
    }
}

/// Every mode of every kind that changes its surface.
pub(crate) fn modes() -> Vec<Mode> {
    let mut modes = Vec::new();
    for kind in DestinationKind::ALL {
        let profile = kind.profile();
        // Each way the gates go: the parameter and value that decide it
        // (none where `Destination` alone does), and whether gates are kept.
        let gate_modes: Vec<(Option<(&str, &str)>, bool)> = match profile.gates {
            Gates::Never => vec![(None, false)],
            Gates::Always => vec![(None, true)],
            Gates::When {
                parameter, value, ..
            } => vec![
                (Some((parameter, value)), true),
                (Some((parameter, "a_unique_property")), false),
            ],
        };
        for (gates, keeps_gates) in gate_modes {
            // A field map excludes the optional parameters that stand for
            // one (HubSpotMessageProperty): each is a mode of its own.
            for field_map in [false, true] {
                let mut overrides = vec![("Destination".to_owned(), profile.name.to_owned())];
                if let Some((parameter, value)) = gates {
                    overrides.push((parameter.to_owned(), value.to_owned()));
                }
                for setting in profile.settings {
                    let value = match setting.source {
                        Source::Secret(secret) => arn(secret.parameter),
                        // The gates' own parameter is set by the mode.
                        Source::Asked { parameter, .. }
                            if gates.is_some_and(|(gated, ..)| gated == parameter) =>
                        {
                            continue
                        }
                        Source::Asked { check, .. } => match check {
                            Check::UpsertUrl => "https://crm.example.com/leads/{externalId}",
                            Check::Https => "https://acme.my.salesforce.com",
                            Check::EmailOrProperty => "a_unique_property",
                            Check::Identifier => "a1b2c3d4e5",
                        }
                        .to_owned(),
                        // A URL where the template asks for one.
                        Source::Optional(parameter) if !field_map && parameter.ends_with("Url") => {
                            "https://crm.example.com/people".to_owned()
                        }
                        Source::Optional(_) if !field_map => "a_property".to_owned(),
                        _ => continue,
                    };
                    overrides.push((setting.source.parameter().unwrap().to_owned(), value));
                }
                if field_map {
                    let map = accepted_field_map(kind, &overrides);
                    overrides.push(("FieldMap".to_owned(), map.to_owned()));
                }
                modes.push(Mode {
                    label: format!(
                        "Destination={}{}{}",
                        profile.name,
                        gates.map_or(String::new(), |(p, v)| format!(", {p}={v}")),
                        if field_map { ", FieldMap" } else { "" }
                    ),
                    kind,
                    overrides,
                    keeps_gates,
                    field_map: field_map && profile.maps_fields,
                });
            }
        }
    }
    modes
}

/// Field maps in the spellings the CRMs' properties take: lower case (an
/// e-mail property), or capitals (a merge tag, a contact attribute).
const FIELD_MAPS: [&str; 2] = [r#"{"email":"email"}"#, r#"{"FNAME":"name"}"#];

/// The first of [`FIELD_MAPS`] the worker's own settings take for `kind`
/// deployed with `overrides`: a new kind needs no line here unless its
/// properties are spelled like none of them.
fn accepted_field_map(kind: DestinationKind, overrides: &[(String, String)]) -> &'static str {
    let template = template::load(&template::workspace_template()).unwrap();
    FIELD_MAPS
        .into_iter()
        .find(|map| {
            let mut parameters: Vec<(&str, &str)> = overrides
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str()))
                .collect();
            parameters.push(("FieldMap", map));
            let env = Evaluator::new(&template, &parameters).environment(WORKER);
            let get = |name: &str| env.get(name).filter(|value| !value.is_empty()).cloned();
            worker::destinations::read(kind, &get, false).is_ok()
        })
        .unwrap_or_else(|| {
            panic!(
                "{}: none of these field maps is taken: {FIELD_MAPS:?}; add one spelled as its properties are",
                kind.name()
            )
        })
}

/// What `template` gets wrong for each mode alone, and for a stack of
/// every kind at once (each in its first mode without a field map, which
/// is one kind's vocabulary), one line each.
fn surface_problems(template: &Value) -> Vec<String> {
    let modes = modes();
    let mut problems = Vec::new();
    for mode in &modes {
        problems.extend(stack_problems(template, &[mode]));
    }
    let together: Vec<&Mode> = DestinationKind::ALL
        .iter()
        .filter_map(|kind| {
            modes
                .iter()
                .find(|m| m.kind == *kind && !m.overrides.iter().any(|(p, _)| p == "FieldMap"))
        })
        .collect();
    problems.extend(stack_problems(template, &together));
    problems
}

/// What `template` gets wrong for a stack of `modes`' kinds, each in its
/// mode: `Destination` lists them in order.
fn stack_problems(template: &Value, modes: &[&Mode]) -> Vec<String> {
    let mut problems = Vec::new();
    let names: Vec<&str> = modes.iter().map(|m| m.kind.name()).collect();
    let destination = names.join(",");
    let mut overrides: Vec<(&str, &str)> = vec![("Destination", destination.as_str())];
    for mode in modes {
        overrides.extend(
            mode.overrides()
                .into_iter()
                .filter(|(p, _)| *p != "Destination"),
        );
    }
    let evaluator = Evaluator::new(template, &overrides);
    let env = evaluator.environment(WORKER);
    let labels: Vec<&str> = modes.iter().map(|m| m.label.as_str()).collect();
    let place = &labels.join(" + ");
    for mode in modes {
        let profile = mode.kind.profile();
        for setting in profile.settings {
            let expected = match setting.source {
                Source::Resource(_) => None,
                Source::Optional(parameter) => {
                    match overrides.iter().find(|(p, _)| *p == parameter) {
                        Some((_, value)) => Some(Some((*value).to_owned())),
                        None => Some(None),
                    }
                }
                Source::Parameter(parameter) => {
                    let given = overrides.iter().find(|(p, _)| *p == parameter);
                    let default = template["Parameters"][parameter]["Default"].clone();
                    let value = given
                        .map(|(_, v)| (*v).to_owned())
                        .or_else(|| match default {
                            Value::String(text) => Some(text),
                            Value::Number(number) => Some(number.to_string()),
                            Value::Bool(flag) => Some(flag.to_string()),
                            _ => None,
                        });
                    Some(value)
                }
                Source::Asked { parameter, .. } => Some(
                    overrides
                        .iter()
                        .find(|(p, _)| *p == parameter)
                        .map(|(_, v)| (*v).to_owned()),
                ),
                Source::Secret(secret) => Some(Some(arn(secret.parameter))),
            };
            let got = env.get(setting.variable).cloned();
            match expected {
                // A resource: present, whatever its name.
                None if got.is_none() => problems.push(format!(
                    "{place}: {} is not set (the profile says {:?} feeds it)",
                    setting.variable, setting.source
                )),
                Some(expected) if got != expected => problems.push(format!(
                    "{place}: {} is {got:?}, and the profile's {:?} gives {expected:?}",
                    setting.variable,
                    setting.source.parameter().unwrap_or_default()
                )),
                _ => {}
            }
        }
    }
    // Every stack has the gate key: it keys the items of double
    // submits whatever the kind, and its gates where it keeps them.
    if !env.contains_key(GATE_KEY_SECRET_ARN) {
        problems.push(format!(
            "{place}: {GATE_KEY_SECRET_ARN} is not set, and every stack has the gate key (double submits{})",
            if modes.iter().any(|m| m.keeps_gates) { ", and the profile keeps gates" } else { "" }
        ));
    }
    let field_map = env.contains_key(FIELD_MAP);
    if field_map != modes.iter().any(|m| m.field_map) {
        problems.push(format!(
            "{place}: {FIELD_MAP} is {}set, and the profile {} fields",
            if field_map { "" } else { "not " },
            if modes.iter().any(|m| m.kind.profile().maps_fields) {
                "maps"
            } else {
                "maps no"
            }
        ));
    }
    for other in DestinationKind::ALL {
        for variable in other.profile().variables {
            if !modes.iter().any(|m| m.kind.reads(variable)) && env.contains_key(*variable) {
                problems.push(format!(
                    "{place}: {variable} ({}'s) is set",
                    other.profile().name
                ));
            }
        }
    }
    let expected = shared::destination::set::DestinationSet::parse(&destination).unwrap();
    match env.get(worker::config::DESTINATION) {
        Some(told) if *told == destination => {}
        told => problems.push(format!("{place}: DESTINATION is {told:?}")),
    }
    match worker::Config::from_lookup(|name| env.get(name).cloned()) {
        Ok(config) if config.destinations.set == expected => {}
        Ok(config) => problems.push(format!(
            "{place}: the worker reads {}",
            config.destinations.set
        )),
        Err(error) => problems.push(format!("{place}: the worker refuses it: {error}")),
    }
    problems
}

#[test]
fn each_destination_gets_the_variables_its_profile_declares() {
    let template = template::load(&template::workspace_template()).unwrap();
    assert!(modes().len() >= DestinationKind::ALL.len() * 2);
    let problems = surface_problems(&template);
    assert!(
        problems.is_empty(),
        "template.yaml:\n{}",
        problems.join("\n")
    );
}

/// The worker's environment in `template`, without `variable`.
fn without_variable(template: &Value, variable: &str) -> Value {
    let mut doctored = template.clone();
    let variables = doctored["Resources"][WORKER]["Properties"]["Environment"]["Variables"]
        .as_mapping_mut()
        .unwrap();
    assert!(
        variables.remove(variable).is_some(),
        "the template sets no {variable}"
    );
    doctored
}

/// `condition`, made false: no kind is a member any more.
fn without_condition(template: &Value, condition: &str) -> Value {
    let mut doctored = template.clone();
    let conditions = doctored["Conditions"].as_mapping_mut().unwrap();
    assert!(
        conditions.contains_key(condition),
        "no condition {condition}"
    );
    conditions.insert(
        Value::String(condition.to_owned()),
        serde_norway::from_str("!Equals [a, b]").unwrap(),
    );
    doctored
}

/// Deleting any one variable a profile declares, or the gate or field-map
/// condition, fails the check above with a line naming it.
#[test]
fn a_deleted_variable_or_condition_is_named() {
    let template = template::load(&template::workspace_template()).unwrap();
    let mut variables: Vec<&str> = DestinationKind::ALL
        .iter()
        .flat_map(|kind| kind.profile().settings.iter().map(|s| s.variable))
        .collect();
    variables.extend([GATE_KEY_SECRET_ARN, FIELD_MAP]);
    for variable in variables {
        let problems = surface_problems(&without_variable(&template, variable));
        assert!(
            problems.iter().any(|p| p.contains(variable)),
            "deleting {variable} went unnoticed: {problems:?}"
        );
    }
    let problems = surface_problems(&without_condition(&template, "HasFieldMap"));
    assert!(
        problems.iter().any(|p| p.contains(FIELD_MAP)),
        "emptying HasFieldMap went unnoticed: {problems:?}"
    );
}
