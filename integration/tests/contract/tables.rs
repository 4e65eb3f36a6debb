//! The tables are shaped the way the code writes them, the stream filter passes exactly the records that are work, and a schedule starts the reconciliation pass.

use super::*;

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
        vec![
            template::IndexSpec {
                name: shared::receipt::QUEUE_INDEX.to_owned(),
                partition_key: attr::QUEUE.to_owned(),
                sort_key: Some(attr::NEXT_ATTEMPT_AT.to_owned()),
                // Keys and receivedAt: the pass takes the receipt from its claim,
                // and counting reads no payload.
                projection: "INCLUDE".to_owned(),
                non_key_attributes: vec![attr::RECEIVED_AT.to_owned()],
            },
            template::IndexSpec {
                name: shared::receipt::DAY_INDEX.to_owned(),
                partition_key: attr::RECEIVED_DAY.to_owned(),
                sort_key: Some(attr::RECEIVED_AT.to_owned()),
                // What a row and a count show, no personal data.
                projection: "INCLUDE".to_owned(),
                non_key_attributes: shared::receipt::DAY_INDEX_ATTRIBUTES
                    .iter()
                    .map(|a| (*a).to_owned())
                    .collect(),
            },
        ],
        "the reconciler queries a sparse, keys-only index of waiting receipts; \
         the console one of every receipt by day"
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
            .destinations
            .first()
            .settings::<worker::destinations::leads_table::LeadsTableSettings>()
            .unwrap_or_else(|| panic!("{:?}", config.destinations));
        assert_eq!(settings.retention, expected, "LeadRetentionDays={days}");
    }
}
