//! Each subcommand, run against the table (and, for `--stack` and `smoke`,
//! CloudFormation, Secrets Manager and the webhook URL). Results go to
//! stdout; progress and problems to stderr.

mod audit;
mod browser_smoke;
mod console;
mod forget;
mod gates;
mod list;
mod redrive;
mod reindex;
mod release;
mod routes;
mod show;
mod smoke;
mod stats;
mod webhook_url;

use std::io::IsTerminal;
use std::time::SystemTime;

use aws_config::SdkConfig;
use aws_edge::SecretReadError;
use shared::destination::set::DestinationSet;
use shared::Retention;

use crate::cli::{Command, RoutesAction, Target};
use crate::stack::{output, parameter, Stack};
use crate::table::{Reading, ReceiptsTable, ScanProgress, Selection};

/// Why a command stopped: the operator's mistake (exit 2), a failure (1),
/// or work that must be run again later (3).
#[derive(Debug)]
pub enum Failed {
    Usage(String),
    Run(String),
    /// Done, but not all of it could be: run the command again after what
    /// the message says (`forget` when a delivery held a receipt). Exit 3.
    RunAgainLater(String),
    /// Done, and it found submissions the stack never received
    /// (`audit`). Exit 4.
    Missing(String),
}

/// Whose submission id a bare id (`show <id>`, `redrive <id>`, `release
/// <id>`) is: the stack's `Sender`, else `SENDER`, else Static Forms (the
/// template's default). A full key names its own sender.
fn sender_of_ids(stack: Option<&Stack>) -> shared::Sender {
    let named = match stack {
        Some(stack) => Some(stack.parameter(parameter::SENDER).to_owned()),
        None => std::env::var("SENDER").ok(),
    };
    named
        .as_deref()
        .and_then(shared::Sender::parse)
        .unwrap_or(shared::Sender::StaticForms)
}

fn run_error(error: impl std::fmt::Display) -> Failed {
    Failed::Run(error.to_string())
}

/// The text of the Secrets Manager secret `arn` (`what` names it in an
/// error, which never holds the value).
async fn secret_text(config: &SdkConfig, arn: &str, what: &str) -> Result<String, Failed> {
    let client = aws_sdk_secretsmanager::Client::new(config);
    aws_edge::secret_text(&client, arn).await.map_err(|error| {
        let said = match &error {
            SecretReadError::Call(call) => {
                crate::aws_error::one_line("Secrets Manager", call.as_ref())
            }
            SecretReadError::NoText => error.to_string(),
        };
        Failed::Run(format!("reading {what}: {said}"))
    })
}

/// A destination's name as `--destination` gives it: one of the catalog's.
fn destination_named(raw: &str) -> Result<&'static str, Failed> {
    shared::destination::DestinationKind::parse(raw)
        .map(|kind| kind.name())
        .ok_or_else(|| {
            Failed::Usage(format!(
                "--destination {raw:?}: expected {}",
                shared::destination::DestinationKind::names()
            ))
        })
}

/// The destinations of the stack, as it was deployed (its `Destination`
/// parameter); `None` without a stack.
fn stack_destinations(stack: Option<&Stack>) -> Result<Option<DestinationSet>, Failed> {
    let Some(stack) = stack else {
        return Ok(None);
    };
    let raw = stack.parameter(parameter::DESTINATION);
    if raw.is_empty() {
        return Ok(None);
    }
    DestinationSet::parse(raw).map(Some).map_err(|error| {
        Failed::Run(format!(
            "stack {:?}: its Destination parameter {error}",
            stack.name
        ))
    })
}

