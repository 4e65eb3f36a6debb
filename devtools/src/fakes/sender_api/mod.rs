//! The senders' submission APIs on 127.0.0.1, for `receipts audit` and
//! `import` in tests and `make run`: one store of submissions, listed in
//! the shape of whichever sender's endpoint is asked.
//!
//! - Tally, `GET /forms/{formId}/submissions` (`filter`, `startDate`,
//!   `endDate`, `page`; `hasMore`, `questions`, `submissions[]` with
//!   `responses[]` by `questionId`):
//!   <https://developers.tally.so/api-reference/endpoint/forms/submissions/list>,
//!   <https://developers.tally.so/documentation/fetching-form-submissions>.
//! - Typeform, `GET /forms/{form_id}/responses` (`since`, `until`,
//!   `page_size`, `before`, `response_type`; `total_items`, `page_count`,
//!   `items[]` newest first) and `GET /forms/{form_id}` (its `fields`):
//!   <https://www.typeform.com/developers/responses/reference/retrieve-responses/>,
//!   <https://www.typeform.com/developers/create/reference/retrieve-form/>.
//!
//! - Webflow, `GET /v2/sites` (the token's one site, [`FAKE_SITE`]) and
//!   `GET /v2/sites/{site_id}/forms/{form_id}/submissions` (`offset`,
//!   `limit`; `formSubmissions[]`, `pagination.total`), no date filter:
//!   <https://developers.webflow.com/data/reference/forms/form-submissions/list-submissions>.
//!
//! - Netlify, `GET /api/v1/forms/{form_id}/submissions` (`page`,
//!   `per_page`; a JSON array, newest first), no date filter:
//!   <https://open-api.netlify.com/#tag/submission>.
//! - Formspree, `GET /api/0/forms/{hashid}/submissions` (`since`, `limit`,
//!   `offset`, `order`; `fields`, `submissions[]` with `_date` to the
//!   microsecond and no id), HTTP Basic with the key as the password:
//!   <https://help.formspree.io/articles/the-forms-api/form-submissions-api>.
//! - Jotform, `GET /v1/form/{id}/submissions` (`offset`, `limit`, `filter`
//!   `{"created_at:gt": "YYYY-MM-DD HH:MM:SS"}`, `orderby`; `content[]`
//!   with `answers` by question id, `resultSet`), the key in an `APIKEY`
//!   header, from Jotform's own client (jotform-api-python) and
//!   <https://api.jotform.com/docs/#form-id-submissions>.
//!
//! What it enforces: the token (bearer, Formspree's Basic or Jotform's
//! `APIKEY`; 401 otherwise), a known form (404).
//! `POST /faults` with `{"status": 429, "retryAfter": "1", "times": 1}`
//! makes the next calls fail so; `DELETE /faults` restores it. The
//! deletions of Typeform, Tally, Netlify and Webflow are in `deletions`. A page
//! holds at most `page_size` submissions (Tally's limit 50 unless set).
//! [`SenderApiFake::drop_end_marker`] makes Tally's pages answer without
//! `hasMore`, as a changed or broken API might.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use shared::receipt::{format_timestamp, parse_timestamp};

use crate::server::{self, lock, FaultQueue, Listener, Server};

mod deletions;
mod jotform;
mod offset_listings;
mod webhooks;

/// The token the local fake accepts (`make run`).
pub const DEMO_SENDER_API_TOKEN: &str = "local-demo-sender-api-token";
/// The one site the fake's Webflow token reads.
pub const FAKE_SITE: &str = "65427cf400e02b306eaa049c";
/// The form whose submissions the demo fake keeps.
pub const DEMO_FORM: &str = "demoForm";

/// One submission the sender keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub id: String,
    pub submitted_at: SystemTime,
    pub name: String,
    pub email: String,
    pub message: String,
    /// Started but never submitted.
    pub partial: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fault {
    pub status: u16,
    pub retry_after: Option<String>,
    pub times: Option<u32>,
}

impl server::Fault for Fault {
    fn times_mut(&mut self) -> &mut Option<u32> {
        &mut self.times
    }

