//! The `Destination` parameter as a list (`hubspot,mailchimp`): each kind's
//! condition holds exactly when the list names it, the worker is told the
//! list as it was given, and every setting a kind cannot work without has
//! a template rule, so a deploy without it is refused before anything is
//! made. Walks the catalog; needs no server.

use super::*;
use shared::destination::{DestinationKind, Source};

/// The condition that holds when the stack delivers to `kind`: the one
/// whose test looks for `,<name>,` in the list, found in the template (a
/// new kind needs no line here, and one without its condition fails).
fn condition_of(template: &Value, kind: DestinationKind) -> String {
    let needle = format!(",{},", kind.name());
    let found: Vec<String> = template["Conditions"]
        .as_mapping()
        .unwrap()
        .iter()
        .filter(|(_, test)| {
            serde_norway::to_string(test)
                .unwrap()
                .contains(needle.as_str())
        })
        .filter_map(|(name, _)| name.as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "exactly one condition of template.yaml must look for {needle:?} in Destination: {found:?}"
    );
    found.into_iter().next().unwrap()
}

/// Each kind alone, every pair in both orders, and every kind at once.
pub(crate) fn destination_lists() -> Vec<String> {
    let names = destinations();
    let mut lists: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
    for first in &names {
        for second in &names {
            if first != second {
                lists.push(format!("{first},{second}"));
            }
        }
    }
    lists.push(names.join(","));
    lists
}

#[test]
fn each_kinds_condition_holds_exactly_when_the_list_names_it() {
    let template = load();
    assert_eq!(
        template["Parameters"]["Destination"]["Type"].as_str(),
        Some("CommaDelimitedList"),
        "one stack, several destinations"
    );
    for list in destination_lists() {
        let evaluator = Evaluator::new(&template, &[("Destination", &list)]);
        let named: Vec<&str> = list.split(',').collect();
        for kind in DestinationKind::ALL {
            assert_eq!(
                evaluator.condition(&condition_of(&template, kind)),
                named.contains(&kind.name()),
                "{} with Destination={list}",
                condition_of(&template, kind)
            );
        }
        assert_eq!(
            evaluator
                .environment("WorkerFunction")
                .get(worker::config::DESTINATION)
                .map(String::as_str),
            Some(list.as_str()),
            "the worker is told the list as given"
        );
    }
    // A name is never found inside another: `http` is not in `https`.
    let evaluator = Evaluator::new(&template, &[("Destination", "https,xhubspot")]);
    for kind in DestinationKind::ALL {
        assert!(
            !evaluator.condition(&condition_of(&template, kind)),
            "{kind:?}"
        );
    }
}

/// A `Rules` entry's assertions that a parameter is not empty, under the
/// rule condition `!Contains [!Ref Destination, <name>]`: (name, parameter).
fn required_by_rules(template: &Value) -> Vec<(String, String)> {
    let tagged = |value: &Value, tag: &str| -> Option<Value> {
        match value {
            Value::Tagged(t) if t.tag == tag => Some(t.value.clone()),
            _ => None,
        }
    };
    let reference =
        |value: &Value| tagged(value, "!Ref").and_then(|v| v.as_str().map(str::to_owned));
    let mut required = Vec::new();
    for (_, rule) in template["Rules"].as_mapping().unwrap() {
        let Some(contains) = tagged(&rule["RuleCondition"], "!Contains") else {
            continue;
        };
        if reference(&contains[0]).as_deref() != Some("Destination") {
            continue;
        }
        let Some(name) = contains[1].as_str() else {
            continue;
        };
        for assertion in rule["Assertions"].as_sequence().into_iter().flatten() {
            let not_empty = tagged(&assertion["Assert"], "!Not")
                .and_then(|not| tagged(&not[0], "!Equals"))
                .filter(|equals| equals[1].as_str() == Some(""))
                .and_then(|equals| reference(&equals[0]));
            if let Some(parameter) = not_empty {
                required.push((name.to_owned(), parameter));
            }
        }
    }
    required
}

/// The parameters `kind` cannot work without: a secret that is not
/// optional, a question without a default.
fn required_parameters(kind: DestinationKind) -> Vec<&'static str> {
    kind.profile()
        .settings
        .iter()
        .filter_map(|setting| match setting.source {
            Source::Secret(secret) if !secret.optional => Some(secret.parameter),
            Source::Asked {
                parameter,
                default: None,
                ..
            } => Some(parameter),
            _ => None,
        })
        .collect()
}

fn missing_rules(template: &Value) -> Vec<String> {
    let rules = required_by_rules(template);
    let mut missing = Vec::new();
    for kind in DestinationKind::ALL {
        for parameter in required_parameters(kind) {
            if !rules
                .iter()
                .any(|(name, p)| name == kind.name() && p == parameter)
            {
                missing.push(format!("{}: {parameter}", kind.name()));
            }
        }
    }
    missing
}

/// Every required setting of every kind has its rule, whichever other
/// destinations the list names; removing any one rule is seen.
#[test]
fn each_required_setting_has_its_rule() {
    let template = load();
    assert_eq!(missing_rules(&template), Vec::<String>::new());
    let rules: Vec<String> = template["Rules"]
        .as_mapping()
        .unwrap()
        .keys()
        .filter_map(|name| name.as_str().map(str::to_owned))
        .collect();
    let mut seen = 0;
    for rule in rules {
        let mut doctored = template.clone();
        doctored["Rules"].as_mapping_mut().unwrap().remove(&rule);
        if required_by_rules(&doctored).len() < required_by_rules(&template).len() {
            assert!(
                !missing_rules(&doctored).is_empty(),
                "removing {rule} went unnoticed"
            );
            seen += 1;
        }
    }
    assert!(seen >= 5, "{seen} rules for required settings");
}

/// The alarm on refused credentials sums the auth errors of exactly the
/// destinations the list names: none is missed, none is billed in vain.
#[test]
fn the_auth_alarm_reads_each_listed_destination() {
    let template = load();
    for list in destination_lists() {
        let evaluator = Evaluator::new(&template, &[("Destination", &list)]);
        let properties = evaluator
            .evaluate(&resource(&template, "DestinationAuthAlarm")["Properties"])
            .unwrap();
        let properties = serde_json::to_value(&properties).unwrap();
        let mut read: Vec<&str> = properties["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m.get("MetricStat"))
            .map(|stat| {
                assert_eq!(stat["Metric"]["MetricName"], "DestinationAuthErrors");
                let dimensions = stat["Metric"]["Dimensions"].as_array().unwrap();
                dimensions
                    .iter()
                    .find(|d| d["Name"] == "Destination")
                    .and_then(|d| d["Value"].as_str())
                    .unwrap()
            })
            .collect();
        read.sort_unstable();
        let mut named: Vec<&str> = list.split(',').collect();
        named.sort_unstable();
        assert_eq!(read, named, "Destination={list}");
    }
}
