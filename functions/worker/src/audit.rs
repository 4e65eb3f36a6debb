//! The scheduled audit, opt-in (`SENDER_API_TOKEN_SECRET_ARN`, the
//! template's `SenderApiTokenSecretArn`): every `AUDIT_EVERY_HOURS` its own
//! schedule invokes the worker with `{"audit": true}`. It reads the
//! sender's completed submissions from where the last audit ended to 15
//! minutes ago (younger ones are left to their webhooks' first retries),
//! compares them with the receipts (`aws_edge::audit`), emits
//! `MissingSubmissions` once per form (its alarm names the runbook) and,
//! with `AUDIT_ACTION=import`, imports them; then it stores where it ended
//! (`config#audit`). A window whose audit failed is read again next time.
//! The token is read from Secrets Manager at each audit, like the CRM's,
//! and never logged; a definitive error fails the audit (the function's
//! error alarm), never a guess.

use std::time::{Duration, SystemTime};

use aws_edge::audit::{AuditError, Scope};
use aws_edge::routes::StoredRoutes;
use aws_edge::sender_api::SenderApiClient;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use serde::Serialize;
use shared::audit::{AUDITED_UNTIL, AUDIT_STATE_KEY};
use shared::config::{invalid, number_in, secret_arn, ConfigError};
use shared::metrics::{catalog, Metrics, Values, FUNCTION};
use shared::receipt::{attr, format_timestamp, parse_timestamp};
use shared::Sender;

pub const SENDER: &str = "SENDER";
pub const SENDER_API_TOKEN_SECRET_ARN: &str = "SENDER_API_TOKEN_SECRET_ARN";
pub const AUDIT_EVERY_HOURS: &str = "AUDIT_EVERY_HOURS";
pub const AUDIT_ACTION: &str = "AUDIT_ACTION";
/// Forms to audit, comma-separated; unset: every form in the routes.
pub const AUDIT_FORMS: &str = "AUDIT_FORMS";
pub use shared::sender::listing::SENDER_API_BASE_URL;

/// The field of the schedule's constant input that makes an invocation
/// an audit.
pub const AUDIT_EVENT_FIELD: &str = "audit";
/// Submissions younger than this are left to their webhooks.
pub const SETTLE: Duration = Duration::from_secs(15 * 60);
/// The longest window one audit reads (the first, or after a long pause).
pub const LONGEST_WINDOW: Duration = Duration::from_secs(31 * 24 * 60 * 60);
pub const DEFAULT_EVERY_HOURS: u64 = 24;
pub const MAX_EVERY_HOURS: u64 = 168;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AuditAction {
    Report,
    Import,
}

/// The audit's settings; `None` from the environment when it is off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSettings {
    pub sender: Sender,
    pub token_secret_arn: String,
    pub every: Duration,
    pub action: AuditAction,
    /// Empty: every form in the routes.
    pub forms: Vec<String>,
    pub base_url: Option<String>,
}

