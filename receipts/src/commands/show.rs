//! `receipts show`: one receipt, as a card or JSON.

use std::io::Write;
use std::time::SystemTime;

use super::{run_error, Failed};
use crate::table::{Reading, ReceiptsTable};
use crate::view;

pub(super) async fn show(
    table: &ReceiptsTable,
    submission_id: &str,
    json: bool,
    payload: bool,
    now: SystemTime,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let key = ReceiptsTable::key_of(submission_id).map_err(run_error)?;
    let Some(receipt) = table
        .get(&key, Reading::of(payload))
        .await
        .map_err(run_error)?
    else {
        return Err(Failed::Run(format!("no receipt {key}")));
    };
    if json {
        let _ = writeln!(out, "{}", view::json_of(&receipt, payload));
    } else {
        let _ = write!(out, "{}", view::card(&receipt, payload, now));
    }
    Ok(())
}
