//! `receipts smoke`: one marked submission through the stack's own front
//! door, as the stack's sender writes and signs one, followed to its
//! receipt's end.

use std::io::Write;
use std::time::{Instant, SystemTime};

use aws_config::SdkConfig;
use shared::Sender;

use super::{run_error, secret_text, Failed};
use crate::smoke::{self, Progress, SenderAuth};
use crate::stack::{output, parameter, Stack};
use crate::table::{Reading, ReceiptsTable};

/// One marked submission through the stack's own front door, then its
/// receipt followed until it settles or `timeout` passes. Never prints the
/// secret.
pub(super) async fn smoke_test(
    config: &SdkConfig,
    stack: &Stack,
    table: &ReceiptsTable,
    timeout: std::time::Duration,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let url = stack.output(output::WEBHOOK_URL).map_err(run_error)?;
    let sender = match stack.parameter(parameter::SENDER) {
        "" => Sender::StaticForms,
        name => Sender::parse(name).ok_or_else(|| {
            Failed::Run(format!(
                "the stack's Sender {name:?} is not one smoke knows"
            ))
        })?,
    };
    // Empty: the template's default, the sender's own signature (bearer
    // for Static Forms, which signs nothing).
    let auth = match (stack.parameter(parameter::WEBHOOK_AUTH), sender) {
        ("", Sender::StaticForms) => SenderAuth::Bearer,
        ("", _) => SenderAuth::VendorSignature,
        (mode, _) => SenderAuth::parse(mode).map_err(run_error)?,
    };
    let secret = match auth {
        SenderAuth::None => String::new(),
        _ => {
            let arn = stack
                .output(output::WEBHOOK_SECRET_ARN)
                .map_err(run_error)?;
            secret_text(config, arn, "the webhook secret").await?
        }
    };
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
        .map_err(|error| Failed::Run(format!("the webhook URL did not answer: {error}")))?;
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
