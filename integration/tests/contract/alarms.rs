//! The alarms and the dashboard read the metrics the code emits; lean observability keeps every alarm for a lost or stuck lead; every alarm notifies.

use super::*;

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
            if value == ANY_VALUE {
                continue;
            }
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
                        shared::spam::SpamRule::TooFast.kind(),
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
        .replace("${AWS::Region}", "us-east-1");
    let body: serde_json::Value = serde_json::from_str(&body).expect("the dashboard body is JSON");
    let mut shown = std::collections::HashSet::new();
    let mut outcomes_shown = std::collections::HashSet::new();
    for widget in body["widgets"].as_array().unwrap() {
        for metric in widget["properties"]["metrics"].as_array().unwrap() {
            let parts = metric.as_array().unwrap();
            let (name, dimensions) = match parts[0]["expression"].as_str() {
                // A search: every value of its schema's dimensions.
                Some(expression) => {
                    let (namespace, name, dimensions) = search_of(expression);
                    if namespace != NAMESPACE {
                        continue;
                    }
                    let any = dimensions
                        .into_iter()
                        .map(|dimension| (dimension, ANY_VALUE.to_owned()))
                        .collect();
                    (name, any)
                }
                None if parts[0] != NAMESPACE => continue,
                None => {
                    let pairs: Vec<&str> = parts[2..].iter().filter_map(|p| p.as_str()).collect();
                    let dimensions: Vec<(String, String)> = pairs
                        .chunks(2)
                        .map(|pair| (pair[0].to_owned(), pair[1].to_owned()))
                        .collect();
                    (parts[1].as_str().unwrap().to_owned(), dimensions)
                }
            };
            let name = name.as_str();
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

/// A dimension value a dashboard search matches whatever it is.
const ANY_VALUE: &str = "*";

/// A dashboard search, `SEARCH('{"<namespace>",<dimension>,...}
/// MetricName="<name>"', ...)`: (namespace, metric name, dimensions).
fn search_of(expression: &str) -> (String, String, Vec<String>) {
    let schema = expression
        .split_once('{')
        .and_then(|(_, rest)| rest.split_once('}'))
        .unwrap_or_else(|| panic!("a search without a schema: {expression}"));
    let mut names = schema
        .0
        .split(',')
        .map(|part| part.trim().trim_matches('"').to_owned());
    let namespace = names.next().unwrap();
    let metric = schema
        .1
        .split_once("MetricName=\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .unwrap_or_else(|| panic!("a search without its metric's name: {expression}"))
        .0
        .to_owned();
    (namespace, metric, names.collect())
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
    alarms_with(template, &[("Observability", observability)])
}

/// The alarms (and the metrics each reads) with these parameters.
fn alarms_with(template: &Value, parameters: &[(&str, &str)]) -> Vec<(String, Vec<String>)> {
    let evaluator = Evaluator::new(template, parameters);
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

/// Notices that cannot be sent (a revoked Slack webhook) never pile up
/// unseen: a stack that sends notices has an alarm on those waiting, in
/// both modes; a stack without notices has none.
#[test]
fn notices_that_wait_have_an_alarm_in_both_observability_modes() {
    let template = load();
    let notify = (
        "NotifyUrlSecretArn",
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:n",
    );
    for mode in ["full", "lean"] {
        let alarms = alarms_with(&template, &[("Observability", mode), notify]);
        let notices = alarms
            .iter()
            .find(|(name, _)| name == "PendingNoticesAlarm")
            .unwrap_or_else(|| panic!("{mode}: no alarm on waiting notices"));
        assert_eq!(notices.1, ["PendingNotices"], "{mode}");
        let without = alarms_in(&template, mode);
        assert!(
            !without
                .iter()
                .any(|(name, _)| name == "PendingNoticesAlarm"),
            "{mode}: no notices, no alarm"
        );
    }
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

pub(crate) fn resource_condition<'a>(template: &'a Value, name: &str) -> Option<&'a str> {
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
