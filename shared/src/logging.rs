//! Structured logs: one JSON object per line on stdout, the shape Lambda's
//! JSON log format expects (`level`, `message` and our fields at the top).
//! Both functions use it; tests build it over a buffer to read what is logged.

use tracing::Subscriber;
use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use tracing_subscriber::fmt::MakeWriter;

/// A JSON subscriber writing to `writer`, filtered by `filter`.
pub fn json_subscriber<W>(writer: W, filter: EnvFilter) -> impl Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false)
        .with_target(false)
        .with_env_filter(filter)
        .with_writer(writer)
        .finish()
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
    EnvFilter::builder().parse_lossy(format!("warn,{}", ours.join(",")))
}

const OUR_CRATES: &[&str] = &["ingest", "worker", "shared", "devtools"];

/// Installs the JSON subscriber on stdout. The level comes from Lambda's
/// `AWS_LAMBDA_LOG_LEVEL` (set by the function's LoggingConfig), else
/// `RUST_LOG`, else INFO.
pub fn init() {
    let level = std::env::var("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_default();
    // A second init (only possible in tests) keeps the first subscriber.
    let _ = tracing::subscriber::set_global_default(json_subscriber(
        std::io::stdout,
        filter_for(&level),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert!(filter.contains("warn"), "{level:?}: {filter}");
            assert!(!filter.contains("hyper"), "{filter}");
        }
    }
}
