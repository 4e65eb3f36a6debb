//! The senders as the tests know them, each registered once in
//! [`vendor`]: the webhook it sends and how it signs it (`webhooks`, or a
//! sender's own file), and its submission API on 127.0.0.1, for
//! `receipts audit`, `import` and `forget --everywhere` in tests and
//! `make run`: one store of submissions, listed in the shape of whichever
//! sender's endpoint is asked.
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

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use shared::receipt::parse_timestamp;

use crate::server::{self, lock, FaultQueue, Listener, Server};

mod deletions;
mod jotform;
mod offset_listings;
mod tally;
mod typeform;
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
    /// A campaign it came from (`utm_campaign`), carried as the sender
    /// carries attribution: a hidden field, Typeform's `hidden`, a field.
    pub campaign: Option<String>,
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

/// What the tests know of one sender, written from its vendor's pages and
/// apart from the stack's own code: the webhook it sends for a submission,
/// how it signs one (if it does), and the routes of its API (listing and
/// deletion) if it keeps its submissions.
pub struct Vendor {
    pub webhook: fn(&str, &Kept) -> Value,
    pub signer: Option<Signer>,
    api: Option<Routes>,
}

type Routes = fn(Router<Arc<FakeState>>) -> Router<Arc<FakeState>>;

/// A sender's signing steps as its pages give them: a Python expression
/// over `key`, `secret`, `body`, `ts` and `sid` (see `webhooks`), and the
/// headers that carry its value (the signature, the signed time in
/// milliseconds, the submission id).
#[derive(Clone, Copy)]
pub struct Signer {
    pub python: &'static str,
    pub headers: fn(&str, u128, &str) -> Vec<(String, String)>,
}

/// Every sender's part, the one place a sender is registered here: the
/// compiler names it for a new sender, and `every_sender_is_known_to_the_fakes`
/// holds it to the sender's profile (its API, its signature).
pub fn vendor(sender: shared::Sender) -> Vendor {
    use axum::routing::delete;
    use shared::Sender;
    match sender {
        Sender::StaticForms => Vendor {
            webhook: webhooks::staticforms,
            signer: None,
            api: None,
        },
        Sender::Tally => Vendor {
            webhook: webhooks::tally,
            signer: Some(webhooks::TALLY),
            api: Some(|app| {
                app.route("/forms/{form}/submissions", get(tally::submissions))
                    .route("/forms/{form}/submissions/{id}", delete(deletions::tally))
            }),
        },
        Sender::Typeform => Vendor {
            webhook: webhooks::typeform,
            signer: Some(webhooks::TYPEFORM),
            api: Some(|app| {
                app.route("/forms/{form}", get(typeform::form)).route(
                    "/forms/{form}/responses",
                    get(typeform::responses).delete(deletions::typeform),
                )
            }),
        },
        Sender::Webflow => Vendor {
            webhook: webhooks::webflow,
            signer: Some(webhooks::WEBFLOW),
            api: Some(|app| {
                app.route("/v2/sites", get(offset_listings::webflow_sites))
                    .route(
                        "/v2/sites/{site}/form_submissions/{id}",
                        delete(deletions::webflow),
                    )
                    .route(
                        "/v2/sites/{site}/forms/{form}/submissions",
                        get(offset_listings::webflow_submissions),
                    )
            }),
        },
        Sender::Formspree => Vendor {
            webhook: webhooks::formspree,
            signer: Some(webhooks::FORMSPREE),
            api: Some(|app| {
                app.route(
                    "/api/0/forms/{form}/submissions",
                    get(offset_listings::formspree_submissions),
                )
            }),
        },
        Sender::Netlify => Vendor {
            webhook: webhooks::netlify,
            signer: Some(webhooks::NETLIFY),
            api: Some(|app| {
                app.route("/api/v1/submissions/{id}", delete(deletions::netlify))
                    .route(
                        "/api/v1/forms/{form}/submissions",
                        get(offset_listings::netlify_submissions),
                    )
            }),
        },
        Sender::Framer => Vendor {
            webhook: webhooks::framer,
            signer: Some(webhooks::FRAMER),
            api: None,
        },
        Sender::Jotform => jotform::VENDOR,
        Sender::Html => Vendor {
            webhook: webhooks::html,
            signer: None,
            api: None,
        },
    }
}

/// The webhook `sender` sends for `kept` of `form`, as its vendor's pages
/// show it (a form post's fields as a JSON object: `Sender::sent_request`
/// sends it as the sender does).
pub fn webhook_for(sender: shared::Sender, form: &str, kept: &Kept) -> Value {
    (vendor(sender).webhook)(form, kept)
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
            .filter_map(|sender| vendor(sender).api)
            .fold(Router::new(), |app, routes| routes(app))
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
                    campaign: None,
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

    /// Each sender's part here agrees with its profile: an API served
    /// exactly when it has one, a signer exactly when it signs, and its
    /// webhook read by its own parser as the submission it was made from.
    #[test]
    fn every_sender_is_known_to_the_fakes() {
        let kept = Kept {
            id: "k1".to_owned(),
            submitted_at: SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_796_112_000),
            name: "Ada Lovelace".to_owned(),
            email: "ada@example.com".to_owned(),
            message: "Hello".to_owned(),
            partial: false,
            campaign: Some("spring".to_owned()),
        };
        for sender in shared::Sender::ALL {
            let name = sender.name();
            let known = vendor(sender);
            assert_eq!(known.api.is_some(), sender.api().is_some(), "{name}: API");
            assert_eq!(
                known.signer.is_some(),
                sender.signature().is_some(),
                "{name}: signer"
            );
            let webhook = webhook_for(sender, "f1", &kept).to_string();
            let submission = sender
                .parse_delivery(webhook.as_bytes(), |_| Some("k1"))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let answers = sender.answers(&submission.payload);
            assert_eq!(answers.fields["email"], "ada@example.com", "{name}");
            assert_eq!(answers.fields["utm_campaign"], "spring", "{name}");
            let id = submission.submission_id.as_str().to_owned();
            assert!(id == "k1" || id.starts_with("f1."), "{name}: {id}");
        }
    }
}
