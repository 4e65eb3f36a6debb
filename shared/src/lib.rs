//! The rules for taking form webhooks (the senders of `sender::Sender::ALL`)
//! into a CRM without duplicates.
//!
//! Everything here is plain data and pure functions: no AWS types, no network.
//! The Lambda functions parse their events into these types at the edge and
//! hand the decisions back to their adapters.

pub mod audit;
pub mod catalog;
pub mod clock;
pub mod config;
pub mod consent;
pub mod delivery;
pub mod destination;
pub mod duplicate_window;
pub mod duplicates;
pub mod endpoint;
pub mod envelope;
pub mod erasure;
pub mod exact_json;
pub mod field_map;
pub mod fields;
pub mod fingerprint;
pub mod form_body;
pub mod history;
pub mod idempotency;
pub mod keys;
pub mod lanes;
pub mod lead;
pub mod logging;
pub mod metrics;
pub mod newest;
pub mod notice;
pub mod origin;
pub mod outcome;
pub mod receipt;
pub mod record;
pub mod refresh;
pub mod routes;
pub mod sender;
pub mod spam;
pub mod store_errors;
pub mod text;
pub mod time;

pub use destination::DestinationKind;
pub use envelope::{EnvelopeError, SubmissionId};
pub use fingerprint::PayloadFingerprint;
pub use idempotency::{IdempotencyKey, KeyError};
pub use lead::{Lead, LeadError};
pub use outcome::Outcome;
pub use receipt::{Receipt, ReceiptStatus};
pub use sender::{FormSubmission, Sender};
pub use time::Retention;
