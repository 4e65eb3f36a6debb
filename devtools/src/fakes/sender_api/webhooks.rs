//! What each sender sends, as its vendor's pages show it (each sender's
//! `shared::sender` module cites them): the webhook for a submission and,
//! for a sender that signs, its signing steps in Python (the stdlib's
//! `hmac`, as the vendors' own Python snippets use, and PyJWT for
//! Netlify's JWS). These are the tests' oracle, written apart from the
//! stack's parsers and verifiers, never calling them. A sender of its own
//! module (`jotform.rs`) keeps its parts there.

use serde_json::{json, Value};
use shared::receipt::format_timestamp;

use super::{formspree_date, Kept, Signer, FAKE_SITE};

/// `kept`'s name split as a form asks for it: first, then the rest.
fn first_and_last(kept: &Kept) -> (&str, &str) {
    kept.name.split_once(' ').unwrap_or((&kept.name, ""))
}

/// Static Forms' `form.submitted`
/// (https://www.staticforms.dev/docs/webhooks); the form's key is the
/// stack's concern (`data.apiKey`), not the webhook's.
pub(super) fn staticforms(_form: &str, kept: &Kept) -> Value {
    let seconds = kept
        .submitted_at
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let mut fields = json!({"name": kept.name, "email": kept.email, "message": kept.message});
    if let Some(campaign) = &kept.campaign {
        fields["utm_campaign"] = json!(campaign);
    }
    json!({"event": "form.submitted", "timestamp": seconds, "data": {
        "submissionId": kept.id, "formData": fields, "recipientEmail": kept.email, "attachments": []}})
}

/// Tally's `FORM_RESPONSE` (https://tally.so/help/webhooks, "Example
/// webhook event"), its fields keyed as its listing's questions, with a
/// choice and the campaign as a hidden field.
pub(super) fn tally(form: &str, kept: &Kept) -> Value {
    let at = format_timestamp(kept.submitted_at);
    let mut fields = vec![
        json!({"key": "question_qName", "label": "Name", "type": "INPUT_TEXT", "value": kept.name}),
        json!({"key": "question_qEmail", "label": "Email", "type": "INPUT_EMAIL", "value": kept.email}),
        json!({"key": "question_qMessage", "label": "Message", "type": "TEXTAREA", "value": kept.message}),
        json!({"key": "question_qPlan", "label": "Plan", "type": "MULTIPLE_CHOICE", "value": ["o2"],
               "options": [{"id": "o1", "text": "Starter"}, {"id": "o2", "text": "Business"}]}),
    ];
    if let Some(campaign) = &kept.campaign {
        fields.push(json!({"key": "question_qUtm", "label": "utm_campaign", "type": "HIDDEN_FIELDS", "value": campaign}));
    }
    json!({
        "eventId": format!("ev-{}", kept.id), "eventType": "FORM_RESPONSE", "createdAt": at,
        "data": {"responseId": kept.id, "submissionId": kept.id, "respondentId": "r1", "formId": form,
                 "formName": "Contact", "createdAt": at, "fields": fields}
    })
}

