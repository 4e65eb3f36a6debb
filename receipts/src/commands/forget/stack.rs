//! The stack's part of `receipts forget --email ADDRESS`: one person out of
//! the stack's tables.
//!
//! It finds first and changes after: the receipts that still hold the
//! person's form data (a scan: only receipts with a payload can name anyone,
//! and a delivered receipt has none), their newest-wins gates (by key: the
//! stack's keyed one, and the unkeyed one an earlier version wrote), and
//! their rows in the leads table (a scan of keys and addresses). Both scans
//! are bounded (`--max-scan-mb`), checked against the tables' sizes before
//! they start, and report progress. A scan, not an index: an erasure is
//! rare, and an index on the address would cost every lead two more writes
//! to make it cheaper (docs/personal-data.md).
//!
//! Nothing is changed when a scan stops early, with `--dry-run`, or when the
//! operator answers no. Each change is conditional, so running it twice, or
//! beside a delivery, erases what is left and nothing else.
//!
//! With the stack's gate key, it also leaves the person's erasure marker
//! (`shared::erasure`), so no import or audit brings them back from the
//! sender's own list; and it tells the operator how to delete them there.

use std::io::Write;
use std::time::SystemTime;

use shared::receipt::format_timestamp;
use shared::{Receipt, ReceiptStatus, Retention, Sender};

use super::super::gates::Gates;
use super::super::{run_error, Failed};
use crate::leads::{LeadRow, LeadsTable};
use crate::table::changes::Erased;
use crate::table::{Reading, ReceiptsTable, ScanProgress, Selection, TableSize};

/// What the operator asked.
pub(in crate::commands) struct Request {
    /// Normalised ([`address`]).
    pub email: String,
    pub dry_run: bool,
    /// Ask before changing anything (a terminal, without `--yes`).
    pub ask: bool,
    pub max_scan_mb: usize,
    /// How long an ERASED receipt stays (for duplicates) before TTL.
    pub retention: Retention,
    pub gates: Gates,
    /// The stack's sender, which still lists the person's submissions.
    pub sender: Sender,
}

const MB: i64 = 1024 * 1024;

/// An address as given, normalised as the pipeline compares them; refused
/// unless it looks like one (text, `@`, text, no spaces).
pub(in crate::commands) fn address(raw: &str) -> Result<String, Failed> {
    // Not quoted back: it may be most of somebody's address.
    let refused =
        || Failed::Usage("--email is not an e-mail address (text@domain, no spaces)".to_owned());
    let email = shared::lead::normalise_email(raw).ok_or_else(refused)?;
    match email.split_once('@') {
        Some((local, domain))
            if !local.is_empty() && !domain.is_empty() && !email.contains(char::is_whitespace) =>
        {
            Ok(email)
        }
        _ => Err(refused()),
    }
}

/// What an erased receipt becomes, in words.
fn becomes(receipt: &Receipt) -> &'static str {
    match receipt.status {
        ReceiptStatus::Received | ReceiptStatus::Failed | ReceiptStatus::Quarantined => {
            "becomes ERASED: form data removed, never delivered"
        }
        _ => "form data removed",
    }
}

/// Refuses to start a scan the bound would stop.
fn check_size(table: &str, size: TableSize, max_mb: usize) -> Result<(), Failed> {
    eprintln!(
        "receipts: forget: {table} holds about {} items, {:.1} MB (as DynamoDB last measured it); \
         finding a person reads all of it",
        size.items,
        size.bytes as f64 / MB as f64
    );
    let max_bytes = i64::try_from(max_mb).unwrap_or(i64::MAX).saturating_mul(MB);
    if size.bytes > max_bytes {
        return Err(Failed::Usage(format!(
            "{table} is larger than --max-scan-mb {max_mb}: nothing was changed; \
             give --max-scan-mb {} to read it all",
            size.bytes / MB + 1
        )));
    }
    Ok(())
}

fn scan_progress(table: String) -> impl FnMut(ScanProgress) {
    move |so_far: ScanProgress| {
        eprintln!(
            "receipts: forget: {table}: page {} (at most {} MB read), {} items, {} match",
            so_far.pages, so_far.pages, so_far.items_read, so_far.matched
        );
    }
}

fn stopped(table: &str, max_mb: usize) -> Failed {
    Failed::Run(format!(
        "the scan of {table} stopped at --max-scan-mb {max_mb} before the end (the table grew \
         since DynamoDB measured it): nothing was changed; run again with a larger --max-scan-mb"
    ))
}

/// What the stack holds of one person, found before anything changes.
pub(super) struct Found {
    /// The receipts that still hold their form data (or a waiting
    /// notice's answers).
    pub receipts: Vec<Receipt>,
    /// The keys of their gates that exist.
    pub gates: Vec<String>,
    pub rows: Vec<LeadRow>,
    /// Their erasure marker's key, when the stack's key is known.
    pub marker: Option<String>,
}

