//! Each kind's secrets against the grants that let its functions read
//! them: every `*_SECRET_ARN` a function is told of is granted by exactly
//! one `GetSecretValue`, for every sender, destination and mode; deleting
//! any grant fails. Needs no server.

use devtools::template::{self, Evaluator};
use serde_norway::Value;
use shared::destination::DestinationKind;

use crate::destination_list::destination_lists;
use crate::senders;

/// The statements of `function`'s policies, as the evaluator deploys them
/// (conditions applied, `AWS::NoValue` removed).
fn statements_of(
    evaluator: &Evaluator,
    template: &Value,
    function: &str,
) -> Vec<serde_json::Value> {
    let policies = evaluator
        .evaluate(&template["Resources"][function]["Properties"]["Policies"])
        .unwrap_or(serde_norway::Value::Null);
    let json: serde_json::Value = serde_json::to_value(&policies).unwrap();
    json.as_array()
        .into_iter()
        .flatten()
        .flat_map(|policy| policy["Statement"].as_array().cloned().unwrap_or_default())
        .collect()
}

/// Where `function` may read a secret: each `secretsmanager:GetSecretValue`
/// statement's resource.
fn secret_grants(statements: &[serde_json::Value]) -> Vec<String> {
    statements
        .iter()
        .filter(|s| {
            s["Action"] == "secretsmanager:GetSecretValue"
                || s["Action"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|a| a == "secretsmanager:GetSecretValue"))
        })
        .map(|s| {
            s["Resource"]
                .as_str()
                .unwrap_or("(not one resource)")
                .to_owned()
        })
        .collect()
}

/// Every kind, in every mode that changes what it reads: each secret a
/// function is told of (a `*_SECRET_ARN` variable) is granted by exactly
/// one `GetSecretValue`, and no other secret is. A kind whose grant is
/// forgotten would fail at start-up in a user's account and nowhere here;
/// this walks the catalogs, so a new kind is checked without a row of its
/// own. Each secret parameter gets an ARN of its own name, so a grant of
/// the wrong one is seen too.
fn grant_problems(template: &Value) -> Vec<String> {
    let secret_parameters: Vec<String> = template["Parameters"]
        .as_mapping()
        .unwrap()
        .keys()
        .filter_map(|name| name.as_str())
        .filter(|name| name.ends_with("SecretArn"))
        .map(str::to_owned)
        .collect();
    let arn = |name: &str| format!("arn:aws:secretsmanager:us-east-1:123456789012:secret:{name}");
    let arns: Vec<(String, String)> = secret_parameters
        .iter()
        .map(|name| (name.clone(), arn(name)))
        .collect();
    let mut problems = Vec::new();
    let mut checked = 0;
    for destination in destination_lists() {
        let destination = destination.as_str();
        for sender in senders() {
            for audit in [false, true] {
                for (id_property, secret_given) in [("email", true), ("submission_id", false)] {
                    let mut overrides: Vec<(&str, &str)> = vec![
                        ("Destination", destination),
                        ("Sender", sender),
                        ("HubSpotIdProperty", id_property),
                    ];
                    for (name, value) in &arns {
                        let webhook = name == "WebhookSecretArn";
                        let audit_token = name == "SenderApiTokenSecretArn";
                        if (webhook && !secret_given) || (audit_token && !audit) {
                            continue;
                        }
                        overrides.push((name.as_str(), value.as_str()));
                    }
                    let evaluator = Evaluator::new(template, &overrides);
                    for function in ["IngestFunction", "WorkerFunction"] {
                        checked += 1;
                        let told: Vec<String> = evaluator
                            .environment(function)
                            .into_iter()
                            .filter(|(name, _)| {
                                name.ends_with("_SECRET_ARN") || name.ends_with("_SECRETS_ARN")
                            })
                            .map(|(_, value)| value)
                            .collect();
                        let granted = secret_grants(&statements_of(&evaluator, template, function));
                        let place = format!("{function} with {destination}, {sender}, audit {audit}, id {id_property}");
                        for secret in &told {
                            let grants = granted.iter().filter(|g| *g == secret).count();
                            if grants != 1 {
                                problems
                                    .push(format!("{place}: {secret} is granted {grants} times"));
                            }
                        }
                        for grant in &granted {
                            if !told.contains(grant) {
                                problems.push(format!(
                                    "{place}: {grant} is granted, and no variable names it"
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 0);
    problems
}

#[test]
fn each_kind_reads_exactly_the_secrets_it_is_granted() {
    let template = template::load(&template::workspace_template()).unwrap();
    let problems = grant_problems(&template);
    assert!(
        problems.is_empty(),
        "template.yaml:\n{}",
        problems.join("\n")
    );
}

/// Deleting any one `GetSecretValue` statement, of either function, fails
/// the check above with a line naming the secret.
#[test]
fn a_deleted_grant_is_named() {
    let template = template::load(&template::workspace_template()).unwrap();
    let mut deleted = 0;
    for function in ["IngestFunction", "WorkerFunction"] {
        let policies = template["Resources"][function]["Properties"]["Policies"]
            .as_sequence()
            .unwrap();
        for (p, policy) in policies.iter().enumerate() {
            let Some(statements) = policy["Statement"].as_sequence() else {
                continue;
            };
            for (s, statement) in statements.iter().enumerate() {
                // A statement, or an `!If` holding one.
                if !serde_norway::to_string(statement)
                    .unwrap()
                    .contains("secretsmanager:GetSecretValue")
                {
                    continue;
                }
                let mut doctored = template.clone();
                doctored["Resources"][function]["Properties"]["Policies"][p]["Statement"]
                    .as_sequence_mut()
                    .unwrap()
                    .remove(s);
                let problems = grant_problems(&doctored);
                assert!(
                    problems
                        .iter()
                        .any(|line| line.contains("is granted 0 times")),
                    "deleting {function}'s grant {statement:?} went unnoticed"
                );
                deleted += 1;
            }
        }
    }
    assert!(
        deleted >= DestinationKind::ALL.len(),
        "{deleted} grants found"
    );
}
