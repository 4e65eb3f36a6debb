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

/// Installs the JSON subscriber on stdout. The level comes from Lambda's
/// `AWS_LAMBDA_LOG_LEVEL` (set by the function's LoggingConfig), else
/// `RUST_LOG`, else INFO.
pub fn init() {
    let level = std::env::var("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_default();
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::INFO.into())
        .parse_lossy(level.to_ascii_lowercase());
    // A second init (only possible in tests) keeps the first subscriber.
    let _ = tracing::subscriber::set_global_default(json_subscriber(std::io::stdout, filter));
}
