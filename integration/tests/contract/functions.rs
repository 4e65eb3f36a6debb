//! What each function is given is what its code requires: its environment read by the function's own configuration, for every sender and destination mode; its build, size and secrets.

use super::*;

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
        let settings = worker.destinations.first();
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
        let browser = sender.profile().browser;
        // A form a browser posts: its pages and its Turnstile secret.
        let mut overrides = vec![("Sender", sender.name()), existing_secret];
        if browser {
            overrides.push(("AllowedOrigins", "https://example.com"));
            overrides.push((
                "TurnstileSecretArn",
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:turnstile",
            ));
        }
        let evaluator = Evaluator::new(&template, &overrides);
        let env = evaluator.environment("IngestFunction");
        let config = ingest::Config::from_lookup(|name| env.get(name).cloned())
            .unwrap_or_else(|e| panic!("{}: {e}", sender.name()));
        assert_eq!(config.sender, sender);
        // A sender that signs gets its own scheme by default; one that
        // signs nothing, the template's chosen mode; a browser's form, none
        // (its page and bot check prove it).
        assert_eq!(
            env.contains_key("WEBHOOK_AUTH"),
            sender.signature().is_none() && !browser,
            "{}: WEBHOOK_AUTH",
            sender.name()
        );
        if sender != shared::Sender::StaticForms {
            assert_eq!(
                config.key_header,
                shared::idempotency::KeyHeader::Derive,
                "{}",
                sender.name()
            );
            for static_forms_only in ["WEBHOOK_API_KEYS", "IDEMPOTENCY_KEY"] {
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

/// The variables declared blank for `sam local invoke` (events/local-env.json
/// sets them) change nothing in AWS: with and without them, each function
/// loads the same configuration.
#[test]
fn variables_declared_blank_for_local_invokes_change_nothing_deployed() {
    let template = load();
    for mode in crate::surface::modes() {
        let evaluator = Evaluator::new(&template, &mode.overrides());
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
    // No secret value reaches a function's environment, for any kind in
    // any mode: only the ARNs of the secrets that hold them.
    let secret_values: Vec<&str> = shared::destination::DestinationKind::ALL
        .iter()
        .flat_map(|kind| kind.secrets())
        .flat_map(|secret| secret.values.iter().map(|value| value.variable))
        .collect();
    assert!(
        secret_values.contains(&"HUBSPOT_TOKEN"),
        "{secret_values:?}"
    );
    for mode in crate::surface::modes() {
        let evaluator = Evaluator::new(&template, &mode.overrides());
        let ingest = evaluator.environment("IngestFunction");
        assert!(
            ingest
                .get("WEBHOOK_SECRETS")
                .is_none_or(|value| value.is_empty()),
            "{}: IngestFunction gets no WEBHOOK_SECRETS value",
            mode.label
        );
        let worker = evaluator.environment("WorkerFunction");
        for forbidden in &secret_values {
            assert!(
                worker.get(*forbidden).is_none_or(|value| value.is_empty()),
                "{}: WorkerFunction gets no {forbidden} value",
                mode.label
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
