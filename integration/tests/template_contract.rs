//! template.yaml checked against the code: what a deployed function is
//! given is what its code requires, the tables are shaped the way the code
//! writes them, and the stream filter passes exactly the records that are
//! work. Needs no server.

use devtools::template::{self, filter_matches, Evaluator};
use serde_norway::Value;
use shared::receipt::attr;

fn load() -> Value {
    template::load(&template::workspace_template()).expect("template.yaml parses")
}

fn resource<'a>(template: &'a Value, name: &str) -> &'a Value {
    &template["Resources"][name]
}

/// A stack deployed with every default takes a Static Forms delivery
/// exactly as Static Forms sends it: a POST of its documented JSON to the
/// URL it was given, the secret in that URL (`?token=`, Static Forms'
/// documented way to secure a webhook), no `Idempotency-Key` and no other
/// header of ours (https://www.staticforms.dev/docs/webhooks: "Enter your
/// webhook URL", and the payload's fields).
#[tokio::test]
async fn a_stack_with_every_default_accepts_static_forms_as_it_sends() {
    const GENERATED: &str = "GeneratedSecret0123456789abcdefGHIJKLMNOPqrstuvwx";
    let template = load();
    let evaluator = Evaluator::new(&template, &[]);
    let env = evaluator.environment("IngestFunction");
    assert_eq!(
        env.get("WEBHOOK_SECRETS_ARN").map(String::as_str),
        Some("arn:aws:secretsmanager:us-east-1:123456789012:secret:WebhookSecret"),
        "the stack generates the secret"
    );
    // The generated secret's value, as Secrets Manager would hand it over.
    let config = ingest::Config::from_lookup(|name| match name {
        "WEBHOOK_SECRETS_ARN" => None,
        "WEBHOOK_SECRETS" => Some(GENERATED.to_owned()),
        other => env.get(other).cloned(),
    })
    .expect("the default configuration loads");
    let ingest =
        integration::ingest_over(ingest::store::MemoryReceiptStore::default(), &config).await;
    let body = serde_json::json!({
        "event": "form.submitted",
        "timestamp": 1764583200,
        "data": {
            "submissionId": "sf_sub_8c1f",
            "formData": {"name": "Ada Lovelace", "email": "ada@example.com", "message": "Hello"},
            "apiKey": "sf_public_form_key",
            "recipientEmail": "owner@example.com",
            "replyTo": "ada@example.com",
            "attachments": []
        }
    })
    .to_string();
    let as_sent = |uri: String| {
        http::Request::builder()
            .method("POST")
            .uri(uri)
            .header("content-type", "application/json")
            .body(lambda_http::Body::from(body.clone()))
            .unwrap()
    };
    let accepted = ingest
        .handle(as_sent(format!("/webhooks/staticforms?token={GENERATED}")))
        .await;
    assert_eq!(accepted.status(), 202, "{:?}", accepted.body());
    let retried = ingest
        .handle(as_sent(format!("/webhooks/staticforms?token={GENERATED}")))
        .await;
    assert_eq!(retried.status(), 200, "a retry is a duplicate");
    let unauthenticated = ingest
        .handle(as_sent("/webhooks/staticforms".to_owned()))
        .await;
    assert_eq!(unauthenticated.status(), 401, "the URL without its secret");
    assert_eq!(ingest.store().receipts().len(), 1);
}

