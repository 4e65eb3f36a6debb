//! `receipts forget --status` and `--record`: where an erasure stands, and
//! the record of one that is done, read from its item by the erasure's id
//! (or the address's, under the stack's key). Neither holds an address, a
//! name or any other personal data: each place and what it answered.

use std::io::Write;

use shared::erasure::plan::{job_key, AskedId};

use super::super::{run_error, Failed};
use crate::table::ReceiptsTable;

/// What the operator asked to see.
pub(in crate::commands) enum Asked {
    /// Where it stands (exit 0 whether done or not).
    Status,
    /// The record (exit 3 while it is not done).
    Record { json: bool },
}

/// An id as given to `--id` or `--record`.
pub(in crate::commands) fn asked_id(raw: &str) -> Result<AskedId, Failed> {
    AskedId::parse(raw).ok_or_else(|| {
        Failed::Usage(format!(
            "{raw:?} is no erasure id: {} hex digits, or those, '-' and a round (as forget printed it)",
            shared::erasure::plan::ID_HEX_DIGITS
        ))
    })
}

pub(in crate::commands) async fn show(
    table: &ReceiptsTable,
    asked: &AskedId,
    what: Asked,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let stored = table
        .erasures(&job_key(&asked.erasure))
        .await
        .map_err(run_error)?;
    let Some(round) = stored.erasures.round(asked) else {
        return Err(Failed::Run(format!(
            "no erasure {} in {}",
            asked.erasure,
            table.name()
        )));
    };
    match what {
        Asked::Record { json: true } => {
            let text = serde_json::to_string_pretty(round).map_err(run_error)?;
            let _ = writeln!(out, "{text}");
        }
        Asked::Status | Asked::Record { json: false } => {
            for line in round.record_lines() {
                let _ = writeln!(out, "{line}");
            }
        }
    }
    match (what, round.is_finished()) {
        (Asked::Record { .. }, false) => Err(Failed::RunAgainLater(format!(
            "erasure {} is not finished: its record is kept once every step is done; run \
             forget --everywhere again for the same address",
            round.id
        ))),
        _ => Ok(()),
    }
}
