//! Metrics in CloudWatch Embedded Metric Format (EMF): one JSON log line
//! per measurement, which CloudWatch Logs turns into metrics with no API
//! call and no extra latency. The catalog below is every metric the code
//! emits; the template's alarms and dashboard read only these, and a
//! contract test holds them together.
//!
//! Dimensions are few and low-cardinality (function, outcome, destination);
//! a submission id may travel as a property, never as a dimension, and no
//! lead data ever does.
//!
//! EMF: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

/// The namespace when `METRICS_NAMESPACE` is unset.
pub const DEFAULT_NAMESPACE: &str = "StaticFormsToCrm";
pub const METRICS_NAMESPACE: &str = "METRICS_NAMESPACE";

/// The `tracing` target of metric events: the log layer writes their `emf`
/// field as the whole line, and keeps them out of the ordinary log lines.
pub const TARGET: &str = "emf";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    Milliseconds,
    Seconds,
}

impl Unit {
    fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Milliseconds => "Milliseconds",
            Unit::Seconds => "Seconds",
        }
    }
}

/// A metric's name, unit and the dimensions it is emitted with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricSpec {
    pub name: &'static str,
    pub unit: Unit,
    pub dimensions: &'static [&'static str],
    /// Emitted with `OBSERVABILITY=lean` too: an alarm for a lead that
    /// could be lost or stuck reads it. The others only explain.
    pub in_lean: bool,
}

pub const FUNCTION: &str = "Function";
pub const OUTCOME: &str = "Outcome";
pub const DESTINATION: &str = "Destination";
/// The kind of spam rule a held-back submission broke (`SpamRule::kind`).
pub const RULE: &str = "Rule";

/// Every metric the functions emit.
pub mod catalog {
    use super::{MetricSpec, Unit, DESTINATION, FUNCTION, OUTCOME, RULE};

    /// ingest: one per webhook delivery, by the decision table's outcome.
    pub const DELIVERIES: MetricSpec = MetricSpec {
        name: "Deliveries",
        unit: Unit::Count,
        dimensions: &[FUNCTION, OUTCOME],
        in_lean: true,
    };
    pub const DELIVERY_DURATION: MetricSpec = MetricSpec {
        name: "DeliveryDuration",
        unit: Unit::Milliseconds,
        dimensions: &[FUNCTION, OUTCOME],
        in_lean: false,
    };
    /// ingest: one per submission stored QUARANTINED, by the kind of rule
    /// it broke (`honeypot`, `blocked-domain`, `links`, `too-fast`): never a field's
    /// value.
    pub const QUARANTINED: MetricSpec = MetricSpec {
        name: "Quarantined",
        unit: Unit::Count,
        dimensions: &[FUNCTION, RULE],
        in_lean: false,
    };
    /// worker: one per stream record or receipt a pass took, by outcome.
    pub const RECORDS: MetricSpec = MetricSpec {
        name: "Records",
        unit: Unit::Count,
        dimensions: &[FUNCTION, OUTCOME],
        in_lean: false,
    };
    /// worker: how long the destination took, per delivery's last attempt.
    pub const DESTINATION_LATENCY: MetricSpec = MetricSpec {
        name: "DestinationLatency",
        unit: Unit::Milliseconds,
        dimensions: &[FUNCTION, DESTINATION],
        in_lean: false,
    };
    pub const DESTINATION_ATTEMPTS: MetricSpec = MetricSpec {
        name: "DestinationAttempts",
        unit: Unit::Count,
        dimensions: &[FUNCTION, DESTINATION],
        in_lean: false,
    };
    /// 401/403 that a fresh token did not cure: a configuration fault.
    pub const DESTINATION_AUTH_ERRORS: MetricSpec = MetricSpec {
        name: "DestinationAuthErrors",
        unit: Unit::Count,
        dimensions: &[FUNCTION, DESTINATION],
        in_lean: true,
    };
    /// 429 answers.
    pub const DESTINATION_RATE_LIMITED: MetricSpec = MetricSpec {
        name: "DestinationRateLimited",
        unit: Unit::Count,
        dimensions: &[FUNCTION, DESTINATION],
        in_lean: false,
    };
    /// The reconciliation pass: receipts waiting, the oldest one's age, and
    /// what the pass delivered or gave up on.
    pub const PENDING_RECEIPTS: MetricSpec = MetricSpec {
        name: "PendingReceipts",
        unit: Unit::Count,
        dimensions: &[FUNCTION],
        in_lean: false,
    };
    pub const OLDEST_PENDING_AGE: MetricSpec = MetricSpec {
        name: "OldestPendingAgeSeconds",
        unit: Unit::Seconds,
        dimensions: &[FUNCTION],
        in_lean: true,
    };
    /// FAILED receipts waiting for a person, counted by every pass: its
    /// alarm stays on while one exists.
    pub const FAILED_RECEIPTS: MetricSpec = MetricSpec {
        name: "FailedReceipts",
        unit: Unit::Count,
        dimensions: &[FUNCTION],
        in_lean: true,
    };
    /// Delivered leads whose new-lead notice is not sent yet, counted by
    /// every pass (kept in lean: a notice endpoint that refuses everything
    /// shows here).
    pub const PENDING_NOTICES: MetricSpec = MetricSpec {
        name: "PendingNotices",
        unit: Unit::Count,
        dimensions: &[FUNCTION],
        in_lean: true,
    };
    pub const REDELIVERED: MetricSpec = MetricSpec {
        name: "Redelivered",
        unit: Unit::Count,
        dimensions: &[FUNCTION],
        in_lean: false,
    };
    pub const GAVE_UP: MetricSpec = MetricSpec {
        name: "GaveUp",
        unit: Unit::Count,
        dimensions: &[FUNCTION],
        in_lean: false,
    };

