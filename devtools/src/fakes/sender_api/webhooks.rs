//! The webhook each sender whose API the fake serves sends for a
//! submission it keeps, in the shape its vendor's pages show (cited in the
//! parent module and in each sender's `shared::sender` module), with the
//! same answers the fake's listing gives: what arrived by webhook and what
//! `receipts import` reads from the listing must be the same submission.

use serde_json::{json, Value};
use shared::receipt::format_timestamp;

use super::{formspree_date, Kept, FAKE_SITE};

/// Tally's `FORM_RESPONSE` (https://tally.so/help/webhooks, "Example
/// webhook event"), its fields keyed as its listing's questions.
pub(super) fn tally(form: &str, kept: &Kept) -> Value {
    let at = format_timestamp(kept.submitted_at);
    json!({
        "eventId": format!("ev-{}", kept.id), "eventType": "FORM_RESPONSE", "createdAt": at,
        "data": {"responseId": kept.id, "submissionId": kept.id, "respondentId": "r1", "formId": form,
                 "formName": "Contact", "createdAt": at, "fields": [
            {"key": "question_qName", "label": "Name", "type": "INPUT_TEXT", "value": kept.name},
            {"key": "question_qEmail", "label": "Email", "type": "INPUT_EMAIL", "value": kept.email},
            {"key": "question_qMessage", "label": "Message", "type": "TEXTAREA", "value": kept.message}]}
    })
}

/// Typeform's `form_response`, its definition the fake's form's.
pub(super) fn typeform(form: &str, kept: &Kept) -> Value {
    let at = format_timestamp(kept.submitted_at);
    let field =
        |id: &str, kind: &str, reference: &str| json!({"id": id, "type": kind, "ref": reference});
    json!({
        "event_id": format!("ev-{}", kept.id), "event_type": "form_response",
        "form_response": {"form_id": form, "token": kept.id, "landed_at": at, "submitted_at": at,
            "hidden": {},
            "definition": {"id": form, "title": "Contact", "fields": [
                {"id": "fName", "title": "Name", "type": "short_text", "ref": "name"},
                {"id": "fEmail", "title": "Email", "type": "email", "ref": "email"},
                {"id": "fMessage", "title": "Message", "type": "long_text", "ref": "message"}]},
            "answers": [
                {"type": "text", "text": kept.name, "field": field("fName", "short_text", "name")},
                {"type": "email", "email": kept.email, "field": field("fEmail", "email", "email")},
                {"type": "text", "text": kept.message, "field": field("fMessage", "long_text", "message")}]}
    })
}

/// Webflow's `form_submission`, on the one site the fake's token reads.
pub(super) fn webflow(form: &str, kept: &Kept) -> Value {
    json!({"triggerType": "form_submission", "payload": {
        "name": "Contact", "siteId": FAKE_SITE, "formId": form, "id": kept.id,
        "submittedAt": format_timestamp(kept.submitted_at),
        "data": {"Name": kept.name, "email": kept.email, "Message": kept.message}}})
}

/// Netlify's: the submission as its API lists it.
pub(super) fn netlify(form: &str, kept: &Kept) -> Value {
    json!({"id": kept.id, "number": 1, "email": kept.email, "name": kept.name,
        "data": {"name": kept.name, "email": kept.email, "message": kept.message, "ip": "192.0.2.1"},
        "created_at": format_timestamp(kept.submitted_at), "form_id": form, "form_name": "contact"})
}

/// Formspree's names the form and the fields with their `_date`, from
/// which its stable id is derived.
pub(super) fn formspree(form: &str, kept: &Kept) -> Value {
    json!({"form": form, "keys": ["name", "email", "message"], "submission": {
        "_date": formspree_date(kept.submitted_at),
        "name": kept.name, "email": kept.email, "message": kept.message}})
}