    fn status(&self) -> u16 {
        self.status
    }
}

/// One sender's part of the fake: the routes of its API (listing and
/// deletion) and the webhook it sends for a submission it keeps, each
/// written from its vendor's pages.
struct VendorApi {
    routes: fn(Router<Arc<FakeState>>) -> Router<Arc<FakeState>>,
    webhook: fn(&str, &Kept) -> Value,
}

/// The senders whose API the fake serves: exactly those with
/// `Profile::api` (`every_sender_with_an_api_is_served`), so a new sender
/// is named here by the compiler and its audit tested with the others.
fn vendor_api(sender: shared::Sender) -> Option<VendorApi> {
    use axum::routing::delete;
    use shared::Sender;
    let vendor = match sender {
        Sender::Tally => VendorApi {
            routes: |app| {
                app.route("/forms/{form}/submissions", get(tally_submissions))
                    .route("/forms/{form}/submissions/{id}", delete(deletions::tally))
            },
            webhook: webhooks::tally,
        },
        Sender::Typeform => VendorApi {
            routes: |app| {
                app.route("/forms/{form}", get(typeform_form)).route(
                    "/forms/{form}/responses",
                    get(typeform_responses).delete(deletions::typeform),
                )
            },
            webhook: webhooks::typeform,
        },
        Sender::Netlify => VendorApi {
            routes: |app| {
                app.route("/api/v1/submissions/{id}", delete(deletions::netlify))
                    .route(
                        "/api/v1/forms/{form}/submissions",
                        get(offset_listings::netlify_submissions),
                    )
            },
            webhook: webhooks::netlify,
        },
        Sender::Formspree => VendorApi {
            routes: |app| {
                app.route(
                    "/api/0/forms/{form}/submissions",
                    get(offset_listings::formspree_submissions),
                )
            },
            webhook: webhooks::formspree,
        },
        Sender::Webflow => VendorApi {
            routes: |app| {
                app.route("/v2/sites", get(offset_listings::webflow_sites))
                    .route(
                        "/v2/sites/{site}/form_submissions/{id}",
                        delete(deletions::webflow),
                    )
                    .route(
                        "/v2/sites/{site}/forms/{form}/submissions",
                        get(offset_listings::webflow_submissions),
                    )
            },
            webhook: webhooks::webflow,
        },
        Sender::Jotform => jotform::VENDOR,
        Sender::StaticForms | Sender::Framer | Sender::Html => return None,
    };
    Some(vendor)
}

/// The webhook `sender` sends for `kept` of `form`, as its vendor's pages
/// show it; `None` for a sender whose API the fake does not serve.
pub fn webhook_for(sender: shared::Sender, form: &str, kept: &Kept) -> Option<Value> {
    vendor_api(sender).map(|vendor| (vendor.webhook)(form, kept))
}

struct FakeState {
    token: String,
    forms: Mutex<BTreeMap<String, Vec<Kept>>>,
    page_size: Mutex<usize>,
    /// Tally's pages without `hasMore`.
    no_end_marker: Mutex<bool>,
    faults: Arc<FaultQueue<Fault>>,
    /// Each request's path and query, and the status answered.
    calls: Mutex<Vec<(String, u16)>>,
}

/// A running fake; it stops when dropped.
pub struct SenderApiFake {
    state: Arc<FakeState>,
    server: Server,
}

