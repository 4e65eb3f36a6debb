//! A Mailchimp on 127.0.0.1: an audience's members and their notes, with
//! the request and answer shapes Mailchimp documents, its refusals of
//! people it keeps from the API for good, its limit of 10 connections at
//! once, and faults a test can queue, for tests and
//! `DESTINATION=mailchimp make run`. Built from Mailchimp's pages:
//!
//! - `PUT /3.0/lists/{list_id}/members/{subscriber_hash}` (`email_address`,
//!   `status_if_new`, `status`, `merge_fields`), the hash the MD5 of the
//!   lower-cased address; answer the member (`id`, `web_id`,
//!   `email_address`, `status`, `merge_fields`, `list_id`); `status_if_new`
//!   applies only to a new member, `status` to any:
//!   <https://mailchimp.com/developer/marketing/api/list-members/add-or-update-list-member/>;
//! - `POST`/`GET /3.0/lists/{list_id}/members/{subscriber_hash}/notes`
//!   (`note`, at most 1,000 characters), answer the note (`id`, `note`,
//!   `created_at`) or `notes[]` and `total_items`:
//!   <https://mailchimp.com/developer/marketing/api/list-member-notes/>;
//! - errors as `application/problem+json` (`type`, `title`, `status`,
//!   `detail`, `instance`): <https://mailchimp.com/developer/marketing/docs/errors/>;
//!   "Member In Compliance State" and "Forgotten Email Not Subscribed" for
//!   an address Mailchimp keeps from the API (issue threads quoting them:
//!   ibericode/mailchimp-for-wordpress#798, tbar0970/jethro-pmm#656);
//! - HTTP Basic, any user name, the API key as the password; at most 10
//!   connections at once, 429 past them:
//!   <https://mailchimp.com/developer/marketing/docs/fundamentals/>.
//!
//! Its own assumptions, where the pages say nothing: a merge tag the
//! audience lacks is a 400 whose `errors[]` names it; notes are listed at
//! once. `GET /members` and `GET /notes` list what it holds; `POST /faults`
//! with `{"status": 503}` makes the next calls fail so; `DELETE /faults`
//! restores it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use shared::destination::mailchimp::subscriber_hash;

use super::stand_in::{Counts, LocalDestination};
use crate::local;
use crate::server::{self, lock, FaultQueue, Listener, Server};

/// The key and audience the local fake accepts (`DESTINATION=mailchimp make run`).
pub const DEMO_MAILCHIMP_API_KEY: &str = "0123456789abcdef0123456789abcdef-us21";
pub const DEMO_MAILCHIMP_LIST_ID: &str = "a1b2c3d4e5";

/// Mailchimp's limit of connections at once per account.
pub const MAX_CONNECTIONS: usize = 10;

/// The merge tags every audience has, and the one the fake's audience adds.
pub const KNOWN_TAGS: [&str; 5] = ["FNAME", "LNAME", "PHONE", "ADDRESS", "COMPANY"];

/// A member as the fake holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub hash: String,
    pub web_id: u64,
    pub email: String,
    pub status: String,
    pub merge_fields: Map<String, Value>,
    /// How many PUTs wrote it.
    pub writes: u32,
    /// Whether any PUT for it carried `status` (which would change an
    /// existing member's status).
    pub sent_status: bool,
}

/// A note as the fake holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub id: u64,
    pub member: String,
    pub note: String,
}

/// One request: its method and path, and the status answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub method: String,
    pub path: String,
    pub status: u16,
}

/// A failure to answer instead of working.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fault {
    pub status: u16,
    /// How many calls it answers; every call when absent.
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

/// A write whose answer is lost: done, then answered 502.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lost {
    MemberPut,
    NoteCreate,
}

/// Why the fake keeps an address from the API, as Mailchimp does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeptAway {
    /// Unsubscribed, cleaned or under review: "Member In Compliance State".
    Compliance,
    /// Deleted for good at the person's request: "Forgotten Email Not Subscribed".
    Forgotten,
}

struct FakeState {
    key: Mutex<String>,
    list_id: String,
    members: Mutex<Vec<Member>>,
    notes: Mutex<Vec<Note>>,
    kept_away: Mutex<Vec<(String, KeptAway)>>,
    next_id: Mutex<u64>,
    faults: Arc<FaultQueue<Fault>>,
    lost: Mutex<Vec<Lost>>,
    calls: Mutex<Vec<Call>>,
    delay: Mutex<Duration>,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
}

/// A running fake; it stops when dropped.
pub struct MailchimpFake {
    state: Arc<FakeState>,
    server: Server,
}