impl Found {
    fn is_empty(&self) -> bool {
        self.receipts.is_empty() && self.gates.is_empty() && self.rows.is_empty()
    }
}

/// A receipt a delivery held when it was erased: its lead may still go out.
pub(super) struct Held {
    pub submission_id: String,
    pub until: String,
}

pub(in crate::commands) async fn forget(
    table: &ReceiptsTable,
    leads: Option<&LeadsTable>,
    request: &Request,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let found = find(table, leads, request).await?;
    describe(&found, leads, request, out);
    if request.dry_run {
        let _ = writeln!(out, "dry run: nothing was changed");
        erasure_notes(request.sender, out);
        return Ok(());
    }
    if found.is_empty() && found.marker.is_none() {
        let _ = writeln!(out, "nothing to erase");
        erasure_notes(request.sender, out);
        return Ok(());
    }
    if request.ask && !confirmed()? {
        return Err(Failed::Run("not confirmed: nothing was changed".to_owned()));
    }
    let held = change(table, leads, &found, request, out).await?;
    erasure_notes(request.sender, out);
    match held.iter().map(|held| held.until.as_str()).max() {
        None => Ok(()),
        Some(latest) => Err(Failed::RunAgainLater(format!(
            "{} receipt(s) were held by a delivery when erased: run forget again after {latest}, \
             then erase the person in the CRM",
            held.len()
        ))),
    }
}

/// Everything the stack holds of the person: nothing is changed, and a
/// scan stopped by its bound is an error.
pub(super) async fn find(
    table: &ReceiptsTable,
    leads: Option<&LeadsTable>,
    request: &Request,
) -> Result<Found, Failed> {
    let pages = request.max_scan_mb.max(1);
    check_size(
        table.name(),
        table.size().await.map_err(run_error)?,
        request.max_scan_mb,
    )?;
    let selection = Selection {
        email: Some(request.email.clone()),
        person: request.gates.marker_of(&request.email),
        max_pages: Some(pages),
        ..Selection::default()
    };
    let found = table
        .select(
            &selection,
            Reading::WithPayload,
            scan_progress(table.name().to_owned()),
        )
        .await
        .map_err(run_error)?;
    if !found.complete {
        return Err(stopped(table.name(), request.max_scan_mb));
    }
    let mut gates = Vec::new();
    for gate in request.gates.keys_of(&request.email) {
        if table.exists(&gate).await.map_err(run_error)? {
            gates.push(gate);
        }
    }
    let rows: Vec<LeadRow> = match leads {
        Some(leads) => {
            check_size(
                leads.name(),
                leads.size().await.map_err(run_error)?,
                request.max_scan_mb,
            )?;
            let rows = leads
                .rows_of(
                    &request.email,
                    pages,
                    scan_progress(leads.name().to_owned()),
                )
                .await
                .map_err(run_error)?;
            if !rows.complete {
                return Err(stopped(leads.name(), request.max_scan_mb));
            }
            rows.rows
        }
        None => Vec::new(),
    };
    Ok(Found {
        receipts: found.receipts,
        gates,
        rows,
        marker: request.gates.marker_of(&request.email),
    })
}

/// Says what was found, and what a run would do with it.
pub(super) fn describe(
    found: &Found,
    leads: Option<&LeadsTable>,
    request: &Request,
    out: &mut impl Write,
) {
    let would = if request.dry_run { "would be " } else { "" };
    let _ = writeln!(
        out,
        "{} receipt(s) hold form data of this address:",
        found.receipts.len()
    );
    for receipt in &found.receipts {
        let _ = writeln!(
            out,
            "  {}  {}  {}",
            receipt.pk,
            receipt.status.as_str(),
            becomes(receipt)
        );
    }
    let _ = writeln!(
        out,
        "newest-wins gate: {}",
        match (found.gates.len(), &request.gates) {
            (0, Gates::KeyUnknown) => "none without a key; the stack's keyed gate was not \
                                       looked for (give --stack, or set GATE_KEY_SECRET_ARN to \
                                       the stack's GateKeySecretArn output)"
                .to_owned(),
            (0, _) => "none".to_owned(),
            (count, _) => format!("{count} ({would}deleted)"),
        }
    );
    match leads {
        Some(leads) => {
            let _ = writeln!(
                out,
                "leads table {}: {} row(s) ({would}deleted)",
                leads.name(),
                found.rows.len()
            );
        }
        None => {
            let _ = writeln!(
                out,
                "leads table: none searched (Destination=dynamodb: give --leads-table or --stack)"
            );
        }
    }
    let _ = writeln!(
        out,
        "erasure marker: {}",
        match (&found.marker, &request.gates) {
            (Some(_), _) => format!(
                "{would}left, so no import or audit of the sender's submissions brings this person back"
            ),
            (None, Gates::KeyUnknown) => "none without the stack's gate key (give --stack, or set \
                                          GATE_KEY_SECRET_ARN or GATE_KEY): an import could bring \
                                          this person back"
                .to_owned(),
            (None, _) => "none: this stack keeps no gate key (it neither audits nor keeps gates), \
                          so nothing imports from the sender unasked; never import this person again"
                .to_owned(),
        }
    );
}