impl AuditSettings {
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
    ) -> Result<Option<AuditSettings>, ConfigError> {
        let Some(raw_arn) = get(SENDER_API_TOKEN_SECRET_ARN) else {
            return Ok(None);
        };
        let token_secret_arn = secret_arn(SENDER_API_TOKEN_SECRET_ARN, &raw_arn)?;
        let sender = get(SENDER)
            .as_deref()
            .and_then(Sender::parse)
            .filter(|sender| sender.api().is_some())
            .ok_or_else(|| {
                invalid(
                    SENDER,
                    "the audit needs a sender whose submissions can be listed: tally, typeform or webflow",
                )
            })?;
        let hours = match get(AUDIT_EVERY_HOURS) {
            None => DEFAULT_EVERY_HOURS,
            Some(raw) => number_in(&raw, 1..=MAX_EVERY_HOURS).ok_or_else(|| {
                invalid(
                    AUDIT_EVERY_HOURS,
                    format!("expected whole hours from 1 to {MAX_EVERY_HOURS}"),
                )
            })?,
        };
        let action = match get(AUDIT_ACTION).as_deref() {
            None | Some("report") => AuditAction::Report,
            Some("import") => AuditAction::Import,
            Some(_) => return Err(invalid(AUDIT_ACTION, "expected report or import")),
        };
        let forms: Vec<String> = get(AUDIT_FORMS)
            .map(|raw| {
                raw.split(',')
                    .map(str::trim)
                    .filter(|f| !f.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if forms
            .iter()
            .any(|form| !shared::sender::listing::is_form_id(form))
        {
            return Err(invalid(
                AUDIT_FORMS,
                "expected form ids (letters, digits, - and _), comma-separated",
            ));
        }
        let base_url = get(SENDER_API_BASE_URL);
        if let Some(url) = &base_url {
            aws_edge::endpoint::check_base_url(url, false)
                .map_err(|problem| invalid(SENDER_API_BASE_URL, problem.to_string()))?;
        }
        Ok(Some(AuditSettings {
            sender,
            token_secret_arn,
            every: Duration::from_secs(hours * 3600),
            action,
            forms,
            base_url,
        }))
    }
}

/// The window to audit at `now`: from where the last audit ended (or one
/// period back, the first time), at most [`LONGEST_WINDOW`], to
/// [`SETTLE`] ago; `None` when that is empty.
pub fn window(
    audited_until: Option<SystemTime>,
    now: SystemTime,
    every: Duration,
) -> Option<(SystemTime, SystemTime)> {
    // To the millisecond, as the end is stored: the next window then
    // starts exactly where this one ended.
    let until = whole_millis(now.checked_sub(SETTLE)?);
    let earliest = until.checked_sub(LONGEST_WINDOW)?;
    let since = audited_until
        .or_else(|| until.checked_sub(every))?
        .max(earliest);
    (since < until).then_some((since, until))
}

fn whole_millis(at: SystemTime) -> SystemTime {
    let since_epoch = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    SystemTime::UNIX_EPOCH + Duration::from_millis(since_epoch.as_millis() as u64)
}

/// What an audit did, as the invocation's answer and its log line: counts
/// only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditReport {
    pub forms: usize,
    pub at_sender: usize,
    pub missing: usize,
    pub imported: usize,
    /// Listed, but no webhook this stack accepts (an id it refuses): never
    /// counted, never imported, only said.
    pub unreadable: usize,
    pub since: String,
    pub until: String,
}

#[derive(Debug, thiserror::Error)]
pub enum AuditFailed {
    #[error("the sender's API token could not be read ({0})")]
    Token(String),
    #[error("no forms to audit: set AuditForms, or name them in the routes")]
    NoForms,
    #[error("the routes could not be read ({0})")]
    Routes(String),
    #[error("{0}")]
    Audit(#[from] AuditError),
    #[error("where the last audit ended could not be read or stored ({0})")]
    State(String),
}

/// The audit, with what it reaches.
pub struct Auditor {
    settings: AuditSettings,
    client: Client,
    table: String,
    secrets: aws_sdk_secretsmanager::Client,
    metrics: Metrics,
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

    pub async fn run(&self, now: SystemTime) -> Result<AuditReport, AuditFailed> {
        let settings = &self.settings;
        let Some((since, until)) = window(self.audited_until().await?, now, settings.every) else {
            return Ok(AuditReport::default());
        };
        let forms = self.forms().await?;
        let token = aws_edge::secret_text(&self.secrets, &settings.token_secret_arn)
            .await
            .map_err(|error| AuditFailed::Token(error.code().to_owned()))?;
        let api = settings.sender.api().ok_or(AuditFailed::NoForms)?;
        let mut client = SenderApiClient::new(
            settings.sender,
            api,
            settings.base_url.clone(),
            token.trim().to_owned(),
        );
        let scope = Scope {
            sender: settings.sender,
            forms,
            since,
            until,
        };
        let audit =
            aws_edge::audit::audit(&mut client, &self.client, &self.table, &scope, |_, _, _| {})
                .await?;
        let missing_by_form = audit.missing_by_form();
        for form in &scope.forms {
            let missing = missing_by_form.get(form.as_str()).copied().unwrap_or(0);
            self.metrics.emit(
                &[(FUNCTION, "worker")],
                &[(catalog::MISSING_SUBMISSIONS, Values::One(missing as f64))],
                &[("form", serde_json::Value::String(form.clone()))],
            );
        }
        let mut report = AuditReport {
            forms: scope.forms.len(),
            at_sender: audit.rows.values().map(|c| c.at_sender).sum(),
            missing: audit.missing.len(),
            imported: 0,
            unreadable: audit.unreadable.len(),
            since: format_timestamp(since),
            until: format_timestamp(until),
        };
        if settings.action == AuditAction::Import {
            let imported =
                aws_edge::audit::import(&self.client, &self.table, &audit.missing, now, |_| {})
                    .await?;
            report.imported = imported.stored;
        }
        self.store_audited_until(until).await?;
        tracing::info!(
            forms = report.forms,
            at_sender = report.at_sender,
            missing = report.missing,
            imported = report.imported,
            unreadable = report.unreadable,
            since = %report.since,
            until = %report.until,
            "audit of the sender's submissions"
        );
        Ok(report)
    }

    async fn forms(&self) -> Result<Vec<String>, AuditFailed> {
        let forms = if self.settings.forms.is_empty() {
            let routes = StoredRoutes::new(self.client.clone(), &self.table)
                .read()
                .await
                .map_err(|error| AuditFailed::Routes(error.to_string()))?;
            routes
                .routes
                .iter()
                .map(|route| route.form.clone())
                .collect()
        } else {
            self.settings.forms.clone()
        };
        let forms: Vec<String> = forms
            .into_iter()
            .filter(|form| shared::sender::listing::is_form_id(form))
            .collect();
        if forms.is_empty() {
            return Err(AuditFailed::NoForms);
        }
        Ok(forms)
    }

    async fn audited_until(&self) -> Result<Option<SystemTime>, AuditFailed> {
        let read = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, AttributeValue::S(AUDIT_STATE_KEY.to_owned()))
            .projection_expression("#until")
            .expression_attribute_names("#until", AUDITED_UNTIL)
            .consistent_read(true)
            .send()
            .await
            .map_err(|error| AuditFailed::State(code_of(&error)))?;
        Ok(read.item.and_then(|item| match item.get(AUDITED_UNTIL) {
            Some(AttributeValue::S(text)) => parse_timestamp(text),
            _ => None,
        }))
    }

    async fn store_audited_until(&self, until: SystemTime) -> Result<(), AuditFailed> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item(attr::PK, AttributeValue::S(AUDIT_STATE_KEY.to_owned()))
            .item(AUDITED_UNTIL, AttributeValue::S(format_timestamp(until)))
            .send()
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(pairs: &[(&str, &str)]) -> Result<Option<AuditSettings>, ConfigError> {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        AuditSettings::from_lookup(&|name: &str| env.get(name).cloned())
    }

    const ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:tally-AbCdEf";

    #[test]
    fn settings_rules() {
        assert_eq!(
            settings(&[(SENDER, "tally")]),
            Ok(None),
            "off without a token"
        );
        let on = settings(&[(SENDER, "tally"), (SENDER_API_TOKEN_SECRET_ARN, ARN)])
            .unwrap()
            .unwrap();
        assert_eq!(on.every, Duration::from_secs(24 * 3600));
        assert_eq!(on.action, AuditAction::Report);
        assert!(on.forms.is_empty());
        let full = settings(&[
            (SENDER, "typeform"),
            (SENDER_API_TOKEN_SECRET_ARN, ARN),
            (AUDIT_EVERY_HOURS, "6"),
            (AUDIT_ACTION, "import"),
            (AUDIT_FORMS, "lT4Z3j, abc"),
            (SENDER_API_BASE_URL, "http://127.0.0.1:9400"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(full.every, Duration::from_secs(6 * 3600));
        assert_eq!(full.action, AuditAction::Import);
        assert_eq!(full.forms, ["lT4Z3j", "abc"]);
        assert_eq!(full.base_url.as_deref(), Some("http://127.0.0.1:9400"));
        let refused: [(&[(&str, &str)], &str); 7] = [
            (&[(SENDER, "staticforms")], SENDER),
            (
                &[(SENDER, "tally"), (AUDIT_EVERY_HOURS, "0")],
                AUDIT_EVERY_HOURS,
            ),
            (
                &[(SENDER, "tally"), (AUDIT_EVERY_HOURS, "169")],
                AUDIT_EVERY_HOURS,
            ),
            (&[(SENDER, "tally"), (AUDIT_ACTION, "delete")], AUDIT_ACTION),
            (&[(SENDER, "tally"), (AUDIT_FORMS, "a/b")], AUDIT_FORMS),
            // The token never travels in clear text to another machine.
            (
                &[
                    (SENDER, "tally"),
                    (SENDER_API_BASE_URL, "http://api.tally.so"),
                ],
                SENDER_API_BASE_URL,
            ),
            (
                &[(SENDER, "tally"), (SENDER_API_BASE_URL, "api.tally.so")],
                SENDER_API_BASE_URL,
            ),
        ];
        for (pairs, named) in refused {
            let mut pairs = pairs.to_vec();
            pairs.push((SENDER_API_TOKEN_SECRET_ARN, ARN));
            let error = settings(&pairs).unwrap_err();
            assert!(error.to_string().contains(named), "{pairs:?}: {error}");
        }
        assert!(settings(&[(SENDER, "tally"), (SENDER_API_TOKEN_SECRET_ARN, "nope")]).is_err());
    }

    #[test]
    fn window_rules() {
        let at = |minutes: u64| {
            SystemTime::UNIX_EPOCH + Duration::from_secs(minutes * 60 + 100 * 86_400 * 60)
        };
        let hour = Duration::from_secs(3600);
        let now = at(1_000);
        // The first audit: one period back from 15 minutes ago.
        assert_eq!(window(None, now, hour), Some((at(925), at(985))));
        // Then from where the last one ended.
        assert_eq!(window(Some(at(900)), now, hour), Some((at(900), at(985))));
        // Nothing new yet, to the stored millisecond.
        assert_eq!(window(Some(at(985)), now, hour), None);
        let stored = parse_timestamp(&format_timestamp(at(985) + Duration::from_nanos(700_000)));
        assert_eq!(
            window(stored, now + Duration::from_nanos(700_000), hour),
            None
        );
        assert_eq!(window(Some(at(990)), now, hour), None);
        // After a long pause, at most the longest window.
        let long_ago = now - Duration::from_secs(90 * 86_400);
        let (since, until) = window(Some(long_ago), now, hour).unwrap();
        assert_eq!(until.duration_since(since).unwrap(), LONGEST_WINDOW);
    }
}