impl MailchimpFake {
    /// Starts on a free loopback port, accepting `key`, with one audience.
    pub async fn start(key: &str, list_id: &str) -> std::io::Result<MailchimpFake> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), key, list_id).await
    }

    pub async fn start_on(
        address: SocketAddr,
        key: &str,
        list_id: &str,
    ) -> std::io::Result<MailchimpFake> {
        let listener = Listener::bind(address).await?;
        let state = Arc::new(FakeState {
            key: Mutex::new(key.to_owned()),
            list_id: list_id.to_owned(),
            members: Mutex::new(Vec::new()),
            notes: Mutex::new(Vec::new()),
            kept_away: Mutex::new(Vec::new()),
            next_id: Mutex::new(1),
            faults: FaultQueue::new("mailchimp fake"),
            lost: Mutex::new(Vec::new()),
            calls: Mutex::new(Vec::new()),
            delay: Mutex::new(Duration::ZERO),
            in_flight: AtomicUsize::new(0),
            most_in_flight: AtomicUsize::new(0),
        });
        let app = Router::new()
            .route("/3.0/lists/{list}/members/{hash}", put(put_member))
            .route(
                "/3.0/lists/{list}/members/{hash}/notes",
                get(list_notes).post(create_note),
            )
            // Mailchimp's API, and only it: the connections at once, the
            // key, the faults a test queued, and each call recorded.
            .route_layer(middleware::from_fn_with_state(
                Arc::clone(&state),
                admit_and_record,
            ))
            .route("/members", get(all_members))
            .route("/notes", get(all_notes))
            .with_state(Arc::clone(&state))
            .merge(state.faults.routes());
        let server = listener.serve(app);
        Ok(MailchimpFake { state, server })
    }

    /// For `MAILCHIMP_BASE_URL`.
    pub fn base_url(&self) -> String {
        self.server.url()
    }

    /// Accepts `key` from now on, and no other (a regenerated key).
    pub fn rotate_key(&self, key: &str) {
        *lock(&self.state.key) = key.to_owned();
    }

    pub fn fail(&self, fault: Fault) {
        self.state.faults.push(fault);
    }

    /// Does the next `what`, then loses its answer.
    pub fn lose_answer(&self, what: Lost) {
        lock(&self.state.lost).push(what);
    }

    /// Keeps `email` from the API from now on, as Mailchimp would.
    pub fn keep_away(&self, email: &str, why: KeptAway) {
        lock(&self.state.kept_away).push((email.trim().to_lowercase(), why));
    }

    /// Each call takes `delay` before it is answered.
    pub fn set_delay(&self, delay: Duration) {
        *lock(&self.state.delay) = delay;
    }

    /// The most calls it had in flight at once.
    pub fn most_in_flight(&self) -> usize {
        self.state.most_in_flight.load(Ordering::SeqCst)
    }

    pub fn members(&self) -> Vec<Member> {
        lock(&self.state.members).clone()
    }

    pub fn notes(&self) -> Vec<Note> {
        lock(&self.state.notes).clone()
    }

    pub fn calls(&self) -> Vec<Call> {
        lock(&self.state.calls).clone()
    }
}

/// Decrements the count of calls in flight when the call ends.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What every API call goes through: the connections at once (an 11th is
/// refused with 429, as Mailchimp does), the key, a queued fault, the
/// delay, then the handler; and the call recorded with its answer.
async fn admit_and_record(
    State(state): State<Arc<FakeState>>,
    request: Request,
    next: Next,
) -> Response {
    let method = request.method().to_string();
    let path = request.uri().path().to_owned();
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    let _in_flight = InFlight(&state.in_flight);
    state.most_in_flight.fetch_max(now, Ordering::SeqCst);
    let response = if now > MAX_CONNECTIONS {
        problem(
            StatusCode::TOO_MANY_REQUESTS,
            "Too Many Requests",
            "You have exceeded the limit of 10 simultaneous connections.",
        )
    } else if let Some(refused) = admitted(&state, request.headers()) {
        refused
    } else {
        let delay = *lock(&state.delay);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        next.run(request).await
    };
    lock(&state.calls).push(Call {
        method,
        path,
        status: response.status().as_u16(),
    });
    response
}

