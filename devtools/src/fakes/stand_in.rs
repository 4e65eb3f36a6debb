//! What every local stand-in for a destination offers the local pipeline
//! (`LocalCrm`); each fake implements it in its own module.

use std::time::Duration;

/// Contacts or leads held, and the writes to them.
pub type Counts = Box<dyn Fn() -> (usize, u64) + Send>;

/// A local stand-in for one kind of destination: what the worker needs to
/// reach it, what it holds, and where to look. Each fake implements it in
/// its own module.
pub trait LocalDestination: Send + Sync {
    /// The worker's variables for it (besides `DESTINATION`).
    fn worker_env(&self) -> Vec<(&'static str, String)>;
    /// Its contacts or records, and the writes to them.
    fn counts(&self) -> Counts;
    /// One line saying where to look.
    fn describe(&self, port: u16) -> String;
    /// `make bench`: answer each call after `delay`.
    fn set_delay(&self, _delay: Duration) -> Result<(), String> {
        Err("CRM_DELAY_MS is for DESTINATION=http (the CRM stub)".to_owned())
    }
}