#[test]
fn the_template_gives_each_function_the_configuration_its_code_requires() {
    let template = load();
    let crm_url = ("CrmUrl", "https://crm.example.com/leads/{externalId}");
    let token_secret = (
        "CrmTokenSecretArn",
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:crm-token",
    );
    let existing_secret = (
        "WebhookSecretArn",
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:signing",
    );
    let hubspot_secret = (
        "HubSpotTokenSecretArn",
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:hubspot-token",
    );
    let salesforce_secret = (
        "SalesforceCredentialsSecretArn",
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:salesforce-app",
    );
    let salesforce_login = ("SalesforceLoginUrl", "https://acme.my.salesforce.com");
    for (destination, extra) in [
        ("dynamodb", vec![]),
        ("dynamodb", vec![("LeadKey", "email")]),
        (
            "dynamodb",
            vec![("WebhookAuth", "standard-webhooks"), existing_secret],
        ),
        ("http", vec![crm_url]),
        ("http", vec![crm_url, token_secret]),
        ("hubspot", vec![hubspot_secret]),
        (
            "hubspot",
            vec![hubspot_secret, ("HubSpotMessageProperty", "message")],
        ),
        (
            "hubspot",
            vec![
                hubspot_secret,
                ("HubSpotIdProperty", "staticforms_submission_id"),
                ("HubSpotApiVersion", "v3"),
                ("FieldMap", r#"{"email":"email","hs_lead_status":"=NEW"}"#),
            ],
        ),
        ("salesforce", vec![salesforce_secret, salesforce_login]),
        (
            "salesforce",
            vec![
                salesforce_secret,
                salesforce_login,
                ("SalesforceObject", "Prospect__c"),
                ("SalesforceExternalIdField", "Submission__c"),
                ("SalesforceApiVersion", "v62.0"),
                ("SalesforceAutoAssign", "true"),
                ("FieldMap", r#"{"Email__c":"email"}"#),
            ],
        ),
    ] {
        let mut overrides = vec![("Destination", destination)];
        overrides.extend(extra.iter().copied());
        let evaluator = Evaluator::new(&template, &overrides);

        let ingest_env = evaluator.environment("IngestFunction");
        assert_eq!(
            ingest_env.get("WEBHOOK_AUTH").map(String::as_str),
            Some(
                extra
                    .iter()
                    .find(|(name, _)| *name == "WebhookAuth")
                    .map_or("query:token", |(_, mode)| *mode)
            ),
            "Static Forms signs nothing and sends no header: a URL token unless chosen"
        );
        let ingest = ingest::Config::from_lookup(|name| ingest_env.get(name).cloned())
            .unwrap_or_else(|e| panic!("ingest with {overrides:?}: {e}"));
        assert_eq!(ingest.receipts_table, "ReceiptsTable-name");
        assert!(
            matches!(
                ingest.auth,
                ingest::config::AuthConfig::SecretsManager { .. }
            ),
            "the deployed function reads its secrets from Secrets Manager"
        );

        let worker_env = evaluator.environment("WorkerFunction");
        let worker = worker::Config::from_lookup(|name| worker_env.get(name).cloned())
            .unwrap_or_else(|e| panic!("worker with {overrides:?}: {e}"));
        assert_eq!(worker.receipts_table, "ReceiptsTable-name");
        let settings = &worker.destination;
        use worker::destinations::{http, hubspot, leads_table, salesforce};
        match (
            destination,
            settings.settings::<http::HttpConfig>(),
            settings.settings::<leads_table::LeadsTableSettings>(),
            settings.settings::<hubspot::build::HubSpotConfig>(),
            settings.settings::<salesforce::build::SalesforceConfig>(),
        ) {
            ("http", Some(http::HttpConfig { token, .. }), None, None, None) => {
                let expected = if extra.contains(&token_secret) {
                    worker::config::TokenSetting::SecretsManager(token_secret.1.to_owned())
                } else {
                    worker::config::TokenSetting::None
                };
                assert_eq!(token, &expected);
            }
            ("dynamodb", None, Some(settings), None, None) => {
                assert_eq!(settings.table, "LeadsTable-name");
            }
            (
                "hubspot",
                None,
                None,
                Some(hubspot::build::HubSpotConfig { settings, token }),
                None,
            ) => {
                assert_eq!(
                    token,
                    &worker::config::TokenSetting::SecretsManager(hubspot_secret.1.to_owned())
                );
                let custom = extra.contains(&("HubSpotIdProperty", "staticforms_submission_id"));
                assert_eq!(
                    settings.id_property.name(),
                    if custom {
                        "staticforms_submission_id"
                    } else {
                        "email"
                    }
                );
                assert_eq!(settings.base_url, "https://api.hubapi.com");
                assert_eq!(
                    settings.gate_key,
                    (!custom).then(|| {
                        shared::newest::GateKeySetting::SecretsManager(
                            "arn:aws:secretsmanager:us-east-1:123456789012:secret:GateKeySecret"
                                .to_owned(),
                        )
                    }),
                    "contacts by email read the stack's generated gate key, and only they"
                );
                let message = extra
                    .iter()
                    .find(|(name, _)| *name == "HubSpotMessageProperty")
                    .map(|(_, property)| *property);
                if !extra.iter().any(|(name, _)| *name == "FieldMap") {
                    assert_eq!(
                        settings.field_map,
                        worker::destinations::hubspot::default_field_map(message),
                        "the message goes to HubSpotMessageProperty"
                    );
                }
            }
            (
                "salesforce",
                None,
                None,
                None,
                Some(salesforce::build::SalesforceConfig {
                    settings,
                    credentials,
                }),
            ) => {
                assert_eq!(
                    credentials,
                    &worker::destinations::salesforce::CredentialsSetting::SecretsManager(
                        salesforce_secret.1.to_owned()
                    )
                );
                assert_eq!(settings.login_url, salesforce_login.1);
                let custom = extra.contains(&("SalesforceObject", "Prospect__c"));
                assert_eq!(settings.object, if custom { "Prospect__c" } else { "Lead" });
                assert_eq!(settings.api_version, if custom { "v62.0" } else { "v67.0" });
                assert_eq!(
                    settings.auto_assign, custom,
                    "assignment rules only when asked for"
                );
            }
            (wanted, ..) => panic!("Destination={wanted} configured {settings:?}"),
        }
    }
}

/// Each sender's stack: its own signature by default, the key from the
/// body, no Static Forms-only variable, and its own webhook URL.
#[test]
fn each_sender_gets_its_own_signature_key_rule_and_url() {
    let template = load();
    let existing_secret = (
        "WebhookSecretArn",
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:signing",
    );
    for sender in shared::Sender::ALL {
        let evaluator = Evaluator::new(&template, &[("Sender", sender.name()), existing_secret]);
        let env = evaluator.environment("IngestFunction");
        let config = ingest::Config::from_lookup(|name| env.get(name).cloned())
            .unwrap_or_else(|e| panic!("{}: {e}", sender.name()));
        assert_eq!(config.sender, sender);
        if sender != shared::Sender::StaticForms {
            assert_eq!(
                config.key_header,
                shared::idempotency::KeyHeader::Derive,
                "{}",
                sender.name()
            );
            for static_forms_only in ["WEBHOOK_AUTH", "WEBHOOK_API_KEYS", "IDEMPOTENCY_KEY"] {
                assert!(!env.contains_key(static_forms_only), "{static_forms_only}");
            }
        }
    }
    let url = serde_json::to_value(&template["Outputs"]["WebhookUrl"]["Value"]).unwrap();
    assert!(url.to_string().contains("/webhooks/${Sender}"), "{url}");
    let route =
        &resource(&template, "IngestFunction")["Properties"]["Events"]["Webhook"]["Properties"];
    assert_eq!(route["Path"].as_str(), Some("/webhooks/{sender}"));
}

#[test]
fn the_tables_are_shaped_as_the_code_writes_them() {
    let template = load();
    let receipts = template::table_spec(&template, "ReceiptsTable").unwrap();
    assert_eq!(receipts.partition_key, attr::PK);
    assert_eq!(
        receipts.stream_view.as_deref(),
        Some("NEW_IMAGE"),
        "the worker reads NewImage"
    );
    assert_eq!(receipts.ttl_attribute.as_deref(), Some(attr::EXPIRES_AT));
    assert_eq!(
        receipts.indexes,
        vec![template::IndexSpec {
            name: shared::receipt::QUEUE_INDEX.to_owned(),
            partition_key: attr::QUEUE.to_owned(),
            sort_key: Some(attr::NEXT_ATTEMPT_AT.to_owned()),
            // Keys and receivedAt: the pass takes the receipt from its claim,
            // and counting reads no payload.
            projection: "INCLUDE".to_owned(),
            non_key_attributes: vec![attr::RECEIVED_AT.to_owned()],
        }],
        "the reconciler queries a sparse, keys-only index of waiting receipts"
    );
    let leads = template::table_spec(&template, "LeadsTable").unwrap();
    assert_eq!(
        leads.partition_key,
        worker::destinations::leads_table::attr::PK
    );
    assert_eq!(
        leads.ttl_attribute.as_deref(),
        Some(worker::destinations::leads_table::attr::EXPIRES_AT),
        "LeadRetentionDays writes the attribute the table's TTL reads"
    );

    for table in ["ReceiptsTable", "LeadsTable"] {
        let table_resource = resource(&template, table);
        assert_eq!(
            table_resource["DeletionPolicy"].as_str(),
            Some("Retain"),
            "{table}"
        );
        assert_eq!(
            table_resource["UpdateReplacePolicy"].as_str(),
            Some("Retain"),
            "{table}"
        );
        let properties = &table_resource["Properties"];
        assert_eq!(
            properties["BillingMode"].as_str(),
            Some("PAY_PER_REQUEST"),
            "{table}"
        );
        assert_eq!(
            properties["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"].as_bool(),
            Some(true),
            "{table}"
        );
        assert_eq!(
            properties["SSESpecification"]["SSEEnabled"].as_bool(),
            Some(true),
            "{table}"
        );
    }
}

/// Tracing is a choice, off by default; the stream's batching window suits
/// the destination unless it is set; parallelism is a parameter.
#[test]
fn tracing_and_the_streams_pace_are_parameters() {
    let template = load();
    let parameters = &template["Parameters"];
    assert_eq!(parameters["Tracing"]["Default"].as_str(), Some("Disabled"));
    let tracing = &template["Globals"]["Function"]["Tracing"];
    for value in ["Disabled", "Active"] {
        let evaluator = Evaluator::new(&template, &[("Tracing", value)]);
        assert_eq!(
            evaluator.evaluate(tracing),
            Some(Value::String(value.to_owned())),
            "a plain Ref, which SAM resolves (Disabled attaches no X-Ray policy)"
        );
    }

    let mapping = &resource(&template, "ReceiptStreamMapping")["Properties"];
    let window = |overrides: &[(&str, &str)]| {
        let evaluator = Evaluator::new(&template, overrides);
        let value = evaluator
            .evaluate(&mapping["MaximumBatchingWindowInSeconds"])
            .unwrap();
        scalar(&value)
    };
    let hubspot = [
        ("Destination", "hubspot"),
        (
            "HubSpotTokenSecretArn",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:h",
        ),
    ];
    assert_eq!(window(&[("Destination", "dynamodb")]), "1");
    assert_eq!(
        window(&[
            ("Destination", "http"),
            ("CrmUrl", "https://crm/{externalId}")
        ]),
        "1"
    );
    assert_eq!(
        window(&hubspot),
        "10",
        "fuller calls against HubSpot's daily limit"
    );
    assert_eq!(window(&[("Destination", "salesforce")]), "10");
    assert_eq!(
        window(&[hubspot[0], hubspot[1], ("StreamBatchingWindowSeconds", "0")]),
        "0",
        "a window that is set wins"
    );
    let pattern = regex_lite::Regex::new(
        parameters["StreamBatchingWindowSeconds"]["AllowedPattern"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    for good in ["auto", "0", "9", "10", "99", "100", "299", "300"] {
        assert!(pattern.is_match(good), "{good}");
    }
    for bad in ["301", "400", "-1", "", "1s", "0300"] {
        assert!(!pattern.is_match(bad), "{bad}");
    }

    let parallel = &parameters["StreamParallelization"];
    assert_eq!(parallel["Default"].as_u64(), Some(1));
    assert_eq!(parallel["MinValue"].as_u64(), Some(1));
    assert_eq!(
        parallel["MaxValue"].as_u64(),
        Some(10),
        "Lambda's own limit"
    );
    let evaluator = Evaluator::new(&template, &[("StreamParallelization", "4")]);
    assert_eq!(
        scalar(
            &evaluator
                .evaluate(&mapping["ParallelizationFactor"])
                .unwrap()
        ),
        "4"
    );
}

/// A template scalar as text.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Number(number) => number.to_string(),
        other => panic!("not a scalar: {other:?}"),
    }
}

fn stream_event(file: &str) -> serde_json::Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../events/").to_owned() + file;
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_worker_filter_passes_inserts_and_rejects_everything_else() {
    let template = load();
    let event = &resource(&template, "ReceiptStreamMapping")["Properties"];
    let filters = event["FilterCriteria"]["Filters"]
        .as_sequence()
        .expect("filters");
    assert_eq!(filters.len(), 1);
    let pattern: serde_json::Value =
        serde_json::from_str(filters[0]["Pattern"].as_str().unwrap()).unwrap();

    let insert = &stream_event("worker-insert.json")["Records"][0];
    assert!(
        filter_matches(&pattern, insert),
        "the receipt INSERT reaches the worker"
    );
    let sample = stream_event("dynamodb-update-sample.json");
    let by_name = |name: &str| {
        sample["Records"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["eventName"] == name)
            .unwrap()
            .clone()
    };
    assert!(
        !filter_matches(&pattern, &by_name("MODIFY")),
        "the worker's own updates never invoke it"
    );
    assert!(
        !filter_matches(&pattern, &by_name("REMOVE")),
        "TTL deletions never invoke it"
    );
    // A newest-wins gate item's INSERT: the same record with a gate key.
    let mut gate = insert.clone();
    let gate_key = integration::gate_of("ada@example.com");
    gate["dynamodb"]["Keys"]["pk"]["S"] = serde_json::Value::String(gate_key.clone());
    gate["dynamodb"]["NewImage"] = serde_json::json!({"pk": {"S": gate_key}});
    assert!(
        !filter_matches(&pattern, &gate),
        "gate items never invoke it"
    );
    // Every receipt key the code makes, of every sender, starts with a
    // prefix the filter passes.
    for sender in shared::Sender::ALL {
        let key = shared::IdempotencyKey::for_submission(
            sender,
            &shared::SubmissionId::parse("sub_1").unwrap(),
        );
        let mut receipt = insert.clone();
        receipt["dynamodb"]["Keys"]["pk"]["S"] = serde_json::Value::String(key.as_str().to_owned());
        assert!(filter_matches(&pattern, &receipt), "{}", key.as_str());
    }

    assert_eq!(event["StartingPosition"].as_str(), Some("TRIM_HORIZON"));
    assert_eq!(
        event["FunctionResponseTypes"][0].as_str(),
        Some("ReportBatchItemFailures")
    );
    assert_eq!(event["BisectBatchOnFunctionError"].as_bool(), Some(true));
    assert!(event["MaximumRetryAttempts"]
        .as_u64()
        .is_some_and(|n| n > 0 && n <= 10000));
    assert!(event["MaximumRecordAgeInSeconds"].as_u64().is_some());
    assert_eq!(
        serde_json::to_value(&event["DestinationConfig"]["OnFailure"]["Destination"]).unwrap(),
        serde_json::json!({"!GetAtt": "DeadLetterQueue.Arn"}),
        "batches that exhaust their retries go to the dead-letter queue"
    );
    assert_eq!(
        serde_json::to_value(&event["EventSourceArn"]).unwrap(),
        serde_json::json!({"!GetAtt": "ReceiptsTable.StreamArn"}),
    );
}

fn statements(
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
    assert_eq!(reads.len(), 1, "the worker reads no receipt with GetItem");
    assert!(reads_the_routes_alone(reads[0]), "{}", reads[0]);
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
        !by_submission
            .iter()
            .any(|(_, r)| r.contains("GateKeySecret")),
        "no gate key where no gates are kept"
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
    assert_eq!(
        secrets,
        [salesforce_secret],
        "exactly the credentials secret"
    );
    assert!(
        !with_crm
            .iter()
            .any(|(a, _)| a == "secretsmanager:GetSecretValue"),
        "no secret for the http destination without a token"
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

/// The variables declared blank for `sam local invoke` (events/local-env.json
/// sets them) change nothing in AWS: with and without them, each function
/// loads the same configuration.
#[test]
fn variables_declared_blank_for_local_invokes_change_nothing_deployed() {
    let template = load();
    for destination in ["dynamodb", "http"] {
        let evaluator = Evaluator::new(
            &template,
            &[
                ("Destination", destination),
                ("CrmUrl", "https://crm/{externalId}"),
            ],
        );
        let ingest_env = evaluator.environment("IngestFunction");
        let worker_env = evaluator.environment("WorkerFunction");
        for (name, env) in [
            ("DYNAMODB_ENDPOINT", &ingest_env),
            ("DYNAMODB_ENDPOINT", &worker_env),
            ("WEBHOOK_SECRETS", &ingest_env),
            ("CRM_ALLOW_HTTP", &worker_env),
        ] {
            assert_eq!(
                env.get(name).map(String::as_str),
                Some(""),
                "{name} is declared blank"
            );
        }
        let without_blanks = |env: &std::collections::HashMap<String, String>| {
            env.iter()
                .filter(|(_, value)| !value.is_empty())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<std::collections::HashMap<_, _>>()
        };
        let (ingest_bare, worker_bare) = (without_blanks(&ingest_env), without_blanks(&worker_env));
        assert_eq!(
            format!(
                "{:?}",
                ingest::Config::from_lookup(|n| ingest_env.get(n).cloned()).unwrap()
            ),
            format!(
                "{:?}",
                ingest::Config::from_lookup(|n| ingest_bare.get(n).cloned()).unwrap()
            ),
        );
        assert_eq!(
            format!(
                "{:?}",
                worker::Config::from_lookup(|n| worker_env.get(n).cloned()).unwrap()
            ),
            format!(
                "{:?}",
                worker::Config::from_lookup(|n| worker_bare.get(n).cloned()).unwrap()
            ),
        );
        let deployed = ingest::Config::from_lookup(|n| ingest_env.get(n).cloned()).unwrap();
        assert_eq!(deployed.dynamodb_endpoint, None, "AWS's own endpoint");
    }
}

#[test]
fn a_schedule_starts_the_reconciliation_pass() {
    let template = load();
    let event = &resource(&template, "WorkerFunction")["Properties"]["Events"]["Reconcile"];
    assert_eq!(event["Type"].as_str(), Some("Schedule"));
    let schedule = Evaluator::new(&template, &[])
        .evaluate(&event["Properties"]["Schedule"])
        .unwrap();
    assert_eq!(schedule.as_str(), Some("rate(5 minutes)"));
    assert_eq!(
        template["Parameters"]["ReconcileEveryMinutes"]["Default"].as_str(),
        Some("5")
    );
    // Every schedule has an alarm period of its own length: silence from
    // the pass is seen within two periods, whatever the schedule.
    let alarm = &resource(&template, "OldestPendingAlarm")["Properties"];
    assert_eq!(alarm["TreatMissingData"].as_str(), Some("breaching"));
    let minutes = template["Parameters"]["ReconcileEveryMinutes"]["AllowedValues"]
        .as_sequence()
        .unwrap();
    for value in minutes {
        let value = value.as_str().unwrap();
        let evaluator = Evaluator::new(&template, &[("ReconcileEveryMinutes", value)]);
        let rate = evaluator
            .evaluate(&event["Properties"]["Schedule"])
            .unwrap();
        let period = evaluator
            .evaluate(&alarm["Metrics"][0]["MetricStat"]["Period"])
            .unwrap();
        let expected_rate = match value {
            "1" => "rate(1 minute)".to_owned(),
            "60" => "rate(1 hour)".to_owned(),
            n => format!("rate({n} minutes)"),
        };
        assert_eq!(rate.as_str(), Some(expected_rate.as_str()));
        let period: u64 = match period {
            serde_norway::Value::Number(n) => n.as_u64().unwrap(),
            other => panic!("{other:?}"),
        };
        assert_eq!(period, value.parse::<u64>().unwrap() * 60, "{value}");
    }
    // What EventBridge sends for it is a pass, not an unknown event.
    let sample = stream_event("worker-reconcile.json");
    assert!(matches!(
        worker::invocation::Invocation::try_from(sample),
        Ok(worker::invocation::Invocation::Reconcile)
    ));
    // So is the payload the WorkerFunctionName output tells an operator
    // to send for a pass now.
    let hint = template["Outputs"]["WorkerFunctionName"]["Description"]
        .as_str()
        .unwrap();
    let payload = hint
        .split('\'')
        .nth(1)
        .expect("the output's description quotes a payload");
    assert!(matches!(
        worker::invocation::Invocation::try_from(
            serde_json::from_str::<serde_json::Value>(payload).unwrap()
        ),
        Ok(worker::invocation::Invocation::Reconcile)
    ));
    let env = Evaluator::new(&template, &[]).environment("WorkerFunction");
    let config = worker::Config::from_lookup(|name| env.get(name).cloned()).unwrap();
    assert_eq!(config.delivery.max_age.as_secs(), 259_200);
    // The worker sets a receipt's expiry when it delivers it, so it reads
    // the retention; a receipt waits for delivery with no expiry, so the
    // age limit may outlast the retention.
    let short =
        Evaluator::new(&template, &[("ReceiptRetentionDays", "2")]).environment("WorkerFunction");
    let config = worker::Config::from_lookup(|name| short.get(name).cloned()).unwrap();
    assert_eq!(
        config.delivery.retention.as_duration().as_secs(),
        2 * 86_400
    );
    // Ingest writes no expiry, but reads the same retention: a signed body
    // older than it is a replay of an expired receipt.
    let ingest_env =
        Evaluator::new(&template, &[("ReceiptRetentionDays", "2")]).environment("IngestFunction");
    let ingest_config = ingest::Config::from_lookup(|name| ingest_env.get(name).cloned()).unwrap();
    assert_eq!(ingest_config.retention, config.delivery.retention);
    // A delivered receipt loses its payload unless the stack keeps it.
    assert!(!config.delivery.keep_payload);
    let keep = Evaluator::new(&template, &[("KeepPayloadAfterDelivery", "true")])
        .environment("WorkerFunction");
    let config = worker::Config::from_lookup(|name| keep.get(name).cloned()).unwrap();
    assert!(config.delivery.keep_payload);
    // Leads expire only when asked, and then by the table's TTL attribute.
    for (days, expected) in [("0", None), ("90", shared::Retention::days(90))] {
        let env =
            Evaluator::new(&template, &[("LeadRetentionDays", days)]).environment("WorkerFunction");
        let config = worker::Config::from_lookup(|name| env.get(name).cloned()).unwrap();
        let settings = config
            .destination
            .settings::<worker::destinations::leads_table::LeadsTableSettings>()
            .unwrap_or_else(|| panic!("{:?}", config.destination));
        assert_eq!(settings.retention, expected, "LeadRetentionDays={days}");
    }
}

#[test]
fn functions_are_built_and_sized_for_lambda() {
    let template = load();
    let globals = &template["Globals"]["Function"];
    assert_eq!(globals["Runtime"].as_str(), Some("provided.al2023"));
    assert_eq!(globals["Handler"].as_str(), Some("bootstrap"));
    assert_eq!(globals["MemorySize"].as_u64(), Some(128));
    assert_eq!(globals["LoggingConfig"]["LogFormat"].as_str(), Some("JSON"));
    assert_eq!(
        template["Parameters"]["Architecture"]["Default"].as_str(),
        Some("arm64")
    );
    for (function, binary) in [("IngestFunction", "ingest"), ("WorkerFunction", "worker")] {
        let metadata = &resource(&template, function)["Metadata"];
        assert_eq!(metadata["BuildMethod"].as_str(), Some("rust-cargolambda"));
        assert_eq!(metadata["BuildProperties"]["Binary"].as_str(), Some(binary));
    }
    // The store call's own limit must end before Lambda kills the function.
    let ingest_timeout = resource(&template, "IngestFunction")["Properties"]["Timeout"]
        .as_u64()
        .unwrap();
    assert!(ingest::dynamo::STORE_CALL_LIMIT.as_secs() < ingest_timeout);
}

#[test]
fn secrets_are_never_template_text_nor_environment() {
    let template = load();
    let text = std::fs::read_to_string(template::workspace_template()).unwrap();
    // A parameter that could carry a secret must take an ARN, never the
    // value (NoEcho would hide a value, not keep it out of the stack).
    let parameters = template["Parameters"].as_mapping().unwrap();
    let mut secret_like = 0;
    for (name, declaration) in parameters {
        let name = name.as_str().unwrap();
        let lower = name.to_ascii_lowercase();
        if ["secret", "token", "password", "apikey", "credential"]
            .iter()
            .any(|word| lower.contains(word))
        {
            secret_like += 1;
            assert!(
                name.ends_with("Arn")
                    && declaration["AllowedPattern"]
                        .as_str()
                        .is_some_and(|pattern| pattern.starts_with("^(arn:")),
                "parameter {name} could carry a secret: it must be an ARN with an arn: pattern"
            );
        }
    }
    assert!(secret_like >= 2, "the secret ARN parameters were found");
    assert!(
        !text.contains("NoEcho"),
        "no parameter is a secret value to hide"
    );
    for (function, forbidden) in [
        ("IngestFunction", "WEBHOOK_SECRETS"),
        ("WorkerFunction", "CRM_TOKEN"),
    ] {
        for destination in ["dynamodb", "http"] {
            let env = Evaluator::new(
                &template,
                &[
                    ("Destination", destination),
                    ("CrmUrl", "https://crm/{externalId}"),
                ],
            )
            .environment(function);
            assert!(
                env.get(forbidden).is_none_or(|value| value.is_empty()),
                "{function} gets no {forbidden} value"
            );
        }
    }
    let secret = &resource(&template, "WebhookSecret")["Properties"];
    assert!(
        secret["SecretString"].is_null(),
        "the webhook secret is generated, not written down"
    );
    assert!(secret["GenerateSecretString"]["PasswordLength"]
        .as_u64()
        .is_some_and(|n| n >= 32));
    assert!(
        template["Rules"]["SecretFormatNeedsAnExistingSecret"].is_mapping(),
        "basic and signatures need a given secret"
    );
}

/// Every metric an alarm or the dashboard reads from the functions'
/// namespace is one the code emits (`shared::metrics::catalog`), with the
/// catalog's dimensions and an outcome the code can produce; and every
/// emitted metric, and every outcome, is on the dashboard.
#[test]
fn alarms_and_dashboard_read_the_metrics_the_code_emits() {
    use shared::metrics::catalog;
    let template = load();
    let ingest_outcomes: Vec<&str> = shared::Outcome::ALL.iter().map(|o| o.code()).collect();
    let worker_outcomes: Vec<&str> = worker::outcome::RecordOutcome::ALL
        .iter()
        .map(|o| o.code())
        .collect();
    let check = |name: &str, dimensions: &[(String, String)], place: &str| {
        let spec = catalog::ALL
            .iter()
            .find(|spec| spec.name == name)
            .unwrap_or_else(|| panic!("{place} reads {name}, which no code emits"));
        let mut names: Vec<&str> = dimensions.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        let mut expected = spec.dimensions.to_vec();
        expected.sort_unstable();
        assert_eq!(names, expected, "{place}: dimensions of {name}");
        for (dimension, value) in dimensions {
            match dimension.as_str() {
                "Function" => {
                    let ingest_metrics = [
                        catalog::DELIVERIES.name,
                        catalog::DELIVERY_DURATION.name,
                        catalog::QUARANTINED.name,
                    ];
                    // Both functions read the stored routes.
                    let both = [catalog::ROUTES_REFUSED.name];
                    let function = if ingest_metrics.contains(&name) {
                        "ingest"
                    } else {
                        "worker"
                    };
                    assert!(
                        value == function || (both.contains(&name) && value == "ingest"),
                        "{place}: {name} for {value}"
                    );
                }
                "Outcome" if name == "Records" => assert!(
                    worker_outcomes.contains(&value.as_str()),
                    "{place}: no worker outcome {value}"
                ),
                "Outcome" => assert!(
                    ingest_outcomes.contains(&value.as_str()),
                    "{place}: no delivery outcome {value}"
                ),
                "Rule" => {
                    let kinds = [
                        shared::spam::SpamRule::Honeypot(String::new()).kind(),
                        shared::spam::SpamRule::BlockedDomain.kind(),
                        shared::spam::SpamRule::Links.kind(),
                    ];
                    assert!(
                        kinds.contains(&value.as_str()),
                        "{place}: no rule kind {value}"
                    );
                }
                _ => {}
            }
        }
    };
    let dimensions_of = |metric: &serde_json::Value| -> Vec<(String, String)> {
        metric["Dimensions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["Name"].as_str().unwrap().to_owned(),
                    d["Value"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };

    let evaluator = Evaluator::new(&template, &[]);
    let mut alarms_on_our_metrics = 0;
    for (id, resource) in template["Resources"].as_mapping().unwrap() {
        if resource["Type"].as_str() != Some("AWS::CloudWatch::Alarm") {
            continue;
        }
        let id = id.as_str().unwrap();
        let properties = evaluator.evaluate(&resource["Properties"]).unwrap();
        let properties: serde_json::Value = serde_json::to_value(&properties).unwrap();
        let metrics: Vec<serde_json::Value> = match properties["Metrics"].as_array() {
            Some(stats) => stats
                .iter()
                .filter(|m| m.get("MetricStat").is_some())
                .map(|m| m["MetricStat"]["Metric"].clone())
                .collect(),
            None => vec![properties.clone()],
        };
        for metric in metrics.iter().filter(|m| m["Namespace"] == NAMESPACE) {
            alarms_on_our_metrics += 1;
            check(
                metric["MetricName"].as_str().unwrap(),
                &dimensions_of(metric),
                id,
            );
        }
    }
    assert!(
        alarms_on_our_metrics >= 8,
        "the alarms read the functions' metrics"
    );

    // The dashboard body is a !Sub string: give its references values.
    let body = match &template["Resources"]["Dashboard"]["Properties"]["DashboardBody"] {
        Value::Tagged(tagged) => tagged.value.as_str().unwrap().to_owned(),
        other => panic!("DashboardBody is not a !Sub string: {other:?}"),
    };
    let body = body
        .replace("${MetricsNamespace}/${AWS::StackName}", NAMESPACE)
        .replace("${Destination}", "http")
        .replace("${AWS::Region}", "us-east-1");
    let body: serde_json::Value = serde_json::from_str(&body).expect("the dashboard body is JSON");
    let mut shown = std::collections::HashSet::new();
    let mut outcomes_shown = std::collections::HashSet::new();
    for widget in body["widgets"].as_array().unwrap() {
        for metric in widget["properties"]["metrics"].as_array().unwrap() {
            let parts = metric.as_array().unwrap();
            if parts[0] != NAMESPACE {
                continue;
            }
            let name = parts[1].as_str().unwrap();
            let pairs: Vec<&str> = parts[2..].iter().filter_map(|p| p.as_str()).collect();
            let dimensions: Vec<(String, String)> = pairs
                .chunks(2)
                .map(|pair| (pair[0].to_owned(), pair[1].to_owned()))
                .collect();
            check(name, &dimensions, "the dashboard");
            shown.insert(name.to_owned());
            outcomes_shown.extend(
                dimensions
                    .into_iter()
                    .filter(|(dimension, _)| dimension == "Outcome")
                    .map(|(_, value)| value),
            );
        }
    }
    for spec in catalog::ALL {
        assert!(
            shown.contains(spec.name),
            "{} is emitted but not on the dashboard",
            spec.name
        );
    }
    for outcome in ingest_outcomes.iter().chain(&worker_outcomes) {
        assert!(
            outcomes_shown.contains(*outcome),
            "outcome {outcome} is not on the dashboard"
        );
    }
    // Both functions get the namespace the alarms read.
    for function in ["IngestFunction", "WorkerFunction"] {
        assert_eq!(
            evaluator
                .environment(function)
                .get("METRICS_NAMESPACE")
                .map(String::as_str),
            Some(NAMESPACE),
            "{function}"
        );
    }
}

/// The metrics namespace of a stack named `test-stack` (the evaluator's
/// stack name) with the default prefix.
const NAMESPACE: &str = "StaticFormsToCrm/test-stack";

/// Two stacks in one account never share metrics, so never alarms or
/// dashboards: the namespace carries the stack's name, and a dashboard
/// body names no other namespace of ours.
/// The alarms a stack has in each observability mode, and the metrics
/// (from our namespace) each reads.
fn alarms_in(template: &Value, observability: &str) -> Vec<(String, Vec<String>)> {
    let evaluator = Evaluator::new(template, &[("Observability", observability)]);
    let mut alarms = Vec::new();
    for (id, resource) in template["Resources"].as_mapping().unwrap() {
        if resource["Type"].as_str() != Some("AWS::CloudWatch::Alarm") {
            continue;
        }
        if let Some(condition) = resource["Condition"].as_str() {
            if !evaluator.condition(condition) {
                continue;
            }
        }
        let properties = evaluator.evaluate(&resource["Properties"]).unwrap();
        let properties: serde_json::Value = serde_json::to_value(&properties).unwrap();
        let metrics: Vec<serde_json::Value> = match properties["Metrics"].as_array() {
            Some(stats) => stats
                .iter()
                .filter_map(|m| m.get("MetricStat").map(|s| s["Metric"].clone()))
                .collect(),
            None => vec![properties.clone()],
        };
        let ours = metrics
            .iter()
            .filter(|m| m["Namespace"] == NAMESPACE)
            .map(|m| m["MetricName"].as_str().unwrap().to_owned())
            .collect();
        alarms.push((id.as_str().unwrap().to_owned(), ours));
    }
    alarms.sort();
    alarms
}

/// `Observability=lean` keeps every alarm for a lead that could be lost or
/// stuck and every metric those read (the catalog's `in_lean`), and drops
/// the dashboard and the alarms that only explain; both functions are told
/// the mode.
#[test]
fn lean_observability_keeps_every_alarm_for_a_lost_or_stuck_lead() {
    let template = load();
    let names = |alarms: &[(String, Vec<String>)]| -> Vec<String> {
        alarms.iter().map(|(name, _)| name.clone()).collect()
    };
    let full = alarms_in(&template, "full");
    let lean = alarms_in(&template, "lean");
    assert_eq!(
        names(&lean),
        [
            "DeadLetterQueueDepthAlarm",
            "DestinationAuthAlarm",
            "FailedReceiptsAlarm",
            "IngestErrorsAlarm",
            "MismatchedKeyAlarm",
            "OldestPendingAlarm",
            "ReceiptStoreErrorsAlarm",
            "RefusedDeliveriesAlarm",
            "RoutesRefusedAlarm",
            "WebhookSecretsUnavailableAlarm",
            "WorkerErrorsAlarm",
        ],
        "a lead lost at the sender (refused, unstored, no secrets), stuck here (pending, FAILED, \
         the dead-letter queue, errors), refused by the CRM's auth, or routed by routes that \
         were refused"
    );
    let mut dropped: Vec<String> = names(&full)
        .into_iter()
        .filter(|name| !names(&lean).contains(name))
        .collect();
    dropped.sort();
    assert_eq!(
        dropped,
        [
            "FailedLeadsAlarm",
            "KeyReusedAlarm",
            "StreamIteratorAgeAlarm"
        ]
    );
    for (alarm, metrics) in &lean {
        for metric in metrics {
            let spec = shared::metrics::catalog::ALL
                .iter()
                .find(|spec| spec.name == metric)
                .unwrap();
            assert!(
                shared::metrics::Observability::Lean.emits(spec),
                "{alarm} reads {metric}, which lean does not emit"
            );
        }
    }
    let lean_evaluator = Evaluator::new(&template, &[("Observability", "lean")]);
    let full_evaluator = Evaluator::new(&template, &[]);
    assert!(!lean_evaluator.condition("FullObservability"));
    assert!(
        full_evaluator.condition("FullObservability"),
        "full by default"
    );
    assert_eq!(
        resource_condition(&template, "Dashboard"),
        Some("FullObservability")
    );
    assert_eq!(
        template["Outputs"]["DashboardUrl"]["Condition"].as_str(),
        Some("FullObservability")
    );
    for function in ["IngestFunction", "WorkerFunction"] {
        for mode in ["full", "lean"] {
            let env = Evaluator::new(&template, &[("Observability", mode)]).environment(function);
            assert_eq!(
                env.get(shared::metrics::OBSERVABILITY).map(String::as_str),
                Some(mode),
                "{function}"
            );
        }
    }
}

fn resource_condition<'a>(template: &'a Value, name: &str) -> Option<&'a str> {
    resource(template, name)["Condition"].as_str()
}

#[test]
fn each_stack_has_its_own_metrics_namespace() {
    let template = load();
    let namespace_of = |stack: &str| {
        Evaluator::new(&template, &[("AWS::StackName", stack)])
            .environment("WorkerFunction")
            .get("METRICS_NAMESPACE")
            .cloned()
    };
    assert_eq!(
        namespace_of("crm-eu").as_deref(),
        Some("StaticFormsToCrm/crm-eu")
    );
    assert_ne!(namespace_of("crm-eu"), namespace_of("crm-us"));
    let body = match &template["Resources"]["Dashboard"]["Properties"]["DashboardBody"] {
        Value::Tagged(tagged) => tagged.value.as_str().unwrap().to_owned(),
        other => panic!("DashboardBody is not a !Sub string: {other:?}"),
    };
    assert!(
        !body.contains("\"${MetricsNamespace}\""),
        "a dashboard metric without the stack name"
    );
    assert!(body.contains("\"${MetricsNamespace}/${AWS::StackName}\""));
    // The namespace the code accepts: what the template can produce.
    assert!(shared::metrics::namespace(namespace_of("crm-eu").as_deref()).is_ok());
}

/// Alarms reach a person: without AlarmTopicArn the stack creates a topic
/// and every alarm notifies it; AlarmEmail subscribes an address to the
/// topic the alarms notify, the stack's or the given one.
#[test]
fn every_alarm_notifies_a_topic_and_an_email_can_subscribe() {
    let template = load();
    let alarms: Vec<&str> = template["Resources"]
        .as_mapping()
        .unwrap()
        .iter()
        .filter(|(_, r)| r["Type"].as_str() == Some("AWS::CloudWatch::Alarm"))
        .map(|(id, _)| id.as_str().unwrap())
        .collect();
    assert!(alarms.len() >= 10, "{alarms:?}");
    for (overrides, topic) in [
        (vec![], "AlarmTopic-name"),
        (
            vec![("AlarmTopicArn", "arn:aws:sns:us-east-1:123456789012:ops")],
            "arn:aws:sns:us-east-1:123456789012:ops",
        ),
    ] {
        let evaluator = Evaluator::new(&template, &overrides);
        assert_eq!(
            evaluator.condition("CreateAlarmTopic"),
            overrides.is_empty()
        );
        for alarm in &alarms {
            let properties = evaluator
                .evaluate(&resource(&template, alarm)["Properties"])
                .unwrap();
            let properties = serde_json::to_value(&properties).unwrap();
            assert_eq!(
                properties["AlarmActions"],
                serde_json::json!([topic]),
                "{alarm}"
            );
        }
        let with_email: Vec<(&str, &str)> = overrides
            .iter()
            .copied()
            .chain([("AlarmEmail", "ops@example.com")])
            .collect();
        let evaluator = Evaluator::new(&template, &with_email);
        assert!(evaluator.condition("HasAlarmEmail"));
        let subscription = evaluator
            .evaluate(&resource(&template, "AlarmEmailSubscription")["Properties"])
            .unwrap();
        let subscription = serde_json::to_value(&subscription).unwrap();
        assert_eq!(subscription["TopicArn"], topic);
        assert_eq!(subscription["Endpoint"], "ops@example.com");
        assert_eq!(subscription["Protocol"], "email");
    }
    assert!(!Evaluator::new(&template, &[]).condition("HasAlarmEmail"));
}

#[test]
fn the_ingest_function_reserves_concurrency_only_when_asked() {
    let template = load();
    let reserved = |overrides: &[(&str, &str)]| {
        let properties = Evaluator::new(&template, overrides)
            .evaluate(&resource(&template, "IngestFunction")["Properties"])
            .unwrap();
        serde_json::to_value(&properties).unwrap()["ReservedConcurrentExecutions"].clone()
    };
    assert_eq!(
        reserved(&[]),
        serde_json::Value::Null,
        "no reservation by default"
    );
    assert_eq!(reserved(&[("IngestReservedConcurrency", "50")]), "50");
}

/// The scheduled audit is off by default (its schedule disabled, no alarm,
/// no variable, no right); with `SenderApiTokenSecretArn` the worker gets
/// its settings (which its configuration accepts), its schedule sends what
/// the worker reads as an audit, `MissingSubmissionsAlarm` exists, and the
/// worker may read the token, the listed receipts' keys and status, write
/// only this sender's keys and the audit's own item.
#[test]
fn the_audit_is_a_choice_with_its_schedule_alarm_and_rights() {
    let template = load();
    let event = &resource(&template, "WorkerFunction")["Properties"]["Events"]["Audit"];
    let arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:tally-api-AbCdEf";
    let on: [(&str, &str); 3] = [
        ("Sender", "tally"),
        ("SenderApiTokenSecretArn", arn),
        ("AuditEveryHours", "6"),
    ];
    let off = Evaluator::new(&template, &[("Sender", "tally")]);
    let audits = Evaluator::new(&template, &on);
    let state =
        |evaluator: &Evaluator| scalar(&evaluator.evaluate(&event["Properties"]["State"]).unwrap());
    assert_eq!(state(&off), "DISABLED");
    assert_eq!(state(&audits), "ENABLED");
    assert_eq!(
        scalar(&audits.evaluate(&event["Properties"]["Schedule"]).unwrap()),
        "rate(6 hours)"
    );
    let hourly = Evaluator::new(
        &template,
        &[("SenderApiTokenSecretArn", arn), ("AuditEveryHours", "1")],
    );
    assert_eq!(
        scalar(&hourly.evaluate(&event["Properties"]["Schedule"]).unwrap()),
        "rate(1 hour)"
    );
    let input: serde_json::Value =
        serde_json::from_str(event["Properties"]["Input"].as_str().unwrap()).unwrap();
    assert!(matches!(
        worker::invocation::Invocation::try_from(input),
        Ok(worker::invocation::Invocation::Audit)
    ));

    let condition = resource_condition(&template, "MissingSubmissionsAlarm").unwrap();
    assert!(!off.condition(condition));
    assert!(audits.condition(condition));
    assert!(!off
        .environment("WorkerFunction")
        .contains_key("SENDER_API_TOKEN_SECRET_ARN"));
    let env = audits.environment("WorkerFunction");
    assert_eq!(env["SENDER_API_TOKEN_SECRET_ARN"], arn);
    let settings = worker::audit::AuditSettings::from_lookup(&|name: &str| env.get(name).cloned())
        .unwrap()
        .expect("the audit is on");
    assert_eq!(settings.sender, shared::Sender::Tally);
    assert_eq!(settings.every, std::time::Duration::from_secs(6 * 3600));

    // The markers `receipts forget` leaves are found by the stack's gate
    // key, which a stack that audits keeps.
    assert_eq!(
        env["ERASURE_KEY_SECRET_ARN"],
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:GateKeySecret"
    );
    assert!(settings.erasure_key_secret_arn.is_some());
    assert!(audits.condition(resource_condition(&template, "GateKeySecret").unwrap()));

    let without = statements(&template, "WorkerFunction", &[("Sender", "tally")]);
    let with = statements(&template, "WorkerFunction", &on);
    let added: Vec<&serde_json::Value> = with.iter().filter(|s| !without.contains(s)).collect();
    assert_eq!(added.len(), 5, "{added:#?}");
    assert_eq!(added[0]["Action"], "secretsmanager:GetSecretValue");
    assert_eq!(
        added[0]["Resource"],
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:GateKeySecret"
    );
    assert_eq!(added[1]["Action"], "secretsmanager:GetSecretValue");
    assert_eq!(added[1]["Resource"], arn);
    assert_eq!(added[2]["Action"], "dynamodb:BatchGetItem");
    assert_eq!(
        added[2]["Condition"]["ForAllValues:StringEquals"]["dynamodb:Attributes"],
        serde_json::json!([
            shared::receipt::attr::PK,
            shared::receipt::attr::STATUS,
            shared::receipt::attr::ERASED_AT
        ])
    );
    assert_eq!(added[3]["Action"], "dynamodb:PutItem");
    assert_eq!(
        added[3]["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"],
        serde_json::json!(["tally:*"])
    );
    assert_eq!(
        added[4]["Condition"]["ForAllValues:StringEquals"]["dynamodb:LeadingKeys"],
        serde_json::json!([shared::audit::AUDIT_STATE_KEY])
    );
}
