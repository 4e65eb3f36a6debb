//! `receipts`: the operator's view of the receipts table. Lists and counts
//! receipts, shows one, and puts FAILED (or stranded) receipts back in the
//! reconciler's queue. It talks only to DynamoDB and never needs the CRM's
//! secret.

pub mod args;
pub mod table;
pub mod view;
