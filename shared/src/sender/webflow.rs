//! Webflow's `form_submission` webhook: `{"triggerType": "form_submission",
//! "payload": {"name", "siteId", "data": {"<field name>": value},
//! "schema": [...], "submittedAt", "id", "formId"}}`, as Webflow documents
//! it (https://developers.webflow.com/data/docs/working-with-webhooks and
//! https://developers.webflow.com/data/reference/webhooks/events/form-submission).
//! `payload.id` is the submission's id, the same on every retry.

use serde_json::Value;

use serde_json::json;

use super::listing::{self, ApiAuth, ApiRequest, Listed, ListingError, Page, PageAsk, SenderApi};
use super::signature::{Encoding, Scheme, Signature, SignedTime};
use super::{
    canonical_field, parse_shaped, timestamp_at, Answers, BodyFormat, FormSubmission, Profile,
    Sample, Sender, Shape,
};
use crate::envelope::EnvelopeError;

pub const PROFILE: Profile = Profile {
    name: "webflow",
    title: "Webflow",
    webhook_settings: "Webflow (Site settings, Apps & Integrations, Webhooks)",
    event: "form_submission",
    content_pointer: "/payload",
    // Webflow counts anything but 200 as a failure and retries it, so it
    // gets 200 for a new receipt too (the body still says which).
    form_id_pointer: Some("/payload/formId"),
    accepted_status: 200,
    body: BodyFormat::Json,
    browser: false,
    signature: Some(SIGNATURE),
    id_header: None,
    parse,
    answers,
    submitted_at,
    sample,
    api: Some(&API),
    erasure: "in Webflow's dashboard (the site's form submissions), or its API: DELETE /v2/sites/{site_id}/form_submissions/{form_submission_id} with a token of scope forms:write (https://developers.webflow.com/data/reference/forms/form-submissions/delete-submission)",
};

/// `x-webflow-signature: hex(HMAC-SHA256(secret, "<timestamp>:" + body))`
/// with `x-webflow-timestamp` in milliseconds, refused further than 5
/// minutes from now either way
/// (https://developers.webflow.com/data/docs/working-with-webhooks,
/// "Validating request signatures"). Webflow signs only webhooks created
/// through its API or an OAuth app, with a key it chooses; dashboard
/// webhooks are unsigned and need another mode.
pub const SIGNATURE: Signature = Signature {
    mode: "webflow-signature",
    header: "x-webflow-signature",
    scheme: Scheme::Hmac {
        encoding: Encoding::Hex { prefix: "" },
        time: Some(SIGNED_TIME),
    },
    key_chosen_by_sender: true,
};

const SIGNED_TIME: SignedTime = SignedTime {
    header: "x-webflow-timestamp",
    tolerance: std::time::Duration::from_secs(300),
};

pub fn parse(body: &[u8]) -> Result<FormSubmission, EnvelopeError> {
    parse_shaped(
        body,
        &Shape {
            sender: Sender::Webflow,
            event_field: "triggerType",
            content_field: "payload",
            id_pointer: "/payload/id",
            id_field: "payload.id",
        },
    )
}

/// `payload.data`, keyed by the field names set in the Designer: by name
/// (`email`, `First Name`, `Phone Number`...); values as sent (Webflow may
/// send a number).
pub fn answers(payload: &Value) -> Answers {
    let mut answers = Answers::default();
    if let Some(data) = payload.pointer("/payload/data").and_then(Value::as_object) {
        for (label, value) in data {
            if value.is_null() {
                continue;
            }
            answers.add(canonical_field(label), label, &[], value.clone());
        }
    }
    answers
}

pub fn submitted_at(payload: &Value) -> Option<String> {
    timestamp_at(payload, "/payload/submittedAt")
}

fn sample(sample: &Sample) -> Value {
    json!({
        "triggerType": PROFILE.event,
        "payload": {"name": "sample", "id": sample.id,
            "submittedAt": crate::time::format_timestamp(sample.at),
            "data": {"Name": sample.name, "email": sample.email, "Message": sample.message}}
    })
}

