//! Each function may do only what it needs, and writes only under its own keys.

use super::*;

pub(crate) fn statements(
    template: &Value,
    function: &str,
    overrides: &[(&str, &str)],
) -> Vec<serde_json::Value> {
    let evaluator = Evaluator::new(template, overrides);
    let policies = evaluator
        .evaluate(&resource(template, function)["Properties"]["Policies"])
        .unwrap();
    let json: serde_json::Value = serde_json::to_value(&policies).unwrap();
    json.as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["Statement"].as_array().unwrap().clone())
        .collect()
}

#[test]
fn each_function_may_do_only_what_it_needs() {
    let template = load();
    let ingest = statements(&template, "IngestFunction", &[]);
    assert_eq!(ingest.len(), 5);
    assert_eq!(
        ingest[0]["Action"], "dynamodb:DescribeTable",
        "the warm-up's DescribeTable"
    );
    // The conditional put, under the sender's keys (held for every
    // write in each_write_to_the_receipts_table_is_held_to_its_functions_keys).
    assert_eq!(ingest[1]["Action"], "dynamodb:PutItem");
    assert_eq!(ingest[1]["Resource"], "ReceiptsTable.Arn");
    // The put's fallback read: the fingerprint only, never form data.
    assert_eq!(ingest[2]["Action"], "dynamodb:GetItem");
    assert_eq!(ingest[2]["Resource"], "ReceiptsTable.Arn");
    assert_eq!(
        ingest[2]["Condition"]["ForAllValues:StringEquals"]["dynamodb:Attributes"],
        serde_json::json!([
            shared::receipt::attr::PK,
            shared::receipt::attr::PAYLOAD_FINGERPRINT
        ])
    );
    assert_eq!(
        ingest[2]["Condition"]["StringEqualsIfExists"]["dynamodb:Select"],
        "SPECIFIC_ATTRIBUTES"
    );
    // The routes: that one item's routes attribute, never a receipt.
    assert!(reads_the_routes_alone(&ingest[4]), "{}", ingest[4]);
    let ingest = [ingest[1].clone(), ingest[3].clone()];
    assert_eq!(ingest[1]["Action"], "secretsmanager:GetSecretValue");
    assert_eq!(
        ingest[1]["Resource"], "arn:aws:secretsmanager:us-east-1:123456789012:secret:WebhookSecret",
        "exactly the generated secret"
    );
    let existing = "arn:aws:secretsmanager:us-east-1:123456789012:secret:mine";
    let with_existing = statements(
        &template,
        "IngestFunction",
        &[("WebhookSecretArn", existing)],
    );
    assert_eq!(
        with_existing[3]["Resource"], existing,
        "exactly the given secret"
    );

    let actions = |statements: &[serde_json::Value]| -> Vec<(String, String)> {
        statements
            .iter()
            .flat_map(|s| {
                let resource = s["Resource"].as_str().unwrap_or_default().to_owned();
                match &s["Action"] {
                    serde_json::Value::String(a) => vec![(a.clone(), resource)],
                    serde_json::Value::Array(list) => list
                        .iter()
                        .map(|a| (a.as_str().unwrap().to_owned(), resource.clone()))
                        .collect(),
                    _ => vec![],
                }
            })
            .collect()
    };
    let with_leads = actions(&statements(
        &template,
        "WorkerFunction",
        &[("Destination", "dynamodb")],
    ));
    assert!(with_leads.contains(&("dynamodb:UpdateItem".into(), "ReceiptsTable.Arn".into())));
    assert!(with_leads.contains(&("dynamodb:DescribeTable".into(), "ReceiptsTable.Arn".into())));
    assert!(with_leads.contains(&(
        "dynamodb:Query".into(),
        format!(
            "${{ReceiptsTable.Arn}}/index/{}",
            shared::receipt::QUEUE_INDEX
        )
    )));
    assert!(
        !with_leads.iter().any(|(a, _)| a == "dynamodb:Scan"),
        "a pass never scans the table"
    );
    assert!(with_leads.contains(&(
        "dynamodb:GetRecords".into(),
        "ReceiptsTable.StreamArn".into()
    )));
    assert!(with_leads.contains(&("sqs:SendMessage".into(), "DeadLetterQueue.Arn".into())));
    assert!(with_leads.contains(&("dynamodb:PutItem".into(), "LeadsTable.Arn".into())));
    assert!(
        with_leads.contains(&(
            "dynamodb:ConditionCheckItem".into(),
            "ReceiptsTable.Arn".into()
        )),
        "a lead row is written only while its receipt is RECEIVED"
    );
    assert!(
        !with_leads
            .iter()
            .any(|(a, r)| a == "dynamodb:PutItem" && r == "ReceiptsTable.Arn"),
        "the worker never creates receipts"
    );
    let worker = statements(&template, "WorkerFunction", &[("Destination", "http")]);
    let reads: Vec<&serde_json::Value> = worker
        .iter()
        .filter(|s| s["Action"] == "dynamodb:GetItem")
        .collect();
    // The routes item, and gate items (double submits) and erasure
    // markers: never a receipt.
    assert_eq!(reads.len(), 2, "the worker reads no receipt with GetItem");
    assert!(reads_the_routes_alone(reads[0]), "{}", reads[0]);
    assert_eq!(
        reads[1]["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"],
        serde_json::json!(["gate#*", "erased#*"]),
        "{}",
        reads[1]
    );
    let with_crm = actions(&worker);
    assert!(
        !with_crm.iter().any(|(_, r)| r == "LeadsTable.Arn"),
        "no leads table access for the http destination"
    );

    let hubspot_secret = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hubspot";
    let with_hubspot = actions(&statements(
        &template,
        "WorkerFunction",
        &[
            ("Destination", "hubspot"),
            ("HubSpotTokenSecretArn", hubspot_secret),
        ],
    ));
    assert!(with_hubspot.contains(&(
        "secretsmanager:GetSecretValue".into(),
        hubspot_secret.into()
    )));
    assert!(with_hubspot.contains(&(
        "secretsmanager:GetSecretValue".into(),
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:GateKeySecret".into()
    )));
    assert!(!with_hubspot.iter().any(|(_, r)| r == "LeadsTable.Arn"));
    let hubspot_reads = statements(
        &template,
        "WorkerFunction",
        &[
            ("Destination", "hubspot"),
            ("HubSpotTokenSecretArn", hubspot_secret),
        ],
    )
    .into_iter()
    .filter(|s| s["Action"] == "dynamodb:GetItem")
    .count();
    assert_eq!(
        hubspot_reads, 2,
        "the routes, and the gate items of its notes"
    );
    let by_submission = actions(&statements(
        &template,
        "WorkerFunction",
        &[
            ("Destination", "hubspot"),
            ("HubSpotTokenSecretArn", hubspot_secret),
            ("HubSpotIdProperty", "staticforms_submission_id"),
        ],
    ));
    assert!(
        by_submission
            .iter()
            .any(|(_, r)| r.contains("GateKeySecret")),
        "the gate key where no gates are kept too: it keys double submits"
    );
    // Pipedrive: its token, the gate key, and reads of gate items alone
    // (what the worker recorded about a person), never of a receipt.
    let pipedrive_secret = "arn:aws:secretsmanager:us-east-1:123456789012:secret:pipedrive";
    let pipedrive = statements(
        &template,
        "WorkerFunction",
        &[
            ("Destination", "pipedrive"),
            ("PipedriveApiTokenSecretArn", pipedrive_secret),
        ],
    );
    let with_pipedrive = actions(&pipedrive);
    assert!(with_pipedrive.contains(&(
        "secretsmanager:GetSecretValue".into(),
        pipedrive_secret.into()
    )));
    assert!(with_pipedrive.contains(&(
        "secretsmanager:GetSecretValue".into(),
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:GateKeySecret".into()
    )));
    let reads: Vec<&serde_json::Value> = pipedrive
        .iter()
        .filter(|s| s["Action"] == "dynamodb:GetItem")
        .collect();
    assert_eq!(reads.len(), 2, "the routes and the gate items: {reads:?}");
    assert!(reads.iter().any(|read| reads_the_routes_alone(read)));
    assert!(
        reads
            .iter()
            .any(
                |read| read["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
                    == serde_json::json!(["gate#*", "erased#*"])
            ),
        "{reads:?}"
    );
    let salesforce_secret = "arn:aws:secretsmanager:us-east-1:123456789012:secret:salesforce";
    let with_salesforce = actions(&statements(
        &template,
        "WorkerFunction",
        &[
            ("Destination", "salesforce"),
            ("SalesforceCredentialsSecretArn", salesforce_secret),
        ],
    ));
    let secrets: Vec<&String> = with_salesforce
        .iter()
        .filter(|(a, _)| a == "secretsmanager:GetSecretValue")
        .map(|(_, r)| r)
        .collect();
    let gate_key = "arn:aws:secretsmanager:us-east-1:123456789012:secret:GateKeySecret";
    assert_eq!(
        secrets,
        [gate_key, salesforce_secret],
        "exactly the stack's gate key and the credentials secret"
    );
    let http_secrets: Vec<&String> = with_crm
        .iter()
        .filter(|(a, _)| a == "secretsmanager:GetSecretValue")
        .map(|(_, r)| r)
        .collect();
    assert_eq!(
        http_secrets,
        [gate_key],
        "no secret but the stack's gate key for the http destination without a token"
    );
}

/// A statement that lets a function read the routes item's routes
/// attribute and nothing else of the table.
/// The keys a write statement lets its function write: the patterns of
/// its `dynamodb:LeadingKeys` condition, or `None` when it has none (any
/// key at all).
fn writable_keys(statement: &serde_json::Value) -> Option<Vec<String>> {
    let condition = &statement["Condition"];
    ["ForAllValues:StringLike", "ForAllValues:StringEquals"]
        .iter()
        .find_map(|operator| condition[*operator]["dynamodb:LeadingKeys"].as_array())
        .map(|keys| {
            keys.iter()
                .map(|key| key.as_str().unwrap_or_default().to_owned())
                .collect()
        })
}

/// Whether IAM's `StringLike` pattern (only a trailing `*` here) takes `key`.
fn key_matches(pattern: &str, key: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => key.starts_with(prefix),
        None => key == pattern,
    }
}

