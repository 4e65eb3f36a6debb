//! docs/cost.md, derived: the fixed monthly cost of each observability
//! mode and destination from the template (alarms and their metrics, the
//! dashboard, the secrets) and the metric catalog (the series a normal
//! month emits), and the monthly total at 1k to 1M submissions from the
//! write units the binaries were counted making (local_pipeline.rs). The
//! page must carry each row this computes, so it cannot drift from the
//! template or the code again.

use devtools::template::Evaluator;
use serde_norway::Value;
use shared::metrics::{catalog, MetricSpec, Observability};

fn load() -> Value {
    devtools::template::load(&devtools::template::workspace_template()).unwrap()
}

/// us-east-1 list prices, as docs/cost.md states them with their date.
const METRIC_MONTH: f64 = 0.30;
const ALARM_METRIC_MONTH: f64 = 0.10;
const DASHBOARD_MONTH: f64 = 3.00;
const SECRET_MONTH: f64 = 0.40;
const PER_MILLION_WRU: f64 = 0.625;
const PER_MILLION_HTTP_API_REQUESTS: f64 = 1.00;
const PER_MILLION_LAMBDA_REQUESTS: f64 = 0.20;
const PER_GB_SECOND_ARM: f64 = 0.000_013_333_4;
const PER_GB_LOGS: f64 = 0.50;

/// The series a normal month emits, per metric: `Deliveries` and
/// `DeliveryDuration` for accepted and duplicate deliveries, `Records`
/// for upserted ones, the destination's latency and attempts, and the five
/// figures of every pass. Rare outcomes (a refusal, a 429, a spam hold)
/// add a series for the hours they happen.
/// A destination's own metrics count once per destination of the stack.
fn normal_series(spec: &MetricSpec, destinations: u32) -> u32 {
    match spec.name {
        "Deliveries" | "DeliveryDuration" => 2,
        "Records" => 1,
        "DestinationLatency" | "DestinationAttempts" => destinations,
        "PendingReceipts"
        | "OldestPendingAgeSeconds"
        | "FailedReceipts"
        | "Redelivered"
        | "GaveUp" => 1,
        _ => 0,
    }
}

/// (alarm metrics, dashboards) a stack of `destination` has in `mode`.
fn alarms_and_dashboards(
    template: &Value,
    mode: Observability,
    destination: &Destination,
) -> (u32, u32) {
    let mut parameters = destination.parameters.to_vec();
    parameters.push(("Observability", mode.as_str()));
    let evaluator = Evaluator::new(template, &parameters);
    let mut alarm_metrics = 0;
    let mut dashboards = 0;
    for (_, resource) in template["Resources"].as_mapping().unwrap() {
        let present = resource["Condition"]
            .as_str()
            .is_none_or(|condition| evaluator.condition(condition));
        if !present {
            continue;
        }
        match resource["Type"].as_str() {
            Some("AWS::CloudWatch::Alarm") => {
                let metrics = evaluator
                    .evaluate(&resource["Properties"]["Metrics"])
                    .unwrap_or(Value::Null);
                alarm_metrics += match metrics.as_sequence() {
                    // A metric-math alarm is billed per metric it reads.
                    Some(list) => list.iter().filter(|m| !m["MetricStat"].is_null()).count() as u32,
                    None => 1,
                };
            }
            Some("AWS::CloudWatch::Dashboard") => dashboards += 1,
            _ => {}
        }
    }
    (alarm_metrics, dashboards)
}

/// A destination as the page prices it: the template parameters that
/// choose it, the secrets `make deploy` creates for its credentials, and
/// the write units one delivered lead costs (counted).
struct Destination {
    name: &'static str,
    parameters: &'static [(&'static str, &'static str)],
    credential_secrets: u32,
    write_units: f64,
    /// How many destinations the stack has.
    destinations: u32,
}

/// The write units of a lead in a stack of `first` then `second`, from
/// the counted ones: the first's, the second's own rows (all it costs
/// beyond the 8 of any lead), and its answer saved with the receipt's
/// lanes, with its day-index entry
/// (`a_second_destination_adds_two_write_units_to_the_receipt`).
fn write_units_of_two(first: &Destination, second: &Destination) -> f64 {
    first.write_units + (second.write_units - 8.0) + 2.0
}

/// HubSpot and Mailchimp in one stack: the CRM and the newsletter.
fn hubspot_and_mailchimp() -> Destination {
    let hubspot = &DESTINATIONS[3];
    let mailchimp = &DESTINATIONS[5];
    Destination {
        name: "`hubspot,mailchimp` (each lead to both)",
        parameters: &[
            ("Destination", "hubspot,mailchimp"),
            (
                "HubSpotTokenSecretArn",
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:h",
            ),
            (
                "MailchimpApiKeySecretArn",
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:m",
            ),
            ("MailchimpListId", "a1b2c3d4e5"),
        ],
        credential_secrets: hubspot.credential_secrets + mailchimp.credential_secrets,
        write_units: write_units_of_two(hubspot, mailchimp),
        destinations: 2,
    }
}