/// Webflow's Data API: `GET /v2/sites` for the site its token reads (a
/// site token reads one), then `GET /v2/sites/{site_id}/forms/{form_id}/submissions`
/// with `offset` and `limit` (at most 100) while `pagination.total` says
/// more are left; it filters by no date, so every page is read and the
/// window applied here
/// (https://developers.webflow.com/data/reference/forms/form-submissions/list-submissions,
/// https://developers.webflow.com/data/reference/sites/list). A listed
/// submission's `id` is its webhook's `payload.id`, its `formResponse` the
/// webhook's `data`. 60 requests a minute on the smallest plans; a site
/// token with `forms:read` and `sites:read`.
pub const API: SenderApi = SenderApi {
    base_url: "https://api.webflow.com",
    pace: std::time::Duration::from_millis(1000),
    token_help: "a Webflow site token (Site settings, Apps & Integrations, API access) with forms:read and sites:read",
    auth: ApiAuth::Bearer,
    definition: Some(sites_request),
    page: page_request,
    read_page,
    delete: Some(listing::Deletion {
        per_request: 1,
        request: delete_request,
        token_help: "a Webflow site token with forms:write (and sites:read, to find the site)",
    }),
};

/// `DELETE /v2/sites/{site_id}/form_submissions/{form_submission_id}`, one
/// each, 204; scope `forms:write`
/// (https://developers.webflow.com/data/reference/forms/form-submissions/delete-submission).
/// Without the one site its token reads there is no such request: a 404
/// from a guessed site would read as "already deleted".
fn delete_request(ask: &listing::DeleteAsk) -> Result<ApiRequest, ListingError> {
    let site = site_of(ask.definition).ok_or(ListingError::NoSingle("site its token reads"))?;
    Ok(ApiRequest {
        path: format!(
            "/v2/sites/{site}/form_submissions/{}",
            ask.ids.first().map_or("", String::as_str)
        ),
        query: Vec::new(),
    })
}

/// Webflow's most submissions a page.
const PAGE_SIZE: usize = 100;

fn sites_request(_form: &str) -> ApiRequest {
    ApiRequest {
        path: "/v2/sites".to_owned(),
        query: Vec::new(),
    }
}

/// The one site the token reads; `None` for none or several.
fn site_of(sites: Option<&Value>) -> Option<&str> {
    let listed = sites
        .and_then(|s| s.get("sites"))
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    match listed {
        [site] => site.get("id").and_then(Value::as_str),
        _ => None,
    }
}

fn page_request(ask: &PageAsk) -> ApiRequest {
    ApiRequest {
        path: format!(
            "/v2/sites/{}/forms/{}/submissions",
            // No single site: the listing answers 404, which names the
            // form and the token.
            site_of(ask.definition).unwrap_or("no-single-site"),
            ask.form
        ),
        query: vec![
            ("offset", ask.cursor.unwrap_or("0").to_owned()),
            ("limit", PAGE_SIZE.to_string()),
        ],
    }
}

