//! The recipe cannot be followed wrong: what a new sender or destination
//! must bring is checked from the catalog, so forgetting it fails a named
//! test. Each sender's own signature mode is one `WebhookAuth` takes; each
//! credential a destination needs is tried before `make deploy` stores it;
//! and the worker may do only what this closed list names, whatever the
//! destinations, the audit and the notice. Needs no server.

use super::*;
use crate::destination_list::destination_lists;
use shared::destination::DestinationKind;

/// The modes `WebhookAuth`'s pattern takes as literal words.
fn literal_modes(template: &Value) -> Vec<String> {
    let pattern = scalar(&template["Parameters"]["WebhookAuth"]["AllowedPattern"]);
    let inner = pattern
        .strip_prefix("^(")
        .and_then(|p| p.strip_suffix(")$"))
        .expect("WebhookAuth's pattern is ^(...)$");
    inner
        .split('|')
        .filter(|mode| mode.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        .map(str::to_owned)
        .collect()
}

/// The senders whose own signature mode the template would refuse.
fn refused_modes(template: &Value) -> Vec<&'static str> {
    let pattern = scalar(&template["Parameters"]["WebhookAuth"]["AllowedPattern"]);
    let pattern = regex_lite::Regex::new(&pattern).expect("WebhookAuth's pattern compiles");
    shared::Sender::ALL
        .iter()
        .filter_map(|sender| sender.profile().signature)
        .map(|signature| signature.mode)
        .filter(|mode| !pattern.is_match(mode))
        .collect()
}

#[test]
fn the_webhook_auth_pattern_takes_each_senders_own_mode() {
    let template = load();
    assert_eq!(refused_modes(&template), Vec::<&str>::new());
    // And the check sees one taken out.
    let mut doctored = template.clone();
    let pattern = scalar(&template["Parameters"]["WebhookAuth"]["AllowedPattern"]);
    doctored["Parameters"]["WebhookAuth"]["AllowedPattern"] =
        Value::String(pattern.replace("|netlify-jws", ""));
    assert_eq!(refused_modes(&doctored), ["netlify-jws"]);
    assert!(literal_modes(&template).contains(&"framer-signature".to_owned()));
}

/// A credential a destination cannot work without is tried once before
/// it is stored: a wrong one is said at the prompt, not after the deploy.
#[test]
fn every_credential_a_destination_needs_is_tried_before_it_is_stored() {
    let unchecked: Vec<String> = DestinationKind::ALL
        .iter()
        .flat_map(|kind| kind.secrets().map(move |secret| (kind.name(), secret)))
        .filter(|(_, secret)| !secret.optional && secret.check.is_none())
        .map(|(kind, secret)| format!("{kind}: {}", secret.parameter))
        .collect();
    assert_eq!(unchecked, Vec::<String>::new());
}

/// Everything the worker may do but read a secret, for any destinations,
/// audit and notice: an action on a resource (a template expression's
/// text). A grant beyond it fails until it is added here, with the reason
/// it is needed.
const WORKER_MAY: &[(&str, &str)] = &[
    // Claims, outcomes, lanes, gates, double submits, erasure markers.
    ("dynamodb:UpdateItem", "ReceiptsTable.Arn"),
    // A gate or a leads-table row only while its receipt is RECEIVED.
    ("dynamodb:ConditionCheckItem", "ReceiptsTable.Arn"),
    // The warm-up.
    ("dynamodb:DescribeTable", "ReceiptsTable.Arn"),
    // The routes item, gate items and erasure markers (held by key).
    ("dynamodb:GetItem", "ReceiptsTable.Arn"),
    // The audit's keys and statuses, and its imports and progress.
    ("dynamodb:BatchGetItem", "ReceiptsTable.Arn"),
    ("dynamodb:PutItem", "ReceiptsTable.Arn"),
    // The pass: what waits.
    ("dynamodb:Query", "${ReceiptsTable.Arn}/index/queue-by-due"),
    // The stream.
    ("dynamodb:DescribeStream", "ReceiptsTable.StreamArn"),
    ("dynamodb:GetRecords", "ReceiptsTable.StreamArn"),
    ("dynamodb:GetShardIterator", "ReceiptsTable.StreamArn"),
    ("dynamodb:ListStreams", "ReceiptsTable.StreamArn"),
    // The leads table destination.
    ("dynamodb:PutItem", "LeadsTable.Arn"),
    // Batches it could not record.
    ("sqs:SendMessage", "DeadLetterQueue.Arn"),
];