const DESTINATIONS: [Destination; 9] = [
    Destination {
        name: "`http` (no token)",
        parameters: &[
            ("Destination", "http"),
            ("CrmUrl", "https://crm/{externalId}"),
        ],
        credential_secrets: 0,
        write_units: 8.0,
        destinations: 1,
    },
    Destination {
        name: "`dynamodb`",
        parameters: &[("Destination", "dynamodb")],
        credential_secrets: 0,
        write_units: 12.0,
        destinations: 1,
    },
    Destination {
        name: "`salesforce`",
        parameters: &[("Destination", "salesforce")],
        credential_secrets: 1,
        write_units: 8.0,
        destinations: 1,
    },
    Destination {
        name: "`hubspot` by e-mail",
        parameters: &[
            ("Destination", "hubspot"),
            (
                "HubSpotTokenSecretArn",
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:h",
            ),
        ],
        credential_secrets: 1,
        write_units: 14.0,
        destinations: 1,
    },
    Destination {
        name: "`pipedrive`",
        parameters: &[
            ("Destination", "pipedrive"),
            (
                "PipedriveApiTokenSecretArn",
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:p",
            ),
        ],
        credential_secrets: 1,
        write_units: 16.0,
        destinations: 1,
    },
    Destination {
        name: "`mailchimp`",
        parameters: &[
            ("Destination", "mailchimp"),
            (
                "MailchimpApiKeySecretArn",
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:m",
            ),
            ("MailchimpListId", "a1b2c3d4e5"),
        ],
        credential_secrets: 1,
        write_units: 16.0,
        destinations: 1,
    },
    Destination {
        name: "`zoho` by e-mail",
        parameters: &[
            ("Destination", "zoho"),
            (
                "ZohoCredentialsSecretArn",
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:z",
            ),
        ],
        credential_secrets: 1,
        write_units: 15.0,
        destinations: 1,
    },
    Destination {
        name: "`brevo`",
        parameters: &[
            ("Destination", "brevo"),
            (
                "BrevoApiKeySecretArn",
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:b",
            ),
        ],
        credential_secrets: 1,
        write_units: 14.0,
        destinations: 1,
    },
    Destination {
        name: "`attio`",
        parameters: &[
            ("Destination", "attio"),
            (
                "AttioApiTokenSecretArn",
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:a",
            ),
        ],
        credential_secrets: 1,
        write_units: 14.0,
        destinations: 1,
    },
];

/// Every destination of the catalog has its rows: a new kind without its
/// counted write units fails here, not on a user's bill.
#[test]
fn every_destination_of_the_catalog_has_its_rows() {
    for kind in shared::destination::DestinationKind::ALL {
        let named = DESTINATIONS.iter().any(|destination| {
            destination
                .parameters
                .iter()
                .any(|(name, value)| *name == "Destination" && *value == kind.name())
        });
        assert!(
            named,
            "integration/tests/cost_page.rs: DESTINATIONS has no row for `{}` \
             (its write units counted in local_pipeline.rs), nor docs/cost.md",
            kind.name()
        );
    }
}

/// The secrets a stack holds: the generated webhook secret, the gate key
/// (every stack: double submits), and the CRM's credentials.
fn secrets(template: &Value, destination: &Destination) -> u32 {
    let evaluator = Evaluator::new(template, destination.parameters);
    let generated = ["WebhookSecret", "GateKeySecret"]
        .iter()
        .filter(|name| {
            template["Resources"][**name]["Condition"]
                .as_str()
                .is_none_or(|condition| evaluator.condition(condition))
        })
        .count() as u32;
    generated + destination.credential_secrets
}

/// What one submission costs beyond the fixed part: 10% of deliveries
/// retried, ingest 50 ms and a stream delivery 400 ms at 128 MB on arm64,
/// 2 KB of log lines, and the counted write units (a retry's failed put
/// is one more).
fn per_submission(write_units: f64) -> f64 {
    let requests = 1.1;
    let api = requests * PER_MILLION_HTTP_API_REQUESTS / 1e6;
    let invocations = (requests + 1.0) * PER_MILLION_LAMBDA_REQUESTS / 1e6;
    let compute = (requests * 0.050 + 0.400) * 0.125 * PER_GB_SECOND_ARM;
    let writes = (write_units + 0.1) * PER_MILLION_WRU / 1e6;
    let logs = 2.0 / 1e6 * PER_GB_LOGS;
    api + invocations + compute + writes + logs
}

fn dollars(amount: f64) -> String {
    format!("${amount:.2}")
}

#[test]
fn the_cost_page_is_derived_from_the_template_and_the_catalog() {
    let template = load();
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/cost.md")).unwrap();
    let mut rows = Vec::new();
    for mode in Observability::ALL {
        let several = hubspot_and_mailchimp();
        for destination in DESTINATIONS.iter().chain([&several]) {
            let series: u32 = catalog::ALL
                .iter()
                .filter(|spec| mode.emits(spec))
                .map(|spec| normal_series(spec, destination.destinations))
                .sum();
            let (alarm_metrics, dashboards) = alarms_and_dashboards(&template, mode, destination);
            let secrets = secrets(&template, destination);
            let fixed = f64::from(series) * METRIC_MONTH
                + f64::from(alarm_metrics) * ALARM_METRIC_MONTH
                + f64::from(dashboards) * DASHBOARD_MONTH
                + f64::from(secrets) * SECRET_MONTH;
            rows.push(format!(
                "| `{}` | {} | {series} | {alarm_metrics} | {dashboards} | {secrets} | {} |",
                mode.as_str(),
                destination.name,
                dollars(fixed)
            ));
            let totals: Vec<String> = [1_000.0, 10_000.0, 100_000.0, 1_000_000.0]
                .iter()
                .map(|n| dollars(fixed + n * per_submission(destination.write_units)))
                .collect();
            rows.push(format!(
                "| `{}` | {} | {} |",
                mode.as_str(),
                destination.name,
                totals.join(" | ")
            ));
        }
    }
    let missing: Vec<&String> = rows
        .iter()
        .filter(|row| !page.contains(row.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/cost.md must carry what the template and the catalog give; missing rows:\n{}",
        missing
            .iter()
            .map(|r| r.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}