impl SenderApiFake {
    pub async fn start(token: &str) -> std::io::Result<SenderApiFake> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), token).await
    }

    pub async fn start_on(address: SocketAddr, token: &str) -> std::io::Result<SenderApiFake> {
        let listener = Listener::bind(address).await?;
        let state = Arc::new(FakeState {
            token: token.to_owned(),
            forms: Mutex::new(BTreeMap::new()),
            page_size: Mutex::new(50),
            no_end_marker: Mutex::new(false),
            faults: FaultQueue::new("sender API fake"),
            calls: Mutex::new(Vec::new()),
        });
        let app = shared::Sender::ALL
            .into_iter()
            .filter_map(vendor_api)
            .fold(Router::new(), |app, vendor| (vendor.routes)(app))
            .with_state(Arc::clone(&state))
            .merge(state.faults.routes());
        Ok(SenderApiFake {
            state,
            server: listener.serve(app),
        })
    }

    /// `make run` with a sender that keeps its submissions (`SENDER=tally`
    /// or `typeform`): its API on a free port, holding two submissions of
    /// form [`DEMO_FORM`] whose webhooks never came, for `receipts audit`
    /// and `import` to find; `None` for a sender without such an API.
    pub async fn start_demo(sender: shared::Sender) -> Result<Option<SenderApiFake>, String> {
        if sender.api().is_none() {
            return Ok(None);
        }
        let fake = SenderApiFake::start(DEMO_SENDER_API_TOKEN)
            .await
            .map_err(|e| format!("sender API fake: {e}"))?;
        let now = SystemTime::now();
        for (n, name) in [(1, "Grace Hopper"), (2, "Alan Turing")] {
            fake.keep(
                DEMO_FORM,
                Kept {
                    id: format!("never-came-{n}"),
                    submitted_at: now - std::time::Duration::from_secs(600 * n),
                    name: name.to_owned(),
                    email: format!("demo{n}@example.com"),
                    message: "Sent while the stack was down".to_owned(),
                    partial: false,
                },
            );
        }
        Ok(Some(fake))
    }

    /// For `SENDER_API_BASE_URL`.
    pub fn base_url(&self) -> String {
        self.server.url()
    }

    /// Keeps `kept` as a submission of `form` (a form it knows from now on).
    pub fn keep(&self, form: &str, kept: Kept) {
        lock(&self.state.forms)
            .entry(form.to_owned())
            .or_default()
            .push(kept);
    }

    pub fn set_page_size(&self, size: usize) {
        *lock(&self.state.page_size) = size.max(1);
    }

    /// Tally's pages answer without their end marker (`hasMore`) from now.
    pub fn drop_end_marker(&self) {
        *lock(&self.state.no_end_marker) = true;
    }

    pub fn fail_next(&self, fault: Fault) {
        self.state.faults.push(fault);
    }

    /// The deletions asked for (`DELETE <path>`), and the status each got.
    pub fn deletions(&self) -> Vec<(String, u16)> {
        self.calls()
            .into_iter()
            .filter(|(call, _)| call.starts_with("DELETE "))
            .collect()
    }

    /// The ids of the submissions of `form` it still keeps.
    pub fn kept_ids(&self, form: &str) -> Vec<String> {
        lock(&self.state.forms)
            .get(form)
            .map(|kept| kept.iter().map(|k| k.id.clone()).collect())
            .unwrap_or_default()
    }

    /// Each request's path and query, and the status it got.
    pub fn calls(&self) -> Vec<(String, u16)> {
        lock(&self.state.calls).clone()
    }
}

/// A request's query, decoded.
type Params = BTreeMap<String, String>;

