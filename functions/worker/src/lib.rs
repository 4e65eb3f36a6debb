//! The worker function: for each receipt the stream delivers, upsert its lead
//! into the destination keyed by submission id, then mark the receipt
//! COMPLETED. The stream delivers at least once; the lead exists once.
//! On a schedule, the same function runs a reconciliation pass that
//! delivers the receipts still waiting (`reconcile`).
//!
//! Decisions are pure functions in `decide`; `handler` and `reconcile` act on
//! them through two ports, `destination` and `ledger`, with one adapter each
//! per kind. `main.rs` only wires these parts together.

pub mod config;
pub mod crm_http;
pub mod crm_token;
pub mod decide;
pub mod deliver;
pub mod destination;
pub mod http_crm;
pub mod hubspot;
pub mod invocation;
pub mod leads_table;
pub mod ledger;
pub mod outcome;
pub mod reconcile;
pub mod salesforce;
pub mod secrets;
pub mod stream;

pub use config::Config;
pub use deliver::Worker;
