//! The catalogs, `shared::Sender::ALL` and
//! `shared::destination::DestinationKind::ALL`, against every list
//! that must name each kind and cannot be derived from them: the
//! template's `Sender` and `Destination` values, the stream filter's key
//! prefixes, `make deploy`'s lists, the `events/` samples, the docs. A kind
//! added to a catalog and missed anywhere here fails `make check` with a
//! message naming the file and the missing entry; and every kind's secrets
//! against the grants that let it read them. Needs no server.

use std::path::{Path, PathBuf};

use devtools::template::{self, filter_matches};
use shared::{IdempotencyKey, Sender, SubmissionId};
use shared::destination::DestinationKind;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn senders() -> Vec<&'static str> {
    Sender::ALL.iter().map(|sender| sender.name()).collect()
}

fn destinations() -> Vec<&'static str> {
    DestinationKind::ALL
        .iter()
        .map(|kind| kind.name())
        .collect()
}

/// What `found` (the entries a file holds, as `what` names them) lacks of
/// `catalog`, and what it names that no catalog entry is: one message each.
fn differences(file: &str, what: &str, catalog: &[&str], found: &[String]) -> Vec<String> {
    let lacking = catalog
        .iter()
        .filter(|entry| !found.iter().any(|f| f == *entry))
        .map(|entry| format!("{file}: {what} lacks {entry:?}"));
    let unknown = found
        .iter()
        .filter(|f| !catalog.contains(&f.as_str()))
        .map(|f| format!("{file}: {what} names {f:?}, which no catalog entry is"));
    lacking.chain(unknown).collect()
}

/// The strings of a Python list assigned to `name` on one line
/// (`SENDERS = ["staticforms", ...]`).
fn python_list(text: &str, name: &str) -> Vec<String> {
    let line = text
        .lines()
        .find(|line| line.starts_with(&format!("{name} = [")))
        .unwrap_or_else(|| panic!("scripts/deploy.py has no {name} = [...] line"));
    let inside = &line[line.find('[').unwrap() + 1..line.rfind(']').unwrap()];
    inside
        .split(',')
        .map(|item| item.trim().trim_matches('"').to_owned())
        .filter(|item| !item.is_empty())
        .collect()
}

fn allowed_values(template: &serde_norway::Value, parameter: &str) -> Vec<String> {
    template["Parameters"][parameter]["AllowedValues"]
        .as_sequence()
        .unwrap_or_else(|| panic!("the template's {parameter} has no AllowedValues"))
        .iter()
        .map(|value| value.as_str().unwrap().to_owned())
        .collect()
}

/// The senders whose receipts the worker's stream filter passes: those of
/// `Sender::ALL` whose key (`<name>:<event>:<id>`) matches it.
fn senders_the_filter_passes(template: &serde_norway::Value) -> Vec<String> {
    let pattern: serde_json::Value = serde_json::from_str(
        template["Resources"]["ReceiptStreamMapping"]["Properties"]["FilterCriteria"]["Filters"][0]
            ["Pattern"]
            .as_str()
            .expect("the stream filter's pattern"),
    )
    .unwrap();
    let insert = |key: &str| serde_json::json!({"eventName": "INSERT", "dynamodb": {"Keys": {"pk": {"S": key}}}});
    Sender::ALL
        .iter()
        .filter(|sender| {
            let key = IdempotencyKey::for_submission(**sender, &SubmissionId::parse("s1").unwrap());
            filter_matches(&pattern, &insert(key.as_str()))
        })
        .map(|sender| sender.name().to_owned())
        .collect()
}

