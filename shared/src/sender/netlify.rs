//! Netlify Forms' outgoing webhook (a form notification, "HTTP POST
//! request"): the submission as its API lists it, `{"id", "number",
//! "form_id", "form_name", "site_url", "created_at", "data": {"<input
//! name>": value, "ip", "user_agent", "referrer"}, "human_fields",
//! "ordered_human_fields": [{"name", "title", "value"}], ...}`
//! (https://docs.netlify.com/forms/notifications/,
//! https://open-api.netlify.com/#tag/submission). `id` is the
//! submission's, the same on every attempt and in the API's list.

use serde_json::{json, Value};

use super::listing::{self, ApiAuth, ApiRequest, Listed, ListingError, Page, PageAsk, SenderApi};
use super::signature::{Scheme, Signature};
use super::{
    canonical_field, id_at, object, timestamp_at, Answers, BodyFormat, FormSubmission, Profile,
    Sample, Sender,
};
use crate::envelope::EnvelopeError;

pub const PROFILE: Profile = Profile {
    name: "netlify",
    title: "Netlify Forms",
    webhook_settings: "Netlify Forms' notifications (the project's Forms, Submission notifications, Add notification, HTTP POST request, JWS secret token)",
    event: "submission",
    content_pointer: "/data",
    form_id_pointer: Some("/form_id"),
    accepted_status: 202,
    body: BodyFormat::Json,
    browser: false,
    signature: Some(SIGNATURE),
    id_header: None,
    parse,
    answers,
    submitted_at,
    sample,
    api: Some(&API),
    erasure: "in Netlify's UI (the project's Forms, the form, the submission's Delete), or its API: DELETE /api/v1/submissions/{submission_id} with a personal access token (https://open-api.netlify.com/#tag/submission)",
};

/// `X-Webhook-Signature`: a JWS (HS256) signed with the notification's
/// "JWS secret token", whose claims are `iss: "netlify"` and `sha256`, the
/// hex SHA-256 of the body (https://docs.netlify.com/site-deploys/notifications/#payload-signature,
/// the same for form notifications). No time is signed.
pub const SIGNATURE: Signature = Signature {
    mode: "netlify-jws",
    header: "x-webhook-signature",
    scheme: Scheme::Jws { issuer: "netlify" },
    key_chosen_by_sender: false,
};

/// Netlify's own fields in `data`: who sent it (personal data, never a
/// lead's field) and its form's bookkeeping. `referrer`, the page the form
/// was on, becomes the lead's `page_url`.
const BOOKKEEPING: [&str; 5] = [
    "ip",
    "user_agent",
    "form-name",
    "bot-field",
    "g-recaptcha-response",
];

pub fn parse(body: &[u8]) -> Result<FormSubmission, EnvelopeError> {
    let payload = object(body)?;
    if !payload.get("data").is_some_and(Value::is_object) {
        return Err(EnvelopeError::MissingField("data", "an object"));
    }
    let submission_id = id_at(&payload, "/id", "id")?;
    Ok(FormSubmission {
        sender: Sender::Netlify,
        submission_id,
        payload,
        form_key: None,
    })
}

