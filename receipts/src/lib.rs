//! `receipts`: the operator's view of a deployed stack. Lists and counts
//! receipts, shows one, puts FAILED (or stranded) receipts back in the
//! reconciler's queue, smoke-tests the pipeline end to end, and audits the
//! sender's own list of submissions against the receipts. It finds
//! its tables through the stack (`--stack`) and never needs the CRM's
//! secret.

pub mod aws_error;
pub mod cli;
pub mod commands;
pub mod destinations;
pub mod lanes;
pub mod leads;

pub mod stack;
pub mod table;
pub mod view;
