//! `receipts redrive`: FAILED (or stranded) receipts back in the
//! reconciler's queue, one conditional update each.
//!
//! Where newest-wins gates are kept (HubSpot contacts by email), a gate
//! expires a retention after the last lead of its person was written. A
//! receipt received longer ago than that may belong to a person whose
//! newer lead was written and whose gate is gone: redriven, it would
//! overwrite the newer data. Each such receipt is named with a warning
//! before it is redriven (and by `--dry-run`).

use std::io::Write;
use std::time::SystemTime;

use shared::receipt::{format_timestamp, parse_timestamp};
use shared::{Receipt, ReceiptStatus, Retention};

use super::{run_error, Failed};
use crate::table::changes::Redriven;
use crate::table::{Reading, ReceiptsTable};

/// What redrive knows of the stack's newest-wins gates.
pub(super) enum GateRetention {
    /// The stack keeps none (no destination with one record per person).
    NotKept,
    /// It keeps them (or a table alone cannot tell): gates last this long.
    MayBeKept(Retention),
}

/// Whether `receipt` was received longer ago than gates are kept: its
/// person's gate may have expired after a newer lead was written.
fn outlived_its_gate(receipt: &Receipt, gates: &GateRetention, now: SystemTime) -> bool {
    let GateRetention::MayBeKept(retention) = gates else {
        return false;
    };
    match (
        parse_timestamp(&receipt.received_at),
        now.checked_sub(retention.as_duration()),
    ) {
        (Some(received), Some(oldest_gate)) => received < oldest_gate,
        _ => false,
    }
}

fn warn_past_gate(key: &str, gates: &GateRetention, out: &mut impl Write) {
    if let GateRetention::MayBeKept(retention) = gates {
        let _ = writeln!(
            out,
            "warning: {key} was received more than {} days ago, longer than newest-wins gates \
             are kept (by a destination with one record per person): if a newer submission of the same person was \
             delivered meanwhile, this older lead overwrites it; check the contact first",
            retention.as_duration().as_secs() / 86_400
        );
    }
}

/// Redrives each receipt of `keys`; with `destination`, only its lane
/// there (a receipt of several destinations never has a written one
/// delivered again).
pub(super) async fn redrive(
    table: &ReceiptsTable,
    keys: &[String],
    (dry_run, destination): (bool, Option<&str>),
    gates: &GateRetention,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let total = keys.len();
    let clock = SystemTime::now();
    let now = format_timestamp(clock);
    let (mut queued, mut refused) = (0, 0);
    for (n, key) in keys.iter().enumerate() {
        // One read serves the warning, the dry run's verdict and the
        // lanes put back.
        let read = table
            .get(key, Reading::WithoutPersonalData)
            .await
            .map_err(run_error)?;
        let lanes = match read
            .as_ref()
            .map(|receipt| crate::lanes::redriven(receipt, destination))
        {
            Some(Err(why)) => {
                refused += 1;
                let _ = writeln!(out, "skipped {key}: {why}");
                continue;
            }
            Some(Ok(lanes)) => lanes,
            None => None,
        };
        if read
            .as_ref()
            .is_some_and(|receipt| outlived_its_gate(receipt, gates, clock))
        {
            warn_past_gate(key, gates, out);
        }
        if dry_run {
            match read {
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
        match table
            .redrive(key, &now, lanes.as_ref())
            .await
            .map_err(run_error)?
        {
            Redriven::Queued => {
                queued += 1;
                let _ = writeln!(out, "redriven {key}");
            }
            Redriven::Settled(status) => {
                refused += 1;
                let _ = writeln!(out, "skipped {key}: {}, never redriven", status.as_str());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_receipt_older_than_the_gates_retention_on_a_stack_with_gates_is_named() {
        let now = parse_timestamp("2026-12-31T00:00:00.000Z").unwrap();
        let thirty = GateRetention::MayBeKept(Retention::days(30).unwrap());
        let body = br#"{"event":"form.submitted","data":{"submissionId":"s1","formData":{"email":"a@b.c"}}}"#;
        let submission = shared::FormSubmission::parse(body).unwrap();
        let received = |at: &str| Receipt {
            received_at: at.to_owned(),
            ..Receipt::new(&submission, now)
        };
        let rows = [
            ("2026-12-01T00:00:00.001Z", &thirty, false),
            ("2026-11-30T23:59:59.999Z", &thirty, true),
            ("2020-01-01T00:00:00.000Z", &GateRetention::NotKept, false),
            ("not a time", &thirty, false),
        ];
        for (at, gates, named) in rows {
            assert_eq!(outlived_its_gate(&received(at), gates, now), named, "{at}");
        }
        let mut out = Vec::new();
        warn_past_gate("k", &thirty, &mut out);
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("more than 30 days ago"));
    }
}