/// A command that needs no AWS (`Command::is_offline`).
pub fn run_offline(command: Command) -> Result<(), Failed> {
    let mut out = std::io::stdout().lock();
    match command {
        Command::Routes {
            action: RoutesAction::Check { file, destinations },
        } => {
            let stack = destinations.as_deref().map(routes::destinations_given);
            let stack = stack.transpose()?;
            routes::check(
                &file,
                stack.as_ref(),
                &mut out,
                &mut std::io::stderr().lock(),
            )
        }
        other => Err(Failed::Usage(format!("{other:?} needs AWS"))),
    }
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
    let dynamodb = aws_sdk_dynamodb::Client::new(config);
    let table = ReceiptsTable::new(dynamodb.clone(), table_name);
    let ids_sender = sender_of_ids(stack.as_ref());
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
            email,
            destination,
        } => {
            let email = match email {
                Some(address) => Some(forget::address(&address)?),
                None => None,
            };
            let destination = destination.as_deref().map(destination_named).transpose()?;
            let selection = Selection {
                // At a destination, the status is its lane's: read them all.
                status: status.filter(|_| destination.is_none()),
                window: window(&times)?,
                email,
                ..Selection::default()
            };
            let at = destination.map(|name| (name, status));
            list::list(&table, &selection, (limit, at), json, payload, &mut out).await?;
        }
        Command::Show {
            submission_id,
            json,
            payload,
        } => {
            let key = ReceiptsTable::key_of(&submission_id, ids_sender).map_err(run_error)?;
            show::show(&table, &key, json, payload, now, &mut out).await?
        }
        Command::Stats { json } => stats::stats(&table, json, now, &mut out).await?,
        Command::Redrive {
            ids,
            status,
            window: times,
            dry_run,
            destination,
        } => {
            let destination = destination.as_deref().map(destination_named).transpose()?;
            let keys: Vec<String> = match status {
                None => ids
                    .iter()
                    .map(|id| ReceiptsTable::key_of(id, ids_sender))
                    .collect::<Result<_, _>>()
                    .map_err(run_error)?,
                Some(status) => table
                    .select(
                        &Selection {
                            // At a destination, its lane's status decides.
                            status: Some(status.into()).filter(|_| destination.is_none()),
                            window: window(&times)?,
                            ..Selection::default()
                        },
                        Reading::WithoutPersonalData,
                        progress("redrive"),
                    )
                    .await
                    .map_err(run_error)?
                    .receipts
                    .into_iter()
                    .filter(|receipt| {
                        destination.is_none_or(|name| {
                            crate::lanes::at_destination(receipt, name, Some(status.into()))
                        })
                    })
                    .map(|receipt| receipt.pk)
                    .collect(),
            };
            // Gates are kept where a destination keeps one record per
            // person (its profile says when).
            let keeps_gates = |stack: &Stack| {
                crate::destinations::keeps_gates(stack.parameter(parameter::DESTINATION), |name| {
                    stack.parameter(name).to_owned()
                })
            };
            let gates = match &stack {
                Some(stack) if !keeps_gates(stack) => redrive::GateRetention::NotKept,
                _ => redrive::GateRetention::MayBeKept(retention_of(stack.as_ref())),
            };
            redrive::redrive(&table, &keys, (dry_run, destination), &gates, &mut out).await?;
        }
        Command::Forget {
            email,
            dry_run,
            yes,
            leads_table,
            max_scan_mb,
            erasure,
        } => {
            let asked = forget::ForgetArgs {
                email,
                dry_run,
                yes,
                leads_table,
                max_scan_mb,
                erasure,
            };
            let at = forget::Where {
                config,
                stack: stack.as_ref(),
                table: &table,
                dynamodb: &dynamodb,
                sender: ids_sender,
                now,
            };
            forget::command(at, asked, &mut out).await?;
        }
        Command::Console {
            port,
            no_open,
            bind: _,
        } => {
            // `--bind` is refused by the command line unless it is this.
            let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
            let gates = match &stack {
                Some(stack)
                    if !crate::destinations::keeps_gates(
                        stack.parameter(parameter::DESTINATION),
                        |name| stack.parameter(name).to_owned(),
                    ) =>
                {
                    redrive::GateRetention::NotKept
                }
                _ => redrive::GateRetention::MayBeKept(retention_of(stack.as_ref())),
            };
            let served = console::Console {
                table,
                sender: ids_sender,
                gates,
            };
            console::console(served, address, !no_open, &mut out).await?;
        }
        Command::WebhookUrl { show_secret } => {
            let Some(stack) = stack else {
                return Err(Failed::Usage(
                    "webhook-url needs --stack NAME: it reads the URL and secret from the stack"
                        .to_owned(),
                ));
            };
            let to_terminal = std::io::stdout().is_terminal();
            webhook_url::webhook_url(config, &stack, show_secret, to_terminal, &mut out).await?;
        }
        Command::Smoke {
            timeout,
            keep,
            email,
        } => {
            let Some(stack) = stack else {
                return Err(Failed::Usage(
                    "smoke needs --stack NAME: it reads the webhook URL and secret from the stack"
                        .to_owned(),
                ));
            };
            let email = match email {
                Some(raw) => forget::address(&raw)?,
                None => smoke::SMOKE_EMAIL.to_owned(),
            };
            // A form a browser posts carries a Turnstile token only a
            // browser can get: its own test.
            let (sender, _) = smoke::sender_and_auth(&stack)?;
            if sender.profile().browser {
                browser_smoke::smoke_test(&stack, sender, &email, &mut out).await?;
            } else {
                smoke::smoke_test(config, &stack, &table, timeout, keep, &email, &mut out).await?;
            }
        }
        Command::Reindex { dry_run } => reindex::reindex(&table, dry_run, &mut out).await?,
        Command::Release { ids } => {
            let keys: Vec<String> = ids
                .iter()
                .map(|id| ReceiptsTable::key_of(id, ids_sender))
                .collect::<Result<_, _>>()
                .map_err(|error| Failed::Usage(error.to_string()))?;
            release::release(&table, &keys, now, &mut out).await?;
        }
        Command::Routes {
            action: RoutesAction::Apply { file, dry_run },
        } => {
            let destinations = stack_destinations(stack.as_ref())?;
            routes::apply(
                &table,
                &file,
                (dry_run, destinations.as_ref()),
                now,
                &mut out,
            )
            .await?
        }
        Command::Routes {
            action: RoutesAction::Show,
        } => routes::show(&table, &mut out).await?,
        Command::Routes {
            action: RoutesAction::Check { file, destinations },
        } => {
            let destinations = match destinations {
                Some(raw) => Some(routes::destinations_given(&raw)?),
                None => stack_destinations(stack.as_ref())?,
            };
            let mut problems = std::io::stderr().lock();
            routes::check(&file, destinations.as_ref(), &mut out, &mut problems)?
        }
        Command::Audit { scope } => {
            let action = audit::Action::Report;
            audit_or_import(config, stack.as_ref(), &table, &scope, action, &mut out).await?;
        }
        Command::Import { scope, dry_run } => {
            let action = audit::Action::Import { dry_run };
            audit_or_import(config, stack.as_ref(), &table, &scope, action, &mut out).await?;
        }
    }
    Ok(())
}

