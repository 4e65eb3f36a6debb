//! `receipts stats`: the table's receipts counted by status and age,
//! without reading personal data.

use std::io::Write;
use std::time::SystemTime;

use super::{progress, run_error, Failed};
use crate::table::{Reading, ReceiptsTable, Selection};
use crate::view;

pub(super) async fn stats(
    table: &ReceiptsTable,
    json: bool,
    now: SystemTime,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let found = table
        .select(
            &Selection::default(),
            Reading::WithoutPersonalData,
            progress("stats"),
        )
        .await
        .map_err(run_error)?;
    let stats = view::stats(&found.receipts, now);
    if json {
        let _ = writeln!(out, "{}", stats.json());
    } else {
        let _ = write!(out, "{}", stats.text());
    }
    Ok(())
}
