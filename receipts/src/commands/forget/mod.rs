//! `receipts forget`: one person out of the stack (`stack`), and with
//! `--everywhere` out of every destination and the sender's copy too
//! (`everywhere`, with the settings it needs from `settings`), step by step
//! under an erasure whose state and record `record` shows.

mod everywhere;
mod record;
mod settings;
mod stack;

pub(super) use everywhere::{everywhere, Everywhere, SenderSide};
pub(super) use record::{asked_id, show, Asked};
pub(super) use settings::{destination_set, destinations, stack_variables};
pub(super) use stack::{address, forget, Gates, Request};
