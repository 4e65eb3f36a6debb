//! Start-up and wiring only: arguments, the DynamoDB client from the
//! standard AWS environment, then the command. Exit code 2 for a usage
//! error, 1 for a failure.

use std::io::Write;
use std::process::ExitCode;
use std::time::SystemTime;

use receipts::args::{self, Command, RedriveTarget, USAGE};
use receipts::table::{ReceiptsTable, Redriven, TableError};
use receipts::view;
use shared::receipt::format_timestamp;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let invocation = match args::parse(&args, SystemTime::now()) {
        Ok(invocation) => invocation,
        Err(error) => {
            eprintln!("receipts: {error}");
            return ExitCode::from(2);
        }
    };
    if invocation.command == Command::Help {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let Some(table_name) = invocation
        .table
        .or_else(|| std::env::var("RECEIPTS_TABLE").ok())
        .filter(|name| !name.trim().is_empty())
    else {
        eprintln!("receipts: give --table NAME or set RECEIPTS_TABLE (the stack's ReceiptsTableName output)");
        return ExitCode::from(2);
    };
    let config = aws_config::load_from_env().await;
    let table = ReceiptsTable::new(aws_sdk_dynamodb::Client::new(&config), table_name);
    match run(&table, invocation.command).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("receipts: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Progress on stderr for long reads: a line every 10,000 items read.
fn progress(what: &'static str) -> impl FnMut(usize) {
    let mut next = 10_000;
    move |read| {
        if read >= next {
            eprintln!("receipts: {what}: {read} items read");
            next = read + 10_000;
        }
    }
}

async fn run(table: &ReceiptsTable, command: Command) -> Result<ExitCode, TableError> {
    let mut out = std::io::stdout().lock();
    match command {
        Command::Help => {}
        Command::List {
            status,
            window,
            limit,
            json,
            show_lead,
        } => {
            let found = table
                .select(status, &window, limit, progress("list"))
                .await?;
            if json {
                let rows: Vec<_> = found
                    .receipts
                    .iter()
                    .map(|r| view::json_of(r, show_lead))
                    .collect();
                let _ = writeln!(out, "{}", serde_json::Value::Array(rows));
            } else {
                let _ = write!(out, "{}", view::table(&found.receipts, show_lead));
            }
            if found.unreadable > 0 {
                eprintln!(
                    "receipts: {} item(s) did not read as receipts",
                    found.unreadable
                );
            }
        }
        Command::Show {
            submission_id,
            json,
            show_lead,
        } => {
            let key = ReceiptsTable::key_of(&submission_id)?;
            let Some(receipt) = table.get(&key).await? else {
                eprintln!("receipts: no receipt {key}");
                return Ok(ExitCode::FAILURE);
            };
            if json {
                let _ = writeln!(out, "{}", view::json_of(&receipt, show_lead));
            } else {
                let _ = write!(out, "{}", view::details(&receipt, show_lead));
            }
        }
        Command::Stats { json } => {
            let found = table
                .select(None, &args::Window::default(), None, progress("stats"))
                .await?;
            let stats = view::stats(&found.receipts, SystemTime::now());
            if json {
                let _ = writeln!(out, "{}", stats.json());
            } else {
                let _ = write!(out, "{}", stats.text());
            }
        }
        Command::Redrive { target, dry_run } => {
            let keys: Vec<String> = match target {
                RedriveTarget::Ids(ids) => ids
                    .iter()
                    .map(|id| ReceiptsTable::key_of(id))
                    .collect::<Result<_, _>>()?,
                RedriveTarget::Status(status, window) => table
                    .select(Some(status), &window, None, progress("redrive"))
                    .await?
                    .receipts
                    .into_iter()
                    .map(|receipt| receipt.pk)
                    .collect(),
            };
            let total = keys.len();
            let now = format_timestamp(SystemTime::now());
            let (mut queued, mut refused) = (0, 0);
            for (n, key) in keys.iter().enumerate() {
                if dry_run {
                    match table.get(key).await? {
                        Some(receipt) if receipt.status != shared::ReceiptStatus::Completed => {
                            queued += 1;
                            let _ = writeln!(
                                out,
                                "would redrive {key} ({:?}, {} attempts)",
                                receipt.status, receipt.attempts
                            );
                        }
                        Some(_) => {
                            refused += 1;
                            let _ = writeln!(out, "would skip {key}: COMPLETED");
                        }
                        None => {
                            refused += 1;
                            let _ = writeln!(out, "would skip {key}: no such receipt");
                        }
                    }
                    continue;
                }
                match table.redrive(key, &now).await? {
                    Redriven::Queued => {
                        queued += 1;
                        let _ = writeln!(out, "redriven {key}");
                    }
                    Redriven::Completed => {
                        refused += 1;
                        let _ = writeln!(out, "skipped {key}: COMPLETED, never redriven");
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
        }
    }
    Ok(ExitCode::SUCCESS)
}
