//! The scheduled audit, opt-in (`SENDER_API_TOKEN_SECRET_ARN`, the
//! template's `SenderApiTokenSecretArn`): every `AUDIT_EVERY_HOURS` its own
//! schedule invokes the worker with `{"audit": true}`. It reads the
//! sender's completed submissions one period at a time, from where the
//! last audit ended to 15 minutes ago (younger ones are left to their
//! webhooks' first retries), and never further back than the receipts
//! remember (`shared::audit::Horizon`); compares them with the receipts
//! (`sender_audit::audit`), emits `MissingSubmissions` per form (its alarm
//! names the runbook) and, with `AUDIT_ACTION=import`, imports them.
//!
//! Long work stores its progress before its deadline: each form of a
//! window is stored as done once compared and imported, and each window
//! once all its forms are (`config#audit`), so a backlog drains over runs
//! and a run killed at its deadline loses at most one form's page reads.
//! Every run emits `AuditBehindPeriods`; a run that could do nothing before
//! its deadline fails. The token is read from Secrets Manager at each
//! audit, like the CRM's, and never logged; a definitive error fails the
//! audit (the function's error alarm), never a guess.

mod settings;
mod window;

pub use settings::*;
pub use window::{next_window, OpenWindow, Progress, ProgressError, Window};

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use aws_edge::routes::StoredRoutes;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use sender_audit::audit::{AuditError, Scope};
use sender_audit::sender_api::{SenderApiClient, SenderApiError};
use serde::Serialize;
use shared::audit::{Horizon, AUDITED_UNTIL, AUDIT_STATE_KEY};
use shared::metrics::{catalog, Metrics, Values, FUNCTION};
use shared::newest::GateSecret;
use shared::receipt::{attr, format_timestamp, parse_timestamp};
use shared::routes::Routes;

