//! Structured logs: one JSON object per line on stdout, the shape Lambda's
//! JSON log format expects (`level`, `message` and our fields at the top).
//! Metric events (`metrics::TARGET`) are written as their own EMF line, as
//! is, through the same writer. Both functions use it; tests build it over a
//! buffer to read what is logged and measured.

use std::io::Write;

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::filter::{filter_fn, EnvFilter, LevelFilter};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

use crate::metrics;

/// A JSON subscriber writing to `writer`, filtered by `filter`; metric
/// events become EMF lines.
pub fn json_subscriber<W>(writer: W, filter: EnvFilter) -> impl Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Clone + Send + Sync + 'static,
{
    let logs = tracing_subscriber::fmt::layer()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false)
        .with_target(false)
        .with_writer(writer.clone())
        .with_filter(filter_fn(|meta| meta.target() != metrics::TARGET));
    tracing_subscriber::registry()
        .with(filter)
        .with(logs)
        .with(EmfLines { writer })
}

/// Writes the `emf` field of metric events as a line of its own.
struct EmfLines<W> {
    writer: W,
}

impl<S, W> Layer<S> for EmfLines<W>
where
    S: Subscriber,
    W: for<'w> MakeWriter<'w> + 'static,
{
    fn on_event(&self, event: &Event<'_>, _context: Context<'_, S>) {
        if event.metadata().target() != metrics::TARGET {
            return;
        }
        let mut line = EmfField(None);
        event.record(&mut line);
        if let Some(line) = line.0 {
            let mut writer = self.writer.make_writer();
            let _ = writeln!(writer, "{line}");
        }
    }
}

struct EmfField(Option<String>);

impl Visit for EmfField {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "emf" {
            self.0 = Some(value.to_owned());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "emf" {
            self.0 = Some(format!("{value:?}"));
        }
    }
}

/// Our crates log at `level`; every dependency is held at WARN whatever the
/// level, so a TRACE setting cannot make an HTTP library print headers.
pub fn filter_for(level: &str) -> EnvFilter {
    // tracing parses an empty string as ERROR; unset means INFO here.
    let level = match level.trim() {
        "" => LevelFilter::INFO,
        text => text
            .to_ascii_lowercase()
            .parse()
            .unwrap_or(LevelFilter::INFO),
    };
    let ours: Vec<String> = OUR_CRATES
        .iter()
        .map(|name| format!("{name}={level}"))
        .collect();
    // Metrics are emitted whatever the log level.
    EnvFilter::builder().parse_lossy(format!(
        "warn,{}={},{}",
        metrics::TARGET,
        LevelFilter::INFO,
        ours.join(",")
    ))
}

const OUR_CRATES: &[&str] = &["ingest", "worker", "shared", "devtools"];

/// Installs the JSON subscriber on stdout, at [`level_setting`]'s level.
pub fn init() {
    let level = level_setting(|name| std::env::var(name).ok());
    // A second init (only possible in tests) keeps the first subscriber.
    let _ = tracing::subscriber::set_global_default(json_subscriber(
        std::io::stdout,
        filter_for(&level),
    ));
}

/// The stack's `LogLevel`, applied by the function itself.
pub const LOG_LEVEL: &str = "LOG_LEVEL";

/// The log level: `LOG_LEVEL` (the template's `LogLevel`), else Lambda's
/// `AWS_LAMBDA_LOG_LEVEL` (its LoggingConfig), else `RUST_LOG`, else INFO.
/// The template never sets Lambda's own filter above INFO, which would drop
/// the metric lines (they are INFO): a WARN or ERROR setting is applied
/// here instead, and metric lines pass whatever it is.
pub fn level_setting(lookup: impl Fn(&str) -> Option<String>) -> String {
    [LOG_LEVEL, "AWS_LAMBDA_LOG_LEVEL", "RUST_LOG"]
        .into_iter()
        .find_map(|name| lookup(name).filter(|value| !value.trim().is_empty()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> MakeWriter<'w> for Buffer {
        type Writer = Buffer;
        fn make_writer(&'w self) -> Buffer {
            self.clone()
        }
    }

    #[test]
    fn metric_events_are_whole_emf_lines_even_when_logs_are_quiet() {
        let buffer = Buffer::default();
        let subscriber = json_subscriber(buffer.clone(), filter_for("error"));
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(submission_id = "sub_1", "a log line the level hides");
            metrics::emit(
                metrics::DEFAULT_NAMESPACE,
                &[
                    (metrics::FUNCTION, "ingest"),
                    (metrics::OUTCOME, "accepted"),
                ],
                &[(metrics::catalog::DELIVERY_DURATION, 12.0.into())],
                &[],
            );
            tracing::error!("a log line that shows");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        let metric = metrics::validate(lines[0]).unwrap();
        assert_eq!(metric["DeliveryDuration"], 12.0);
        assert!(metric.get("level").is_none(), "not wrapped in a log line");
        let log: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(log["message"], "a log line that shows");
        assert!(log.get("_aws").is_none());
    }

    #[test]
    fn our_crates_follow_the_level_and_dependencies_stay_at_warn() {
        let rows = [
            ("trace", "ingest=trace"),
            ("DEBUG", "worker=debug"),
            ("", "ingest=info"),
            ("nonsense", "shared=info"),
        ];
        for (level, expected) in rows {
            let filter = filter_for(level).to_string();
            assert!(filter.contains(expected), "{level:?}: {filter}");
        }
        // Applied: a dependency's INFO and DEBUG lines are dropped at any
        // level of ours, its WARN lines kept (the filter decides by target).
        let buffer = Buffer::default();
        let subscriber = json_subscriber(buffer.clone(), filter_for("trace"));
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(target: "hyper::proto", "dependency info");
            tracing::debug!(target: "aws_smithy_runtime", "dependency debug");
            tracing::warn!(target: "hyper::proto", "dependency warning");
            tracing::trace!(target: "worker::handler", "our trace");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        assert!(!text.contains("dependency info"), "{text}");
        assert!(!text.contains("dependency debug"), "{text}");
        assert!(text.contains("dependency warning"), "{text}");
        assert!(text.contains("our trace"), "{text}");
    }
}
