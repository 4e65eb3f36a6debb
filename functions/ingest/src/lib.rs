//! The ingest function: authenticate a delivery from the deployment's sender
//! (one of `shared::Sender::ALL`), check it, and store one
//! receipt per submission with a conditional write.
//!
//! `main.rs` only wires these parts together; the handler is generic over
//! the receipt store so it runs in tests without AWS.

pub mod auth;
pub mod browser;
pub mod config;
pub mod dynamo;
pub mod handler;
pub mod secrets_manager;
pub mod sender_signatures;
pub mod standard_webhooks;
pub mod startup;
pub mod store;

pub use config::Config;
pub use handler::Ingest;