/// `audit` and `import`: the scope, the sender's API and the key erasure
/// markers are found by, then the audit.
async fn audit_or_import(
    config: &SdkConfig,
    stack: Option<&Stack>,
    table: &ReceiptsTable,
    args: &crate::cli::AuditArgs,
    action: audit::Action,
    out: &mut impl std::io::Write,
) -> Result<(), Failed> {
    let now = SystemTime::now();
    let (scope, mut api) = audit::prepare(config, stack, table, args, now).await?;
    let gates = gates::gate_lookup(config, stack).await?;
    let scope = scope.with_erasure_key(audit::erasure_key(gates, action)?);
    audit::audit(table, &mut api, &scope, action, now, out).await
}

/// How long the stack keeps a delivered receipt (and a gate):
/// `ReceiptRetentionDays`, or the default for a table alone.
fn retention_of(stack: Option<&Stack>) -> Retention {
    stack
        .and_then(|stack| {
            stack
                .parameter(parameter::RECEIPT_RETENTION_DAYS)
                .parse()
                .ok()
        })
        .and_then(Retention::days)
        .unwrap_or_default()
}

/// Progress on stderr for long reads: a line every 10,000 items read.
pub(crate) fn progress(what: &'static str) -> impl FnMut(ScanProgress) {
    let mut next = 10_000;
    move |so_far: ScanProgress| {
        if so_far.items_read >= next {
            eprintln!("receipts: {what}: {} items read", so_far.items_read);
            next = so_far.items_read + 10_000;
        }
    }
}
