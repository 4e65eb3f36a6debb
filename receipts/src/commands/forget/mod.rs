//! `receipts forget`: one person out of the stack (`stack`), and with
//! `--everywhere` out of every destination and the sender's copy too
//! (`everywhere`, with the settings it needs from `settings`), step by step
//! under an erasure whose state and record `record` shows.

mod command;
mod everywhere;
mod record;
mod settings;
mod stack;

pub(super) use command::{command, ForgetArgs, Where};
pub(super) use stack::address;
