//! `receipts release`: receipts a spam rule held back, back in the
//! reconciler's queue, one conditional update each (see
//! `ReceiptsTable::release`). Exit 0 when every one is released now or
//! was before; 1 when one is missing or was never quarantined.

use std::io::Write;
use std::time::SystemTime;

use shared::receipt::format_timestamp;

use super::{run_error, Failed};
use crate::table::changes::Released;
use crate::table::ReceiptsTable;

pub(super) async fn release(
    table: &ReceiptsTable,
    keys: &[String],
    now: SystemTime,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let now = format_timestamp(now);
    let mut refused = 0;
    for key in keys {
        let said = match table.release(key, &now).await.map_err(run_error)? {
            Released::Queued => {
                format!("{key}: released; RECEIVED and due now, the next reconciliation pass delivers it")
            }
            Released::Already(at) => format!("{key}: released already at {at}; nothing changed"),
            Released::NotQuarantined(status) => {
                refused += 1;
                format!(
                    "{key}: {} and not quarantined; nothing changed",
                    status.as_str()
                )
            }
            Released::Missing => {
                refused += 1;
                format!("{key}: no such receipt")
            }
        };
        writeln!(out, "{said}").map_err(run_error)?;
    }
    if refused > 0 {
        return Err(Failed::Run(format!(
            "{refused} of {} receipt(s) could not be released (named above)",
            keys.len()
        )));
    }
    Ok(())
}