/// `data` by input name, each also reachable by its label (the title in
/// `ordered_human_fields`), which also names the lead field when the input
/// name does not (`<input name="q1">` titled `Email`).
pub fn answers(payload: &Value) -> Answers {
    let titles: Vec<(&str, &str)> = payload
        .get("ordered_human_fields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| Some((f.get("name")?.as_str()?, f.get("title")?.as_str()?)))
        .collect();
    let mut answers = Answers::default();
    let Some(data) = payload.get("data").and_then(Value::as_object) else {
        return answers;
    };
    for (name, value) in data {
        if value.is_null() || BOOKKEEPING.contains(&name.as_str()) {
            continue;
        }
        if name == "referrer" {
            answers.add(Some("page_url"), name, &[], value.clone());
            continue;
        }
        let title = titles.iter().find(|(n, _)| n == name).map(|(_, t)| *t);
        let canonical = canonical_field(name).or_else(|| title.and_then(canonical_field));
        let keys: Vec<&str> = title.into_iter().collect();
        answers.add(canonical, name, &keys, value.clone());
    }
    answers
}

pub fn submitted_at(payload: &Value) -> Option<String> {
    timestamp_at(payload, "/created_at")
}

fn sample(sample: &Sample) -> Value {
    let at = crate::time::format_timestamp(sample.at);
    json!({"number": 1, "title": null, "email": sample.email, "name": sample.name,
           "summary": "", "body": sample.message,
           "data": {"name": sample.name, "email": sample.email, "message": sample.message,
                    "ip": "192.0.2.1", "user_agent": "Mozilla/5.0", "referrer": "https://example.com/contact"},
           "created_at": at, "id": sample.id, "form_id": sample.form_key.unwrap_or("sampleform"),
           "site_url": "https://example.com", "form_name": "contact",
           "human_fields": {"Name": sample.name, "Email": sample.email, "Message": sample.message},
           "ordered_human_fields": [
               {"name": "name", "title": "Name", "value": sample.name},
               {"name": "email", "title": "Email", "value": sample.email},
               {"name": "message", "title": "Message", "value": sample.message}]})
}

/// Netlify's API: `GET /api/v1/forms/{form_id}/submissions` with `page` and
/// `per_page` (at most 100), newest first, a JSON array of submissions in
/// the webhook's own shape; it filters by no date, so every page is read
/// and the window applied here (https://open-api.netlify.com/#tag/submission,
/// listFormSubmissions; https://docs.netlify.com/api/get-started/#pagination).
/// A personal access token (User settings, Applications); 500 requests a
/// minute (https://docs.netlify.com/api/get-started/#rate-limiting).
pub const API: SenderApi = SenderApi {
    base_url: "https://api.netlify.com",
    pace: std::time::Duration::from_millis(200),
    token_help:
        "a Netlify personal access token (User settings, Applications, Personal access tokens)",
    auth: ApiAuth::Bearer,
    definition: None,
    page: page_request,
    read_page,
    delete: Some(listing::Deletion {
        per_request: 1,
        request: delete_request,
        token_help: "a Netlify personal access token of a member who may manage the site's forms",
    }),
};

/// `DELETE /api/v1/submissions/{submission_id}`, one each
/// (https://open-api.netlify.com/#tag/submission, deleteSubmission).
fn delete_request(ask: &listing::DeleteAsk) -> Result<ApiRequest, ListingError> {
    Ok(ApiRequest {
        path: format!(
            "/api/v1/submissions/{}",
            ask.ids.first().map_or("", String::as_str)
        ),
        query: Vec::new(),
    })
}

const PAGE_SIZE: usize = 100;

fn page_request(ask: &PageAsk) -> ApiRequest {
    ApiRequest {
        path: format!("/api/v1/forms/{}/submissions", ask.form),
        query: vec![
            ("page", ask.cursor.unwrap_or("1").to_owned()),
            ("per_page", PAGE_SIZE.to_string()),
        ],
    }
}

fn read_page(body: &[u8], ask: &PageAsk) -> Result<Page, ListingError> {
    let page = listing::json_of(body)?;
    let listed = page
        .as_array()
        .ok_or(ListingError::Missing("a list of submissions"))?;
    let mut submissions = Vec::new();
    for item in listed {
        let Some(id) = item.get("id").and_then(Value::as_str) else {
            return Err(ListingError::Missing("[].id"));
        };
        submissions.push(Listed {
            submission_id: id.to_owned(),
            submitted_at: listing::time_at(item, "created_at"),
            webhook_body: item.clone(),
        });
    }
    let number: usize = ask.cursor.and_then(|c| c.parse().ok()).unwrap_or(1);
    // Only an empty page ends the listing: the API may cap a page below
    // what was asked, so a short page says nothing.
    Ok(Page {
        submissions,
        partial: 0,
        next: (!listed.is_empty()).then(|| (number + 1).to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::super::signature::{lookup, SignatureError};
    use super::*;

    /// A form notification as Netlify sends one (trimmed).
    const BODY: &str = r#"{"number":4,"title":null,"email":"grace@example.com","name":"Grace Hopper","first_name":"Grace","last_name":"Hopper","company":null,"summary":"<strong>Grace Hopper</strong>","body":"Hello","data":{"name":"Grace Hopper","email":"grace@example.com","q3":"Hello","utm_campaign":"spring","ip":"203.0.113.9","user_agent":"Mozilla/5.0","referrer":"https://example.com/contact"},"created_at":"2026-12-01T08:00:00.123Z","human_fields":{"Name":"Grace Hopper","Email":"grace@example.com","Your message":"Hello"},"ordered_human_fields":[{"title":"Name","name":"name","value":"Grace Hopper"},{"title":"Email","name":"email","value":"grace@example.com"},{"title":"Your message","name":"q3","value":"Hello"}],"id":"5ec8a7b0f1c2d3e4f5a6b7c8","form_id":"5ec8a79ff1c2d3e4f5a6b7c7","site_url":"https://example.com","site_name":"example","form_name":"contact"}"#;
    /// That body's token, made by PyJWT 2.10.1:
    /// `jwt.encode({"iss": "netlify", "sha256": sha256(BODY).hexdigest()}, SECRET, algorithm="HS256")`.
    const TOKEN: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJuZXRsaWZ5Iiwic2hhMjU2IjoiZmYwOTJiZDFkNDBiZWQxZWNhZTQ2ZDJmZmUwZjdhOTUyZmZhNDBmZjY0YTk5YmVhZDU0NzE3MzI1M2QzMjE3MyJ9.nRVlis7ivtSmXdXwlKLgC8a_i0dusjVquLcANrfXSqA";
    const SECRET: &[u8] = b"netlify-demo-jws-secret";

    fn at() -> std::time::SystemTime {
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_796_140_800)
    }

    fn verify(token: &str, body: &str) -> Result<(), SignatureError> {
        SIGNATURE.verify(
            lookup(&[("x-webhook-signature", token)]),
            body.as_bytes(),
            &[SECRET.to_vec()],
            std::time::Duration::ZERO,
            at(),
        )
    }

    #[test]
    fn a_token_made_by_a_jwt_library_verifies_for_its_body_only() {
        assert_eq!(verify(TOKEN, BODY), Ok(()));
        assert_eq!(
            verify(TOKEN, &BODY.replacen("Hello", "Hellp", 1)),
            Err(SignatureError::Claims)
        );
        // Another key, a token cut short, an unsigned (`alg: none`) token.
        let keys = [b"another-secret".to_vec()];
        assert_eq!(
            SIGNATURE.verify(
                lookup(&[("x-webhook-signature", TOKEN)]),
                BODY.as_bytes(),
                &keys,
                std::time::Duration::ZERO,
                at()
            ),
            Err(SignatureError::NoMatch)
        );
        let (signed, _) = TOKEN.rsplit_once('.').unwrap();
        assert_eq!(verify(signed, BODY), Err(SignatureError::Malformed));
        let claims = signed.split_once('.').unwrap().1;
        let none = format!(
            "{}.{claims}.",
            base64::Engine::encode(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                br#"{"alg":"none"}"#
            )
        );
        assert_eq!(verify(&none, BODY), Err(SignatureError::Malformed));
        // What we sign is what we verify.
        let ours = SIGNATURE.sign(SECRET, BODY.as_bytes(), at(), &[]);
        assert_eq!(verify(&ours[0].1, BODY), Ok(()));
        // A token from another issuer, correctly signed.
        let other = Signature {
            scheme: Scheme::Jws {
                issuer: "elsewhere",
            },
            ..SIGNATURE
        }
        .sign(SECRET, BODY.as_bytes(), at(), &[]);
        assert_eq!(verify(&other[0].1, BODY), Err(SignatureError::Claims));
    }

    #[test]
    fn the_lead_is_the_forms_fields_without_netlifys_own() {
        let submission = parse(BODY.as_bytes()).unwrap();
        assert_eq!(
            submission.submission_id.as_str(),
            "5ec8a7b0f1c2d3e4f5a6b7c8"
        );
        assert_eq!(submission.form_id(), Some("5ec8a79ff1c2d3e4f5a6b7c7"));
        let answers = answers(&submission.payload);
        assert_eq!(answers.fields["email"], "grace@example.com");
        assert_eq!(answers.fields["name"], "Grace Hopper");
        assert_eq!(
            answers.fields["message"], "Hello",
            "by its title: {answers:?}"
        );
        assert_eq!(answers.fields["utm_campaign"], "spring");
        assert_eq!(answers.fields["page_url"], "https://example.com/contact");
        assert!(!answers.fields.contains_key("ip"));
        assert!(!answers.fields.contains_key("user_agent"));
        assert_eq!(
            submitted_at(&submission.payload).as_deref(),
            Some("2026-12-01T08:00:00.123Z")
        );
        assert_eq!(
            parse(br#"{"id":5,"data":{}}"#),
            Err(EnvelopeError::MissingField("id", "a string"))
        );
        assert_eq!(
            parse(br#"{"id":"a"}"#),
            Err(EnvelopeError::MissingField("data", "an object"))
        );
    }

    #[test]
    fn pages_by_number_until_an_empty_one() {
        let ask = |cursor| PageAsk {
            form: "f1",
            since: std::time::UNIX_EPOCH,
            until: at(),
            cursor,
            definition: None,
        };
        let first = page_request(&ask(None));
        assert_eq!(first.path, "/api/v1/forms/f1/submissions");
        assert_eq!(
            first.query,
            vec![("page", "1".to_owned()), ("per_page", "100".to_owned())]
        );
        let full: Vec<Value> = (0..100)
            .map(|n| json!({"id": format!("s{n}"), "data": {}}))
            .collect();
        let page = read_page(Value::from(full).to_string().as_bytes(), &ask(Some("2"))).unwrap();
        assert_eq!(page.next.as_deref(), Some("3"));
        let listed = format!("[{BODY}]");
        let page = read_page(listed.as_bytes(), &ask(None)).unwrap();
        assert_eq!(
            page.next.as_deref(),
            Some("2"),
            "a short page may be a capped one"
        );
        assert_eq!(read_page(b"[]", &ask(Some("2"))).unwrap().next, None);
        let webhook = parse(BODY.as_bytes()).unwrap();
        let submission = page.submissions[0].submission(Sender::Netlify).unwrap();
        assert_eq!(submission.submission_id, webhook.submission_id);
        assert_eq!(answers(&submission.payload), answers(&webhook.payload));
        assert_eq!(
            read_page(b"{}", &ask(None)),
            Err(ListingError::Missing("a list of submissions"))
        );
        assert_eq!(
            read_page(b"[{}]", &ask(None)),
            Err(ListingError::Missing("[].id"))
        );
    }
}
