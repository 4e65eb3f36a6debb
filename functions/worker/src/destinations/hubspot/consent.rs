//! A checked consent box, recorded where marketing reads it: the contact's
//! subscription status for the route's subscription type, with its legal
//! basis and explanation, set after the contact is written. Setting a
//! status the contact has already is a no-op at HubSpot
//! (`setStatusSuccessReason: NO_STATUS_CHANGE`), so a redelivery records
//! no second subscription event. An unchecked or missing box sets nothing:
//! no form ever unsubscribes anyone. A stale submission, or one delivered
//! more than a day after it was made, sets nothing either
//! (`Write::grants_consent`): the person may have opted out since. Built from HubSpot's page
//! (`POST /communication-preferences/{version}/statuses/{subscriberIdString}`
//! with `channel`, `statusState`, `subscriptionId`, `legalBasis`,
//! `legalBasisExplanation`):
//! <https://developers.hubspot.com/docs/api-reference/latest/communication-preferences/status/update-subscription>.

use reqwest::Method;
use serde_json::{json, Value};
use shared::consent::is_checked;
use shared::Lead;

use super::calls::{fail_where_failed, unbuildable, Calls};
use super::{ApiVersion, HubSpot};
use crate::destinations::port::{Answer, CallDeadline, DestinationError, Write};

impl HubSpot {
    /// Each written lead's checked consent box as its contact's
    /// subscription status, where the write grants consent (the person's
    /// newest submission, delivered soon after it was made: never a stale
    /// one, a late redrive or an import), at most `concurrency` at once; a status that
    /// fails makes its write's answer that failure (the next attempt
    /// upserts the same contact again, then sets the same status).
    pub(super) async fn set_subscriptions(
        &self,
        writes: &[Write<'_>],
        answers: &mut [Answer],
        concurrency: usize,
        deadline: CallDeadline,
    ) {
        let calls = Calls {
            hubspot: self,
            deadline,
            refused: "SUBSCRIPTION_REFUSED",
        };
        let calls = &calls;
        let jobs: Vec<_> = writes
            .iter()
            .enumerate()
            .filter(|(slot, write)| answers[*slot].result.is_ok() && write.grants_consent)
            .filter_map(|(slot, write)| Some((slot, subscription(write.lead)?)))
            .map(|(slot, (email, body))| async move {
                (slot, self.subscribe(calls, &email, &body).await)
            })
            .collect();
        fail_where_failed(answers, jobs, concurrency).await;
    }

    async fn subscribe(
        &self,
        calls: &Calls<'_>,
        email: &str,
        body: &Value,
    ) -> Result<(), DestinationError> {
        let mut url = calls.url(statuses_path(&self.api_version))?;
        url.path_segments_mut()
            .map_err(|_| unbuildable())?
            .push(email);
        match calls.call(Method::POST, url, Some(body)).await? {
            Some(_) => Ok(()),
            // No such subscription type (or subscriber): the route names
            // one the portal does not have.
            None => Err(DestinationError::Misconfigured {
                status: Some(404),
                reason: "SUBSCRIPTION_TYPE_NOT_FOUND".to_owned(),
            }),
        }
    }
}

/// Where statuses are set: the date version this module was built from, or
/// v4 (the same body) for a portal on the legacy `v3` paths.
fn statuses_path(version: &ApiVersion) -> &'static str {
    match version {
        ApiVersion::V3 => "/communication-preferences/v4/statuses",
        ApiVersion::Dated(_) => "/communication-preferences/2026-03/statuses",
    }
}

/// The status call a lead asks for: its address and the body, when its
/// route names a subscription type and its consent box is checked. Pure.
pub(super) fn subscription(lead: &Lead) -> Option<(String, Value)> {
    let consent = lead.route.as_deref()?.consent.as_ref()?;
    let subscription_id = consent.subscription_id.as_deref()?;
    if !is_checked(lead.answer(&consent.field)) {
        return None;
    }
    let email = lead.normalised_email()?;
    let mut body = json!({
        "channel": "EMAIL",
        "statusState": "SUBSCRIBED",
        "subscriptionId": subscription_id.parse::<u64>().ok()?,
        "legalBasis": consent.legal_basis(),
    });
    if let Some(explanation) = &consent.explanation {
        body["legalBasisExplanation"] = Value::from(explanation.as_str());
    }
    Some((email, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::consent::Consent;
    use shared::routes::Route;
    use std::sync::Arc;

    fn lead(answer: Value, consent: Consent) -> Lead {
        let mut fields = serde_json::Map::new();
        fields.insert("newsletter".to_owned(), answer);
        Lead {
            external_id: "sub_1".to_owned(),
            name: "Ada".to_owned(),
            email: "Ada@Example.com".to_owned(),
            message: String::new(),
            fields,
            aliases: Vec::new(),
            received_at: "2026-11-30T08:00:00.000Z".to_owned(),
            submitted_at: None,
            sender_time_replaced: false,
            route: Some(Arc::new(Route {
                consent: Some(consent),
                ..Route::default()
            })),
        }
    }

    fn consent(subscription_id: Option<&str>) -> Consent {
        Consent {
            field: "newsletter".to_owned(),
            status: Default::default(),
            marketing_permission: None,
            subscription_id: subscription_id.map(str::to_owned),
            legal_basis: None,
            explanation: Some("Ticked on the pricing form".to_owned()),
        }
    }

    #[test]
    fn a_checked_box_asks_for_one_status_with_its_legal_basis() {
        let (email, body) = subscription(&lead(json!("on"), consent(Some("12345")))).unwrap();
        assert_eq!(email, "ada@example.com");
        assert_eq!(
            body,
            json!({"channel": "EMAIL", "statusState": "SUBSCRIBED", "subscriptionId": 12345,
                   "legalBasis": "CONSENT_WITH_NOTICE", "legalBasisExplanation": "Ticked on the pricing form"})
        );
        // Unchecked, missing, or a route without a subscription type: none.
        assert_eq!(
            subscription(&lead(json!(false), consent(Some("12345")))),
            None
        );
        assert_eq!(
            subscription(&lead(Value::Null, consent(Some("12345")))),
            None
        );
        assert_eq!(subscription(&lead(json!("on"), consent(None))), None);
        let no_route = Lead {
            route: None,
            ..lead(json!("on"), consent(Some("12345")))
        };
        assert_eq!(subscription(&no_route), None);
        assert_eq!(
            statuses_path(&ApiVersion::V3),
            "/communication-preferences/v4/statuses"
        );
    }
}