/// The senders whose receipts the worker may update: those whose key
/// prefix (`<name>:*`) its `UpdateItem` grant names.
fn senders_the_worker_may_update(template: &serde_norway::Value) -> Vec<String> {
    let policies = &template["Resources"]["WorkerFunction"]["Properties"]["Policies"];
    let statements = policies
        .as_sequence()
        .into_iter()
        .flatten()
        .flat_map(|policy| {
            policy["Statement"]
                .as_sequence()
                .cloned()
                .unwrap_or_default()
        });
    let update = statements
        .into_iter()
        .find(|statement| statement["Action"].as_str() == Some("dynamodb:UpdateItem"))
        .expect("the worker's UpdateItem statement");
    update["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
        .as_sequence()
        .expect("its dynamodb:LeadingKeys")
        .iter()
        .filter_map(|key| key.as_str()?.strip_suffix(":*").map(str::to_owned))
        .collect()
}

#[test]
fn every_list_of_senders_and_destinations_names_each_catalog_entry() {
    let template = template::load(&template::workspace_template()).unwrap();
    let deploy = read("scripts/deploy.py");
    let readme = read("README.md");
    let exists = |path: String| root().join(&path).exists().then_some(path);
    let mut problems = Vec::new();
    problems.extend(differences(
        "template.yaml",
        "Parameters.Sender.AllowedValues",
        &senders(),
        &allowed_values(&template, "Sender"),
    ));
    problems.extend(differences(
        "template.yaml",
        "Parameters.Destination.AllowedValues",
        &destinations(),
        &allowed_values(&template, "Destination"),
    ));
    problems.extend(differences(
        "template.yaml",
        "ReceiptStreamMapping's filter (a key prefix per sender)",
        &senders(),
        &senders_the_filter_passes(&template),
    ));
    problems.extend(differences(
        "template.yaml",
        "WorkerFunction's UpdateItem keys (a <sender>:* per sender)",
        &senders(),
        &senders_the_worker_may_update(&template),
    ));
    problems.extend(differences(
        "scripts/deploy.py",
        "SENDERS",
        &senders(),
        &python_list(&deploy, "SENDERS"),
    ));
    problems.extend(differences(
        "scripts/deploy.py",
        "DESTINATIONS",
        &destinations(),
        &python_list(&deploy, "DESTINATIONS"),
    ));
    // A sample delivery per sender (Static Forms': the first one written).
    let samples: Vec<String> = senders()
        .into_iter()
        .filter(|name| {
            let file = match *name {
                "staticforms" => "events/ingest-valid.json".to_owned(),
                other => format!("events/ingest-{other}.json"),
            };
            exists(file).is_some()
        })
        .map(str::to_owned)
        .collect();
    problems.extend(differences(
        "events/",
        "a sample delivery ingest-<sender>.json",
        &senders(),
        &samples,
    ));
    let pages: Vec<String> = destinations()
        .into_iter()
        .filter(|name| exists(format!("docs/destinations/{name}.md")).is_some())
        .map(str::to_owned)
        .collect();
    problems.extend(differences(
        "docs/destinations/",
        "a page <destination>.md",
        &destinations(),
        &pages,
    ));
    let rows: Vec<String> = destinations()
        .into_iter()
        .filter(|name| readme.contains(&format!("| `{name}`")))
        .map(str::to_owned)
        .collect();
    problems.extend(differences(
        "README.md",
        "the destinations table",
        &destinations(),
        &rows,
    ));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The comparison itself, on doctored lists: a missing entry and an
/// unknown one are each named with the file.
#[test]
fn a_missing_or_unknown_entry_is_named_with_its_file() {
    // Never a plausible next kind as the unknown one: adding it would
    // break this test for the wrong reason.
    let found = vec!["staticforms".to_owned(), "no-such-sender".to_owned()];
    assert_eq!(
        differences("template.yaml", "Sender", &["staticforms", "tally"], &found),
        [
            "template.yaml: Sender lacks \"tally\"",
            "template.yaml: Sender names \"no-such-sender\", which no catalog entry is",
        ]
    );
    assert_eq!(
        python_list("X = 1\nSENDERS = [\"a\", \"b\"]\n", "SENDERS"),
        ["a", "b"]
    );
    // A sender the filter does not pass is missing from its list.
    let template = template::load(&template::workspace_template()).unwrap();
    let mut text = serde_norway::to_string(&template).unwrap();
    text = text.replace("{\"prefix\": \"tally:\"}, ", "");
    let doctored: serde_norway::Value = serde_norway::from_str(&text).unwrap();
    assert_eq!(
        senders_the_filter_passes(&doctored),
        ["staticforms", "typeform", "webflow"],
        "the doctored filter lost tally, and only tally"
    );
}

/// The statements of `function`'s policies, as the evaluator deploys them
/// (conditions applied, `AWS::NoValue` removed).
fn statements_of(
    evaluator: &template::Evaluator,
    template: &serde_norway::Value,
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
#[test]
fn each_kind_reads_exactly_the_secrets_it_is_granted() {
    let template = template::load(&template::workspace_template()).unwrap();
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
    for destination in destinations() {
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
                    let evaluator = template::Evaluator::new(&template, &overrides);
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
                        let granted =
                            secret_grants(&statements_of(&evaluator, &template, function));
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
    assert!(
        problems.is_empty(),
        "template.yaml:\n{}",
        problems.join("\n")
    );
}
