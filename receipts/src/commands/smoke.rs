//! `receipts smoke`: one clearly marked test submission, sent the way the
//! stack's sender sends it (its body and signature from the sender's own
//! module in `shared::sender`, its `WebhookAuth` mode, its own secret, and
//! no header the sender does not send: a stack that would refuse the real
//! sender refuses the smoke test too), then its receipt followed until it
//! is COMPLETED, and the smoke lead cleaned up. The request and the reading
//! of a receipt are pure and table-tested here; `smoke_test` does the I/O.

use std::io::Write;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_config::SdkConfig;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use shared::sender::Sample;
use shared::{Receipt, ReceiptStatus, Sender};

use super::{run_error, secret_text, Failed};
use crate::leads::{LeadRow, LeadsTable};
use crate::stack::{output, parameter, Stack};
use crate::table::{Reading, ReceiptsTable};

/// What every smoke submission carries, so nobody takes it for a lead.
pub const SMOKE_NAME: &str = "Smoke Test";
pub const SMOKE_EMAIL: &str = "smoke-test@example.com";
pub const SMOKE_MESSAGE: &str =
    "A test submission sent by `receipts smoke` to check the pipeline. Safe to delete.";

/// How the stack's sender proves itself (the template's `WebhookAuth`),
/// from the sending side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SenderAuth {
    Bearer,
    Basic,
    Query(String),
    Header(String),
    StandardWebhooks,
    /// The sender's own signature (`Sender::signature`).
    OwnSignature,
    None,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SmokeError {
    #[error("the stack's WebhookAuth {0:?} is not one smoke knows (bearer, basic, query:<param>, header:<name>, standard-webhooks, {modes}, none)", modes = Sender::signature_modes().join(", "))]
    UnknownAuth(String),
    #[error("the stack's WebhookAuth {0} is another sender's signature than its own")]
    OtherSendersSignature(&'static str),
    #[error("the smoke delivery is not one the sender's own parser reads: {0}")]
    UnreadableSample(shared::envelope::EnvelopeError),
    #[error("the webhook secret is empty")]
    EmptySecret,
    #[error("the webhook secret is not whsec_<base64>, as standard-webhooks needs")]
    BadSigningSecret,
}

impl SenderAuth {
    pub fn parse(mode: &str) -> Result<Self, SmokeError> {
        let mode = mode.trim();
        let named = |prefix: &str| {
            mode.strip_prefix(prefix)
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_owned)
        };
        match mode.to_ascii_lowercase().as_str() {
            "bearer" => Ok(SenderAuth::Bearer),
            "basic" => Ok(SenderAuth::Basic),
            "standard-webhooks" => Ok(SenderAuth::StandardWebhooks),
            "none" => Ok(SenderAuth::None),
            own if Sender::of_signature_mode(own).is_some() => Ok(SenderAuth::OwnSignature),
            _ => named("query:")
                .map(SenderAuth::Query)
                .or_else(|| named("header:").map(SenderAuth::Header))
                .ok_or_else(|| SmokeError::UnknownAuth(mode.to_owned())),
        }
    }
}

/// The test submission: its id, and the request that carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmokeRequest {
    pub submission_id: String,
    /// The receipt key it is stored under, to follow.
    pub key: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// The first secret of a secret's text (several, comma-separated, while
/// one rotates: the first is the one the sender has).
pub fn first_secret(text: &str) -> Option<&str> {
    text.split(',').map(str::trim).find(|s| !s.is_empty())
}

