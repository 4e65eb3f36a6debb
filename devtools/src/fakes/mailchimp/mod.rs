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
//!   `marketing_permissions[]` of `{marketing_permission_id, enabled}`;
//! - `POST /3.0/lists/{list_id}/members/{subscriber_hash}/tags` (`tags[]` of
//!   `{name, status}`), answer 204:
//!   <https://mailchimp.com/developer/marketing/api/list-member-tags/>;
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

mod api;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::middleware;
use axum::routing::{get, post, put};
use axum::Router;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::stand_in::{Counts, LocalDestination};
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
    /// Its active tags.
    pub tags: Vec<String>,
    /// The marketing permissions enabled for it.
    pub permissions: Vec<String>,
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
            .route("/3.0/lists/{list}/members/{hash}", put(api::put_member))
            .route(
                "/3.0/lists/{list}/members/{hash}/notes",
                get(api::list_notes).post(api::create_note),
            )
            .route("/3.0/lists/{list}/members/{hash}/tags", post(api::tag))
            .route(
                "/3.0/lists/{list}/members/{hash}/actions/delete-permanent",
                post(api::delete_permanent),
            )
            // Mailchimp's API, and only it: the connections at once, the
            // key, the faults a test queued, and each call recorded.
            .route_layer(middleware::from_fn_with_state(
                Arc::clone(&state),
                api::admit_and_record,
            ))
            .route("/members", get(api::all_members))
            .route("/notes", get(api::all_notes))
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

impl LocalDestination for Arc<MailchimpFake> {
    fn worker_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("MAILCHIMP_API_KEY", DEMO_MAILCHIMP_API_KEY.to_owned()),
            ("MAILCHIMP_LIST_ID", DEMO_MAILCHIMP_LIST_ID.to_owned()),
            ("MAILCHIMP_BASE_URL", self.base_url()),
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
