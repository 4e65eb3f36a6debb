//! The audit's settings, read once at start-up: which sender, where its
//! token is, how often, what to do with what is missing, which forms.

use std::time::Duration;

use serde::Serialize;
use shared::config::{invalid, number_in, retention_days, secret_arn, ConfigError};
use shared::{Retention, Sender};

pub const SENDER: &str = "SENDER";
pub const SENDER_API_TOKEN_SECRET_ARN: &str = "SENDER_API_TOKEN_SECRET_ARN";
pub const AUDIT_EVERY_HOURS: &str = "AUDIT_EVERY_HOURS";
pub const AUDIT_ACTION: &str = "AUDIT_ACTION";
/// The stack's gate key, by which the audit finds the markers `receipts
/// forget` leaves (`shared::erasure`): no import brings an erased person
/// back. Its own name: `GATE_KEY_SECRET_ARN` is the HubSpot gates'.
pub const ERASURE_KEY_SECRET_ARN: &str = "ERASURE_KEY_SECRET_ARN";
/// Forms to audit, comma-separated; unset: every form in the routes.
pub const AUDIT_FORMS: &str = "AUDIT_FORMS";
pub use shared::sender::listing::SENDER_API_BASE_URL;

/// The field of the schedule's constant input that makes an invocation
/// an audit.
pub const AUDIT_EVENT_FIELD: &str = "audit";
/// Submissions younger than this are left to their webhooks.
pub const SETTLE: Duration = Duration::from_secs(15 * 60);
/// The furthest back an audit reaches (after a long pause), unless the
/// receipts remember less.
pub const LONGEST_BACKLOG: Duration = Duration::from_secs(31 * 24 * 60 * 60);
/// Kept back from the invocation's deadline: the last import's puts and
/// storing the progress.
pub const RESERVE: Duration = Duration::from_secs(3);
/// The least time, beyond [`RESERVE`], worth starting a form with.
pub const SHORTEST_FORM: Duration = Duration::from_secs(2);
/// The attributes of an open window: its end and the forms done in it.
pub const WINDOW_UNTIL: &str = "windowUntil";
pub const FORMS_DONE: &str = "formsDone";
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
    /// The receipts' retention: no import reaches further back.
    pub retention: Retention,
    /// Where the stack's gate key is, to find erasure markers by.
    pub erasure_key_secret_arn: Option<String>,
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
                    format!(
                        "the audit needs a sender whose submissions can be listed: {}",
                        Sender::listing_names()
                    ),
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
            shared::endpoint::check_base_url(url, false)
                .map_err(|problem| invalid(SENDER_API_BASE_URL, problem.to_string()))?;
        }
        Ok(Some(AuditSettings {
            sender,
            token_secret_arn,
            every: Duration::from_secs(hours * 3600),
            action,
            forms,
            base_url,
            retention: retention_days(get)?,
            erasure_key_secret_arn: get(ERASURE_KEY_SECRET_ARN)
                .map(|raw| secret_arn(ERASURE_KEY_SECRET_ARN, &raw))
                .transpose()?,
        }))
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
}