/// Builds the delivery, as `sender` sends one: its envelope with a `smoke_`
/// id, the form's API key when a Static Forms stack accepts only listed
/// forms, and the credential where `auth` puts it. No `Idempotency-Key`:
/// no sender sends one, so a stack that requires it fails the smoke test
/// as it would fail every real delivery. Its lead's address is `email`
/// (`SMOKE_EMAIL` unless `smoke --email` gives another).
pub fn request_as(
    url: &str,
    sender: Sender,
    auth: &SenderAuth,
    secret: &str,
    accepted_forms: &str,
    now: SystemTime,
    email: &str,
) -> Result<SmokeRequest, SmokeError> {
    let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let chosen_id = format!("smoke_{}", since_epoch.as_millis());
    // Its own message each time: two smokes a minute apart are two leads,
    // not a double submit (`duplicate_window`).
    let message = format!("{SMOKE_MESSAGE} ({chosen_id})");
    let envelope = sender.sample(&Sample {
        id: &chosen_id,
        at: now,
        name: SMOKE_NAME,
        email,
        message: &message,
        form_key: first_secret(accepted_forms),
    });
    // The key the stack stores it under, read as ingest reads it (a sender
    // may derive its id from the body, as Formspree's is).
    let submission = sender
        .parse_submission(envelope.to_string().as_bytes())
        .map_err(SmokeError::UnreadableSample)?;
    let submission_id = submission.submission_id.as_str().to_owned();
    let key = shared::IdempotencyKey::for_submission(sender, &submission.submission_id)
        .as_str()
        .to_owned();
    let (content_type, body) = sender.sent_request(&envelope);
    let mut headers = vec![("content-type".to_owned(), content_type.to_owned())];
    headers.extend(
        sender
            .sample_headers(&submission_id)
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value)),
    );
    let mut url = url.to_owned();
    let secret = match auth {
        SenderAuth::None => "",
        _ => first_secret(secret).ok_or(SmokeError::EmptySecret)?,
    };
    match auth {
        SenderAuth::Bearer => headers.push(("authorization".into(), format!("Bearer {secret}"))),
        SenderAuth::Basic => headers.push((
            "authorization".into(),
            format!("Basic {}", BASE64.encode(secret)),
        )),
        SenderAuth::Header(name) => headers.push((name.to_ascii_lowercase(), secret.to_owned())),
        SenderAuth::Query(param) => {
            let separator = if url.contains('?') { '&' } else { '?' };
            url = format!("{url}{separator}{param}={}", query_escape(secret));
        }
        SenderAuth::StandardWebhooks => {
            let key = secret
                .strip_prefix("whsec_")
                .and_then(|key| BASE64.decode(key).ok())
                .ok_or(SmokeError::BadSigningSecret)?;
            let id = format!("msg_{submission_id}");
            let timestamp = since_epoch.as_secs().to_string();
            let mut mac =
                Hmac::<Sha256>::new_from_slice(&key).map_err(|_| SmokeError::BadSigningSecret)?;
            mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
            let signature = BASE64.encode(mac.finalize().into_bytes());
            headers.push(("webhook-id".into(), id));
            headers.push(("webhook-timestamp".into(), timestamp));
            headers.push(("webhook-signature".into(), format!("v1,{signature}")));
        }
        SenderAuth::OwnSignature => {
            let own = sender
                .signature()
                .ok_or(SmokeError::OtherSendersSignature("a signature"))?;
            let sent: Vec<(&str, &str)> = headers
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str()))
                .collect();
            let signed = own.sign(secret.as_bytes(), body.as_bytes(), now, &sent);
            headers.extend(
                signed
                    .into_iter()
                    .map(|(name, value)| (name.to_owned(), value)),
            );
        }
        SenderAuth::None => {}
    }
    Ok(SmokeRequest {
        submission_id,
        key,
        url,
        headers,
        body,
    })
}

/// Percent-encodes everything but unreserved characters.
pub(super) fn query_escape(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Where a followed receipt stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    Completed,
    Failed(String),
    /// Still RECEIVED: what it waits for, in words.
    Waiting(String),
    /// Still RECEIVED, because the CRM refused our credentials: no wait
    /// mends that, so smoke says so at once.
    CredentialsRefused,
    /// Not written (yet): a read right after the 202 can miss nothing,
    /// since it is consistent, so this means the table is not the stack's.
    Missing,
}

