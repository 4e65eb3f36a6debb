//! The bot check a browser-posted form must pass, behind a small port, and
//! its one adapter: Cloudflare Turnstile's `siteverify`
//! (<https://developers.cloudflare.com/turnstile/get-started/server-side-validation/>):
//! `POST` (JSON) with the widget's `secret`, the token as `response`, and an
//! `idempotency_key` (a UUID), so that our own retry of a verification
//! whose answer was lost gets the first answer again instead of
//! `timeout-or-duplicate`. A token is good once; its answer names why not
//! (`error-codes`), which is all the log and the visitor ever see of it.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::Value;

/// What is asked of a token.
#[derive(Debug, Clone, Copy)]
pub struct BotAsk<'a> {
    pub token: &'a str,
    /// The same for every verification of this token for this submission.
    pub idempotency_key: &'a str,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BotVerdict {
    Passed,
    /// Refused, and why: the check's own codes (`timeout-or-duplicate`,
    /// `invalid-input-response`...), never the token.
    Refused(String),
}

/// The check could not be asked (unreachable, or no answer it could read):
/// nothing is stored, and the visitor may send again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the bot check could not be asked ({0})")]
pub struct BotCheckUnavailable(pub &'static str);

pub trait BotCheck: Send + Sync {
    fn verify<'a>(
        &'a self,
        ask: BotAsk<'a>,
    ) -> Pin<Box<dyn Future<Output = Result<BotVerdict, BotCheckUnavailable>> + Send + 'a>>;
}

/// How long one verification may take: two of them and the store's own
/// 5 s cap fit in the function's 10 s.
const CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// Attempts per verification: a lost answer is asked again, with the same
/// idempotency key.
const ATTEMPTS: usize = 2;

pub struct Turnstile {
    client: reqwest::Client,
    url: String,
    secret: String,
}

impl Turnstile {
    pub fn new(url: &str, secret: &str) -> Result<Self, reqwest::Error> {
        Ok(Turnstile {
            client: reqwest::Client::builder()
                .timeout(CALL_TIMEOUT)
                .redirect(reqwest::redirect::Policy::none())
                .build()?,
            url: url.to_owned(),
            secret: secret.to_owned(),
        })
    }

    async fn ask_once(&self, ask: BotAsk<'_>) -> Result<BotVerdict, BotCheckUnavailable> {
        // siteverify takes its fields as a form or as JSON.
        let fields = serde_json::json!({
            "secret": self.secret,
            "response": ask.token,
            "idempotency_key": ask.idempotency_key,
        });
        let response = self
            .client
            .post(&self.url)
            .json(&fields)
            .send()
            .await
            .map_err(|error| {
                BotCheckUnavailable(if error.is_timeout() {
                    "timed out"
                } else {
                    "unreachable"
                })
            })?;
        if !response.status().is_success() {
            return Err(BotCheckUnavailable("answered with an error status"));
        }
        let answer: Value = response
            .json()
            .await
            .map_err(|_| BotCheckUnavailable("answered no JSON"))?;
        Ok(verdict_of(&answer))
    }
}

impl BotCheck for Turnstile {
    fn verify<'a>(
        &'a self,
        ask: BotAsk<'a>,
    ) -> Pin<Box<dyn Future<Output = Result<BotVerdict, BotCheckUnavailable>> + Send + 'a>> {
        Box::pin(async move {
            let mut last = BotCheckUnavailable("not asked");
            for _ in 0..ATTEMPTS {
                match self.ask_once(ask).await {
                    Ok(verdict) => return Ok(verdict),
                    Err(unavailable) => last = unavailable,
                }
            }
            Err(last)
        })
    }
}

/// A siteverify answer's meaning: `success`, else its `error-codes` (each
/// a lower-case token; anything else is left out).
pub fn verdict_of(answer: &Value) -> BotVerdict {
    if answer.get("success").and_then(Value::as_bool) == Some(true) {
        return BotVerdict::Passed;
    }
    let codes: Vec<&str> = answer
        .get("error-codes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|code| {
            (1..=40).contains(&code.len())
                && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
        })
        .collect();
    BotVerdict::Refused(if codes.is_empty() {
        "refused".to_owned()
    } else {
        codes.join(",")
    })
}

/// The idempotency key of verifying `token` for `submission_id`: a UUID
/// (version 4 form) from their SHA-256, so each retry of this
/// submission's verification gets the first answer, and the same token
/// posted for another submission is a second use, refused.
pub fn idempotency_key(token: &str, submission_id: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("turnstile\n{token}\n{submission_id}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answer_means_passed_or_refused_with_its_codes_only() {
        let rows = [
            (
                json!({"success": true, "error-codes": []}),
                BotVerdict::Passed,
            ),
            (
                json!({"success": false, "error-codes": ["timeout-or-duplicate"]}),
                BotVerdict::Refused("timeout-or-duplicate".into()),
            ),
            (
                json!({"success": false, "error-codes": ["invalid-input-response", "Token: 0.abc"]}),
                BotVerdict::Refused("invalid-input-response".into()),
            ),
            (
                json!({"success": "true"}),
                BotVerdict::Refused("refused".into()),
            ),
            (json!({}), BotVerdict::Refused("refused".into())),
        ];
        for (answer, expected) in rows {
            assert_eq!(verdict_of(&answer), expected, "{answer}");
        }
    }

    #[test]
    fn the_key_is_a_uuid_of_the_token_and_the_submission() {
        let key = idempotency_key("0.token", "a1b2");
        assert_eq!(key.len(), 36);
        assert_eq!(&key[14..15], "4", "version 4 form: {key}");
        assert!(matches!(&key[19..20], "8" | "9" | "a" | "b"), "{key}");
        assert_eq!(key, idempotency_key("0.token", "a1b2"), "stable");
        assert_ne!(key, idempotency_key("0.token", "a1b3"), "per submission");
        assert_ne!(key, idempotency_key("0.other", "a1b2"), "per token");
    }
}
