//! `receipts list`: the receipts a selection finds, as a table or JSON.

use std::io::Write;
use std::num::NonZeroUsize;

use super::{progress, run_error, Failed};
use crate::cli::StatusFilter;
use crate::table::{Reading, ReceiptsTable, Selection};
use crate::view;

/// At a destination: its name, and the status its lane must stand in.
pub(super) type AtDestination = Option<(&'static str, Option<StatusFilter>)>;

pub(super) async fn list(
    table: &ReceiptsTable,
    selection: &Selection,
    (limit, at): (Option<NonZeroUsize>, AtDestination),
    json: bool,
    payload: bool,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let mut found = table
        .select(selection, Reading::of(payload), progress("list"))
        .await
        .map_err(run_error)?;
    if let Some((destination, status)) = at {
        found
            .receipts
            .retain(|receipt| crate::lanes::at_destination(receipt, destination, status));
    }
    if let Some(limit) = limit {
        found.receipts.truncate(limit.get());
    }
    if json {
        let rows: Vec<_> = found
            .receipts
            .iter()
            .map(|r| view::json_of(r, payload))
            .collect();
        let _ = writeln!(out, "{}", serde_json::Value::Array(rows));
    } else {
        let _ = write!(out, "{}", view::table(&found.receipts, payload));
    }
    if found.unreadable > 0 {
        eprintln!(
            "receipts: {} item(s) did not read as receipts",
            found.unreadable
        );
    }
    Ok(())
}
