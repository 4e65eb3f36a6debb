//! Marketing consent, where a route asks for it: which form field is the
//! consent checkbox (`[route.consent]`), what a checked box makes of a new
//! mailing-list member, and what counts as checked. A leaf: a route holds a
//! [`Consent`]; the destinations read the lead's answer and ask
//! [`is_checked`].

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A route's `[route.consent]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Consent {
    /// The form field of the consent checkbox (its name, label, key or ref).
    pub field: String,
    /// What a checked box makes of a new member (Mailchimp); `pending`
    /// (double opt-in) unless the route says otherwise.
    #[serde(default, skip_serializing_if = "ConsentStatus::is_default")]
    pub status: ConsentStatus,
    /// A GDPR-enabled Mailchimp audience's marketing permission a checked
    /// box enables (its `marketing_permission_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marketing_permission: Option<String>,
    /// HubSpot: the subscription type a checked box subscribes the contact
    /// to (its id, digits); no subscription status is set without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription_id: Option<String>,
    /// HubSpot: the legal basis recorded with that status (one of
    /// [`LEGAL_BASES`]; `CONSENT_WITH_NOTICE` unless the route says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legal_basis: Option<String>,
    /// HubSpot: the explanation recorded with it (the consent text, where
    /// it was given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
}

/// HubSpot's legal bases for a subscription status
/// (https://developers.hubspot.com/docs/api-reference/latest/communication-preferences/status/update-subscription).
pub const LEGAL_BASES: [&str; 7] = [
    "CONSENT_WITH_NOTICE",
    "LEGITIMATE_INTEREST_CLIENT",
    "LEGITIMATE_INTEREST_OTHER",
    "LEGITIMATE_INTEREST_PQL",
    "NON_GDPR",
    "PERFORMANCE_OF_CONTRACT",
    "PROCESS_AND_STORE",
];

/// The legal basis a route's subscription is recorded with when it names
/// none: the checkbox is consent given with notice.
pub const DEFAULT_LEGAL_BASIS: &str = "CONSENT_WITH_NOTICE";

impl Consent {
    /// The legal basis to record: the route's, else consent with notice.
    pub fn legal_basis(&self) -> &str {
        self.legal_basis.as_deref().unwrap_or(DEFAULT_LEGAL_BASIS)
    }
}

/// How long after it was made a submission may still grant consent. A
/// person may withdraw consent after submitting (unsubscribe, a marketing
/// permission turned off): a submission delivered later than this (a
/// redrive, an import, a delivery held up by an outage) records its box in
/// its note but grants nothing, so it never re-subscribes someone who
/// opted out meanwhile.
pub const GRANTS_WITHIN: Duration = Duration::from_secs(24 * 3600);

/// Whether a submission made at `submitted_at` (RFC 3339, as
/// `Lead::newest_by` gives it) may grant consent when delivered `now`:
/// within [`GRANTS_WITHIN`] of it, and not from the future by more than a
/// clock's drift. An unreadable time grants nothing.
pub fn may_grant(submitted_at: &str, now: SystemTime) -> bool {
    let Some(made) = crate::time::parse_timestamp(submitted_at) else {
        return false;
    };
    match now.duration_since(made) {
        Ok(age) => age <= GRANTS_WITHIN,
        // Made "after" now: the sender's clock ahead of ours.
        Err(ahead) => ahead.duration() <= CLOCK_DRIFT,
    }
}

/// How far ahead of ours a sender's clock may be.
const CLOCK_DRIFT: Duration = Duration::from_secs(300);

/// A new member's status when the box is checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConsentStatus {
    /// Double opt-in: the list sends a confirmation e-mail, and the person
    /// is subscribed once they confirm.
    #[default]
    Pending,
    /// Subscribed at once: the operator's choice, and their legal
    /// responsibility (the form's wording must be consent).
    Subscribed,
}

impl ConsentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ConsentStatus::Pending => "pending",
            ConsentStatus::Subscribed => "subscribed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(ConsentStatus::Pending),
            "subscribed" => Some(ConsentStatus::Subscribed),
            _ => None,
        }
    }

    fn is_default(&self) -> bool {
        *self == ConsentStatus::default()
    }
}

/// Whether a checkbox's answer is a checked box, as the senders send one:
/// `true`, a text such as `on`, `yes`, `true`, `1` or `checked` (any case),
/// the number 1, or a list with at least one choice. Anything else,
/// missing included, is not: an unchecked or missing box never subscribes
/// anyone.
pub fn is_checked(answer: Option<&Value>) -> bool {
    match answer {
        Some(Value::Bool(checked)) => *checked,
        Some(Value::String(text)) => matches!(
            text.trim().to_ascii_lowercase().as_str(),
            "on" | "yes" | "y" | "true" | "1" | "checked" | "x"
        ),
        Some(Value::Number(number)) => number.as_u64() == Some(1),
        Some(Value::Array(choices)) => choices.iter().any(|choice| match choice {
            Value::String(text) => !text.trim().is_empty(),
            Value::Null | Value::Bool(false) => false,
            _ => true,
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_submission_delivered_within_a_day_of_it_grants_consent() {
        let now = crate::time::parse_timestamp("2026-12-05T12:00:00.000Z").unwrap();
        let rows = [
            ("2026-12-05T11:59:00.000Z", true),
            ("2026-12-04T12:00:00.000Z", true),
            ("2026-12-04T11:59:59.000Z", false),
            ("2026-11-05T12:00:00.000Z", false),
            ("2026-12-05T12:04:00.000Z", true),
            ("2026-12-05T12:06:00.000Z", false),
            ("yesterday", false),
        ];
        for (made, grants) in rows {
            assert_eq!(may_grant(made, now), grants, "{made}");
        }
    }
    use serde_json::json;

    #[test]
    fn only_a_checked_box_is_consent() {
        let rows = [
            (Some(json!(true)), true),
            (Some(json!("on")), true),
            (Some(json!(" Yes ")), true),
            (Some(json!("TRUE")), true),
            (Some(json!("1")), true),
            (Some(json!("checked")), true),
            (Some(json!(1)), true),
            (Some(json!(["I agree to receive news"])), true),
            (None, false),
            (Some(json!(null)), false),
            (Some(json!(false)), false),
            (Some(json!("")), false),
            (Some(json!("off")), false),
            (Some(json!("no")), false),
            (Some(json!("false")), false),
            (Some(json!(0)), false),
            (Some(json!(2)), false),
            (Some(json!([])), false),
            (Some(json!([""])), false),
            (Some(json!({"checked": true})), false),
        ];
        for (answer, checked) in rows {
            assert_eq!(is_checked(answer.as_ref()), checked, "{answer:?}");
        }
    }
}
