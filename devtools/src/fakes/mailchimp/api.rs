//! The fake's HTTP side: the connections at once, the key, members and
//! notes as Mailchimp validates and answers them (sources in the module's
//! documentation), and the listings.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine;
use serde_json::{json, Map, Value};
use shared::destination::mailchimp::subscriber_hash;

use super::{Call, FakeState, KeptAway, Lost, Member, Note, KNOWN_TAGS, MAX_CONNECTIONS};
use crate::server::lock;

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
pub(super) async fn admit_and_record(
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

/// Whether the next `what`'s answer is to be lost (and counts it).
fn loses(state: &FakeState, what: Lost) -> bool {
    crate::server::take_one(&state.lost, &what)
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

pub(super) async fn put_member(
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
                    tags: Vec::new(),
                    permissions: Vec::new(),
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
        for permission in body
            .get("marketing_permissions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let (Some(id), Some(true)) = (
                permission
                    .get("marketing_permission_id")
                    .and_then(Value::as_str),
                permission.get("enabled").and_then(Value::as_bool),
            ) {
                if !member.permissions.iter().any(|known| known == id) {
                    member.permissions.push(id.to_owned());
                }
            }
        }
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

pub(super) async fn create_note(
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

pub(super) async fn list_notes(
    State(state): State<Arc<FakeState>>,
    Path((list, hash)): Path<(String, String)>,
    uri: Uri,
) -> Response {
    let number = |wanted: &str| {
        url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
            .find(|(name, _)| name == wanted)
            .and_then(|(_, value)| value.parse::<usize>().ok())
    };
    let count = number("count").unwrap_or(10);
    let offset = number("offset").unwrap_or(0);
    if list != state.list_id || !lock(&state.members).iter().any(|m| m.hash == hash) {
        return no_resource();
    }
    // Newest first, as `sort_field=created_at&sort_dir=DESC` asks; a page
    // of `count` (at most 1,000) from `offset`; `total_items` all of them.
    let all: Vec<Value> = lock(&state.notes)
        .iter()
        .rev()
        .filter(|note| note.member == hash)
        .map(|note| json!({"id": note.id, "note": note.note, "email_id": note.member}))
        .collect();
    let total = all.len();
    let notes: Vec<Value> = all
        .into_iter()
        .skip(offset)
        .take(count.min(1_000))
        .collect();
    Json(json!({"notes": notes, "email_id": hash, "list_id": list, "total_items": total}))
        .into_response()
}

pub(super) async fn all_members(State(state): State<Arc<FakeState>>) -> Json<Value> {
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

pub(super) async fn all_notes(State(state): State<Arc<FakeState>>) -> Json<Value> {
    let notes: Vec<Value> = lock(&state.notes)
        .iter()
        .map(|note| json!({"id": note.id, "email_id": note.member, "note": note.note}))
        .collect();
    Json(json!({"count": notes.len(), "notes": notes}))
}

/// `POST /3.0/lists/{list}/members/{hash}/tags`: each tag made active (or
/// inactive), as often as asked.
pub(super) async fn tag(
    State(state): State<Arc<FakeState>>,
    Path((list, hash)): Path<(String, String)>,
    Json(body): Json<Value>,
) -> Response {
    let mut members = lock(&state.members);
    let Some(member) = members
        .iter_mut()
        .find(|m| m.hash == hash)
        .filter(|_| list == state.list_id)
    else {
        return no_resource();
    };
    for tag in body
        .get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(name), Some(status)) = (
            tag.get("name").and_then(Value::as_str),
            tag.get("status").and_then(Value::as_str),
        ) else {
            continue;
        };
        member.tags.retain(|known| known != name);
        if status == "active" {
            member.tags.push(name.to_owned());
        }
    }
    StatusCode::NO_CONTENT.into_response()
}

/// `POST /3.0/lists/{list_id}/members/{subscriber_hash}/actions/delete-permanent`:
/// the member and its notes gone for good, 204, and the address kept
/// from being added again ("Forgotten Email Not Subscribed"); 404 for a
/// member it does not hold
/// (<https://mailchimp.com/developer/marketing/api/list-members/delete-list-member/>).
pub(super) async fn delete_permanent(
    State(state): State<Arc<FakeState>>,
    Path((list, hash)): Path<(String, String)>,
) -> Response {
    if list != state.list_id {
        return no_resource();
    }
    let mut members = lock(&state.members);
    let Some(at) = members.iter().position(|member| member.hash == hash) else {
        return no_resource();
    };
    let gone = members.remove(at);
    drop(members);
    lock(&state.notes).retain(|note| note.member != gone.hash);
    lock(&state.kept_away).push((gone.email.trim().to_lowercase(), KeptAway::Forgotten));
    StatusCode::NO_CONTENT.into_response()
}