    /// worker, with the scheduled audit: per audited form (its id a
    /// property, never a dimension), the submissions the sender lists and
    /// the stack never received.
    pub const MISSING_SUBMISSIONS: MetricSpec = MetricSpec {
        name: "MissingSubmissions",
        unit: Unit::Count,
        dimensions: &[FUNCTION],
        in_lean: true,
    };

    /// The scheduled audit, on every run: how many audit periods its
    /// progress (where the last fully audited window ended) is behind.
    /// Every reconciliation pass reports it too, from the stored progress.
    /// Above 2, or none for two hours, its alarm fires: an audit that cannot
    /// finish, or that stopped running, is never silent.
    pub const AUDIT_BEHIND_PERIODS: MetricSpec = MetricSpec {
        name: "AuditBehindPeriods",
        unit: Unit::Count,
        dimensions: &[FUNCTION],
        in_lean: true,
    };

    /// Stored routes that break `routes check`'s rules, refused when read
    /// (the last good ones stay in force): someone wrote the routes item
    /// by another way than `receipts routes apply`.
    pub const ROUTES_REFUSED: MetricSpec = MetricSpec {
        name: "RoutesRefused",
        unit: Unit::Count,
        dimensions: &[FUNCTION],
        in_lean: true,
    };

    pub const ALL: &[MetricSpec] = &[
        DELIVERIES,
        DELIVERY_DURATION,
        QUARANTINED,
        RECORDS,
        DESTINATION_LATENCY,
        DESTINATION_ATTEMPTS,
        DESTINATION_AUTH_ERRORS,
        DESTINATION_RATE_LIMITED,
        PENDING_RECEIPTS,
        OLDEST_PENDING_AGE,
        FAILED_RECEIPTS,
        PENDING_NOTICES,
        REDELIVERED,
        GAVE_UP,
        MISSING_SUBMISSIONS,
        AUDIT_BEHIND_PERIODS,
        ROUTES_REFUSED,
    ];
}

/// A metric's value in one line: one number, or several (EMF takes up to
/// 100 values of one metric per line, e.g. each attempt's latency).
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    One(f64),
    Many(Vec<f64>),
}

impl From<f64> for Values {
    fn from(value: f64) -> Self {
        Values::One(value)
    }
}

impl Values {
    fn to_json(&self) -> Value {
        match self {
            Values::One(value) => json!(value),
            Values::Many(values) => json!(values.iter().take(100).collect::<Vec<_>>()),
        }
    }
}

