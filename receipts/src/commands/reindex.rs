//! `receipts reindex`: gives the receipts stored before the day index
//! (`shared::receipt::DAY_INDEX`) their day, so the console's inbox and
//! counts show them. Once, after upgrading a stack from before the index;
//! safe to repeat and to interrupt (each receipt is one conditional write
//! that never creates an item).

use std::io::Write;

use shared::receipt::received_day;

use super::{run_error, Failed};
use crate::table::by_day::Reindexed;
use crate::table::ReceiptsTable;

pub(super) async fn reindex(
    table: &ReceiptsTable,
    dry_run: bool,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let mut found = Vec::new();
    let mut unreadable = 0;
    table
        .unindexed(|pk, at| match received_day(&at) {
            Some(day) => found.push((pk, day.to_owned())),
            None => unreadable += 1,
        })
        .await
        .map_err(run_error)?;
    let _ = writeln!(
        out,
        "{} receipt(s) without a day in the index{}",
        found.len(),
        if dry_run {
            " (dry run: nothing changed)"
        } else {
            ""
        }
    );
    if unreadable > 0 {
        let _ = writeln!(
            out,
            "{unreadable} receipt(s) whose receivedAt is no time: left as they are"
        );
    }
    if dry_run {
        return Ok(());
    }
    let mut done = Reindexed::default();
    for (pk, day) in &found {
        if table.set_day(pk, day).await.map_err(run_error)? {
            done.set += 1;
        } else {
            done.passed += 1;
        }
    }
    let _ = writeln!(
        out,
        "indexed {}; {} gone or indexed meanwhile",
        done.set, done.passed
    );
    Ok(())
}
