//! `receipts smoke`: one marked submission through the stack's own front
//! door, as the stack's sender writes and signs one, followed to its
//! receipt's end.

use std::io::Write;
use std::time::{Instant, SystemTime};

use aws_config::SdkConfig;
use shared::Sender;

use super::{run_error, secret_text, Failed};
use crate::leads::{LeadRow, LeadsTable};
use crate::smoke::{self, Progress, SenderAuth};
use crate::stack::{output, parameter, Stack};
use crate::table::{Reading, ReceiptsTable};

/// The smoke lead out of the destination: deleted from the stack's own
/// leads table, or named for a CRM (this tool never holds its secret).
async fn clean_up(
    config: &SdkConfig,
    stack: &Stack,
    submission_id: &str,
    keep: bool,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let plan = crate::destinations::smoke_cleanup(
        stack.parameter(parameter::DESTINATION),
        stack.parameter(parameter::LEAD_KEY),
        submission_id,
    );
    match plan {
        crate::destinations::Cleanup::DeleteRow { pk } if !keep => {
            let table = stack.output(output::LEADS_TABLE).map_err(run_error)?;
            let leads = LeadsTable::new(aws_sdk_dynamodb::Client::new(config), table);
            let row = LeadRow {
                pk,
                email: smoke::SMOKE_EMAIL.to_owned(),
            };
            let deleted = leads.delete(&row).await.map_err(run_error)?;
            let _ = writeln!(
                out,
                "{} the smoke lead in {table} ({})",
                if deleted { "deleted" } else { "found no" },
                row.pk
            );
        }
        crate::destinations::Cleanup::DeleteRow { pk } => {
            let _ = writeln!(out, "kept the smoke lead ({pk}), as --keep asks");
        }
        crate::destinations::Cleanup::Tell(what) => {
            let _ = writeln!(out, "then {what}");
        }
    }
    Ok(())
}

/// The stack's sender and how it proves itself, from its parameters.
fn sender_and_auth(stack: &Stack) -> Result<(Sender, SenderAuth), Failed> {
    let sender = match stack.parameter(parameter::SENDER) {
        "" => Sender::StaticForms,
        name => Sender::parse(name).ok_or_else(|| {
            Failed::Run(format!(
                "the stack's Sender {name:?} is not one smoke knows"
            ))
        })?,
    };
    // Empty: the template's default, the sender's own signature (a token
    // in the URL for Static Forms, which signs nothing and sends no header).
    let auth = match (stack.parameter(parameter::WEBHOOK_AUTH), sender) {
        ("", Sender::StaticForms) => SenderAuth::Query("token".to_owned()),
        ("", _) => SenderAuth::OwnSignature,
        (mode, _) => SenderAuth::parse(mode).map_err(run_error)?,
    };
    Ok((sender, auth))
}

/// The stack's webhook secret (empty where the mode has none).
async fn webhook_secret(
    config: &SdkConfig,
    stack: &Stack,
    auth: &SenderAuth,
) -> Result<String, Failed> {
    match auth {
        SenderAuth::None => Ok(String::new()),
        _ => {
            let arn = stack
                .output(output::WEBHOOK_SECRET_ARN)
                .map_err(run_error)?;
            secret_text(config, arn, "the webhook secret").await
        }
    }
}

/// `receipts webhook-url`: what to paste into the sender. The secret is
/// read and printed only with `--show-secret` and to a terminal.
pub(super) async fn webhook_url(
    config: &SdkConfig,
    stack: &Stack,
    show_secret: bool,
    to_terminal: bool,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let url = stack.output(output::WEBHOOK_URL).map_err(run_error)?;
    let (sender, auth) = sender_and_auth(stack)?;
    let secret = if show_secret && to_terminal {
        Some(webhook_secret(config, stack, &auth).await?)
    } else {
        None
    };
    let secret = secret.as_deref().and_then(smoke::first_secret);
    let _ = write!(
        out,
        "{}",
        smoke::paste_instructions(url, sender, &auth, secret)
    );
    if show_secret && !to_terminal {
        return Err(Failed::Usage(
            "--show-secret prints the secret only to a terminal (not to a pipe or a file)"
                .to_owned(),
        ));
    }
    Ok(())
}

/// One marked submission through the stack's own front door, then its
/// receipt followed until it settles or `timeout` passes. Never prints the
/// secret.
pub(super) async fn smoke_test(
    config: &SdkConfig,
    stack: &Stack,
    table: &ReceiptsTable,
    timeout: std::time::Duration,
    keep: bool,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let url = stack.output(output::WEBHOOK_URL).map_err(run_error)?;
    let (sender, auth) = sender_and_auth(stack)?;
    let secret = webhook_secret(config, stack, &auth).await?;
    let request = smoke::request(
        url,
        sender,
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
        // Without its URL: in query mode the URL holds the secret.
        .map_err(|error| {
            Failed::Run(format!(
                "the webhook URL did not answer: {}",
                error.without_url()
            ))
        })?;
    let status = response.status().as_u16();
    let answer = response.text().await.unwrap_or_default();
    let _ = writeln!(out, "webhook answered {status} {answer}");
    if !(200..300).contains(&status) {
        return Err(Failed::Run(format!(
            "the webhook refused the test submission ({status}): see the ingest function's log"
        )));
    }

    let key = request.key.clone();
    let started = Instant::now();
    let mut said = String::new();
    loop {
        let receipt = table
            .get(&key, Reading::WithoutPersonalData)
            .await
            .map_err(run_error)?;
        match smoke::progress(receipt.as_ref()) {
            Progress::Completed => {
                let _ = writeln!(
                    out,
                    "COMPLETED after {:.1} s: the lead is in the destination",
                    started.elapsed().as_secs_f64()
                );
                return clean_up(config, stack, &request.submission_id, keep, out).await;
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
            Progress::CredentialsRefused => {
                return Err(Failed::Run(format!(
                    "the destination refused the stack's CRM credentials (destination-auth): put \
                     the right value into the destination's secret; the worker reads it again \
                     within a minute (receipts show {})",
                    request.submission_id
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
