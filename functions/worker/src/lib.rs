//! The worker function: for each receipt the stream delivers, upsert its lead
//! into the destination keyed by submission id, then mark the receipt
//! COMPLETED. The stream delivers at least once; the lead exists once.
//!
//! `main.rs` only wires these parts together; the batch logic in `handler`
//! is generic over the destination and the receipt ledger.

pub mod config;
pub mod destination;
pub mod dynamo;
pub mod handler;
pub mod http_crm;
pub mod leads_table;
pub mod ledger;
pub mod secrets;

pub use config::Config;
pub use handler::Worker;