/// One EMF line under `namespace`: the metrics (all sharing one dimension
/// set) with their values, the dimensions' values, and properties that are
/// searchable in Logs Insights but are not metrics.
pub fn emf_line(
    namespace: &str,
    at: SystemTime,
    dimensions: &[(&str, &str)],
    metrics: &[(MetricSpec, Values)],
    properties: &[(&str, Value)],
) -> String {
    let mut root = Map::new();
    for (name, value) in properties {
        root.insert((*name).to_owned(), value.clone());
    }
    for (name, value) in dimensions {
        root.insert((*name).to_owned(), Value::String((*value).to_owned()));
    }
    for (spec, values) in metrics {
        root.insert(spec.name.to_owned(), values.to_json());
    }
    let timestamp = at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64);
    let names: Vec<&str> = dimensions.iter().map(|(name, _)| *name).collect();
    root.insert(
        "_aws".to_owned(),
        json!({
            "Timestamp": timestamp,
            "CloudWatchMetrics": [{
                "Namespace": namespace,
                "Dimensions": [names],
                "Metrics": metrics
                    .iter()
                    .map(|(spec, _)| json!({"Name": spec.name, "Unit": spec.unit.as_str()}))
                    .collect::<Vec<_>>(),
            }],
        }),
    );
    Value::Object(root).to_string()
}

/// `METRICS_NAMESPACE`, or the default: CloudWatch's characters, at most
/// 255 of them, and not an `AWS/` namespace.
pub fn namespace(raw: Option<&str>) -> Result<String, &'static str> {
    let Some(raw) = raw.map(str::trim).filter(|raw| !raw.is_empty()) else {
        return Ok(DEFAULT_NAMESPACE.to_owned());
    };
    let allowed = |c: char| c.is_ascii_alphanumeric() || ".-_/#: ".contains(c);
    if raw.len() > 255 || !raw.chars().all(allowed) || raw.starts_with("AWS/") {
        return Err(
            "expected up to 255 letters, digits and . - _ / # : or spaces, not starting with AWS/",
        );
    }
    Ok(raw.to_owned())
}

/// How much the functions measure (`OBSERVABILITY`, the template's
/// `Observability`): `Full` emits every metric of the catalog; `Lean` only
/// those an alarm for a lead that could be lost or stuck reads
/// (`MetricSpec::in_lean`), so a small stack pays for few metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Observability {
    #[default]
    Full,
    Lean,
}

/// The variable that chooses the mode.
pub const OBSERVABILITY: &str = "OBSERVABILITY";

impl Observability {
    pub const ALL: [Observability; 2] = [Observability::Full, Observability::Lean];

    pub fn as_str(self) -> &'static str {
        match self {
            Observability::Full => "full",
            Observability::Lean => "lean",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|mode| mode.as_str() == raw.trim())
    }

    /// Whether this mode emits `spec`.
    pub fn emits(self, spec: &MetricSpec) -> bool {
        self == Observability::Full || spec.in_lean
    }
}

/// Where a function's metrics go, and how many it emits: the one way the
/// functions emit a metric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metrics {
    namespace: String,
    observability: Observability,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new(DEFAULT_NAMESPACE, Observability::Full)
    }
}