/// A whole-number parameter, `default` when it is missing or no number.
fn number(params: &Params, name: &str, default: usize) -> usize {
    params
        .get(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn params_of(query: Option<String>) -> Params {
    let url = format!("http://fake/?{}", query.unwrap_or_default());
    reqwest::Url::parse(&url)
        .map(|url| url.query_pairs().into_owned().collect())
        .unwrap_or_default()
}

/// The answer before the listing: a fault, a refused token, an unknown
/// form; `Err` holds it.
fn admit(
    state: &FakeState,
    headers: &HeaderMap,
    form: &str,
    called: String,
) -> Result<Vec<Kept>, Box<Response>> {
    let refused = |status: StatusCode, body: Value| Box::new((status, Json(body)).into_response());
    let answer = if let Some(fault) = state.faults.next() {
        let mut response = refused(
            StatusCode::from_u16(fault.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            json!({"message": "Too many requests"}),
        );
        if let Some(wait) = fault.retry_after.and_then(|w| w.parse().ok()) {
            response.headers_mut().insert("retry-after", wait);
        }
        Err(response)
    } else if !presents_token(headers, &state.token) {
        Err(refused(
            StatusCode::UNAUTHORIZED,
            json!({"message": "Unauthorized"}),
        ))
    } else {
        match lock(&state.forms).get(form) {
            Some(kept) => {
                let mut kept = kept.clone();
                kept.sort_by_key(|k| std::cmp::Reverse(k.submitted_at));
                Ok(kept)
            }
            None => Err(refused(
                StatusCode::NOT_FOUND,
                json!({"message": "Form not found"}),
            )),
        }
    };
    let status = answer
        .as_ref()
        .map_or_else(|r| r.status().as_u16(), |_| 200);
    lock(&state.calls).push((called, status));
    answer
}

/// Whether the request carries the token: as a bearer token, as Formspree
/// takes its key (HTTP Basic, an empty user and the key), or as Jotform
/// takes its key (an `APIKEY` header).
fn presents_token(headers: &HeaderMap, token: &str) -> bool {
    use base64::Engine;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!(":{token}"));
    let sent = headers.get("authorization").and_then(|v| v.to_str().ok());
    sent == Some(format!("Bearer {token}").as_str())
        || sent == Some(format!("Basic {basic}").as_str())
        || headers.get("apikey").and_then(|v| v.to_str().ok()) == Some(token)
}

/// A listing request's query and the form's submissions, or the answer
/// given instead (`admit`); `form` is the one looked up.
fn listing(
    state: &FakeState,
    headers: &HeaderMap,
    form: &str,
    path: String,
    query: Option<String>,
) -> Result<(Params, Vec<Kept>), Box<Response>> {
    let params = params_of(query);
    let kept = admit(state, headers, form, called(path, &params))?;
    Ok((params, kept))
}

fn called(path: String, params: &BTreeMap<String, String>) -> String {
    let query: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{path}?{}", query.join("&"))
}

/// What a listing selects: submitted between the times its `bounds`
/// parameters name (both included), and only completed ones if asked.
fn within<'a>(
    kept: &'a [Kept],
    params: &BTreeMap<String, String>,
    bounds: [&str; 2],
    completed_only: bool,
) -> Vec<&'a Kept> {
    let [since, until] = bounds.map(|name| params.get(name).and_then(|t| parse_timestamp(t)));
    kept.iter()
        .filter(|k| since.is_none_or(|s| k.submitted_at >= s))
        .filter(|k| until.is_none_or(|u| k.submitted_at <= u))
        .filter(|k| !(completed_only && k.partial))
        .collect()
}

