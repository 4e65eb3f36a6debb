//! `receipts audit` and `import`: the sender's own list of a window's
//! completed submissions beside the receipts, by the key each webhook
//! would have had. What is listed there and not stored here never reached
//! the stack (the sender gave up, the stack was down or refused it);
//! `import` stores those under that key, so importing twice, or beside a
//! late webhook, still stores one receipt. Ids only are printed: never
//! form data, never the token.

use std::io::Write;
use std::time::SystemTime;

use aws_config::SdkConfig;
use sender_audit::audit::{Imported, Scope};
use sender_audit::sender_api::SenderApiClient;
use shared::audit::Audit;
use shared::config::RECEIPT_RETENTION_DAYS;
use shared::newest::GateSecret;
use shared::receipt::format_timestamp;
use shared::sender::listing::{is_form_id, SENDER_API_BASE_URL};
use shared::{Retention, Sender};

use super::gates::Gates;
use super::{secret_text, Failed};
use crate::cli::{instant, AuditArgs};
use crate::stack::{output, parameter, Stack};
use crate::table::ReceiptsTable;

/// `SENDER_API_TOKEN`: the sender's API token, when no secret names it.
pub const SENDER_API_TOKEN: &str = "SENDER_API_TOKEN";

/// What to do with what is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Report,
    Import { dry_run: bool },
}

/// The scope and the API client, from the arguments, the stack and the
/// environment.
pub async fn prepare(
    config: &SdkConfig,
    stack: Option<&Stack>,
    table: &ReceiptsTable,
    args: &AuditArgs,
    now: SystemTime,
) -> Result<(Scope, SenderApiClient), Failed> {
    let env = |name| {
        std::env::var(name)
            .ok()
            .filter(|v: &String| !v.trim().is_empty())
    };
    let named = match (&args.sender, stack) {
        (Some(name), _) => Some(name.clone()),
        (None, Some(stack)) => Some(stack.parameter(parameter::SENDER).to_owned()),
        (None, None) => env("SENDER"),
    };
    let sender = named.as_deref().and_then(Sender::parse).ok_or_else(|| {
        Failed::Usage(format!(
            "give --sender {} (or SENDER, or --stack)",
            Sender::names()
        ))
    })?;
    let Some(api) = sender.api() else {
        return Err(Failed::Usage(format!(
            "{} keeps no list of submissions that can be read, so there is nothing to audit against",
            sender.profile().title
        )));
    };
    let since = instant(&args.since, now).map_err(|error| Failed::Usage(error.to_string()))?;
    let until = match &args.until {
        Some(raw) => instant(raw, now).map_err(|error| Failed::Usage(error.to_string()))?,
        None => now,
    };
    if since >= until {
        return Err(Failed::Usage("--since must be before --until".to_owned()));
    }
    let forms = forms(table, &args.forms).await?;
    let secret_arn = match (&args.api_token_secret_arn, stack) {
        (Some(arn), _) => Some(arn.clone()),
        (None, Some(stack)) => stack
            .output(output::SENDER_API_TOKEN_SECRET_ARN)
            .ok()
            .map(str::to_owned),
        (None, None) => None,
    };
    let token = match secret_arn {
        Some(arn) => secret_text(config, &arn, "the sender's API token secret").await?,
        None => env(SENDER_API_TOKEN).ok_or_else(|| {
            Failed::Usage(format!(
                "no API token: give --api-token-secret-arn ARN (a secret holding {}), or set {SENDER_API_TOKEN}",
                api.token_help
            ))
        })?,
    };
    let base_url = env(SENDER_API_BASE_URL);
    if let Some(url) = &base_url {
        shared::endpoint::check_base_url(url, false)
            .map_err(|problem| Failed::Usage(format!("{SENDER_API_BASE_URL} {problem}")))?;
    }
    let retention = retention(stack, args.retention_days, env(RECEIPT_RETENTION_DAYS))?;
    let client = SenderApiClient::new(sender, api, base_url, token.trim().to_owned());
    let scope = Scope::new(sender, forms, since, until, now, retention);
    Ok((scope, client))
}

