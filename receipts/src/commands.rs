//! Each subcommand, run against the table (and, for `--stack` and `smoke`,
//! CloudFormation, Secrets Manager and the webhook URL). Results go to
//! stdout; progress and problems to stderr.

use std::io::Write;
use std::time::{Instant, SystemTime};

use aws_config::SdkConfig;
use aws_sdk_secretsmanager::error::DisplayErrorContext;
use shared::receipt::format_timestamp;
use shared::ReceiptStatus;

use crate::cli::{Command, Target, Window};
use crate::smoke::{self, Progress, SenderAuth};
use crate::stack::{output, parameter, Stack};
use crate::table::{ReceiptsTable, Redriven};
use crate::view;

/// Why a command stopped: the operator's mistake (exit 2) or a failure (1).
#[derive(Debug)]
pub enum Failed {
    Usage(String),
    Run(String),
}

fn run_error(error: impl std::fmt::Display) -> Failed {
    Failed::Run(error.to_string())
}

pub async fn run(config: &SdkConfig, target: &Target, command: Command) -> Result<(), Failed> {
    let stack = match &target.stack {
        Some(name) => {
            let client = aws_sdk_cloudformation::Client::new(config);
            Some(Stack::describe(&client, name).await.map_err(run_error)?)
        }
        None => None,
    };
    let table_name = match (&stack, &target.table) {
        (Some(stack), _) => stack
            .output(output::RECEIPTS_TABLE)
            .map_err(run_error)?
            .to_owned(),
        (None, Some(table)) => table.clone(),
        (None, None) => std::env::var("RECEIPTS_TABLE")
            .ok()
            .filter(|name| !name.trim().is_empty())
            .ok_or_else(|| {
                Failed::Usage(
                    "give --stack NAME, --table NAME or set RECEIPTS_TABLE (the stack's ReceiptsTableName output)"
                        .to_owned(),
                )
            })?,
    };
    let table = ReceiptsTable::new(aws_sdk_dynamodb::Client::new(config), table_name);
    let now = SystemTime::now();
    let window = |args: &crate::cli::TimeArgs| {
        args.resolve(now)
            .map_err(|error| Failed::Usage(error.to_string()))
    };
    let mut out = std::io::stdout().lock();
    match command {
        Command::List {
            status,
            window: times,
            limit,
            json,
            payload,
        } => {
            let window = window(&times)?;
            let mut found = table
                .select(status, &window, progress("list"))
                .await
                .map_err(run_error)?;
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
        }
        Command::Show {
            submission_id,
            json,
            payload,
        } => {
            let key = ReceiptsTable::key_of(&submission_id).map_err(run_error)?;
            let Some(receipt) = table.get(&key).await.map_err(run_error)? else {
                return Err(Failed::Run(format!("no receipt {key}")));
            };
            if json {
                let _ = writeln!(out, "{}", view::json_of(&receipt, payload));
            } else {
                let _ = write!(out, "{}", view::card(&receipt, payload, now));
            }
        }
        Command::Stats { json } => {
            let found = table
                .select(None, &Window::default(), progress("stats"))
                .await
                .map_err(run_error)?;
            let stats = view::stats(&found.receipts, now);
            if json {
                let _ = writeln!(out, "{}", stats.json());
            } else {
                let _ = write!(out, "{}", stats.text());
            }
        }
        Command::Redrive {
            ids,
            status,
            window: times,
            dry_run,
        } => {
            let keys: Vec<String> = match status {
                None => ids
                    .iter()
                    .map(|id| ReceiptsTable::key_of(id))
                    .collect::<Result<_, _>>()
                    .map_err(run_error)?,
                Some(status) => table
                    .select(Some(status.into()), &window(&times)?, progress("redrive"))
                    .await
                    .map_err(run_error)?
                    .receipts
                    .into_iter()
                    .map(|receipt| receipt.pk)
                    .collect(),
            };
            redrive(&table, &keys, dry_run, &mut out).await?;
        }
        Command::Smoke { timeout } => {
            let Some(stack) = stack else {
                return Err(Failed::Usage(
                    "smoke needs --stack NAME: it reads the webhook URL and secret from the stack"
                        .to_owned(),
                ));
            };
            smoke_test(config, &stack, &table, timeout, &mut out).await?;
        }
    }
    Ok(())
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

async fn redrive(
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
            match table.get(key).await.map_err(run_error)? {
                Some(receipt) if receipt.status != ReceiptStatus::Completed => {
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
        match table.redrive(key, &now).await.map_err(run_error)? {
            Redriven::Queued => {
                queued += 1;
                let _ = writeln!(out, "redriven {key}");
            }
            Redriven::Completed => {
                refused += 1;
                let _ = writeln!(out, "skipped {key}: COMPLETED, never redriven");
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

/// One marked submission through the stack's own front door, then its
/// receipt followed until it settles or `timeout` passes. Never prints the
/// secret.
async fn smoke_test(
    config: &SdkConfig,
    stack: &Stack,
    table: &ReceiptsTable,
    timeout: std::time::Duration,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let url = stack.output(output::WEBHOOK_URL).map_err(run_error)?;
    let auth = SenderAuth::parse(stack.parameter(parameter::WEBHOOK_AUTH)).map_err(run_error)?;
    let secret = match auth {
        SenderAuth::None => String::new(),
        _ => {
            let arn = stack
                .output(output::WEBHOOK_SECRET_ARN)
                .map_err(run_error)?;
            aws_sdk_secretsmanager::Client::new(config)
                .get_secret_value()
                .secret_id(arn)
                .send()
                .await
                .map_err(|error| {
                    Failed::Run(format!(
                        "reading the webhook secret: {}",
                        DisplayErrorContext(error)
                    ))
                })?
                .secret_string
                .unwrap_or_default()
        }
    };
    let request = smoke::request(
        url,
        &auth,
        &secret,
        stack.parameter(parameter::ACCEPTED_FORMS),
        SystemTime::now(),
    )
    .map_err(run_error)?;
    let _ = writeln!(
        out,
        "sending test submission {} to {url}",
        request.submission_id
    );
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(run_error)?;
    let mut post = http.post(&request.url).body(request.body.clone());
    for (name, value) in &request.headers {
        post = post.header(name, value);
    }
    let response = post
        .send()
        .await
        .map_err(|error| Failed::Run(format!("the webhook URL did not answer: {error}")))?;
    let status = response.status().as_u16();
    let answer = response.text().await.unwrap_or_default();
    let _ = writeln!(out, "webhook answered {status} {answer}");
    if !(200..300).contains(&status) {
        return Err(Failed::Run(format!(
            "the webhook refused the test submission ({status}): see the ingest function's log"
        )));
    }

    let key = ReceiptsTable::key_of(&request.submission_id).map_err(run_error)?;
    let started = Instant::now();
    let mut said = String::new();
    loop {
        let receipt = table.get(&key).await.map_err(run_error)?;
        match smoke::progress(receipt.as_ref()) {
            Progress::Completed => {
                let _ = writeln!(
                    out,
                    "COMPLETED after {:.1} s: the lead is in the destination",
                    started.elapsed().as_secs_f64()
                );
                return Ok(());
            }
            Progress::Failed(reason) => {
                return Err(Failed::Run(format!(
                    "the receipt is FAILED: {reason} (receipts show {})",
                    request.submission_id
                )))
            }
            Progress::Missing => {
                return Err(Failed::Run(format!(
                    "no receipt {key} in the stack's table although the webhook accepted it"
                )))
            }
            Progress::Waiting(where_) => {
                if where_ != said {
                    let _ = writeln!(out, "waiting: {where_}");
                    let _ = out.flush();
                    said = where_;
                }
            }
        }
        if started.elapsed() >= timeout {
            return Err(Failed::Run(format!(
                "not COMPLETED within {}: {said}",
                humantime::format_duration(timeout)
            )));
        }
        tokio::time::sleep(smoke::POLL_EVERY).await;
    }
}
