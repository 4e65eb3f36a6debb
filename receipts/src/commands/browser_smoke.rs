//! The smoke test of a stack whose form a browser posts (`Sender=html`):
//! a real Turnstile token comes only from a browser showing the page, so
//! the test posts the snippet's fields from the stack's first allowed page
//! with the widget test keys' dummy token, and passes when the stack
//! refuses it for that token and that reason alone: it is up, takes that
//! page's posts, and asks Turnstile. A lead then needs the page itself.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use shared::sender::Sample;
use shared::Sender;

use super::{run_error, Failed};
use crate::stack::{output, Stack};

/// The stack's parameter naming its pages.
const ALLOWED_ORIGINS: &str = "AllowedOrigins";

pub(super) async fn smoke_test(
    stack: &Stack,
    sender: Sender,
    email: &str,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let url = stack.output(output::WEBHOOK_URL).map_err(run_error)?;
    let origin = stack
        .parameter(ALLOWED_ORIGINS)
        .split(',')
        .map(str::trim)
        .find(|origin| !origin.is_empty())
        .ok_or_else(|| Failed::Run("the stack names no AllowedOrigins".to_owned()))?
        .to_owned();
    let at = SystemTime::now();
    let id = format!(
        "smoke_{}",
        at.duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis()
    );
    let envelope = sender.sample(&Sample {
        id: &id,
        at,
        name: super::smoke::SMOKE_NAME,
        email,
        message: "Smoke test: refused for its test token, as it must be",
        form_key: None,
    });
    let (content_type, body) = sender.sent_request(&envelope);
    let _ = writeln!(
        out,
        "posting the form from {origin} to {url}, with a test token"
    );
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(run_error)?;
    let response = http
        .post(url)
        .header("origin", &origin)
        .header("content-type", content_type)
        .header("accept", "application/json")
        .body(body)
        .send()
        .await
        .map_err(|error| Failed::Run(format!("the webhook URL did not answer: {error}")))?;
    let status = response.status().as_u16();
    let answer = response.text().await.unwrap_or_default();
    let said = verdict(status, &answer).map_err(Failed::Run)?;
    let _ = writeln!(out, "{said}");
    Ok(())
}

/// What the stack's answer to a post with a test token says.
fn verdict(status: u16, answer: &str) -> Result<&'static str, String> {
    let error = serde_json::from_str::<serde_json::Value>(answer)
        .ok()
        .and_then(|answer| answer["error"].as_str().map(str::to_owned))
        .unwrap_or_default();
    match (status, error.as_str()) {
        (403, "bot_check_failed") => Ok(
            "the stack is up, takes this page's posts and asks Turnstile, which refused the test \
             token as it must: submit your page's form once, then `receipts list --since 10m`",
        ),
        (403, "origin_not_allowed") => Err(
            "the stack refused its own first AllowedOrigins: redeploy with the page's origin (https://host)"
                .to_owned(),
        ),
        (503, "bot_check_unavailable") => Err(
            "the stack could not ask Turnstile: check TurnstileSecretArn's secret and the function's log"
                .to_owned(),
        ),
        (200..=299, _) => Err(
            "the stack stored a post with a test token: its Turnstile secret is a test secret; put the widget's real secret key into it"
                .to_owned(),
        ),
        (status, error) => Err(format!(
            "the webhook answered {status} {error}: see the ingest function's log"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_refusal_for_the_token_passes() {
        let rows = [
            (
                403,
                r#"{"accepted":false,"error":"bot_check_failed"}"#,
                true,
                "asks Turnstile",
            ),
            (
                403,
                r#"{"accepted":false,"error":"origin_not_allowed"}"#,
                false,
                "AllowedOrigins",
            ),
            (
                503,
                r#"{"accepted":false,"error":"bot_check_unavailable"}"#,
                false,
                "TurnstileSecretArn",
            ),
            (
                202,
                r#"{"accepted":true,"duplicate":false}"#,
                false,
                "test secret",
            ),
            (500, "oops", false, "500"),
        ];
        for (status, answer, passes, said) in rows {
            let verdict = verdict(status, answer);
            assert_eq!(verdict.is_ok(), passes, "{status} {answer}");
            let text = verdict.map_or_else(|e| e, str::to_owned);
            assert!(text.contains(said), "{text}");
        }
    }
}
