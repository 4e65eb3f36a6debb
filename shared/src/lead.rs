//! The lead the worker upserts, built from a stored receipt. The submission
//! id is its external id, so every run for one receipt targets one lead.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::newest::SenderTime;
use crate::receipt::Receipt;
use crate::routes::Route;
use crate::sender::Sender;

/// Attribute names of a lead item in the stack's leads table
/// (`DESTINATION=dynamodb`): written by the worker, read and deleted by
/// `receipts forget`.
pub mod attr {
    pub const PK: &str = "pk";
    pub const RECEIVED_AT: &str = "receivedAt";
    pub const SUBMITTED_AT: &str = "submittedAt";
    /// The time that orders submissions (`Lead::newest_by`).
    pub const NEWEST_BY: &str = "newestBy";
    /// The TTL attribute (epoch seconds), written only with
    /// `LEAD_RETENTION_DAYS`.
    pub const EXPIRES_AT: &str = "expiresAt";
    /// The address as sent: `receipts forget` finds a person's rows by it.
    pub const EMAIL: &str = "email";
}

pub use crate::fields::OWN_FIELDS;
use crate::fields::{EMAIL, MESSAGE, NAME};

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Lead {
    pub external_id: String,
    pub name: String,
    pub email: String,
    pub message: String,
    /// Every other form field, as sent (Static Forms), or under its label
    /// or lead-field name (`phone`, `company`, `firstName`...: see
    /// `Sender::answers`).
    pub fields: Map<String, Value>,
    /// Other names a field may be given in `FIELD_MAP` (a Tally key, a
    /// Typeform ref or id): (alias, name in `fields`). Not sent.
    #[serde(skip)]
    pub aliases: Vec<(String, String)>,
    /// When the receipt was stored (RFC 3339, UTC, milliseconds).
    pub received_at: String,
    /// When the sender says the form was submitted (`Sender::submitted_at`),
    /// in the same format; absent when the sender says nothing. Never
    /// later than the arrival plus `newest::SENDER_CLOCK_SKEW`: a later
    /// stamp is replaced by the arrival (`sender_time_replaced`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submitted_at: Option<String>,
    /// The sender's stamp was in the future and the arrival stands in for
    /// it: the worker logs it (the submission id only). Not sent.
    #[serde(skip)]
    pub sender_time_replaced: bool,
    /// The route of the lead's form (`routes.toml`), when it has one
    /// (`follow`). Its `set` constants are in `fields` already; a CRM that
    /// maps fields adds its `fields` and `set` to its map
    /// (`FieldMap::apply`). Not sent.
    #[serde(skip)]
    pub route: Option<Arc<Route>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LeadError {
    #[error("the receipt's payload is not a JSON object")]
    UnreadablePayload,
    /// Removed: the lead was delivered, or the person forgotten.
    #[error("the receipt holds no payload")]
    NoPayload,
    #[error("the receipt's key names no sender this version knows")]
    UnknownSender,
}

impl Lead {
    /// Missing form fields become empty strings: a lead with a blank name is
    /// still a lead. Only a payload that is not JSON at all is an error.
    pub fn from_receipt(receipt: &Receipt) -> Result<Self, LeadError> {
        let sender = Sender::of_key(&receipt.pk).ok_or(LeadError::UnknownSender)?;
        let text = receipt.payload.as_deref().ok_or(LeadError::NoPayload)?;
        let payload: Value =
            serde_json::from_str(text).map_err(|_| LeadError::UnreadablePayload)?;
        if !payload.is_object() {
            return Err(LeadError::UnreadablePayload);
        }
        let answers = sender.answers(&payload);
        let mut fields = answers.fields;
        let mut take = |name: &str| fields.remove(name).map(text_of).unwrap_or_default();
        let name = take(NAME);
        let email = take(EMAIL);
        let message = take(MESSAGE);
        let sender_time = SenderTime::bounded(sender.submitted_at(&payload), &receipt.received_at);
        let sender_time_replaced = matches!(sender_time, SenderTime::Replaced(_));
        Ok(Lead {
            external_id: receipt.submission_id.clone(),
            name,
            email,
            message,
            fields,
            aliases: answers.aliases,
            received_at: receipt.received_at.clone(),
            submitted_at: sender_time.into_stamp(),
            sender_time_replaced,
            route: None,
        })
    }

    /// Delivers this lead by its form's route: the route's constants become
    /// fields (over a form field of the same name: they are the route's
    /// word on every lead of the form), and a CRM that maps fields reads
    /// the route's map.
    pub fn follow(&mut self, route: Arc<Route>) {
        for (property, value) in &route.set {
            self.fields.insert(property.clone(), value.clone());
        }
        self.route = Some(route);
    }

    /// The time that decides which of two submissions is newer (`LEAD_KEY=
    /// email`): the sender's own time when it sent one, so a delayed retry
    /// of an older submission never beats a newer one; else when the
    /// receipt was stored. Both are RFC 3339 text that sorts in time order.
    pub fn newest_by(&self) -> &str {
        self.submitted_at.as_deref().unwrap_or(&self.received_at)
    }

    /// A form field's answer as sent, by its name in `fields` or another
    /// of its names (a Tally key, a Typeform ref or id).
    pub fn answer(&self, name: &str) -> Option<&Value> {
        self.fields.get(name).or_else(|| {
            let (_, known) = self.aliases.iter().find(|(alias, _)| alias == name)?;
            self.fields.get(known)
        })
    }

    /// The email as a key: trimmed and lower-cased, `None` when blank.
    pub fn normalised_email(&self) -> Option<String> {
        normalise_email(&self.email)
    }
}

/// An e-mail address as the pipeline compares them (a lead's key, a
/// newest-wins gate, `receipts forget`): trimmed and lower-cased; `None`
/// when blank.
pub fn normalise_email(address: &str) -> Option<String> {
    let email = address.trim().to_lowercase();
    (!email.is_empty()).then_some(email)
}

/// The normalised e-mail of the lead a receipt carries; `None` when it has
/// no payload or no address.
pub fn email_of(receipt: &Receipt) -> Option<String> {
    Lead::from_receipt(receipt).ok()?.normalised_email()
}

/// A form value as text: strings as they are, null as empty, anything else
/// as its JSON text.
fn text_of(value: Value) -> String {
    match value {
        Value::String(text) => text,
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receipt::ReceiptStatus;
    use serde_json::json;

    fn receipt_with(payload: &str) -> Receipt {
        serde_json::from_value(json!({
            "pk": "staticforms:form.submitted:sub_1",
            "event": "form.submitted",
            "submissionId": "sub_1",
            "payload": payload,
            "status": ReceiptStatus::Received,
            "receivedAt": "2026-11-29T08:00:00.000Z",
        }))
        .unwrap()
    }

    /// A case name, the payload, and the name, email, message and extra
    /// fields expected (or the error).
    type LeadCase = (
        &'static str,
        String,
        Result<(&'static str, &'static str, &'static str, Value), LeadError>,
    );

    #[test]
    fn lead_rules() {
        let full = json!({"data": {"formData": {"name": "Ada", "email": "ada@example.com", "message": "Hi", "company": "AE", "seats": 3}}});
        let cases: Vec<LeadCase> = vec![
            (
                "all fields",
                full.to_string(),
                Ok((
                    "Ada",
                    "ada@example.com",
                    "Hi",
                    json!({"company": "AE", "seats": 3}),
                )),
            ),
            (
                "no form data",
                json!({"data": {}}).to_string(),
                Ok(("", "", "", json!({}))),
            ),
            (
                "form data not an object",
                json!({"data": {"formData": [1]}}).to_string(),
                Ok(("", "", "", json!({}))),
            ),
            (
                "null and number values",
                json!({"data": {"formData": {"name": null, "email": 5}}}).to_string(),
                Ok(("", "5", "", json!({}))),
            ),
            (
                "payload not JSON",
                "{oops".to_owned(),
                Err(LeadError::UnreadablePayload),
            ),
            (
                "payload not an object",
                "[]".to_owned(),
                Err(LeadError::UnreadablePayload),
            ),
        ];
        for (case, payload, expected) in cases {
            let got = Lead::from_receipt(&receipt_with(&payload));
            match expected {
                Ok((name, email, message, fields)) => {
                    let lead = got.unwrap_or_else(|e| panic!("case {case}: {e}"));
                    assert_eq!(lead.external_id, "sub_1", "case {case}");
                    assert_eq!(lead.received_at, "2026-11-29T08:00:00.000Z", "case {case}");
                    assert_eq!(
                        (
                            lead.name.as_str(),
                            lead.email.as_str(),
                            lead.message.as_str()
                        ),
                        (name, email, message),
                        "case {case}"
                    );
                    assert_eq!(Value::Object(lead.fields), fields, "case {case}");
                }
                Err(error) => assert_eq!(got, Err(error), "case {case}"),
            }
        }
        let mut delivered = receipt_with("{}");
        delivered.remove_personal_data();
        assert_eq!(Lead::from_receipt(&delivered), Err(LeadError::NoPayload));
    }

    #[test]
    fn the_senders_time_decides_which_submission_is_newer() {
        let rows = [
            // envelope timestamp, submittedAt, newest_by
            (
                json!(1_764_403_128),
                Some("2025-11-29T07:58:48.000Z"),
                "2025-11-29T07:58:48.000Z",
            ),
            (json!(null), None, "2026-11-29T08:00:00.000Z"),
            (json!("1764403128"), None, "2026-11-29T08:00:00.000Z"),
            (json!(1_764_403_128.5), None, "2026-11-29T08:00:00.000Z"),
            (json!(-1), None, "2026-11-29T08:00:00.000Z"),
            (json!(5), None, "2026-11-29T08:00:00.000Z"),
            (json!(u64::MAX), None, "2026-11-29T08:00:00.000Z"),
        ];
        for (timestamp, submitted, newest) in rows {
            let payload = json!({"timestamp": timestamp, "data": {}}).to_string();
            let lead = Lead::from_receipt(&receipt_with(&payload)).unwrap();
            assert_eq!(lead.submitted_at.as_deref(), submitted, "{timestamp}");
            assert_eq!(lead.newest_by(), newest, "{timestamp}");
        }
        // A delayed retry of an older submission, received after a newer one,
        // is still the older by the sender's time.
        let older = json!({"timestamp": 1_764_403_000, "data": {}}).to_string();
        let newer = json!({"timestamp": 1_764_403_100, "data": {}}).to_string();
        let mut late_retry = receipt_with(&older);
        late_retry.received_at = "2026-11-29T09:00:00.000Z".into();
        let mut first = receipt_with(&newer);
        first.received_at = "2026-11-29T08:00:00.000Z".into();
        let (late_retry, first) = (
            Lead::from_receipt(&late_retry).unwrap(),
            Lead::from_receipt(&first).unwrap(),
        );
        assert!(late_retry.received_at > first.received_at);
        assert!(late_retry.newest_by() < first.newest_by());
    }

    #[test]
    fn a_planted_future_time_never_outranks_a_later_genuine_submission() {
        // 9999-12-31: a sender's clock error, or a date anyone holding the
        // webhook's URL can plant.
        let planted = json!({"timestamp": 253_402_214_400u64, "data": {}}).to_string();
        let genuine = json!({"timestamp": 1_764_403_300, "data": {}}).to_string();
        let mut planted = receipt_with(&planted);
        planted.received_at = "2025-11-29T08:00:00.000Z".into();
        let mut genuine = receipt_with(&genuine);
        genuine.received_at = "2025-11-29T08:01:41.000Z".into();
        let (planted, genuine) = (
            Lead::from_receipt(&planted).unwrap(),
            Lead::from_receipt(&genuine).unwrap(),
        );
        assert!(planted.sender_time_replaced);
        assert_eq!(planted.newest_by(), "2025-11-29T08:00:00.000Z");
        assert!(!genuine.sender_time_replaced);
        assert!(genuine.newest_by() > planted.newest_by());
    }

    #[test]
    fn email_normalisation() {
        let mut lead = Lead::from_receipt(&receipt_with("{}")).unwrap();
        for (raw, expected) in [
            (" Ada@Example.COM ", Some("ada@example.com")),
            ("", None),
            ("   ", None),
        ] {
            lead.email = raw.into();
            assert_eq!(lead.normalised_email().as_deref(), expected, "{raw:?}");
        }
    }

    #[test]
    fn lead_json_uses_camel_case() {
        let lead =
            Lead::from_receipt(&receipt_with(r#"{"data":{"formData":{"name":"Ada"}}}"#)).unwrap();
        let json = serde_json::to_value(&lead).unwrap();
        assert_eq!(json["externalId"], "sub_1");
        assert_eq!(json["receivedAt"], "2026-11-29T08:00:00.000Z");
        assert_eq!(json["name"], "Ada");
    }

    /// A route's constants become fields, over a form field of the same
    /// name, so the `http` and `dynamodb` destinations carry them as they
    /// carry the rest; the route itself is never sent.
    #[test]
    fn a_route_gives_its_constants_as_fields() {
        let payload = json!({"data": {"formData": {"name": "Ada", "email": "ada@example.com", "lead_source": "typed", "plan": "Pro"}}});
        let mut lead = Lead::from_receipt(&receipt_with(&payload.to_string())).unwrap();
        let routes = crate::routes::parse(
            "[[route]]\nform = \"f\"\n[route.set]\nlead_source = \"Pricing page\"\nscore = 10\n",
        )
        .unwrap();
        lead.follow(std::sync::Arc::new(routes.routes[0].clone()));
        let json = serde_json::to_value(&lead).unwrap();
        assert_eq!(
            json["fields"],
            json!({"lead_source": "Pricing page", "plan": "Pro", "score": 10})
        );
        assert!(json.get("route").is_none(), "{json}");
        assert_eq!(json["email"], "ada@example.com");
    }
}