pub fn progress(receipt: Option<&Receipt>) -> Progress {
    let Some(receipt) = receipt else {
        return Progress::Missing;
    };
    let error = |code: &Option<String>, status: Option<u16>| match (code, status) {
        (Some(code), Some(status)) => format!("{code} (HTTP {status})"),
        (Some(code), None) => code.clone(),
        (None, Some(status)) => format!("HTTP {status}"),
        (None, None) => "no reason recorded".to_owned(),
    };
    match receipt.status {
        ReceiptStatus::Completed => Progress::Completed,
        ReceiptStatus::Failed => {
            Progress::Failed(error(&receipt.failure_reason, receipt.failure_http_status))
        }
        ReceiptStatus::Erased => {
            Progress::Failed("ERASED by receipts forget before it was delivered".to_owned())
        }
        ReceiptStatus::Refused => Progress::Failed(format!(
            "REFUSED by the destination ({}): it refuses the smoke address for good; \
             give smoke an address the destination accepts",
            receipt.refusal.as_deref().unwrap_or("no code recorded")
        )),
        ReceiptStatus::Duplicate => Progress::Failed(format!(
            "DUPLICATE of {}: the same smoke submission within the duplicate window; \
             run smoke again with another message",
            receipt.duplicate_of.as_deref().unwrap_or("another receipt")
        )),
        ReceiptStatus::Quarantined => Progress::Failed(format!(
            "QUARANTINED by the stack's spam rule {}: the stack's rules hold the smoke submission back",
            receipt.quarantine_rule.as_deref().unwrap_or("(unnamed)")
        )),
        ReceiptStatus::Received if receipt.last_error.as_deref() == Some("destination-auth") => {
            Progress::CredentialsRefused
        }
        ReceiptStatus::Received if receipt.attempts == 0 => {
            Progress::Waiting("RECEIVED, not attempted yet (the stream delivers it)".to_owned())
        }
        ReceiptStatus::Received => Progress::Waiting(format!(
            "RECEIVED after {} attempt(s); last error {}; next attempt {}",
            receipt.attempts,
            error(&receipt.last_error, receipt.last_http_status),
            receipt.next_attempt_at.as_deref().unwrap_or("-"),
        )),
    }
}

/// How long to wait between two reads of the receipt.
pub const POLL_EVERY: Duration = Duration::from_secs(2);

/// The smoke lead out of the destination: deleted from the stack's own
/// leads table, or named for a CRM (this tool never holds its secret).
async fn clean_up(
    config: &SdkConfig,
    stack: &Stack,
    submission_id: &str,
    email: &str,
    keep: bool,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let plans = crate::destinations::smoke_cleanup(
        stack.parameter(parameter::DESTINATION),
        stack.parameter(parameter::LEAD_KEY),
        submission_id,
        email,
    );
    for plan in plans {
        clean_up_one(config, stack, plan, email, keep, out).await?;
    }
    Ok(())
}

/// One destination's share of `clean_up`.
async fn clean_up_one(
    config: &SdkConfig,
    stack: &Stack,
    plan: shared::destination::Cleanup,
    email: &str,
    keep: bool,
    out: &mut impl Write,
) -> Result<(), Failed> {
    match plan {
        shared::destination::Cleanup::DeleteRow { pk } if !keep => {
            let table = stack.output(output::LEADS_TABLE).map_err(run_error)?;
            let leads = LeadsTable::new(aws_sdk_dynamodb::Client::new(config), table);
            let row = LeadRow {
                pk,
                email: email.to_owned(),
            };
            let deleted = leads.delete(&row).await.map_err(run_error)?;
            let _ = writeln!(
                out,
                "{} the smoke lead in {table} ({})",
                if deleted { "deleted" } else { "found no" },
                row.pk
            );
        }
        shared::destination::Cleanup::DeleteRow { pk } => {
            let _ = writeln!(out, "kept the smoke lead ({pk}), as --keep asks");
        }
        shared::destination::Cleanup::Tell(what) => {
            let _ = writeln!(out, "then {what}");
        }
    }
    Ok(())
}

