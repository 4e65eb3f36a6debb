//! The new-lead notice: one JSON POST to the stack's notice URL (a Slack or
//! Microsoft Teams incoming webhook, or any URL taking JSON) for each lead
//! written to the CRM, saying which form, when, where the record is and
//! which receipt, and nothing the person wrote: no name, no address, no
//! answer. The worker keeps its state on the receipt (`notice`), so a
//! notice is sent once, after the lead is written, and a failed one is
//! sent again by later passes without touching the CRM again.

use serde_json::{json, Value};

/// The notice URL itself (local use and tests).
pub const NOTIFY_URL: &str = "NOTIFY_URL";
/// The Secrets Manager secret holding it (a deployed stack).
pub const NOTIFY_URL_SECRET_ARN: &str = "NOTIFY_URL_SECRET_ARN";

/// A receipt's `notice` while its notice waits to be sent (it is then in
/// the queue index's [`crate::receipt::NOTICE`] partition).
pub const PENDING: &str = "PENDING";
/// The endpoint accepted it.
pub const SENT: &str = "SENT";
/// It was sent, or may have been, and no answer was recorded (the
/// endpoint did not answer in time, or the worker stopped between the
/// request and its record): never sent again, so no lead is announced
/// twice; the log and `receipts show` say so.
pub const UNCONFIRMED: &str = "UNCONFIRMED";

/// What a notice says: nothing the person wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts<'a> {
    /// The form's route name, when its route has one.
    pub form: Option<&'a str>,
    /// When the receipt was stored (RFC 3339).
    pub received_at: &'a str,
    /// The destination's catalog name (`hubspot`).
    pub destination: &'a str,
    pub record_id: Option<&'a str>,
    pub record_url: Option<&'a str>,
    /// The receipt's key (`receipts show` takes its submission id).
    pub receipt: &'a str,
}

/// The JSON body: `text` for chat webhooks (Slack and Teams read it),
/// `lead` with the same facts for any other endpoint.
pub fn body(facts: &Facts<'_>) -> Value {
    let form = facts
        .form
        .map_or_else(|| "a form".to_owned(), |name| format!("{name:?}"));
    let record = match (facts.record_id, facts.record_url) {
        (_, Some(url)) => format!(" {url}"),
        (Some(id), None) => format!(" (record {id})"),
        (None, None) => String::new(),
    };
    let text = format!(
        "New lead from {form}, received {}, in {}{record}. Receipt {}.",
        facts.received_at, facts.destination, facts.receipt
    );
    json!({
        "text": text,
        "lead": {
            "form": facts.form,
            "receivedAt": facts.received_at,
            "destination": facts.destination,
            "recordId": facts.record_id,
            "recordUrl": facts.record_url,
            "receipt": facts.receipt,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_says_where_the_lead_is_and_nothing_the_person_wrote() {
        let facts = Facts {
            form: Some("Pricing page"),
            received_at: "2026-12-04T10:00:00.000Z",
            destination: "hubspot",
            record_id: Some("901"),
            record_url: Some("https://app.hubspot.com/contacts/1/record/0-1/901"),
            receipt: "staticforms:form.submitted:sub_1",
        };
        let rows: [(Facts, &str); 3] = [
            (
                facts,
                "New lead from \"Pricing page\", received 2026-12-04T10:00:00.000Z, in hubspot https://app.hubspot.com/contacts/1/record/0-1/901. Receipt staticforms:form.submitted:sub_1.",
            ),
            (
                Facts { record_url: None, form: None, ..facts },
                "New lead from a form, received 2026-12-04T10:00:00.000Z, in hubspot (record 901). Receipt staticforms:form.submitted:sub_1.",
            ),
            (
                Facts { record_url: None, record_id: None, ..facts },
                "New lead from \"Pricing page\", received 2026-12-04T10:00:00.000Z, in hubspot. Receipt staticforms:form.submitted:sub_1.",
            ),
        ];
        for (facts, text) in rows {
            let body = body(&facts);
            assert_eq!(body["text"], text);
            assert_eq!(body["lead"]["receipt"], facts.receipt);
            assert_eq!(body.as_object().unwrap().len(), 2, "text and lead only");
        }
    }
}
