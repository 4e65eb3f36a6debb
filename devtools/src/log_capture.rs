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
        let subscriber =
            shared::logging::json_subscriber(self.clone(), shared::logging::filter_for("trace"));
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
