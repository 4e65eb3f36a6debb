//! `receipts redrive`: FAILED (or stranded) receipts back in the
//! reconciler's queue, one conditional update each.

use std::io::Write;
use std::time::SystemTime;

use shared::receipt::format_timestamp;
use shared::ReceiptStatus;

use super::{run_error, Failed};
use crate::table::{Reading, ReceiptsTable, Redriven};

pub(super) async fn redrive(
    table: &ReceiptsTable,
    keys: &[String],
    dry_run: bool,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let total = keys.len();
    let now = format_timestamp(SystemTime::now());
    let (mut queued, mut refused) = (0, 0);
    for (n, key) in keys.iter().enumerate() {
        if dry_run {
            match table
                .get(key, Reading::WithoutPersonalData)
                .await
                .map_err(run_error)?
            {
                Some(receipt)
                    if matches!(
                        receipt.status,
                        ReceiptStatus::Received | ReceiptStatus::Failed
                    ) =>
                {
                    queued += 1;
                    let _ = writeln!(
                        out,
                        "would redrive {key} ({}, {} attempts)",
                        receipt.status.as_str(),
                        receipt.attempts
                    );
                }
                Some(receipt) => {
                    refused += 1;
                    let _ = writeln!(out, "would skip {key}: {}", receipt.status.as_str());
                }
                None => {
                    refused += 1;
                    let _ = writeln!(out, "would skip {key}: no such receipt");
                }
            }
            continue;
        }
        match table.redrive(key, &now).await.map_err(run_error)? {
            Redriven::Queued => {
                queued += 1;
                let _ = writeln!(out, "redriven {key}");
            }
            Redriven::Completed => {
                refused += 1;
                let _ = writeln!(out, "skipped {key}: COMPLETED, never redriven");
            }
            Redriven::Erased => {
                refused += 1;
                let _ = writeln!(
                    out,
                    "skipped {key}: ERASED at a person's request, never delivered"
                );
            }
            Redriven::Waiting(next) => {
                refused += 1;
                let _ = writeln!(
                    out,
                    "skipped {key}: RECEIVED and not due before {next} (being delivered, or waiting for its next attempt)"
                );
            }
            Redriven::Missing => {
                refused += 1;
                let _ = writeln!(out, "skipped {key}: no such receipt");
            }
        }
        if (n + 1) % 100 == 0 {
            eprintln!("receipts: {} of {total} done", n + 1);
        }
    }
    let verb = if dry_run { "would redrive" } else { "redriven" };
    let _ = writeln!(out, "{verb} {queued}, skipped {refused}, of {total}");
    if !dry_run && queued > 0 {
        let _ = writeln!(out, "the next reconciliation pass delivers them");
    }
    Ok(())
}
