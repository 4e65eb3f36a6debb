//! The audit of a sender's own list of submissions, for `receipts audit`
//! and the worker's scheduled audit alike:
//!
//! - [`sender_api`]: the sender's API over HTTP (`SenderApiClient`: paced,
//!   a `429`'s `Retry-After` waited out, bounded by a deadline, the token
//!   only in its header);
//! - [`audit`]: each listed submission's receipt looked up (keys, status
//!   and an erasure marker's time only), and the missing imported.
//!
//! What counts as missing, expired or erased is `shared::audit`'s rule;
//! the SDK plumbing is `aws-edge`'s.

pub mod audit;
pub mod sender_api;