/// The sender's part, as this run can do it.
pub enum SenderSide {
    /// Its API deletes: the person's submissions are listed in the window
    /// of these forms, then deleted.
    Api {
        client: Box<SenderApiClient>,
        forms: Vec<String>,
        since: SystemTime,
        until: SystemTime,
    },
    /// Its API deletes none: what the operator must do there.
    ByHand(&'static str),
    /// Its API deletes, but this run cannot reach it: what to give.
    NotReady(String),
}

/// The sender's side of `forget --everywhere`: its API client and window
/// when it deletes, what to do by hand when it cannot, or why this run
/// cannot reach it.
pub async fn sender_side(
    config: &SdkConfig,
    stack: Option<&Stack>,
    table: &ReceiptsTable,
    sender: Sender,
    window: (Option<String>, Vec<String>),
    retention: shared::Retention,
    now: SystemTime,
) -> Result<SenderSide, Failed> {
    let deletes = sender.api().is_some_and(|api| api.delete.is_some());
    if !deletes {
        return Ok(SenderSide::ByHand(sender.profile().erasure));
    }
    let days = u32::try_from(retention.as_duration().as_secs() / 86_400).unwrap_or(u32::MAX);
    let (since, forms) = window;
    let args = AuditArgs {
        since: since.unwrap_or_else(|| format!("{days}d")),
        until: None,
        forms,
        sender: Some(sender.name().to_owned()),
        api_token_secret_arn: None,
        retention_days: Some(days),
    };
    match prepare(config, stack, table, &args, now).await {
        Ok((scope, client)) => Ok(SenderSide::Api {
            client: Box::new(client),
            forms: scope.forms,
            since: scope.since,
            until: scope.until,
        }),
        // What the operator must give; the step waits for it.
        Err(Failed::Usage(why)) => Ok(SenderSide::NotReady(why)),
        Err(other) => Err(other),
    }
}

/// How long the receipts are kept: the stack's `ReceiptRetentionDays`,
/// else `--retention-days`, else `RECEIPT_RETENTION_DAYS`. Never assumed:
/// a guess longer than the stack's would import what it removed on purpose.
fn retention(
    stack: Option<&Stack>,
    flag: Option<u32>,
    variable: Option<String>,
) -> Result<Retention, Failed> {
    let (days, from) = match (stack, flag, variable) {
        (Some(stack), _, _) => (
            stack.parameter(parameter::RECEIPT_RETENTION_DAYS).parse().ok(),
            "the stack's ReceiptRetentionDays",
        ),
        (None, Some(days), _) => (Some(days), "--retention-days"),
        (None, None, Some(raw)) => (raw.trim().parse().ok(), RECEIPT_RETENTION_DAYS),
        (None, None, None) => {
            return Err(Failed::Usage(format!(
                "give --retention-days N (the stack's ReceiptRetentionDays; or set {RECEIPT_RETENTION_DAYS}): only submissions the receipts still remember can be missing"
            )))
        }
    };
    days.and_then(Retention::days).ok_or_else(|| {
        Failed::Usage(format!(
            "{from} must be whole days from 1 to {}",
            Retention::MAX_DAYS
        ))
    })
}

/// The key erasure markers are found by: the stack's gate key. Without
/// it, an import could bring back a person `forget` erased, so only a
/// report goes on without it (and says so); a stack that keeps no key
/// keeps no marker either.
pub fn erasure_key(gates: Gates, action: Action) -> Result<Option<GateSecret>, Failed> {
    match (gates, action) {
        (Gates::Keyed(secret), _) => Ok(Some(secret)),
        (Gates::NotKept, _) => Ok(None),
        (Gates::KeyUnknown, Action::Report) => {
            eprintln!("receipts: no gate key (GATE_KEY): people `forget` erased are not recognised in this report");
            Ok(None)
        }
        (Gates::KeyUnknown, Action::Import { .. }) => Err(Failed::Usage(
            "give the stack's gate key (--stack, GATE_KEY_SECRET_ARN or GATE_KEY): without it an import could bring back a person `forget` erased".to_owned(),
        )),
    }
}

/// The forms named, else every form of the stored routes.
async fn forms(table: &ReceiptsTable, named: &[String]) -> Result<Vec<String>, Failed> {
    let forms: Vec<String> = if named.is_empty() {
        let stored = table.routes().await.map_err(super::run_error)?;
        stored
            .map(|stored| stored.routes.routes.into_iter().map(|r| r.form).collect())
            .unwrap_or_default()
    } else {
        named.to_vec()
    };
    if forms.is_empty() {
        return Err(Failed::Usage(
            "name each form with --form ID (its id at the sender, as in its URL); no routes are stored to take them from".to_owned(),
        ));
    }
    if let Some(bad) = forms.iter().find(|form| !is_form_id(form)) {
        return Err(Failed::Usage(format!(
            "{bad:?} is not a form id: letters, digits, - and _ only"
        )));
    }
    Ok(forms)
}

pub async fn audit(
    table: &ReceiptsTable,
    api: &mut SenderApiClient,
    scope: &Scope,
    action: Action,
    now: SystemTime,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let sender = scope.sender.name();
    let audit = sender_audit::audit::audit(
        api,
        table.client(),
        table.name(),
        scope,
        |form, pages, so_far| {
            eprintln!(
                "receipts: {sender} form {form}: page {pages} read, {so_far} submissions so far"
            );
        },
    )
    .await
    .map_err(super::run_error)?;
    report(scope, &audit, out)?;
    if !audit.unreadable.is_empty() {
        return Err(Failed::Run(format!(
            "{} listed submissions could not be read as {sender} webhooks (above)",
            audit.unreadable.len()
        )));
    }
    let missing = &audit.missing;
    match action {
        Action::Report if missing.is_empty() => Ok(()),
        Action::Report => Err(Failed::Missing(format!(
            "{} submissions at {sender} never reached this stack; `receipts import` with the same --since, --until and --form stores them",
            missing.len()
        ))),
        Action::Import { dry_run: true } => {
            let said = format!("would import {} (dry run: nothing stored)", missing.len());
            writeln!(out, "{said}").map_err(super::run_error)
        }
        Action::Import { dry_run: false } => {
            let total = missing.len();
            // Held to the spam rules in force, as a webhook is: no import
            // by a guess while they cannot be read.
            let routes = table
                .routes()
                .await
                .map_err(super::run_error)?
                .map(|stored| stored.routes)
                .unwrap_or_default();
            let imported = sender_audit::audit::import(
                table.client(),
                table.name(),
                missing,
                now,
                &routes,
                scope.retention,
                |done| {
                if done % 100 == 0 {
                    eprintln!("receipts: import: {done} of {total} done");
                }
            },
            )
            .await
            .map_err(super::run_error)?;
            report_import(&imported, out)
        }
    }
}

fn report_import(imported: &Imported, out: &mut impl Write) -> Result<(), Failed> {
    let mut text = format!(
        "imported {}; {} arrived meanwhile and were left as they were\n",
        imported.stored, imported.already_there
    );
    if imported.held_back > 0 {
        text.push_str(&format!(
            "{} of those break a spam rule and were held back (QUARANTINED), as their webhooks would have been; `receipts release` delivers one\n",
            imported.held_back
        ));
    }
    for skipped in &imported.unimportable {
        text.push_str(&format!(
            "unimportable: {} {:?}: {}\n",
            skipped.form, skipped.submission_id, skipped.why
        ));
    }
    out.write_all(text.as_bytes()).map_err(super::run_error)?;
    if imported.unimportable.is_empty() {
        Ok(())
    } else {
        Err(Failed::Run(format!(
            "{} listed submissions cannot be stored (above); the others were imported",
            imported.unimportable.len()
        )))
    }
}

fn report(scope: &Scope, audit: &Audit, out: &mut impl Write) -> Result<(), Failed> {
    let mut text = format!(
        "{} from {} to {}\n{:<10}  {:<24}  {:>9}  {:>8}  {:>9}  {:>7}  {:>7}\n",
        scope.sender.name(),
        format_timestamp(scope.since),
        format_timestamp(scope.until),
        "day",
        "form",
        "at sender",
        "received",
        "delivered",
        "missing",
        "expired"
    );
    for ((day, form), counts) in &audit.rows {
        text.push_str(&format!(
            "{day:<10}  {form:<24}  {:>9}  {:>8}  {:>9}  {:>7}  {:>7}\n",
            counts.at_sender, counts.received, counts.delivered, counts.missing, counts.expired
        ));
    }
    if audit.rows.is_empty() {
        text.push_str("(no completed submissions at the sender in this window)\n");
    }
    if audit.expired > 0 {
        text.push_str(&format!(
            "{} expired: submitted before {}, older than the receipts remember, so their receipts may have been removed on purpose (delivered, erased or held back as spam); never imported\n",
            audit.expired,
            format_timestamp(scope.horizon.oldest)
        ));
    }
    if audit.erased > 0 {
        text.push_str(&format!(
            "{} erased: made before `receipts forget` erased their person; never imported\n",
            audit.erased
        ));
    }
    if audit.partial > 0 {
        text.push_str(&format!(
            "{} started but never submitted (no lead; not counted)\n",
            audit.partial
        ));
    }
    if !audit.missing.is_empty() {
        text.push_str(&format!("missing ({}):\n", audit.missing.len()));
        for entry in &audit.missing {
            text.push_str(&format!(
                "  {}  {}  {}\n",
                entry.day,
                entry.form,
                entry.submission_id()
            ));
        }
    }
    for unreadable in &audit.unreadable {
        text.push_str(&format!(
            "unreadable: {} {:?}: {}\n",
            unreadable.form, unreadable.submission_id, unreadable.why
        ));
    }
    out.write_all(text.as_bytes()).map_err(super::run_error)
}