/// What an audit did, as the invocation's answer and its log line: counts
/// only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditReport {
    /// Forms compared (and imported) in this run, once per window.
    pub forms: usize,
    /// Windows fully audited in this run.
    pub windows: usize,
    pub at_sender: usize,
    pub missing: usize,
    pub imported: usize,
    /// Older than the receipts remember, without a receipt: never
    /// imported, since its receipt may be gone on purpose.
    pub expired: usize,
    /// Made before `receipts forget` erased its person: never imported.
    pub erased: usize,
    /// Imported, and held back by a spam rule (QUARANTINED).
    pub held_back: usize,
    /// Listed, but no webhook this stack accepts (an id it refuses, no
    /// time): never counted, never imported, only said.
    pub unreadable: usize,
    /// Listed and missing, but no put can store it (too large): counted,
    /// named by id in the log, and passed over.
    pub unimportable: usize,
    /// The first window's start and where the audit now stands.
    pub since: String,
    pub until: String,
    /// Whether the audit reached 15 minutes ago; `false` when the
    /// deadline stopped it with a backlog left for the next runs.
    pub caught_up: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum AuditFailed {
    #[error("the sender's API token could not be read ({0})")]
    Token(String),
    /// `AUDIT_ACTION=import` without `ERASURE_KEY_SECRET_ARN`: an import
    /// that cannot see erasure markers could bring back a person `receipts
    /// forget` erased. Nothing is audited or imported; the audit falls
    /// behind (its alarm) until the key is given.
    #[error("the audit imports nothing: without ERASURE_KEY_SECRET_ARN it cannot see whom receipts forget erased")]
    NoErasureKey,
    #[error("the gate key erasures are found by could not be read ({0})")]
    ErasureKey(String),
    #[error("no forms to audit: set AuditForms, or name them in the routes")]
    NoForms,
    #[error("the routes could not be read ({0})")]
    Routes(String),
    #[error("{0}")]
    Audit(#[from] AuditError),
    #[error("where the last audit ended could not be read or stored ({0})")]
    State(String),
    #[error("{0}")]
    Progress(#[from] ProgressError),
    #[error("no form could be audited before the invocation's deadline; a window of one form must fit in one run (a shorter AuditEveryHours, or fewer forms per run)")]
    NoProgress,
}

/// The audit, with what it reaches.
pub struct Auditor {
    settings: AuditSettings,
    client: Client,
    table: String,
    secrets: aws_sdk_secretsmanager::Client,
    metrics: Metrics,
}

/// `AuditBehindPeriods` for a stored progress in the future.
pub const FUTURE_PROGRESS_BEHIND: f64 = 1_000_000.0;

/// What a run reads once, when it has a window to audit.
struct Reach {
    forms: Vec<String>,
    /// The routes in force, whose spam rules an import is held to.
    routes: Arc<Routes>,
    api: SenderApiClient,
    erasure_key: Option<GateSecret>,
}

impl Auditor {
    pub fn new(
        settings: AuditSettings,
        client: Client,
        table: impl Into<String>,
        secrets: aws_sdk_secretsmanager::Client,
        metrics: Metrics,
    ) -> Self {
        Auditor {
            settings,
            client,
            table: table.into(),
            secrets,
            metrics,
        }
    }

    /// Audits window after window until it has caught up or `deadline`
    /// is near, storing its progress as it goes.
    pub async fn run(
        &self,
        now: SystemTime,
        deadline: Instant,
    ) -> Result<AuditReport, AuditFailed> {
        let horizon = Horizon::at(now, self.settings.retention);
        let mut progress = self.progress().await?;
        let mut report = AuditReport::default();
        let result = self
            .audit_windows(&mut progress, &mut report, now, deadline, horizon)
            .await;
        self.emit_behind(&progress, now);
        if let Some(until) = progress.audited_until {
            report.until = format_timestamp(until);
        }
        match result {
            Ok(false) if report.forms == 0 => return Err(AuditFailed::NoProgress),
            Ok(caught_up) => report.caught_up = caught_up,
            Err(AuditFailed::Audit(AuditError::SenderApi(SenderApiError::OutOfTime {
                ..
            }))) if report.forms > 0 => {
                report.caught_up = false;
            }
            Err(AuditFailed::Audit(AuditError::SenderApi(SenderApiError::OutOfTime {
                ..
            }))) => return Err(AuditFailed::NoProgress),
            Err(failed) => return Err(failed),
        }
        tracing::info!(
            forms = report.forms,
            windows = report.windows,
            at_sender = report.at_sender,
            missing = report.missing,
            imported = report.imported,
            expired = report.expired,
            erased = report.erased,
            held_back = report.held_back,
            unreadable = report.unreadable,
            unimportable = report.unimportable,
            since = %report.since,
            until = %report.until,
            caught_up = report.caught_up,
            "audit of the sender's submissions"
        );
        if !report.caught_up {
            tracing::warn!(
                until = %report.until,
                "the audit stopped before its deadline with a backlog; the next runs go on from where it stopped"
            );
        }
        Ok(report)
    }

    /// `Ok(true)` once caught up; `Ok(false)` when too little time is left
    /// for another form.
    async fn audit_windows(
        &self,
        progress: &mut Progress,
        report: &mut AuditReport,
        now: SystemTime,
        deadline: Instant,
        horizon: Horizon,
    ) -> Result<bool, AuditFailed> {
        let settings = &self.settings;
        let mut reach: Option<Reach> = None;
        while let Some(window) = next_window(progress, now, settings.every, horizon)? {
            if report.since.is_empty() {
                report.since = format_timestamp(window.since);
            }
            if reach.is_none() {
                reach = Some(self.reach(deadline).await?);
            }
            let Some(reach) = reach.as_mut() else {
                return Err(AuditFailed::NoForms);
            };
            let mut forms_done = window.forms_done.clone();
            for form in reach.forms.clone() {
                if forms_done.contains(&form) {
                    continue;
                }
                if deadline.saturating_duration_since(Instant::now()) < RESERVE + SHORTEST_FORM {
                    return Ok(false);
                }
                self.audit_form(reach, &form, &window, now, report).await?;
                forms_done.push(form);
                progress.open = Some(OpenWindow {
                    until: window.until,
                    forms_done: forms_done.clone(),
                });
                self.store(progress).await?;
            }
            *progress = Progress {
                audited_until: Some(window.until),
                open: None,
            };
            self.store(progress).await?;
            report.windows += 1;
        }
        Ok(true)
    }

    /// The forms and the sender's API client, with the token read now.
    async fn reach(&self, deadline: Instant) -> Result<Reach, AuditFailed> {
        let settings = &self.settings;
        // No import by a guess: unreadable routes fail the audit, as they
        // hold a delivery.
        let routes = StoredRoutes::new(self.client.clone(), &self.table)
            .read()
            .await
            .map_err(|error| AuditFailed::Routes(error.to_string()))?;
        let forms = self.forms(&routes)?;
        let token = aws_edge::secret_text(&self.secrets, &settings.token_secret_arn)
            .await
            .map_err(|error| AuditFailed::Token(error.code().to_owned()))?;
        let api = settings.sender.api().ok_or(AuditFailed::NoForms)?;
        let api = SenderApiClient::new(
            settings.sender,
            api,
            settings.base_url.clone(),
            token.trim().to_owned(),
        )
        .with_deadline(deadline.checked_sub(RESERVE).unwrap_or(deadline));
        let erasure_key =
            match &settings.erasure_key_secret_arn {
                Some(arn) => {
                    let text = aws_edge::secret_text(&self.secrets, arn)
                        .await
                        .map_err(|error| AuditFailed::ErasureKey(error.code().to_owned()))?;
                    Some(GateSecret::new(&text).ok_or_else(|| {
                        AuditFailed::ErasureKey("shorter than a gate key".to_owned())
                    })?)
                }
                None if settings.action == AuditAction::Import => {
                    return Err(AuditFailed::NoErasureKey)
                }
                None => None,
            };
        Ok(Reach {
            forms,
            routes,
            api,
            erasure_key,
        })
    }

    /// One form over one window: compared, its metric emitted, and with
    /// import, what is missing imported.
    async fn audit_form(
        &self,
        reach: &mut Reach,
        form: &str,
        window: &Window,
        now: SystemTime,
        report: &mut AuditReport,
    ) -> Result<(), AuditFailed> {
        let scope = Scope::new(
            self.settings.sender,
            [form.to_owned()],
            window.since,
            window.until,
            now,
            self.settings.retention,
        )
        .with_erasure_key(reach.erasure_key.clone());
        let audit = sender_audit::audit::audit(
            &mut reach.api,
            &self.client,
            &self.table,
            &scope,
            |_, _, _| {},
        )
        .await?;
        self.metrics.emit(
            &[(FUNCTION, "worker")],
            &[(
                catalog::MISSING_SUBMISSIONS,
                Values::One(audit.missing.len() as f64),
            )],
            &[("form", serde_json::Value::String(form.to_owned()))],
        );
        report.forms += 1;
        report.at_sender += audit.rows.values().map(|c| c.at_sender).sum::<usize>();
        report.missing += audit.missing.len();
        report.expired += audit.expired;
        report.erased += audit.erased;
        report.unreadable += audit.unreadable.len();
        if self.settings.action == AuditAction::Import {
            let imported = sender_audit::audit::import(
                &self.client,
                &self.table,
                &audit.missing,
                now,
                &reach.routes,
                self.settings.retention,
                |_| {},
            )
            .await?;
            report.imported += imported.stored;
            report.held_back += imported.held_back;
            report.unimportable += imported.unimportable.len();
            for skipped in &imported.unimportable {
                tracing::error!(
                    form = %skipped.form,
                    submission_id = %skipped.submission_id,
                    why = %skipped.why,
                    "a listed submission cannot be stored; the others were imported"
                );
            }
        }
        Ok(())
    }

    /// Says how far behind the audit is, from its stored progress: each
    /// reconciliation pass does, so an audit that stopped running (its
    /// schedule off, every run failing) is seen within two periods, not
    /// only when it next reports. A progress that cannot be read is logged.
    pub async fn report_progress(&self, now: SystemTime) {
        match self.progress().await {
            Ok(progress) => self.emit_behind(&progress, now),
            Err(error) => tracing::warn!(error = %error, "the audit's progress could not be read"),
        }
    }

    /// How many periods the audit's progress is behind, on every run. A
    /// progress later than now (which stops every audit until then) counts
    /// as [`FUTURE_PROGRESS_BEHIND`], so the alarm fires for it too.
    fn emit_behind(&self, progress: &Progress, now: SystemTime) {
        let latest = now.checked_sub(SETTLE).unwrap_or(now);
        let behind = match progress.audited_until {
            None => 0.0,
            Some(until) if until > now => FUTURE_PROGRESS_BEHIND,
            Some(until) => latest.duration_since(until).map_or(0.0, |lag| {
                lag.as_secs_f64() / self.settings.every.as_secs_f64()
            }),
        };
        self.metrics.emit(
            &[(FUNCTION, "worker")],
            &[(catalog::AUDIT_BEHIND_PERIODS, Values::One(behind))],
            &[],
        );
    }

    fn forms(&self, routes: &Routes) -> Result<Vec<String>, AuditFailed> {
        let forms = if self.settings.forms.is_empty() {
            routes
                .routes
                .iter()
                .map(|route| route.form.clone())
                .collect()
        } else {
            self.settings.forms.clone()
        };
        let forms = shared::audit::distinct(
            forms
                .into_iter()
                .filter(|form| shared::sender::listing::is_form_id(form)),
        );
        if forms.is_empty() {
            return Err(AuditFailed::NoForms);
        }
        Ok(forms)
    }

    /// The stored progress; text that is no time is an error, never a
    /// first run.
    async fn progress(&self) -> Result<Progress, AuditFailed> {
        let read = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, AttributeValue::S(AUDIT_STATE_KEY.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|error| AuditFailed::State(code_of(&error)))?;
        let Some(item) = read.item else {
            return Ok(Progress::default());
        };
        let time = |name: &str| -> Result<Option<SystemTime>, AuditFailed> {
            match item.get(name) {
                None => Ok(None),
                Some(AttributeValue::S(text)) => parse_timestamp(text)
                    .map(Some)
                    .ok_or_else(|| AuditFailed::State(format!("{name} is not a time"))),
                Some(_) => Err(AuditFailed::State(format!("{name} is not a time"))),
            }
        };
        let audited_until = time(AUDITED_UNTIL)?;
        let forms_done: Vec<String> = match item.get(FORMS_DONE) {
            Some(AttributeValue::L(forms)) => forms
                .iter()
                .filter_map(|form| form.as_s().ok().cloned())
                .collect(),
            _ => Vec::new(),
        };
        let open = time(WINDOW_UNTIL)?.map(|until| OpenWindow { until, forms_done });
        Ok(Progress {
            audited_until,
            open,
        })
    }

    async fn store(&self, progress: &Progress) -> Result<(), AuditFailed> {
        let mut put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(attr::PK, AttributeValue::S(AUDIT_STATE_KEY.to_owned()));
        if let Some(until) = progress.audited_until {
            put = put.item(AUDITED_UNTIL, AttributeValue::S(format_timestamp(until)));
        }
        if let Some(open) = &progress.open {
            put = put
                .item(
                    WINDOW_UNTIL,
                    AttributeValue::S(format_timestamp(open.until)),
                )
                .item(
                    FORMS_DONE,
                    AttributeValue::L(
                        open.forms_done
                            .iter()
                            .map(|form| AttributeValue::S(form.clone()))
                            .collect(),
                    ),
                );
        }
        put.send()
            .await
            .map_err(|error| AuditFailed::State(code_of(&error)))?;
        Ok(())
    }
}

fn code_of<E: aws_sdk_dynamodb::error::ProvideErrorMetadata, R>(
    error: &aws_sdk_dynamodb::error::SdkError<E, R>,
) -> String {
    match error {
        aws_sdk_dynamodb::error::SdkError::ServiceError(failure) => failure
            .err()
            .code()
            .unwrap_or("UnknownServiceError")
            .to_owned(),
        _ => "Unreachable".to_owned(),
    }
}