async fn tally_submissions(
    State(state): State<Arc<FakeState>>,
    Path(form): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let path = format!("/forms/{form}/submissions");
    let (params, kept) = match listing(&state, &headers, &form, path, query) {
        Ok(listed) => listed,
        Err(response) => return *response,
    };
    let completed_only = params.get("filter").map(String::as_str) == Some("completed");
    let selected = within(&kept, &params, ["startDate", "endDate"], completed_only);
    let limit = *lock(&state.page_size);
    let page: usize = params
        .get("page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(1)
        .max(1);
    let listed: Vec<Value> = selected
        .iter()
        .skip((page - 1) * limit)
        .take(limit)
        .map(|k| json!({
            "id": k.id, "formId": form, "respondentId": format!("r_{}", k.id), "isCompleted": !k.partial,
            "submittedAt": format_timestamp(k.submitted_at), "responses": [
                {"id": format!("{}_1", k.id), "questionId": "qName", "answer": k.name},
                {"id": format!("{}_2", k.id), "questionId": "qEmail", "answer": k.email},
                {"id": format!("{}_3", k.id), "questionId": "qMessage", "answer": k.message}]}))
        .collect();
    let partial = kept.iter().filter(|k| k.partial).count();
    let mut answer = json!({
        "page": page, "limit": limit, "hasMore": page * limit < selected.len(),
        "totalNumberOfSubmissionsPerFilter": {"all": kept.len(), "completed": kept.len() - partial, "partial": partial},
        "questions": [
            {"id": "qName", "type": "INPUT_TEXT", "title": "Name", "fields": []},
            {"id": "qEmail", "type": "INPUT_EMAIL", "title": "Email", "fields": []},
            {"id": "qMessage", "type": "TEXTAREA", "title": "Message", "fields": []}],
        "submissions": listed
    });
    if *lock(&state.no_end_marker) {
        if let Some(page) = answer.as_object_mut() {
            page.remove("hasMore");
        }
    }
    Json(answer).into_response()
}

async fn typeform_form(
    State(state): State<Arc<FakeState>>,
    Path(form): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Err(response) = admit(&state, &headers, &form, format!("/forms/{form}")) {
        return *response;
    }
    Json(json!({"id": form, "title": "Contact", "fields": [
        {"id": "fName", "title": "Name", "type": "short_text", "ref": "name"},
        {"id": "fEmail", "title": "Email", "type": "email", "ref": "email"},
        {"id": "fMessage", "title": "Message", "type": "long_text", "ref": "message"}]}))
    .into_response()
}

async fn typeform_responses(
    State(state): State<Arc<FakeState>>,
    Path(form): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let path = format!("/forms/{form}/responses");
    let (params, kept) = match listing(&state, &headers, &form, path, query) {
        Ok(listed) => listed,
        Err(response) => return *response,
    };
    let completed_only = params.get("response_type").map(String::as_str) == Some("completed");
    let mut selected = within(&kept, &params, ["since", "until"], completed_only);
    if let Some(before) = params.get("before") {
        if let Some(at) = selected.iter().position(|k| &k.id == before) {
            selected.drain(..=at);
        }
    }
    let asked: usize = params
        .get("page_size")
        .and_then(|p| p.parse().ok())
        .unwrap_or(25);
    let size = asked.min(*lock(&state.page_size)).max(1);
    let items: Vec<Value> = selected
        .iter()
        .take(size)
        .map(|k| {
            let field = |id: &str, kind: &str, reference: &str| json!({"id": id, "type": kind, "ref": reference});
            json!({
                "landing_id": k.id, "token": k.id, "response_id": k.id,
                "response_type": if k.partial { "partial" } else { "completed" },
                "landed_at": format_timestamp(k.submitted_at),
                "submitted_at": if k.partial { String::new() } else { format_timestamp(k.submitted_at) },
                "hidden": {}, "answers": [
                    {"type": "text", "text": k.name, "field": field("fName", "short_text", "name")},
                    {"type": "email", "email": k.email, "field": field("fEmail", "email", "email")},
                    {"type": "text", "text": k.message, "field": field("fMessage", "long_text", "message")}]})
        })
        .collect();
    Json(json!({"total_items": selected.len(), "page_count": selected.len().div_ceil(size), "items": items}))
        .into_response()
}

/// A time as Formspree's `_date`: UTC to the microsecond, without a zone.
pub fn formspree_date(at: SystemTime) -> String {
    humantime::format_rfc3339_micros(at)
        .to_string()
        .trim_end_matches('Z')
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fake serves the API of exactly the senders that have one, and
    /// each one's webhook parses as that sender's submission with the
    /// kept id: the audit tests loop over these senders.
    #[test]
    fn every_sender_with_an_api_is_served() {
        let kept = Kept {
            id: "k1".to_owned(),
            submitted_at: SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_796_112_000),
            name: "Ada Lovelace".to_owned(),
            email: "ada@example.com".to_owned(),
            message: "Hello".to_owned(),
            partial: false,
        };
        for sender in shared::Sender::ALL {
            let webhook = webhook_for(sender, "f1", &kept);
            assert_eq!(
                webhook.is_some(),
                sender.api().is_some(),
                "{}: served by the fake exactly when it has an API",
                sender.name()
            );
            let Some(webhook) = webhook else { continue };
            let submission = sender
                .parse_submission(webhook.to_string().as_bytes())
                .unwrap_or_else(|e| panic!("{}: {e}", sender.name()));
            let answers = sender.answers(&submission.payload);
            assert_eq!(
                answers.fields["email"],
                "ada@example.com",
                "{}",
                sender.name()
            );
            let id = submission.submission_id.as_str().to_owned();
            assert!(
                id == "k1" || id.starts_with("f1."),
                "{}: {id}",
                sender.name()
            );
        }
    }
}
