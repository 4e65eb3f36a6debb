//! `receipts forget`'s command line read into what it does: a record or
//! an erasure's status shown, the stack's forget, or the erasure
//! everywhere with each destination's and the sender's settings.

use std::io::{IsTerminal, Write};
use std::time::SystemTime;

use aws_config::SdkConfig;
use shared::Sender;

use super::super::audit::sender_side;
use super::super::gates::{gate_lookup, Gates};
use super::super::{retention_of, Failed};
use super::everywhere::{everywhere, Everywhere};
use super::record::{asked_id, show, Asked};
use super::settings::{destination_set, destinations, stack_variables};
use super::stack::{address, forget, Request};
use crate::cli::ErasureArgs;
use crate::leads::LeadsTable;
use crate::stack::{output, Stack};
use crate::table::ReceiptsTable;

/// Where the command runs: the stack (if named), its table, its sender.
pub(in crate::commands) struct Where<'a> {
    pub config: &'a SdkConfig,
    pub stack: Option<&'a Stack>,
    pub table: &'a ReceiptsTable,
    pub dynamodb: &'a aws_sdk_dynamodb::Client,
    pub sender: Sender,
    pub now: SystemTime,
}

/// `forget`'s arguments, as given.
pub(in crate::commands) struct ForgetArgs {
    pub email: Option<String>,
    pub dry_run: bool,
    pub yes: bool,
    pub leads_table: Option<String>,
    pub max_scan_mb: usize,
    pub erasure: ErasureArgs,
}

pub(in crate::commands) async fn command(
    at: Where<'_>,
    args: ForgetArgs,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let ForgetArgs {
        email,
        dry_run,
        yes,
        leads_table,
        max_scan_mb,
        erasure,
    } = args;
    if erasure.json && erasure.record.is_none() {
        return Err(Failed::Usage(
            "forget --json prints a record: give --record ID".to_owned(),
        ));
    }
    if let Some(raw) = &erasure.record {
        let asked = asked_id(raw)?;
        let what = Asked::Record { json: erasure.json };
        return show(at.table, &asked, what, out).await;
    }
    if erasure.status {
        let asked = match (&erasure.id, &email) {
            (Some(raw), _) => asked_id(raw)?,
            (None, Some(raw)) => {
                let Gates::Keyed(secret) = gate_lookup(at.config, at.stack).await? else {
                    return Err(Failed::Usage(
                        "forget --status --email needs the stack's gate key (give --stack, \
                         or set GATE_KEY_SECRET_ARN or GATE_KEY), or give --id"
                            .to_owned(),
                    ));
                };
                shared::erasure::plan::AskedId {
                    erasure: shared::erasure::plan::erasure_id(&secret, &address(raw)?),
                    round: None,
                }
            }
            (None, None) => {
                return Err(Failed::Usage("give --email or --id".to_owned()));
            }
        };
        return show(at.table, &asked, Asked::Status, out).await;
    }
    let Some(email) = email else {
        return Err(Failed::Usage("give --email ADDRESS".to_owned()));
    };
    let leads_table = match (leads_table, at.stack) {
        (Some(name), _) => Some(name),
        (None, Some(stack)) => stack.output(output::LEADS_TABLE).ok().map(str::to_owned),
        (None, None) => std::env::var("LEADS_TABLE")
            .ok()
            .filter(|name| !name.trim().is_empty()),
    };
    let leads = leads_table.map(|name| LeadsTable::new(at.dynamodb.clone(), name));
    let retention = retention_of(at.stack);
    let request = Request {
        email: address(&email)?,
        dry_run,
        ask: !yes && std::io::stdin().is_terminal(),
        max_scan_mb,
        retention,
        gates: gate_lookup(at.config, at.stack).await?,
        sender: at.sender,
    };
    if !erasure.everywhere {
        return forget(at.table, leads.as_ref(), &request, out).await;
    }
    let Gates::Keyed(secret) = &request.gates else {
        return Err(Failed::Usage(
            "forget --everywhere keeps its progress under a pseudonym made with the \
             stack's gate key: give --stack, or set GATE_KEY_SECRET_ARN or GATE_KEY"
                .to_owned(),
        ));
    };
    let set = destination_set(at.stack)?;
    let variables = at.stack.map(|stack| stack_variables(stack, &set));
    let destinations = destinations(at.config, at.table, &set, variables).await?;
    let sender = sender_side(
        at.config,
        at.stack,
        at.table,
        at.sender,
        (erasure.since.clone(), erasure.forms.clone()),
        retention,
        at.now,
    )
    .await?;
    let plan = Everywhere {
        secret: secret.clone(),
        destinations,
        sender,
    };
    everywhere(at.table, leads.as_ref(), &request, plan, out).await
}
