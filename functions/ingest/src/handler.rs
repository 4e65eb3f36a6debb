//! One webhook delivery, in order: authenticate, bound and type the body,
//! parse the envelope, check the form key (when `WEBHOOK_API_KEYS` is set)
//! and the idempotency key, store the receipt. Each
//! step decides before the next runs; `respond` is the one place where an
//! outcome becomes an HTTP response.

use std::sync::Arc;
use std::time::Instant;

use http::header::{CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use lambda_http::{Body, Request, RequestExt, Response};
use serde_json::json;
use shared::clock::Clock;
use shared::envelope::is_json_media_type;
use shared::form_body::{self, BodyFormat, FormBodyError};
use shared::idempotency::{KeyHeader, HEADER_NAME as IDEMPOTENCY_KEY_HEADER};
use shared::outcome::{existing_receipt_outcome, Existing};
use shared::spam::SpamRule;
use shared::{
    EnvelopeError, FormSubmission, IdempotencyKey, KeyError, Outcome, Receipt, SubmissionId,
};

use crate::auth::{AuthError, Authenticator, Presented, SecretSet, Unauthenticated, Unavailable};
use crate::browser::turnstile::BotCheck;
use crate::browser::{Browser, BrowserRefusal};
use crate::config::Config;
use crate::store::{PutOutcome, ReceiptStore, StoreError};
use aws_edge::routes::RoutesInForce;

/// Seconds a sender should wait before retrying after a 503.
pub const RETRY_AFTER_SECONDS: &str = "2";

/// Everything that stops a delivery short of a durable receipt.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error(transparent)]
    Unauthenticated(#[from] Unauthenticated),
    #[error("the webhook secrets are unavailable ({0}); retry later")]
    SecretsUnavailable(Unavailable),
    #[error("`data.apiKey` is not one of the forms this endpoint accepts")]
    UnknownForm,
    #[error("the body is larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("Content-Type must be application/json")]
    UnsupportedMediaType,
    /// A form post this sender's webhooks are not (`Profile::body`).
    #[error(transparent)]
    FormBody(#[from] FormBodyError),
    /// A browser's post from a foreign page, or without a passing token.
    #[error(transparent)]
    Browser(#[from] BrowserRefusal),
    #[error(transparent)]
    Envelope(#[from] EnvelopeError),
    #[error(transparent)]
    IdempotencyKey(#[from] KeyError),
    #[error("this Idempotency-Key was already used for a different payload; the original is kept")]
    KeyReusedForDifferentPayload,
    #[error("a receipt for this Idempotency-Key exists without a fingerprint, so this delivery cannot be shown to be the same; the original is kept")]
    ReceiptWithoutFingerprint,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl IngestError {
    pub fn outcome(&self) -> Outcome {
        match self {
            IngestError::Unauthenticated(_) => Outcome::Unauthorized,
            IngestError::SecretsUnavailable(_) => Outcome::SecretsUnavailable,
            IngestError::UnknownForm => Outcome::UnknownForm,
            IngestError::PayloadTooLarge { .. } => Outcome::PayloadTooLarge,
            IngestError::UnsupportedMediaType
            | IngestError::FormBody(FormBodyError::NotAForm | FormBodyError::NoBoundary) => {
                Outcome::UnsupportedMediaType
            }
            IngestError::FormBody(_) => Outcome::InvalidEnvelope,
            IngestError::Browser(BrowserRefusal::OriginNotAllowed) => Outcome::OriginNotAllowed,
            IngestError::Browser(BrowserRefusal::BotCheckFailed(_)) => Outcome::BotCheckFailed,
            IngestError::Browser(BrowserRefusal::BotCheckUnavailable(_)) => {
                Outcome::BotCheckUnavailable
            }
            IngestError::Envelope(EnvelopeError::MalformedJson) => Outcome::MalformedJson,
            IngestError::Envelope(_) => Outcome::InvalidEnvelope,
            IngestError::IdempotencyKey(_) => Outcome::InvalidIdempotencyKey,
            IngestError::KeyReusedForDifferentPayload => Outcome::KeyReusedForDifferentPayload,
            IngestError::ReceiptWithoutFingerprint => Outcome::ReceiptWithoutFingerprint,
            IngestError::Store(StoreError::Unavailable(_)) => Outcome::StoreUnavailable,
            IngestError::Store(StoreError::Failed(_)) => Outcome::StoreFailed,
            IngestError::Store(StoreError::TooLarge { .. }) => Outcome::PayloadTooLarge,
        }
    }
}

/// The ingest handler over any receipt store. Built once at init.
pub struct Ingest<S> {
    store: S,
    sender: shared::Sender,
    auth: Authenticator,
    form_keys: Option<SecretSet>,
    key_header: KeyHeader,
    max_body_bytes: usize,
    retention: shared::Retention,
    clock: Clock,
    metrics: shared::metrics::Metrics,
    routes: RoutesInForce,
    /// For a sender a browser posts: its origins, bot check and answers.
    browser: Option<Browser>,
}

impl<S: ReceiptStore> Ingest<S> {
    /// `auth` comes from `startup::authenticator_for(config, …)`.
    pub fn new(store: S, auth: Authenticator, config: &Config) -> Self {
        Ingest {
            store,
            sender: config.sender,
            auth,
            form_keys: config.form_keys.clone(),
            key_header: config.key_header,
            max_body_bytes: config.max_body_bytes,
            retention: config.retention,
            clock: shared::clock::system(),
            metrics: config.metrics.clone(),
            routes: RoutesInForce::fixed(Arc::default()),
            browser: config.browser.as_ref().map(Browser::new),
        }
    }

    /// The bot check a browser's posts pass, when its secret was read from
    /// Secrets Manager at init (`startup::bot_check_for`).
    pub fn with_bot_check(mut self, check: Option<Arc<dyn BotCheck>>) -> Self {
        if let Some(check) = check {
            self.browser = self.browser.map(|browser| browser.with_bot_check(check));
        }
        self
    }

    /// The routes (and their spam rules) in force: read at init, then again
    /// from their source every `ROUTES_REREAD_SECONDS`. A failed re-read
    /// keeps the last ones read; while none could be read, no spam rule
    /// holds a submission back (a lead is never lost for want of them).
    pub fn with_routes(mut self, routes: RoutesInForce) -> Self {
        self.routes = routes;
        self
    }

    /// Replaces the wall clock, for tests of time-dependent fields.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    /// Handles one delivery and logs one line about it. Never fails: every
    /// error is an HTTP answer.
    pub async fn handle(&self, request: Request) -> Response<Body> {
        if request.method() == http::Method::OPTIONS {
            return match &self.browser {
                Some(browser) => browser.preflight(request.headers()),
                // Only a browser-posted form has pages to answer (never
                // 404 or 410, which Typeform takes as "disable this webhook").
                None => Response::builder()
                    .status(405)
                    .header(http::header::ALLOW, "POST")
                    .body(Body::Empty)
                    .unwrap_or_default(),
            };
        }
        let started = Instant::now();
        let mut submission_id = None;
        let mut form = None;
        let result = self.accept(&request, &mut submission_id, &mut form).await;
        log_delivery(
            &request,
            submission_id.as_ref(),
            &result,
            self.sender,
            started,
        );
        self.measure_delivery(&result, started);
        let answer = respond(&result, self.sender);
        match &self.browser {
            Some(browser) => {
                let stored = result.as_ref().is_ok_and(|outcome| outcome.is_accepted());
                let reason = result.as_ref().err().map(ToString::to_string);
                let routed = match &form {
                    Some(form) => self
                        .routes
                        .now()
                        .await
                        .unwrap_or_default()
                        .route(form)
                        .and_then(|route| route.thank_you_url.clone()),
                    None => None,
                };
                browser.answer(request.headers(), answer, stored, reason, routed.as_deref())
            }
            None => answer,
        }
    }

    async fn accept(
        &self,
        request: &Request,
        submission_id: &mut Option<SubmissionId>,
        form: &mut Option<String>,
    ) -> Result<Outcome, IngestError> {
        if let Some(browser) = &self.browser {
            browser.check_origin(request.headers())?;
        }
        // Raw bytes only: a signature is checked before anything parses them.
        let body: &[u8] = request.body().as_ref();
        // The size first: an oversized body costs no HMAC over it.
        if body.len() > self.max_body_bytes {
            return Err(IngestError::PayloadTooLarge {
                limit: self.max_body_bytes,
            });
        }
        self.auth
            .authenticate(Presented {
                headers: request.headers(),
                query: request.uri().query(),
                body,
                now: (self.clock)(),
            })
            .await
            .map_err(|error| match error {
                AuthError::Unauthenticated(refused) => IngestError::Unauthenticated(refused),
                AuthError::SecretsUnavailable(why) => IngestError::SecretsUnavailable(why),
            })?;
        let content_type = request.headers().get(CONTENT_TYPE);
        let form_json;
        let body = match self.sender.profile().body {
            BodyFormat::Json => {
                if let Some(content_type) = content_type {
                    if !content_type.to_str().is_ok_and(is_json_media_type) {
                        return Err(IngestError::UnsupportedMediaType);
                    }
                }
                body
            }
            BodyFormat::Form => {
                let content_type = content_type
                    .and_then(|value| value.to_str().ok())
                    .ok_or(FormBodyError::NotAForm)?;
                form_json = form_body::as_json(content_type, body)?;
                form_json.as_slice()
            }
        };

        let headers = request.headers();
        let submission = self.sender.parse_delivery(body, |name| {
            crate::sender_signatures::single(headers, name).ok()
        })?;
        *submission_id = Some(submission.submission_id.clone());
        *form = submission.form_id().map(str::to_owned);
        if let Some(accepted) = &self.form_keys {
            let known = submission
                .form_key
                .as_ref()
                .is_some_and(|key| accepted.contains(key.as_bytes()));
            if !known {
                return Err(IngestError::UnknownForm);
            }
        }

        if let Some(browser) = &self.browser {
            let token = serde_json::from_slice::<serde_json::Value>(body)
                .ok()
                .and_then(|fields| {
                    fields[shared::sender::html::TOKEN_FIELD]
                        .as_str()
                        .map(str::to_owned)
                });
            browser
                .check_token(token.as_deref(), submission.submission_id.as_str())
                .await?;
        }

        let key = IdempotencyKey::for_submission(submission.sender, &submission.submission_id);
        let sent_keys: Vec<&[u8]> = request
            .headers()
            .get_all(IDEMPOTENCY_KEY_HEADER)
            .iter()
            .map(|value| value.as_bytes())
            .collect();
        key.verify_header(&sent_keys, self.key_header)?;

        let now = (self.clock)();
        if self
            .sender
            .is_replay_past_retention(&submission.payload, now, self.retention)
        {
            return Ok(Outcome::ExpiredReplay);
        }
        let held_by = self.spam_rule_broken_by(&submission, now).await;
        let receipt = match &held_by {
            Some(rule) => Receipt::quarantined(&submission, now, rule, self.retention),
            None => Receipt::new(&submission, now),
        };
        match self.store.put_if_absent(&receipt).await? {
            PutOutcome::Stored => match &held_by {
                Some(rule) => {
                    self.measure_quarantine(rule);
                    Ok(Outcome::Quarantined)
                }
                None => Ok(Outcome::Accepted),
            },
            PutOutcome::AlreadyExists {
                payload_fingerprint,
                imported,
            } => match existing_receipt_outcome(
                Existing {
                    fingerprint: payload_fingerprint.as_deref(),
                    imported,
                },
                &receipt.payload_fingerprint,
            ) {
                Outcome::Duplicate => Ok(Outcome::Duplicate),
                Outcome::ReceiptWithoutFingerprint => Err(IngestError::ReceiptWithoutFingerprint),
                _ => Err(IngestError::KeyReusedForDifferentPayload),
            },
        }
    }
}

impl<S> Ingest<S> {
    /// The spam rule `submission` breaks, by the routes in force: the
    /// stack's rules, and its form's route's added to them.
    async fn spam_rule_broken_by(
        &self,
        submission: &FormSubmission,
        received_at: std::time::SystemTime,
    ) -> Option<SpamRule> {
        let routes = self.routes.now().await.unwrap_or_default();
        routes.rule_broken_by(submission, received_at)
    }
}

/// The one mapping from a delivery's result to what the sender sees. A new
/// receipt gets the status its sender needs (`Sender::accepted_status`), and no answer
/// is ever 404 or 410, which Typeform takes as "disable this webhook".
fn respond(result: &Result<Outcome, IngestError>, sender: shared::Sender) -> Response<Body> {
    let (outcome, body) = match result {
        Ok(outcome) => (
            *outcome,
            json!({
                "accepted": true,
                "duplicate": !matches!(outcome, Outcome::Accepted | Outcome::Quarantined)
            }),
        ),
        Err(error) => {
            let outcome = error.outcome();
            // Store details are for our logs; the sender only needs to retry.
            let message = match error {
                IngestError::Store(too_large @ StoreError::TooLarge { .. }) => {
                    too_large.to_string()
                }
                IngestError::Store(_) => {
                    "no durable receipt could be stored; retry later".to_owned()
                }
                other => other.to_string(),
            };
            (
                outcome,
                json!({"accepted": false, "error": outcome.code(), "message": message}),
            )
        }
    };
    let mut response = Response::builder()
        .status(answered_status(outcome, sender))
        .header(CONTENT_TYPE, "application/json");
    match result {
        Err(IngestError::Unauthenticated(Unauthenticated {
            challenge: Some(challenge),
        })) => response = response.header(WWW_AUTHENTICATE, *challenge),
        Err(error) if error.outcome().status() == 503 => {
            response = response.header(RETRY_AFTER, RETRY_AFTER_SECONDS)
        }
        _ => {}
    }
    response
        .body(Body::from(body.to_string()))
        .unwrap_or_else(|_| {
            // Only reachable if a status or header constant above were
            // invalid; answer 500 rather than panic.
            let mut fallback = Response::new(Body::Empty);
            *fallback.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
            fallback
        })
}

/// The status a sender is answered for `outcome`: a new receipt gets the
/// one its sender counts as success (`Sender::accepted_status`), every other outcome
/// its own. The response and the log line both say this one.
fn answered_status(outcome: Outcome, sender: shared::Sender) -> u16 {
    match outcome {
        Outcome::Accepted | Outcome::Quarantined => sender.accepted_status(),
        other => other.status(),
    }
}

impl<S> Ingest<S> {
    /// `Quarantined` by the kind of rule broken: the field's name stays in
    /// the receipt, its value nowhere.
    fn measure_quarantine(&self, rule: &SpamRule) {
        self.metrics.emit(
            &[
                (shared::metrics::FUNCTION, "ingest"),
                (shared::metrics::RULE, rule.kind()),
            ],
            &[(shared::metrics::catalog::QUARANTINED, 1.0.into())],
            &[],
        );
    }

    /// One EMF line per delivery: `Deliveries` and `DeliveryDuration` by
    /// outcome (the decision table's code). No identifier: a metric line
    /// needs none, and the log line has them.
    fn measure_delivery(&self, result: &Result<Outcome, IngestError>, started: Instant) {
        let outcome = match result {
            Ok(outcome) => *outcome,
            Err(error) => error.outcome(),
        };
        self.metrics.emit(
            &[
                (shared::metrics::FUNCTION, "ingest"),
                (shared::metrics::OUTCOME, outcome.code()),
            ],
            &[
                (shared::metrics::catalog::DELIVERIES, 1.0.into()),
                (
                    shared::metrics::catalog::DELIVERY_DURATION,
                    (started.elapsed().as_secs_f64() * 1000.0).into(),
                ),
            ],
            &[],
        );
    }
}

/// One line per delivery: identifiers, outcome and timing, never the body,
/// form fields or credentials.
fn log_delivery(
    request: &Request,
    submission_id: Option<&SubmissionId>,
    result: &Result<Outcome, IngestError>,
    sender: shared::Sender,
    started: Instant,
) {
    let request_id = request
        .lambda_context_ref()
        .map(|context| context.request_id.as_str());
    let submission_id = submission_id.map(SubmissionId::as_str);
    let duration_ms = started.elapsed().as_millis() as u64;
    match result {
        Ok(outcome) => tracing::info!(
            request_id,
            submission_id,
            outcome = outcome.code(),
            status = answered_status(*outcome, sender),
            duration_ms,
            "webhook delivery handled"
        ),
        Err(error) if error.outcome().status() >= 500 => tracing::error!(
            request_id,
            submission_id,
            outcome = error.outcome().code(),
            status = error.outcome().status(),
            duration_ms,
            error = %error,
            "webhook delivery not stored"
        ),
        Err(error) => tracing::warn!(
            request_id,
            submission_id,
            outcome = error.outcome().code(),
            status = error.outcome().status(),
            duration_ms,
            error = %error,
            "webhook delivery refused"
        ),
    }
}