/// Typeform's `form_response`
/// (https://www.typeform.com/developers/webhooks/example-payload/), its
/// definition the fake's form's, the campaign in `hidden`.
pub(super) fn typeform(form: &str, kept: &Kept) -> Value {
    let at = format_timestamp(kept.submitted_at);
    let field =
        |id: &str, kind: &str, reference: &str| json!({"id": id, "type": kind, "ref": reference});
    let hidden = match &kept.campaign {
        Some(campaign) => json!({"utm_campaign": campaign}),
        None => json!({}),
    };
    json!({
        "event_id": format!("ev-{}", kept.id), "event_type": "form_response",
        "form_response": {"form_id": form, "token": kept.id, "landed_at": at, "submitted_at": at,
            "hidden": hidden,
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

/// Webflow's `form_submission`
/// (https://developers.webflow.com/data/reference/webhooks/events/form-submission),
/// on the one site the fake's token reads; fields by their Designer names.
pub(super) fn webflow(form: &str, kept: &Kept) -> Value {
    let (first, last) = first_and_last(kept);
    let mut data = json!({"First Name": first, "Last Name": last, "email": kept.email,
                          "Message": kept.message});
    if let Some(campaign) = &kept.campaign {
        data["UTM Campaign"] = json!(campaign);
    }
    json!({"triggerType": "form_submission", "payload": {
        "name": "Contact", "siteId": FAKE_SITE, "formId": form, "formElementId": "4e038d2c",
        "id": kept.id, "submittedAt": format_timestamp(kept.submitted_at), "schema": [], "data": data}})
}

/// Formspree's names the form and the fields with their `_date`, from
/// which its stable id is derived.
pub(super) fn formspree(form: &str, kept: &Kept) -> Value {
    let mut submission = json!({"_date": formspree_date(kept.submitted_at),
        "name": kept.name, "email": kept.email, "message": kept.message});
    let mut keys = vec!["name", "email", "message"];
    if let Some(campaign) = &kept.campaign {
        submission["utm_campaign"] = json!(campaign);
        keys.push("utm_campaign");
    }
    json!({"form": form, "keys": keys, "submission": submission})
}

/// Netlify's outgoing webhook: the submission as its API lists it
/// (https://open-api.netlify.com/#tag/submission), with the fields a form
/// names and those Netlify adds (`ip`, `user_agent`, `referrer`).
pub(super) fn netlify(form: &str, kept: &Kept) -> Value {
    let (first, last) = first_and_last(kept);
    let mut data = json!({"name": kept.name, "email": kept.email, "message": kept.message,
        "ip": "192.0.2.10", "user_agent": "Mozilla/5.0", "referrer": "https://example.com/contact"});
    if let Some(campaign) = &kept.campaign {
        data["utm_campaign"] = json!(campaign);
    }
    json!({"number": 3, "title": null, "email": kept.email, "name": kept.name,
        "first_name": first, "last_name": last, "company": null, "summary": "", "body": kept.message,
        "data": data, "created_at": format_timestamp(kept.submitted_at),
        "human_fields": {"Name": kept.name, "Email": kept.email, "Message": kept.message},
        "ordered_human_fields": [
            {"title": "Name", "name": "name", "value": kept.name},
            {"title": "Email", "name": "email", "value": kept.email},
            {"title": "Message", "name": "message", "value": kept.message}],
        "id": kept.id, "form_id": form, "site_url": "https://example.com", "form_name": "contact"})
}

/// Framer's: the fields alone, by their labels; its id travels in the
/// `framer-webhook-submission-id` header (`signer`'s headers).
pub(super) fn framer(_form: &str, kept: &Kept) -> Value {
    let mut fields = json!({"Name": kept.name, "Email": kept.email, "Message": kept.message});
    if let Some(campaign) = &kept.campaign {
        fields["utm_campaign"] = json!(campaign);
    }
    fields
}

/// A plain HTML form's fields as docs/senders/html.md's snippet posts
/// them, with Turnstile's test keys' dummy token.
pub(super) fn html(form: &str, kept: &Kept) -> Value {
    let mut fields = json!({"_form": form, "_submission_id": kept.id, "name": kept.name,
        "email": kept.email, "message": kept.message,
        "cf-turnstile-response": "XXXX.DUMMY.TOKEN.XXXX"});
    if let Some(campaign) = &kept.campaign {
        fields["utm_campaign"] = json!(campaign);
    }
    fields
}

/// The Python below has `key` (the secret's bytes), `secret`, `body` (the
/// bytes sent), `ts` (milliseconds, text) and `sid` (the submission id).
pub(super) const TALLY: Signer = Signer {
    python: "base64.b64encode(hmac.new(key, body, hashlib.sha256).digest()).decode()",
    headers: |signature, _, _| vec![("tally-signature".into(), signature.into())],
};

pub(super) const TYPEFORM: Signer = Signer {
    python: "'sha256=' + base64.b64encode(hmac.new(key, body, hashlib.sha256).digest()).decode()",
    headers: |signature, _, _| vec![("typeform-signature".into(), signature.into())],
};

pub(super) const WEBFLOW: Signer = Signer {
    python: "hmac.new(key, ts.encode() + b':' + body, hashlib.sha256).hexdigest()",
    headers: |signature, millis, _| {
        vec![
            ("x-webflow-timestamp".into(), millis.to_string()),
            ("x-webflow-signature".into(), signature.into()),
        ]
    },
};

pub(super) const FORMSPREE: Signer = Signer {
    python: "(lambda t: 't=' + t + ',v1=' + hmac.new(key, t.encode() + b'.' + body, hashlib.sha256).hexdigest())(str(int(ts) // 1000))",
    headers: |signature, _, _| vec![("formspree-signature".into(), signature.into())],
};

pub(super) const NETLIFY: Signer = Signer {
    python: "__import__('jwt').encode({'iss': 'netlify', 'sha256': hashlib.sha256(body).hexdigest()}, secret, algorithm='HS256')",
    headers: |signature, _, _| vec![("x-webhook-signature".into(), signature.into())],
};

pub(super) const FRAMER: Signer = Signer {
    python: "'sha256=' + hmac.new(key, body + sid.encode(), hashlib.sha256).hexdigest()",
    headers: |signature, _, id| {
        vec![
            ("framer-webhook-submission-id".into(), id.into()),
            ("framer-signature".into(), signature.into()),
        ]
    },
};