/// Erases what `find` found: the marker first, so that an import running
/// meanwhile already passes this person over; then the receipts, gates
/// and rows, each conditionally. The receipts a delivery held are
/// returned.
pub(super) async fn change(
    table: &ReceiptsTable,
    leads: Option<&LeadsTable>,
    found: &Found,
    request: &Request,
    out: &mut impl Write,
) -> Result<Vec<Held>, Failed> {
    let now = format_timestamp(SystemTime::now());
    let expires_at = request.retention.expiry_after(SystemTime::now());
    if let Some(marker) = &found.marker {
        table
            .leave_erasure_marker(marker, &now, expires_at)
            .await
            .map_err(run_error)?;
        let _ = writeln!(out, "erasure marker: left");
    }
    let mut held = Vec::new();
    for receipt in &found.receipts {
        let erased = table
            .erase(&receipt.pk, &now, expires_at)
            .await
            .map_err(run_error)?;
        let said = match &erased {
            Erased::Settled { held_until: None } => "ERASED, never delivered",
            Erased::Settled {
                held_until: Some(until),
            } => {
                held.push(Held {
                    submission_id: receipt.submission_id.clone(),
                    until: until.clone(),
                });
                "ERASED; a delivery held it at that moment and may still send its lead"
            }
            Erased::PayloadRemoved => "form data removed",
            Erased::NothingLeft => "nothing left to erase (delivered or erased meanwhile)",
        };
        let _ = writeln!(out, "erased {}: {said}", receipt.pk);
    }
    for gate in &found.gates {
        let deleted = table.delete_gate(gate).await.map_err(run_error)?;
        let _ = writeln!(
            out,
            "newest-wins gate: {}",
            if deleted { "deleted" } else { "already gone" }
        );
    }
    if let Some(leads) = leads {
        for row in &found.rows {
            let deleted = leads.delete(row).await.map_err(run_error)?;
            // A row keyed by the address is not named by its key: output
            // is often kept (terminals, tickets); the address stays out.
            let name = if row.pk.starts_with("submission#") {
                row.pk.as_str()
            } else {
                "keyed by this address"
            };
            let _ = writeln!(
                out,
                "leads table row {name}: {}",
                if deleted {
                    "deleted"
                } else {
                    "changed since it was read; left"
                }
            );
        }
    }
    for Held {
        submission_id,
        until,
    } in &held
    {
        let _ = writeln!(
            out,
            "warning: a delivery held {submission_id} when it was erased, until {until}: its \
             lead may still reach the CRM (and a leads-table row or gate that delivery writes \
             is refused, or erased by a second run)"
        );
    }
    Ok(held)
}

/// What the operator must still do outside this stack: the CRM, and the
/// sender, which keeps the person's submissions.
fn erasure_notes(sender: Sender, out: &mut impl Write) {
    crate::destinations::crm_erasure_note(out);
    let _ = writeln!(
        out,
        "{} still keeps this person's submissions: delete them there too, {}",
        sender.profile().title,
        sender.profile().erasure
    );
}

/// Asks on the terminal; anything but y or yes is no.
pub(super) fn confirmed() -> Result<bool, Failed> {
    eprint!("receipts: erase this person's data? [y/N] ");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).map_err(run_error)?;
    Ok(matches!(answer.trim().to_lowercase().as_str(), "y" | "yes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        let rows = [
            (" Ada@Example.COM ", Some("ada@example.com")),
            ("a@b", Some("a@b")),
            ("", None),
            ("ada", None),
            ("@example.com", None),
            ("ada@", None),
            ("ada lovelace@example.com", None),
        ];
        for (raw, expected) in rows {
            let got = address(raw).ok();
            assert_eq!(got.as_deref(), expected, "{raw:?}");
        }
    }

    #[test]
    fn a_table_larger_than_the_bound_is_refused_before_any_read() {
        let size = |mb: i64| TableSize {
            items: 1,
            bytes: mb * MB,
        };
        assert!(check_size("t", size(1024), 1024).is_ok());
        match check_size("t", size(1025), 1024) {
            Err(Failed::Usage(message)) => {
                assert!(message.contains("give --max-scan-mb 1026"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }
}