/// The secrets the worker may read: the stack's gate key, the notice's
/// URL, the audit's token, and each destination's own (the catalog's).
fn secrets_the_worker_may_read() -> Vec<String> {
    [
        "GateKeySecret",
        "NotifyUrlSecretArn",
        "SenderApiTokenSecretArn",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain(
        DestinationKind::ALL
            .iter()
            .flat_map(|kind| kind.secrets().map(|secret| secret.parameter.to_owned())),
    )
    .collect()
}

/// The worker's grants, as (action, resource) pairs, over every list of
/// destinations with and without the audit and the notice.
fn worker_grants(template: &Value) -> std::collections::BTreeSet<(String, String)> {
    let arn = |name: &str| format!("arn:aws:secretsmanager:us-east-1:123456789012:secret:{name}");
    let secret_parameters: Vec<(String, String)> = template["Parameters"]
        .as_mapping()
        .unwrap()
        .keys()
        .filter_map(|name| name.as_str())
        .filter(|name| name.ends_with("SecretArn"))
        .map(|name| (name.to_owned(), arn(name)))
        .collect();
    let mut grants = std::collections::BTreeSet::new();
    for destination in destination_lists() {
        for extras in [false, true] {
            let mut overrides: Vec<(&str, &str)> = vec![("Destination", destination.as_str())];
            if extras {
                // A sender whose list the audit reads.
                overrides.push(("Sender", "tally"));
            }
            for (name, value) in &secret_parameters {
                let optional = name == "SenderApiTokenSecretArn" || name == "NotifyUrlSecretArn";
                if !optional || extras {
                    overrides.push((name.as_str(), value.as_str()));
                }
            }
            for statement in crate::iam::statements(template, "WorkerFunction", &overrides) {
                let actions: Vec<String> = match &statement["Action"] {
                    serde_json::Value::String(one) => vec![one.clone()],
                    serde_json::Value::Array(many) => many
                        .iter()
                        .filter_map(|a| a.as_str().map(str::to_owned))
                        .collect(),
                    _ => Vec::new(),
                };
                let resources: Vec<String> = match &statement["Resource"] {
                    serde_json::Value::Array(many) => many.iter().map(|r| r.to_string()).collect(),
                    one => vec![match one {
                        serde_json::Value::String(text) => text.clone(),
                        other => other.to_string(),
                    }],
                };
                for action in &actions {
                    for resource in &resources {
                        // Each secret by what it is, not by its test ARN.
                        let resource = resource.replace(
                            "arn:aws:secretsmanager:us-east-1:123456789012:secret:",
                            "secret:",
                        );
                        grants.insert((action.clone(), resource));
                    }
                }
            }
        }
    }
    grants
}

/// What the worker may do beyond its list.
fn beyond_the_list(template: &Value) -> Vec<(String, String)> {
    let secrets = secrets_the_worker_may_read();
    worker_grants(template)
        .into_iter()
        .filter(|(action, resource)| {
            let listed = WORKER_MAY.iter().any(|(a, r)| a == action && r == resource);
            let a_secret = action == "secretsmanager:GetSecretValue"
                && resource
                    .strip_prefix("secret:")
                    .is_some_and(|name| secrets.iter().any(|s| s == name));
            !listed && !a_secret
        })
        .collect()
}

#[test]
fn the_workers_grants_are_a_closed_list() {
    let template = load();
    assert_eq!(beyond_the_list(&template), Vec::<(String, String)>::new());
    // And the list holds nothing the worker is never granted.
    let grants = worker_grants(&template);
    for (action, resource) in WORKER_MAY {
        assert!(
            grants.contains(&((*action).to_owned(), (*resource).to_owned())),
            "{action} on {resource} is listed and never granted"
        );
    }
    // An extra grant, as a careless new destination might add, is seen.
    let mut doctored = template.clone();
    let policies = doctored["Resources"]["WorkerFunction"]["Properties"]["Policies"]
        .as_sequence_mut()
        .unwrap();
    let extra: Value = serde_norway::from_str(
        "Statement: [{Effect: Allow, Action: ssm:GetParameter, Resource: '*'}]",
    )
    .unwrap();
    policies.push(extra);
    assert_eq!(
        beyond_the_list(&doctored),
        [("ssm:GetParameter".to_owned(), "*".to_owned())]
    );
}
