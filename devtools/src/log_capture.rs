//! Captures what a `tracing` subscriber writes, so tests can read the log
//! lines a function produced (and search them for what must not be there).

use std::io::Write;
use std::sync::{Arc, Mutex};

use tracing_subscriber::fmt::MakeWriter;

#[derive(Clone, Default)]
pub struct CapturedLogs(Arc<Mutex<Vec<u8>>>);

impl CapturedLogs {
    /// Installs the functions' own JSON subscriber, at TRACE for our crates,
    /// writing here, for as long as the guard lives (this thread only).
    pub fn install(&self) -> tracing::subscriber::DefaultGuard {
        self.install_at("trace")
    }

    /// The same, at `level` (as a function reads it: `logging::filter_for`).
    pub fn install_at(&self, level: &str) -> tracing::subscriber::DefaultGuard {
        let subscriber =
            shared::logging::json_subscriber(self.clone(), shared::logging::filter_for(level));
        tracing::subscriber::set_default(subscriber)
    }

    pub fn text(&self) -> String {
        let bytes = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Every line, parsed; a line that is not one JSON object is an error.
    pub fn json_lines(&self) -> Result<Vec<serde_json::Value>, String> {
        self.text()
            .lines()
            .map(|line| serde_json::from_str(line).map_err(|e| format!("{e}: {line}")))
            .collect()
    }
}

impl Write for CapturedLogs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'w> MakeWriter<'w> for CapturedLogs {
    type Writer = CapturedLogs;

    fn make_writer(&'w self) -> Self::Writer {
        self.clone()
    }
}

/// Lambda's application log-level filter for functions with the JSON log
/// format: a line is kept when its `level` is at least `application_level`;
/// a line with no `level`, or that is not JSON, counts as INFO.
/// <https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-advanced.html>
pub fn lambda_keeps(line: &str, application_level: &str) -> bool {
    const ORDER: [&str; 6] = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"];
    let rank = |level: &str| {
        ORDER
            .iter()
            .position(|known| known.eq_ignore_ascii_case(level))
    };
    let level = serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .and_then(|json| {
            json.get("level")
                .and_then(|l| l.as_str())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "INFO".to_owned());
    rank(&level).unwrap_or(2) >= rank(application_level).unwrap_or(2)
}