/// The stack's sender and how it proves itself, from its parameters.
pub(super) fn sender_and_auth(stack: &Stack) -> Result<(Sender, SenderAuth), Failed> {
    let sender = match stack.parameter(parameter::SENDER) {
        "" => Sender::StaticForms,
        name => Sender::parse(name).ok_or_else(|| {
            Failed::Run(format!(
                "the stack's Sender {name:?} is not one smoke knows"
            ))
        })?,
    };
    // Empty: the template's default, the sender's own signature (a token
    // in the URL for a sender that signs nothing).
    let auth = match (stack.parameter(parameter::WEBHOOK_AUTH), sender) {
        // A form a browser posts carries no secret: its page and token
        // prove it.
        ("", sender) if sender.profile().browser => SenderAuth::None,
        ("", sender) if sender.signature().is_none() => SenderAuth::Query("token".to_owned()),
        ("", _) => SenderAuth::OwnSignature,
        (mode, _) => SenderAuth::parse(mode).map_err(run_error)?,
    };
    Ok((sender, auth))
}

/// The stack's webhook secret (empty where the mode has none).
pub(super) async fn webhook_secret(
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

/// One marked submission through the stack's own front door, then its
/// receipt followed until it settles or `timeout` passes. Never prints the
/// secret.
pub(super) async fn smoke_test(
    config: &SdkConfig,
    stack: &Stack,
    table: &ReceiptsTable,
    timeout: std::time::Duration,
    keep: bool,
    email: &str,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let url = stack.output(output::WEBHOOK_URL).map_err(run_error)?;
    let (sender, auth) = sender_and_auth(stack)?;
    let secret = webhook_secret(config, stack, &auth).await?;
    let request = request_as(
        url,
        sender,
        &auth,
        &secret,
        stack.parameter(parameter::ACCEPTED_FORMS),
        SystemTime::now(),
        email,
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
        match progress(receipt.as_ref()) {
            Progress::Completed => {
                // Where it went, as the receipt says (a worker older than
                // deliveredTo says nothing of it).
                let went = receipt
                    .as_ref()
                    .and_then(|r| {
                        let to = r.delivered_to.as_deref()?;
                        Some(crate::view::delivered_to(to, r.record_id.as_deref()))
                    })
                    .map_or("the lead is in the destination".to_owned(), |to| {
                        format!("delivered to {to}")
                    });
                let _ = writeln!(
                    out,
                    "COMPLETED after {:.1} s: {went}",
                    started.elapsed().as_secs_f64()
                );
                return clean_up(config, stack, &request.submission_id, email, keep, out).await;
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
        tokio::time::sleep(POLL_EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request with the smoke address.
    fn request(
        url: &str,
        sender: Sender,
        auth: &SenderAuth,
        secret: &str,
        accepted_forms: &str,
        now: SystemTime,
    ) -> Result<SmokeRequest, SmokeError> {
        request_as(url, sender, auth, secret, accepted_forms, now, SMOKE_EMAIL)
    }
    use shared::FormSubmission;

    fn at() -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(1_800_000_000_123)
    }

    fn header<'a>(request: &'a SmokeRequest, name: &str) -> Option<&'a str> {
        request
            .headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn auth_modes() {
        let rows = [
            ("bearer", Ok(SenderAuth::Bearer)),
            ("Basic", Ok(SenderAuth::Basic)),
            ("query:token", Ok(SenderAuth::Query("token".into()))),
            (
                "header:X-Webhook-Token",
                Ok(SenderAuth::Header("X-Webhook-Token".into())),
            ),
            ("standard-webhooks", Ok(SenderAuth::StandardWebhooks)),
            ("none", Ok(SenderAuth::None)),
            ("query:", Err(SmokeError::UnknownAuth("query:".into()))),
            ("hmac", Err(SmokeError::UnknownAuth("hmac".into()))),
        ];
        for (mode, expected) in rows {
            assert_eq!(SenderAuth::parse(mode), expected, "{mode}");
        }
    }

    #[test]
    fn the_request_is_marked_and_carries_the_credential_where_the_mode_puts_it() {
        let url = "https://abc.execute-api.eu-west-1.amazonaws.com/webhooks/staticforms";
        let bearer = request(
            url,
            Sender::StaticForms,
            &SenderAuth::Bearer,
            " new-secret , old ",
            "",
            at(),
        )
        .unwrap();
        assert_eq!(bearer.submission_id, "smoke_1800000000123");
        assert_eq!(bearer.url, url);
        assert_eq!(header(&bearer, "authorization"), Some("Bearer new-secret"));
        assert_eq!(
            bearer.key, "staticforms:form.submitted:smoke_1800000000123",
            "followed under the key derived from the body"
        );
        assert_eq!(
            header(&bearer, "idempotency-key"),
            None,
            "Static Forms sends none"
        );
        let submission = FormSubmission::parse(bearer.body.as_bytes()).expect("a valid envelope");
        assert_eq!(submission.submission_id.as_str(), "smoke_1800000000123");
        assert!(bearer.body.contains(SMOKE_EMAIL) && bearer.body.contains("receipts smoke"));
        assert!(!bearer.body.contains("apiKey"));

        let query = request(
            url,
            Sender::StaticForms,
            &SenderAuth::Query("token".into()),
            "a b&c",
            "",
            at(),
        )
        .unwrap();
        assert_eq!(query.url, format!("{url}?token=a%20b%26c"));
        assert_eq!(header(&query, "authorization"), None);

        let basic = request(
            url,
            Sender::StaticForms,
            &SenderAuth::Basic,
            "sf:pw",
            "",
            at(),
        )
        .unwrap();
        assert_eq!(header(&basic, "authorization"), Some("Basic c2Y6cHc="));

        let custom = request(
            url,
            Sender::StaticForms,
            &SenderAuth::Header("X-Token".into()),
            "s",
            "",
            at(),
        )
        .unwrap();
        assert_eq!(header(&custom, "x-token"), Some("s"));

        let with_form = request(
            url,
            Sender::StaticForms,
            &SenderAuth::None,
            "",
            "key_1, key_2",
            at(),
        )
        .unwrap();
        assert!(
            with_form.body.contains(r#""apiKey":"key_1""#),
            "{}",
            with_form.body
        );

        assert_eq!(
            request(
                url,
                Sender::StaticForms,
                &SenderAuth::Bearer,
                " , ",
                "",
                at()
            ),
            Err(SmokeError::EmptySecret)
        );
    }

    #[test]
    fn smoke_email_puts_the_lead_at_the_address_given() {
        let url = "https://abc.execute-api.eu-west-1.amazonaws.com/webhooks/staticforms";
        let mine = request_as(
            url,
            Sender::StaticForms,
            &SenderAuth::Bearer,
            "s",
            "",
            at(),
            "ops@acme.example",
        )
        .unwrap();
        assert!(mine.body.contains("ops@acme.example") && !mine.body.contains(SMOKE_EMAIL));
    }

    #[test]
    fn standard_webhooks_signs_id_timestamp_and_body() {
        // The signature is recomputed here from its definition; the signed
        // deliveries suite checks the ingest side against the reference
        // package.
        let secret = format!(
            "whsec_{}",
            BASE64.encode(b"0123456789abcdef0123456789abcdef")
        );
        let signed = request(
            "https://x/webhooks/staticforms",
            Sender::StaticForms,
            &SenderAuth::StandardWebhooks,
            &secret,
            "",
            at(),
        )
        .unwrap();
        let id = header(&signed, "webhook-id").unwrap();
        let timestamp = header(&signed, "webhook-timestamp").unwrap();
        assert_eq!(timestamp, "1800000000");
        let mut mac = Hmac::<Sha256>::new_from_slice(b"0123456789abcdef0123456789abcdef").unwrap();
        mac.update(format!("{id}.{timestamp}.{}", signed.body).as_bytes());
        let expected = format!("v1,{}", BASE64.encode(mac.finalize().into_bytes()));
        assert_eq!(
            header(&signed, "webhook-signature"),
            Some(expected.as_str())
        );
        assert_eq!(
            request(
                "https://x",
                Sender::StaticForms,
                &SenderAuth::StandardWebhooks,
                "not-whsec",
                "",
                at()
            ),
            Err(SmokeError::BadSigningSecret)
        );
    }

    /// A signing sender's smoke submission is that sender's delivery: it
    /// parses as one, under the key smoke follows, and carries the
    /// sender's signature (verified here with the scheme ingest uses, which
    /// `shared::sender` tests against the vendors' documented examples;
    /// form_senders checks the ingest side with an independent signer).
    #[test]
    fn a_signing_sender_gets_its_own_delivery_signed_its_way() {
        for sender in Sender::ALL {
            let Some(own) = sender.signature() else {
                continue;
            };
            assert_eq!(SenderAuth::parse(own.mode), Ok(SenderAuth::OwnSignature));
            let signed = request(
                "https://x",
                sender,
                &SenderAuth::OwnSignature,
                "s3cret-s3cret-s3cret",
                "",
                at(),
            )
            .unwrap();
            let submission = sender
                .parse_delivery(signed.body.as_bytes(), |name| header(&signed, name))
                .expect("the sender's envelope");
            // Its chosen id, except where the sender's id is derived from
            // the body (Formspree's form and date).
            if sender != Sender::Formspree {
                assert_eq!(submission.submission_id.as_str(), "smoke_1800000000123");
            }
            assert_eq!(submission.submission_id.as_str(), signed.submission_id);
            let receipt = Receipt::new(&submission, at());
            assert_eq!(receipt.pk, signed.key, "{sender:?}");
            let lead = shared::Lead::from_receipt(&receipt).unwrap();
            assert_eq!(
                (lead.email.as_str(), lead.name.as_str()),
                (SMOKE_EMAIL, SMOKE_NAME),
                "{sender:?}"
            );
            assert_eq!(header(&signed, "idempotency-key"), None);
            let lookup = |name: &'static str| {
                header(&signed, name).ok_or(shared::sender::SignatureError::MissingHeader(name))
            };
            let tolerance = own.tolerance().unwrap_or(Duration::ZERO);
            let keys = [b"s3cret-s3cret-s3cret".to_vec()];
            assert_eq!(
                own.verify(lookup, signed.body.as_bytes(), &keys, tolerance, at()),
                Ok(()),
                "{sender:?}"
            );
        }
        assert_eq!(
            request(
                "https://x",
                Sender::StaticForms,
                &SenderAuth::OwnSignature,
                "s3cret-s3cret-s3cret",
                "",
                at()
            ),
            Err(SmokeError::OtherSendersSignature("a signature"))
        );
    }

    #[test]
    fn progress_says_where_the_receipt_waits() {
        let body = r#"{"event":"form.submitted","data":{"submissionId":"smoke_1","formData":{}}}"#;
        let submission = FormSubmission::parse(body.as_bytes()).unwrap();
        let fresh = Receipt::new(&submission, at());
        let mut deferred = fresh.clone();
        deferred.attempts = 2;
        deferred.last_error = Some("rate-limited".into());
        deferred.last_http_status = Some(429);
        deferred.next_attempt_at = Some("2027-01-15T08:05:00.000Z".into());
        let mut failed = fresh.clone();
        failed.status = ReceiptStatus::Failed;
        failed.failure_reason = Some("no-email".into());
        let mut completed = fresh.clone();
        completed.status = ReceiptStatus::Completed;
        assert_eq!(progress(None), Progress::Missing);
        assert_eq!(progress(Some(&completed)), Progress::Completed);
        assert_eq!(progress(Some(&failed)), Progress::Failed("no-email".into()));
        assert!(
            matches!(progress(Some(&fresh)), Progress::Waiting(w) if w.contains("not attempted"))
        );
        assert_eq!(
            progress(Some(&deferred)),
            Progress::Waiting("RECEIVED after 2 attempt(s); last error rate-limited (HTTP 429); next attempt 2027-01-15T08:05:00.000Z".into())
        );
        let mut refused = deferred.clone();
        refused.last_error = Some("destination-auth".into());
        refused.last_http_status = Some(401);
        assert_eq!(
            progress(Some(&refused)),
            Progress::CredentialsRefused,
            "no wait mends a refused credential"
        );
    }
}
