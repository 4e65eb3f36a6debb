//! A route's `[route.consent]` table, read and checked.

use super::Problems;
use crate::consent::{Consent, ConsentStatus};

/// A route's `[route.consent]`: its checkbox `field`, the `status` a
/// checked box gives a new member (`pending`, or `subscribed`), and the
/// Mailchimp marketing permission it enables.
pub(super) fn consent(
    value: &toml::Value,
    place: &str,
    problems: &mut Problems,
) -> Option<Consent> {
    let Some(table) = value.as_table() else {
        problems.add(
            place,
            "consent",
            "must be a table: [route.consent] with field and status",
        );
        return None;
    };
    let keys = [
        "field",
        "status",
        "marketing_permission",
        "subscription_id",
        "legal_basis",
        "explanation",
    ];
    for key in table.keys().filter(|key| !keys.contains(&key.as_str())) {
        problems.add(
            place,
            &format!("consent.{key}"),
            "unknown key: consent has field, status, marketing_permission, subscription_id, legal_basis and explanation",
        );
    }
    let text =
        |key: &str, valid: &dyn Fn(&str) -> bool, why: &str, problems: &mut Problems| match table
            .get(key)
        {
            None => Some(None),
            Some(toml::Value::String(text)) if valid(text.trim()) => {
                Some(Some(text.trim().to_owned()))
            }
            Some(_) => {
                problems.add(place, &format!("consent.{key}"), why);
                None
            }
        };
    let subscription_id = text(
        "subscription_id",
        &|id| !id.is_empty() && id.len() <= 20 && id.bytes().all(|b| b.is_ascii_digit()),
        "must be a HubSpot subscription type's id (digits)",
        problems,
    )?;
    let legal_basis = text(
        "legal_basis",
        &|basis| crate::consent::LEGAL_BASES.contains(&basis),
        "must be one of HubSpot's legal bases: CONSENT_WITH_NOTICE, LEGITIMATE_INTEREST_CLIENT, LEGITIMATE_INTEREST_OTHER, LEGITIMATE_INTEREST_PQL, NON_GDPR, PERFORMANCE_OF_CONTRACT, PROCESS_AND_STORE",
        problems,
    )?;
    let explanation = text(
        "explanation",
        &|text| !text.is_empty() && text.chars().count() <= 1000,
        "must be a text of 1 to 1000 characters",
        problems,
    )?;
    let field = match table.get("field") {
        Some(toml::Value::String(field)) if !field.trim().is_empty() => field.trim().to_owned(),
        _ => {
            problems.add(
                place,
                "consent.field",
                "must name the form's consent checkbox",
            );
            return None;
        }
    };
    let status = match table.get("status") {
        None => ConsentStatus::default(),
        Some(toml::Value::String(text)) if ConsentStatus::parse(text).is_some() => {
            ConsentStatus::parse(text)?
        }
        Some(_) => {
            problems.add(
                place,
                "consent.status",
                "must be \"pending\" (double opt-in) or \"subscribed\"",
            );
            return None;
        }
    };
    let marketing_permission = match table.get("marketing_permission") {
        None => None,
        Some(toml::Value::String(id))
            if !id.trim().is_empty() && id.trim().bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            Some(id.trim().to_owned())
        }
        Some(_) => {
            problems.add(
                place,
                "consent.marketing_permission",
                "must be a marketing permission's id (letters and digits)",
            );
            return None;
        }
    };
    Some(Consent {
        field,
        status,
        marketing_permission,
        subscription_id,
        legal_basis,
        explanation,
    })
}