/// Each function may write only its own keys: ingest, which faces the
/// internet, its sender's receipts; the worker receipts, gates and the
/// audit's progress. Neither may write the routes (spam rules off, fields
/// and constants the worker sends), and ingest neither the audit's
/// progress nor a gate. Checked for every write action, in every
/// configuration that adds grants.
#[test]
fn each_write_to_the_receipts_table_is_held_to_its_functions_keys() {
    let template = load();
    let writes = [
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:BatchWriteItem",
    ];
    let audit_secret = "arn:aws:secretsmanager:us-east-1:123456789012:secret:tally";
    let configurations: [&[(&str, &str)]; 3] = [
        &[],
        &[
            ("Sender", "tally"),
            ("SenderApiTokenSecretArn", audit_secret),
        ],
        &[("Destination", "dynamodb")],
    ];
    let gate = shared::newest::unkeyed_gate_key("ada@example.com");
    for overrides in configurations {
        for function in ["IngestFunction", "WorkerFunction"] {
            let sender = overrides
                .iter()
                .find(|(name, _)| *name == "Sender")
                .map_or("staticforms", |(_, value)| *value);
            let receipt = format!("{sender}:event:s1");
            let (may, may_not): (Vec<&str>, Vec<&str>) = match function {
                "IngestFunction" => (
                    vec![&receipt],
                    vec![
                        shared::routes::ROUTES_KEY,
                        shared::audit::AUDIT_STATE_KEY,
                        &gate,
                        "webflow:event:s1",
                    ],
                ),
                _ => (vec![&receipt, &gate], vec![shared::routes::ROUTES_KEY]),
            };
            for statement in statements(&template, function, overrides) {
                let actions: Vec<String> = match &statement["Action"] {
                    serde_json::Value::String(action) => vec![action.clone()],
                    serde_json::Value::Array(list) => list
                        .iter()
                        .map(|a| a.as_str().unwrap_or_default().to_owned())
                        .collect(),
                    _ => vec![],
                };
                if statement["Resource"] != "ReceiptsTable.Arn"
                    || !actions.iter().any(|a| writes.contains(&a.as_str()))
                {
                    continue;
                }
                let keys = writable_keys(&statement).unwrap_or_else(|| {
                    panic!("{function} {overrides:?}: {statement} may write any key")
                });
                for key in &may_not {
                    assert!(
                        !keys.iter().any(|pattern| key_matches(pattern, key)),
                        "{function} {overrides:?} may write {key}: {statement}"
                    );
                }
                if actions.iter().any(|a| a == "dynamodb:UpdateItem") {
                    for key in &may {
                        assert!(
                            keys.iter().any(|pattern| key_matches(pattern, key)),
                            "{function} {overrides:?} may not update {key}: {statement}"
                        );
                    }
                }
                if function == "IngestFunction" {
                    assert!(
                        keys.iter().any(|pattern| key_matches(pattern, &receipt)),
                        "ingest may not store its receipts: {statement}"
                    );
                }
            }
        }
    }
}

fn reads_the_routes_alone(statement: &serde_json::Value) -> bool {
    let only = &statement["Condition"]["ForAllValues:StringEquals"];
    statement["Action"] == "dynamodb:GetItem"
        && statement["Resource"] == "ReceiptsTable.Arn"
        && only["dynamodb:LeadingKeys"] == serde_json::json!([shared::routes::ROUTES_KEY])
        && only["dynamodb:Attributes"] == serde_json::json!([shared::routes::stored::ROUTES])
        && statement["Condition"]["StringEqualsIfExists"]["dynamodb:Select"]
            == "SPECIFIC_ATTRIBUTES"
}
