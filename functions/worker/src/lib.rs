//! The worker function: for each receipt the stream delivers, upsert its lead
//! into the destination keyed by submission id, then mark the receipt
//! COMPLETED. The stream delivers at least once; the lead exists once.
//! On a schedule, the same function runs a reconciliation pass that
//! delivers the receipts still waiting (`reconcile`), and, when configured,
//! an audit of the sender's own list of submissions (`audit`).
//!
//! Decisions are pure functions in `decide`; the delivery core (`deliver`)
//! acts on them for its two callers, the stream batch (`stream`) and the
//! pass (`reconcile`), through two ports, `destinations` and `ledger`, each
//! with its adapters beside it; new-lead notices go through `notice`.
//! `main.rs` only wires these parts together.

pub mod audit;
pub mod config;
pub mod decide;
pub mod deliver;
pub mod destinations;
pub mod invocation;
pub mod ledger;
pub mod notice;
pub mod outcome;
pub mod reconcile;
pub mod secrets;
pub mod stream;

pub use config::Config;
pub use deliver::Worker;