fn read_page(body: &[u8], ask: &PageAsk) -> Result<Page, ListingError> {
    let page = listing::json_of(body)?;
    let listed = page
        .get("formSubmissions")
        .and_then(Value::as_array)
        .ok_or(ListingError::Missing("formSubmissions"))?;
    let mut submissions = Vec::new();
    for item in listed {
        let Some(id) = item.get("id").and_then(Value::as_str) else {
            return Err(ListingError::Missing("formSubmissions[].id"));
        };
        let text = |name: &str| item.get(name).cloned().unwrap_or(Value::Null);
        submissions.push(Listed {
            submission_id: id.to_owned(),
            submitted_at: listing::time_at(item, "dateSubmitted"),
            webhook_body: json!({"triggerType": PROFILE.event, "payload": {
                "name": text("displayName"), "siteId": text("siteId"), "data": text("formResponse"),
                "submittedAt": text("dateSubmitted"), "id": id, "formId": ask.form}}),
        });
    }
    let offset: usize = ask.cursor.and_then(|c| c.parse().ok()).unwrap_or(0);
    // Without its end marker a page could end the listing early and the
    // window be taken as read: an error, read again next time.
    let total = page
        .pointer("/pagination/total")
        .and_then(Value::as_u64)
        .ok_or(ListingError::Missing("pagination.total"))? as usize;
    let next = offset + listed.len();
    Ok(Page {
        submissions,
        partial: 0,
        next: (!listed.is_empty() && next < total).then(|| next.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Webflow's documented example delivery.
    fn delivery() -> Value {
        json!({"triggerType": "form_submission", "payload": {
            "name": "Contact Us", "siteId": "65427cf400e02b306eaa049c",
            "data": {"First Name": "Zaphod", "Last Name": "Beeblebrox", "email": "zaphod@heartofgold.ai", "Phone Number": 15550000000_u64},
            "schema": [{"fieldName": "First Name", "fieldType": "FormTextInput", "fieldElementId": "285042f7-d554-dc7f-102c-aa10d6a2d2c4"}],
            "submittedAt": "2022-09-14T12:35:16.117Z", "id": "6321ca84df3949bfc6752327",
            "formId": "65429eadebe8a9f3a30f62d0", "formElementId": "4e038d2c-6a1e-4953-7be9-a59a2b453177"}})
    }

    #[test]
    fn envelope_rules() {
        let mut other = delivery();
        other["triggerType"] = json!("site_publish");
        let mut numeric_id = delivery();
        numeric_id["payload"]["id"] = json!(5);
        let rows = [
            (delivery(), Ok("6321ca84df3949bfc6752327".to_owned())),
            (
                other,
                Err(EnvelopeError::UnexpectedEvent {
                    field: "triggerType",
                    expected: "form_submission",
                }),
            ),
            (
                json!({"triggerType": "form_submission", "payload": []}),
                Err(EnvelopeError::MissingField("payload", "an object")),
            ),
            (
                numeric_id,
                Err(EnvelopeError::MissingField("payload.id", "a string")),
            ),
        ];
        for (body, expected) in rows {
            let got =
                parse(body.to_string().as_bytes()).map(|s| s.submission_id.as_str().to_owned());
            assert_eq!(got, expected, "{body}");
        }
    }

    #[test]
    fn answers_by_field_name() {
        let answers = answers(&delivery());
        assert_eq!(answers.fields["email"], "zaphod@heartofgold.ai");
        assert_eq!(answers.fields["firstName"], "Zaphod");
        assert_eq!(answers.fields["lastName"], "Beeblebrox");
        assert_eq!(answers.fields["phone"], 15550000000_u64);
        assert!(answers
            .aliases
            .contains(&("First Name".to_owned(), "firstName".to_owned())));
        assert_eq!(
            super::super::Sender::Webflow
                .submitted_at(&delivery())
                .as_deref(),
            Some("2022-09-14T12:35:16.117Z")
        );
    }

    /// Webflow's example delivery, byte for byte, with the signature its
    /// documented algorithm gives (checked with Node's crypto and Python's
    /// hmac).
    const WEBFLOW_BODY: &str = r#"{"triggerType":"form_submission","payload":{"name":"Contact Us","siteId":"65427cf400e02b306eaa049c","data":{"First Name":"Zaphod","Last Name":"Beeblebrox","email":"zaphod@heartofgold.ai","Phone Number":15550000000},"schema":[{"fieldName":"First Name","fieldType":"FormTextInput","fieldElementId":"285042f7-d554-dc7f-102c-aa10d6a2d2c4"},{"fieldName":"Last Name","fieldType":"FormTextInput","fieldElementId":"285042f7-d554-dc7f-102c-aa10d6a2d2c5"},{"fieldName":"email","fieldType":"FormTextInput","fieldElementId":"285042f7-d554-dc7f-102c-aa10d6a2d2c6"},{"fieldName":"Phone Number","fieldType":"FormTextInput","fieldElementId":"285042f7-d554-dc7f-102c-aa10d6a2d2c7"}],"submittedAt":"2024-07-30T20:07:15.220Z","id":"66a947f35b9d7ba400e22733","formId":"65429eadebe8a9f3a30f62d0","formElementId":"4e038d2c-6a1e-4953-7be9-a59a2b453177"}}"#;
    const WEBFLOW_SIGNATURE: &str =
        "5aefed7bb1a0531811fa8bffe3c08e86cdc380ee331cea1b01bde2c2f25bb673";
    const WEBFLOW_TIMESTAMP: &str = "1722370035277";

    fn at_millis(millis: u64) -> std::time::SystemTime {
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(millis)
    }

    #[test]
    fn a_new_receipt_is_answered_200_since_webflow_retries_anything_else() {
        assert_eq!(Sender::Webflow.accepted_status(), 200);
        assert_eq!(Sender::Tally.accepted_status(), 202);
    }

    #[test]
    fn the_documented_example_verifies_within_five_minutes() {
        use super::super::signature::{lookup, SignatureError};
        let keys = [b"wf_demo_client_secret".to_vec()];
        let tolerance = SIGNED_TIME.tolerance;
        let signed = [
            ("x-webflow-timestamp", WEBFLOW_TIMESTAMP),
            ("x-webflow-signature", WEBFLOW_SIGNATURE),
        ];
        let sent = 1_722_370_035_277;
        let verify = |pairs: &[(&str, &str)], now| {
            SIGNATURE.verify(
                lookup(pairs),
                WEBFLOW_BODY.as_bytes(),
                &keys,
                tolerance,
                now,
            )
        };
        assert_eq!(verify(&signed, at_millis(sent + 1_000)), Ok(()));
        assert_eq!(
            SIGNATURE.sign(
                b"wf_demo_client_secret",
                WEBFLOW_BODY.as_bytes(),
                at_millis(sent),
                &[]
            ),
            vec![
                ("x-webflow-timestamp", WEBFLOW_TIMESTAMP.to_owned()),
                ("x-webflow-signature", WEBFLOW_SIGNATURE.to_owned())
            ]
        );
        // Six minutes later, or a timestamp six minutes ahead: refused.
        for now in [sent + 360_000, sent - 360_000] {
            assert_eq!(
                verify(&signed, at_millis(now)),
                Err(SignatureError::OutsideTolerance("x-webflow-timestamp"))
            );
        }
        let now = at_millis(sent);
        for (timestamp, error) in [
            ("", SignatureError::InvalidTimestamp("x-webflow-timestamp")),
            (
                "1722370035.277",
                SignatureError::InvalidTimestamp("x-webflow-timestamp"),
            ),
            (
                "-1",
                SignatureError::InvalidTimestamp("x-webflow-timestamp"),
            ),
            // Seconds, not milliseconds: 1970 to Webflow's verifier.
            (
                "1722370035",
                SignatureError::OutsideTolerance("x-webflow-timestamp"),
            ),
            // The same instant written with a leading zero is other text.
            ("01722370035277", SignatureError::NoMatch),
        ] {
            let presented = [
                ("x-webflow-timestamp", timestamp),
                ("x-webflow-signature", WEBFLOW_SIGNATURE),
            ];
            assert_eq!(verify(&presented, now), Err(error), "{timestamp:?}");
        }
        let upper = WEBFLOW_SIGNATURE.to_uppercase();
        let upper = [
            ("x-webflow-timestamp", WEBFLOW_TIMESTAMP),
            ("x-webflow-signature", upper.as_str()),
        ];
        assert_eq!(verify(&upper, now), Ok(()));
    }

    /// A page as Webflow's reference documents it (List Form Submissions),
    /// holding the submission of `delivery()`.
    fn api_page(total: u64) -> Value {
        json!({"formSubmissions": [
            {"id": "6321ca84df3949bfc6752327", "displayName": "Contact Us", "siteId": "65427cf400e02b306eaa049c",
             "workspaceId": "62749158efef318abc8d5a0f", "dateSubmitted": "2022-09-14T12:35:16.117Z",
             "formResponse": {"First Name": "Zaphod", "Last Name": "Beeblebrox", "email": "zaphod@heartofgold.ai", "Phone Number": 15550000000_u64}}],
            "pagination": {"limit": 100, "offset": 0, "total": total}})
    }

    fn sites() -> Value {
        json!({"sites": [{"id": "65427cf400e02b306eaa049c", "displayName": "Hitchhiker"}]})
    }

    fn ask<'a>(cursor: Option<&'a str>, definition: Option<&'a Value>) -> PageAsk<'a> {
        PageAsk {
            form: "65429eadebe8a9f3a30f62d0",
            since: std::time::UNIX_EPOCH,
            until: std::time::UNIX_EPOCH,
            cursor,
            definition,
        }
    }

    #[test]
    fn a_deletion_names_the_tokens_one_site_or_is_not_asked() {
        let ids = ["6321ca84df3949bfc6752327".to_owned()];
        let one = json!({"sites": [{"id": "s1"}]});
        let two = json!({"sites": [{"id": "s1"}, {"id": "s2"}]});
        let ask = |definition| listing::DeleteAsk {
            form: "f1",
            ids: &ids,
            definition,
        };
        assert_eq!(
            delete_request(&ask(Some(&one))).unwrap().path,
            "/v2/sites/s1/form_submissions/6321ca84df3949bfc6752327"
        );
        for unsure in [Some(&two), None] {
            assert_eq!(
                delete_request(&ask(unsure)),
                Err(ListingError::NoSingle("site its token reads"))
            );
        }
    }

    #[test]
    fn the_api_is_asked_for_the_sites_forms_page_by_offset() {
        let sites = sites();
        assert_eq!(sites_request("f").path, "/v2/sites");
        let first = page_request(&ask(None, Some(&sites)));
        assert_eq!(
            first.path,
            "/v2/sites/65427cf400e02b306eaa049c/forms/65429eadebe8a9f3a30f62d0/submissions"
        );
        assert_eq!(
            first.query,
            vec![("offset", "0".to_owned()), ("limit", "100".to_owned())]
        );
        let two = json!({"sites": [{"id": "a"}, {"id": "b"}]});
        assert!(page_request(&ask(None, Some(&two)))
            .path
            .contains("/no-single-site/"));
        let more = api_page(150).to_string();
        let page = read_page(more.as_bytes(), &ask(Some("100"), None)).unwrap();
        assert_eq!(page.next.as_deref(), Some("101"));
        let last = api_page(1).to_string();
        assert_eq!(
            read_page(last.as_bytes(), &ask(None, None)).unwrap().next,
            None
        );
        assert_eq!(
            read_page(b"{}", &ask(None, None)),
            Err(ListingError::Missing("formSubmissions"))
        );
        // Without its end marker a page could end the listing early.
        let mut unmarked = api_page(1);
        unmarked.as_object_mut().unwrap().remove("pagination");
        assert_eq!(
            read_page(unmarked.to_string().as_bytes(), &ask(None, None)),
            Err(ListingError::Missing("pagination.total"))
        );
    }

    /// The listed submission is the webhook Webflow would have sent: the
    /// same key, and the same lead as `delivery()`'s.
    #[test]
    fn a_listed_submission_is_its_webhook() {
        let body = api_page(1).to_string();
        let page = read_page(body.as_bytes(), &ask(None, None)).unwrap();
        let submission = page.submissions[0].submission(Sender::Webflow).unwrap();
        let webhook = parse(delivery().to_string().as_bytes()).unwrap();
        assert_eq!(submission.submission_id, webhook.submission_id);
        assert_eq!(submission.form_id(), webhook.form_id());
        assert_eq!(answers(&submission.payload), answers(&webhook.payload));
        assert_eq!(
            submitted_at(&submission.payload),
            submitted_at(&webhook.payload)
        );
    }
}