fn admitted(state: &FakeState, headers: &HeaderMap) -> Option<Response> {
    let password = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Basic "))
        .and_then(|encoded| {
            base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()
        })
        .and_then(|decoded| String::from_utf8(decoded).ok())
        .and_then(|pair| {
            pair.split_once(':')
                .map(|(_, password)| password.to_owned())
        });
    if password.as_deref() != Some(lock(&state.key).as_str()) {
        return Some(problem(
            StatusCode::UNAUTHORIZED,
            "API Key Invalid",
            "Your API key may be invalid, or you've attempted to access the wrong datacenter.",
        ));
    }
    let fault = state.faults.next()?;
    let status = StatusCode::from_u16(fault.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    Some(problem(status, "Fault", "fault injected by the test"))
}

/// An error as Mailchimp sends one.
fn problem(status: StatusCode, title: &str, detail: &str) -> Response {
    let mut response = (
        status,
        Json(json!({
            "type": "https://mailchimp.com/developer/marketing/docs/errors/",
            "title": title,
            "status": status.as_u16(),
            "detail": detail,
            "instance": "00000000-0000-0000-0000-000000000000",
        })),
    )
        .into_response();
    response.headers_mut().insert(
        "content-type",
        "application/problem+json; charset=utf-8"
            .parse()
            .expect("a header value"),
    );
    response
}

fn loses(state: &FakeState, what: Lost) -> bool {
    let mut lost = lock(&state.lost);
    match lost.iter().position(|l| *l == what) {
        Some(at) => {
            lost.remove(at);
            true
        }
        None => false,
    }
}

fn no_resource() -> Response {
    problem(
        StatusCode::NOT_FOUND,
        "Resource Not Found",
        "The requested resource could not be found.",
    )
}

fn member_json(member: &Member, list_id: &str) -> Value {
    json!({
        "id": member.hash,
        "email_address": member.email,
        "web_id": member.web_id,
        "status": member.status,
        "merge_fields": member.merge_fields,
        "list_id": list_id,
    })
}

async fn put_member(
    State(state): State<Arc<FakeState>>,
    Path((list, hash)): Path<(String, String)>,
    Json(body): Json<Value>,
) -> Response {
    if list != state.list_id {
        return no_resource();
    }
    let Some(email) = body.get("email_address").and_then(Value::as_str) else {
        return problem(
            StatusCode::BAD_REQUEST,
            "Invalid Resource",
            "The resource submitted could not be validated.",
        );
    };
    if subscriber_hash(email) != hash {
        return problem(
            StatusCode::BAD_REQUEST,
            "Invalid Resource",
            "The subscriber hash does not match the address.",
        );
    }
    let address = email.trim().to_lowercase();
    let kept = lock(&state.kept_away)
        .iter()
        .find(|(kept, _)| *kept == address)
        .map(|(_, why)| *why);
    match kept {
        Some(KeptAway::Forgotten) => {
            return problem(StatusCode::BAD_REQUEST, "Forgotten Email Not Subscribed", &format!("{email} was permanently deleted and cannot be re-imported. The contact must re-subscribe to get back on the list."))
        }
        Some(KeptAway::Compliance) => {
            return problem(StatusCode::BAD_REQUEST, "Member In Compliance State", &format!("{email} is already a list member in compliance state due to unsubscribe, bounce, or compliance review and cannot be subscribed."))
        }
        None => {}
    }
    let merge_fields = body
        .get("merge_fields")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let unknown: Vec<Value> = merge_fields
        .keys()
        .filter(|tag| !KNOWN_TAGS.contains(&tag.as_str()))
        .map(|tag| json!({"field": tag, "message": "This merge field does not exist."}))
        .collect();
    if !unknown.is_empty() {
        let mut refused = problem(
            StatusCode::BAD_REQUEST,
            "Invalid Resource",
            "Your merge fields were invalid.",
        );
        *refused.body_mut() = axum::body::Body::from(
            json!({"title": "Invalid Resource", "status": 400, "detail": "Your merge fields were invalid.", "errors": unknown}).to_string(),
        );
        return refused;
    }
    let status = body.get("status").and_then(Value::as_str);
    let status_if_new = body.get("status_if_new").and_then(Value::as_str);
    let answer = {
        let mut members = lock(&state.members);
        let member = match members.iter_mut().position(|m| m.hash == hash) {
            Some(at) => &mut members[at],
            None => {
                let Some(new_status) = status.or(status_if_new) else {
                    return problem(
                        StatusCode::BAD_REQUEST,
                        "Invalid Resource",
                        "A new member needs status_if_new.",
                    );
                };
                let mut next = lock(&state.next_id);
                members.push(Member {
                    hash: hash.clone(),
                    web_id: 100_000 + *next,
                    email: address.clone(),
                    status: new_status.to_owned(),
                    merge_fields: Map::new(),
                    writes: 0,
                    sent_status: false,
                });
                *next += 1;
                members.last_mut().expect("just pushed")
            }
        };
        if let Some(status) = status {
            member.status = status.to_owned();
            member.sent_status = true;
        }
        member.merge_fields.extend(merge_fields);
        member.writes += 1;
        member_json(member, &state.list_id)
    };
    if loses(&state, Lost::MemberPut) {
        return problem(
            StatusCode::BAD_GATEWAY,
            "Bad Gateway",
            "upstream connection lost",
        );
    }
    (StatusCode::OK, Json(answer)).into_response()
}

async fn create_note(
    State(state): State<Arc<FakeState>>,
    Path((list, hash)): Path<(String, String)>,
    Json(body): Json<Value>,
) -> Response {
    if list != state.list_id || !lock(&state.members).iter().any(|m| m.hash == hash) {
        return no_resource();
    }
    let Some(text) = body.get("note").and_then(Value::as_str) else {
        return problem(
            StatusCode::BAD_REQUEST,
            "Invalid Resource",
            "The note is missing.",
        );
    };
    if text.chars().count() > 1_000 {
        return problem(
            StatusCode::BAD_REQUEST,
            "Invalid Resource",
            "Note length is limited to 1,000 characters.",
        );
    }
    let note = {
        let mut next = lock(&state.next_id);
        let note = Note {
            id: *next,
            member: hash.clone(),
            note: text.to_owned(),
        };
        *next += 1;
        lock(&state.notes).push(note.clone());
        note
    };
    if loses(&state, Lost::NoteCreate) {
        return problem(
            StatusCode::BAD_GATEWAY,
            "Bad Gateway",
            "upstream connection lost",
        );
    }
    let answer = json!({"id": note.id, "note": note.note, "email_id": hash, "list_id": list, "created_at": "2026-12-04T08:00:00+00:00"});
    (StatusCode::OK, Json(answer)).into_response()
}

async fn list_notes(
    State(state): State<Arc<FakeState>>,
    Path((list, hash)): Path<(String, String)>,
    uri: Uri,
) -> Response {
    let count = url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
        .find(|(name, _)| name == "count")
        .and_then(|(_, value)| value.parse::<usize>().ok())
        .unwrap_or(10);
    if list != state.list_id || !lock(&state.members).iter().any(|m| m.hash == hash) {
        return no_resource();
    }
    // Newest first, as `sort_field=created_at&sort_dir=DESC` asks.
    let notes: Vec<Value> = lock(&state.notes)
        .iter()
        .rev()
        .filter(|note| note.member == hash)
        .take(count.min(1_000))
        .map(|note| json!({"id": note.id, "note": note.note, "email_id": note.member}))
        .collect();
    let total = notes.len();
    Json(json!({"notes": notes, "email_id": hash, "list_id": list, "total_items": total}))
        .into_response()
}

async fn all_members(State(state): State<Arc<FakeState>>) -> Json<Value> {
    let members: Vec<Value> = lock(&state.members)
        .iter()
        .map(|member| {
            let mut listed = member_json(member, &state.list_id);
            listed["writes"] = json!(member.writes);
            listed
        })
        .collect();
    Json(json!({"count": members.len(), "members": members}))
}

async fn all_notes(State(state): State<Arc<FakeState>>) -> Json<Value> {
    let notes: Vec<Value> = lock(&state.notes)
        .iter()
        .map(|note| json!({"id": note.id, "email_id": note.member, "note": note.note}))
        .collect();
    Json(json!({"count": notes.len(), "notes": notes}))
}

impl LocalDestination for Arc<MailchimpFake> {
    fn worker_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("MAILCHIMP_API_KEY", DEMO_MAILCHIMP_API_KEY.to_owned()),
            ("MAILCHIMP_LIST_ID", DEMO_MAILCHIMP_LIST_ID.to_owned()),
            ("MAILCHIMP_BASE_URL", self.base_url()),
            ("GATE_KEY", local::DEMO_GATE_KEY.to_owned()),
        ]
    }

    fn counts(&self) -> Counts {
        let fake = Arc::clone(self);
        Box::new(move || {
            let members = fake.members();
            let writes = members.iter().map(|m| u64::from(m.writes)).sum::<u64>()
                + fake.notes().len() as u64;
            (members.len(), writes)
        })
    }

    fn describe(&self, port: u16) -> String {
        format!("Mailchimp GET  http://127.0.0.1:{port}/members and /notes   (a local fake; POST/DELETE /faults to break and mend it)")
    }

    fn set_delay(&self, delay: Duration) -> Result<(), String> {
        MailchimpFake::set_delay(self, delay);
        Ok(())
    }
}