impl Metrics {
    pub fn new(namespace: impl Into<String>, observability: Observability) -> Self {
        Metrics {
            namespace: namespace.into(),
            observability,
        }
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    pub fn observability(&self) -> Observability {
        self.observability
    }

    /// Emits those of `metrics` this mode emits, as one line; none, no line.
    pub fn emit(
        &self,
        dimensions: &[(&str, &str)],
        metrics: &[(MetricSpec, Values)],
        properties: &[(&str, Value)],
    ) {
        let kept: Vec<(MetricSpec, Values)> = metrics
            .iter()
            .filter(|(spec, _)| self.observability.emits(spec))
            .cloned()
            .collect();
        if !kept.is_empty() {
            emit(&self.namespace, dimensions, &kept, properties);
        }
    }
}

/// Emits `metrics` (which must share one dimension set) as one EMF line
/// through the log layer.
pub fn emit(
    namespace: &str,
    dimensions: &[(&str, &str)],
    metrics: &[(MetricSpec, Values)],
    properties: &[(&str, Value)],
) {
    // The dashboard and alarms read each metric with its catalog dimensions;
    // a line with others would feed a metric nothing reads.
    debug_assert!(
        metrics
            .iter()
            .all(|(spec, _)| spec.dimensions.len() == dimensions.len()
                && dimensions
                    .iter()
                    .all(|(name, _)| spec.dimensions.contains(name))),
        "a metric emitted with dimensions other than its catalog entry's"
    );
    let line = emf_line(
        namespace,
        SystemTime::now(),
        dimensions,
        metrics,
        properties,
    );
    tracing::info!(target: TARGET, emf = %line);
}

/// Checks a line against the EMF specification's rules that CloudWatch
/// enforces; `Err` says which one it breaks. Used by the tests of every
/// emitting path.
pub fn validate(line: &str) -> Result<Value, String> {
    let root: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let aws = root.get("_aws").ok_or("no _aws block")?;
    if !aws["Timestamp"].is_u64() {
        return Err("_aws.Timestamp is not epoch milliseconds".into());
    }
    let directives = aws["CloudWatchMetrics"]
        .as_array()
        .filter(|d| !d.is_empty())
        .ok_or("no CloudWatchMetrics")?;
    for directive in directives {
        if directive["Namespace"].as_str().is_none_or(str::is_empty) {
            return Err("a directive has no Namespace".into());
        }
        let sets = directive["Dimensions"].as_array().ok_or("no Dimensions")?;
        for set in sets {
            let names = set.as_array().ok_or("a dimension set is not an array")?;
            if names.len() > 30 {
                return Err("more than 30 dimensions".into());
            }
            for name in names {
                let name = name.as_str().ok_or("a dimension name is not text")?;
                if !root[name].is_string() {
                    return Err(format!("dimension {name} has no text value at the root"));
                }
            }
        }
        let metrics = directive["Metrics"].as_array().ok_or("no Metrics")?;
        if metrics.is_empty() || metrics.len() > 100 {
            return Err("a directive needs 1 to 100 metrics".into());
        }
        for metric in metrics {
            let name = metric["Name"].as_str().ok_or("a metric has no Name")?;
            let numbers = match &root[name] {
                Value::Array(values) => values.len() <= 100 && values.iter().all(Value::is_number),
                value => value.is_number(),
            };
            if !numbers {
                return Err(format!("metric {name} has no number at the root"));
            }
            if !matches!(
                metric["Unit"].as_str(),
                Some("Count" | "Milliseconds" | "Seconds")
            ) {
                return Err(format!("metric {name} has no known Unit"));
            }
        }
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_line_is_valid_emf_with_its_values_at_the_root() {
        let at = UNIX_EPOCH + Duration::from_millis(1_795_941_528_123);
        let line = emf_line(
            DEFAULT_NAMESPACE,
            at,
            &[(FUNCTION, "worker"), (DESTINATION, "http")],
            &[
                (catalog::DESTINATION_LATENCY, Values::Many(vec![41.0, 12.5])),
                (catalog::DESTINATION_ATTEMPTS, 2.0.into()),
            ],
            &[("submission_id", json!("sub_1"))],
        );
        let root = validate(&line).unwrap();
        assert_eq!(root["_aws"]["Timestamp"], 1_795_941_528_123u64);
        let directive = &root["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "StaticFormsToCrm");
        assert_eq!(
            directive["Dimensions"],
            json!([["Function", "Destination"]])
        );
        assert_eq!(
            directive["Metrics"],
            json!([
                {"Name": "DestinationLatency", "Unit": "Milliseconds"},
                {"Name": "DestinationAttempts", "Unit": "Count"}
            ])
        );
        assert_eq!(root["Function"], "worker");
        assert_eq!(root["DestinationLatency"], json!([41.0, 12.5]));
        assert_eq!(root["DestinationAttempts"], 2.0);
        assert_eq!(root["submission_id"], "sub_1");
    }

    #[test]
    fn the_validator_refuses_what_cloudwatch_refuses() {
        let good = emf_line(
            "N",
            UNIX_EPOCH,
            &[(FUNCTION, "ingest")],
            &[(catalog::DELIVERY_DURATION, 3.0.into())],
            &[],
        );
        assert!(validate(&good).is_ok());
        let mut value: Value = serde_json::from_str(&good).unwrap();
        let broken = |edit: &dyn Fn(&mut Value)| {
            let mut copy = value.clone();
            edit(&mut copy);
            validate(&copy.to_string()).unwrap_err()
        };
        assert_eq!(
            broken(&|v| {
                v.as_object_mut().unwrap().remove("_aws");
            }),
            "no _aws block"
        );
        assert_eq!(
            broken(&|v| v["Function"] = json!(1)),
            "dimension Function has no text value at the root"
        );
        assert_eq!(
            broken(&|v| v["DeliveryDuration"] = json!("3")),
            "metric DeliveryDuration has no number at the root"
        );
        assert_eq!(
            broken(&|v| v["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Unit"] = json!("Bytes")),
            "metric DeliveryDuration has no known Unit"
        );
        let many: Vec<String> = (0..31).map(|n| format!("D{n}")).collect();
        for name in &many {
            value[name.as_str()] = json!("x");
        }
        value["_aws"]["CloudWatchMetrics"][0]["Dimensions"] = json!([many]);
        assert_eq!(
            validate(&value.to_string()).unwrap_err(),
            "more than 30 dimensions"
        );
    }

    #[test]
    fn namespaces() {
        let bad = Err(
            "expected up to 255 letters, digits and . - _ / # : or spaces, not starting with AWS/",
        );
        let rows = [
            (None, Ok(DEFAULT_NAMESPACE.to_owned())),
            (Some("  "), Ok(DEFAULT_NAMESPACE.to_owned())),
            (Some("Acme/Leads-prod"), Ok("Acme/Leads-prod".to_owned())),
            (Some("AWS/Lambda"), bad.clone()),
            (Some("leads{1}"), bad.clone()),
        ];
        for (raw, expected) in rows {
            assert_eq!(namespace(raw), expected, "{raw:?}");
        }
        assert_eq!(namespace(Some(&"x".repeat(256))), bad);
    }

    #[test]
    fn the_catalog_has_unique_names_and_few_dimensions() {
        let mut names: Vec<&str> = catalog::ALL.iter().map(|m| m.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), catalog::ALL.len());
        for metric in catalog::ALL {
            assert!(metric.dimensions.contains(&FUNCTION), "{}", metric.name);
            assert!(metric.dimensions.len() <= 2, "{}", metric.name);
        }
    }

    /// Lean emits what the alarms for a lost or stuck lead read, and the
    /// count of notices not yet sent (a notice endpoint that refuses all of
    /// them), and nothing that only explains; full emits everything.
    #[test]
    fn each_mode_emits_its_share_of_the_catalog() {
        let lean: Vec<&str> = catalog::ALL
            .iter()
            .filter(|spec| Observability::Lean.emits(spec))
            .map(|spec| spec.name)
            .collect();
        assert_eq!(
            lean,
            [
                "Deliveries",
                "DestinationAuthErrors",
                "OldestPendingAgeSeconds",
                "FailedReceipts",
                "PendingNotices",
                "MissingSubmissions",
                "AuditBehindPeriods",
                "RoutesRefused"
            ]
        );
        assert!(catalog::ALL
            .iter()
            .all(|spec| Observability::Full.emits(spec)));
        assert_eq!(Observability::parse(" lean "), Some(Observability::Lean));
        assert_eq!(Observability::parse("full"), Some(Observability::Full));
        assert_eq!(Observability::parse("minimal"), None);
        assert_eq!(Observability::default(), Observability::Full);
    }

    /// A lean sink drops what lean does not emit, and writes no line when
    /// nothing is left.
    #[test]
    fn a_lean_sink_writes_only_the_lean_metrics() {
        use std::sync::{Arc, Mutex};
        #[derive(Clone, Default)]
        struct Lines(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Lines {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let lean = Metrics::new("Test/Lean", Observability::Lean);
            let dimensions = [(FUNCTION, "ingest"), (OUTCOME, "accepted")];
            lean.emit(
                &dimensions,
                &[
                    (catalog::DELIVERIES, 1.0.into()),
                    (catalog::DELIVERY_DURATION, 12.0.into()),
                ],
                &[],
            );
            lean.emit(
                &dimensions,
                &[(catalog::DELIVERY_DURATION, 12.0.into())],
                &[],
            );
        });
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("Deliveries"), "{text}");
        assert!(!text.contains("DeliveryDuration"), "{text}");
    }
}
