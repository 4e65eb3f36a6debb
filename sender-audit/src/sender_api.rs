//! The sender's own API, read page by page for the audit (`receipts audit`
//! and `import`, the worker's scheduled audit): the requests and pages are the sender's rules
//! (`shared::sender::listing`); here are the HTTP calls, paced by the
//! sender's published limit, waiting as a 429's `Retry-After` says. The
//! token travels in the `Authorization` header only, and no error or
//! progress line holds it.

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use shared::sender::listing::{
    ApiAuth, ApiRequest, DeleteAsk, Listed, ListingError, PageAsk, SenderApi,
};
use shared::Sender;

/// How often a 429 or a 5xx answer is tried again before giving up.
const TRIES: u32 = 6;
/// The longest `Retry-After` waited for; a longer one is waited this long.
const LONGEST_WAIT: Duration = Duration::from_secs(60);
/// One request's limit.
const REQUEST_LIMIT: Duration = Duration::from_secs(30);
/// The least time worth starting a request with, before a deadline.
const SHORTEST_REQUEST: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum SenderApiError {
    #[error("{sender}'s API refused the token (HTTP {status}): it must be {help}")]
    Refused {
        sender: &'static str,
        status: u16,
        help: &'static str,
    },
    #[error(
        "the token for {sender}'s API holds characters no header can carry: it must be {help}"
    )]
    UnsendableToken {
        sender: &'static str,
        help: &'static str,
    },
    #[error("{sender}'s API knows no form {form:?} (HTTP 404), or the token cannot read it")]
    NoSuchForm { sender: &'static str, form: String },
    #[error("{sender}'s API answered HTTP {status} to {path}")]
    Status {
        sender: &'static str,
        status: u16,
        path: String,
    },
    #[error("{sender}'s API still answered {status} after {TRIES} tries; run it again later")]
    GaveUp { sender: &'static str, status: u16 },
    #[error("{sender}'s API at {base_url} could not be reached ({why})")]
    Unreachable {
        sender: &'static str,
        base_url: String,
        why: &'static str,
    },
    #[error("{sender}'s API answered a page of form {form:?} that cannot be read: {error}")]
    Unreadable {
        sender: &'static str,
        form: String,
        error: ListingError,
    },
    #[error("{sender}'s API cannot be asked to delete submissions of form {form:?}: {error}")]
    Unaddressed {
        sender: &'static str,
        form: String,
        error: ListingError,
    },
    /// A listing must end: a cursor that comes back, or a page that says
    /// more follows but lists nothing new, would read for ever.
    #[error("{sender}'s API kept listing form {form:?} without moving on (a page cursor it gave before, or a page with nothing new and more to follow): the window is not read to an end, and is read again next time")]
    ListingStalled { sender: &'static str, form: String },
    /// Its API deletes no submissions (the operator does it by hand).
    #[error("{sender}'s API deletes no submissions")]
    CannotDelete { sender: &'static str },
    /// No request is started that could not end before the deadline.
    #[error("{sender}'s API: no time left before the deadline to read form {form:?} to its end")]
    OutOfTime { sender: &'static str, form: String },
}

/// Every completed submission of one form in a window.
#[derive(Debug, Clone, Default)]
pub struct FormListing {
    pub submissions: Vec<Listed>,
    /// Listed but never submitted (no lead).
    pub partial: usize,
    pub pages: usize,
}

/// One sender's API, with its token.
pub struct SenderApiClient {
    sender: Sender,
    api: &'static SenderApi,
    base_url: String,
    token: String,
    http: reqwest::Client,
    last_request: Option<Instant>,
    /// When set, no request starts that could not end by then.
    deadline: Option<Instant>,
}

impl SenderApiClient {
    pub fn new(
        sender: Sender,
        api: &'static SenderApi,
        base_url: Option<String>,
        token: String,
    ) -> Self {
        let base_url = base_url
            .unwrap_or_else(|| api.base_url.to_owned())
            .trim_end_matches('/')
            .to_owned();
        SenderApiClient {
            sender,
            api,
            base_url,
            token,
            http: reqwest::Client::builder()
                .timeout(REQUEST_LIMIT)
                .build()
                .unwrap_or_default(),
            last_request: None,
            deadline: None,
        }
    }

    /// No request starts, and no wait is begun, that could not end by
    /// `deadline`: the listing fails with `OutOfTime` instead, while there
    /// is time to store what was done.
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// The time a request may take now: the usual limit, or what is left
    /// before the deadline; `None` when too little is left to try.
    fn time_for_a_request(&self, form: &str) -> Result<Duration, SenderApiError> {
        let Some(deadline) = self.deadline else {
            return Ok(REQUEST_LIMIT);
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left < SHORTEST_REQUEST {
            return Err(SenderApiError::OutOfTime {
                sender: self.sender.name(),
                form: form.to_owned(),
            });
        }
        Ok(left.min(REQUEST_LIMIT))
    }

    /// Sleeps `wait`, unless that would pass the deadline.
    async fn wait(&self, form: &str, wait: Duration) -> Result<(), SenderApiError> {
        if let Some(deadline) = self.deadline {
            if Instant::now() + wait + SHORTEST_REQUEST > deadline {
                return Err(SenderApiError::OutOfTime {
                    sender: self.sender.name(),
                    form: form.to_owned(),
                });
            }
        }
        tokio::time::sleep(wait).await;
        Ok(())
    }

    /// Every completed submission of `form` in `[since, until)`, each page
    /// said to `progress` (the pages read, the submissions so far).
    pub async fn list(
        &mut self,
        form: &str,
        since: SystemTime,
        until: SystemTime,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<FormListing, SenderApiError> {
        let definition = match self.api.definition {
            Some(request) => Some(self.get::<Value>(form, &request(form)).await?),
            None => None,
        };
        let mut listing = FormListing::default();
        let mut cursor: Option<String> = None;
        let mut cursors_seen = HashSet::new();
        let mut ids_seen = HashSet::new();
        loop {
            let ask = PageAsk {
                form,
                since,
                until,
                cursor: cursor.as_deref(),
                definition: definition.as_ref(),
            };
            let body: Vec<u8> = self.get(form, &(self.api.page)(&ask)).await?;
            let page =
                (self.api.read_page)(&body, &ask).map_err(|error| SenderApiError::Unreadable {
                    sender: self.sender.name(),
                    form: form.to_owned(),
                    error,
                })?;
            listing.pages += 1;
            listing.partial += page.partial;
            let new = page
                .submissions
                .iter()
                .filter(|listed| ids_seen.insert(listed.submission_id.clone()))
                .count();
            listing.submissions.extend(
                page.submissions
                    .into_iter()
                    .filter(|listed| listed.is_within(since, until)),
            );
            progress(listing.pages, listing.submissions.len());
            let Some(next) = page.next else {
                return Ok(listing);
            };
            // An error, never a silently short window nor an endless one.
            if !cursors_seen.insert(next.clone()) || new + page.partial == 0 {
                return Err(SenderApiError::ListingStalled {
                    sender: self.sender.name(),
                    form: form.to_owned(),
                });
            }
            cursor = Some(next);
        }
    }

    /// One GET, its answer read as `T`; a 404 says the form is unknown.
    async fn get<T: FromBody>(
        &mut self,
        form: &str,
        request: &ApiRequest,
    ) -> Result<T, SenderApiError> {
        let sender = self.sender.name();
        let bytes = self
            .send(reqwest::Method::GET, form, request)
            .await?
            .ok_or_else(|| SenderApiError::NoSuchForm {
                sender,
                form: form.to_owned(),
            })?;
        T::from_body(&bytes).ok_or_else(|| SenderApiError::Unreadable {
            sender,
            form: form.to_owned(),
            error: ListingError::NotJson,
        })
    }

    /// Deletes the submissions `ids` of `form` at the sender, as many per
    /// request as its API takes; an id already gone (404) is no error, so
    /// a repeat is safe. `done` is told each request's ids once deleted,
    /// so what is done is kept when a later request fails.
    pub async fn delete(
        &mut self,
        form: &str,
        ids: &[String],
        mut done: impl FnMut(&[String], bool),
    ) -> Result<(), SenderApiError> {
        let Some(deletion) = self.api.delete else {
            return Err(SenderApiError::CannotDelete {
                sender: self.sender.name(),
            });
        };
        // Ids go into a path or a query: only the shape the senders give.
        if let Some(odd) = ids
            .iter()
            .find(|id| !shared::sender::listing::is_form_id(id))
        {
            return Err(SenderApiError::Status {
                sender: self.sender.name(),
                status: 0,
                path: format!("a submission id of {} characters that is no id", odd.len()),
            });
        }
        // A refusal names what the token needs to delete.
        let needs = |error| match error {
            SenderApiError::Refused { sender, status, .. } => SenderApiError::Refused {
                sender,
                status,
                help: deletion.token_help,
            },
            other => other,
        };
        let definition = match self.api.definition {
            Some(request) => Some(
                self.get::<Value>(form, &request(form))
                    .await
                    .map_err(needs)?,
            ),
            None => None,
        };
        for chunk in ids.chunks(deletion.per_request.max(1)) {
            let ask = DeleteAsk {
                form,
                ids: chunk,
                definition: definition.as_ref(),
            };
            let request = (deletion.request)(&ask).map_err(|error| SenderApiError::Unreadable {
                sender: self.sender.name(),
                form: form.to_owned(),
                error,
            })?;
            let gone = self
                .send(reqwest::Method::DELETE, form, &request)
                .await
                .map_err(needs)?
                .is_some();
            done(chunk, gone);
        }
        Ok(())
    }

    /// One request, paced, tried again on a 429 (after its `Retry-After`)
    /// or a 5xx (after a growing pause): the answer's body, or `None` for
    /// a 404.
    async fn send(
        &mut self,
        method: reqwest::Method,
        form: &str,
        request: &ApiRequest,
    ) -> Result<Option<Vec<u8>>, SenderApiError> {
        let sender = self.sender.name();
        let mut pause = Duration::from_secs(1);
        let mut status = 0;
        let mut url =
            reqwest::Url::parse(&format!("{}{}", self.base_url, request.path)).map_err(|_| {
                SenderApiError::Unreachable {
                    sender,
                    base_url: self.base_url.clone(),
                    why: "not a URL",
                }
            })?;
        if !request.query.is_empty() {
            url.query_pairs_mut().extend_pairs(&request.query);
        }
        for _ in 0..TRIES {
            self.wait_for_pace().await;
            let limit = self.time_for_a_request(form)?;
            let asked = self
                .http
                .request(method.clone(), url.clone())
                .timeout(limit);
            let asked = match self.api.auth {
                ApiAuth::Bearer => asked.bearer_auth(&self.token),
                ApiAuth::BasicPassword => asked.basic_auth("", Some(&self.token)),
                ApiAuth::Header(name) => {
                    match reqwest::header::HeaderValue::from_str(&self.token) {
                        // Marked sensitive, as bearer_auth marks its own.
                        Ok(mut value) => {
                            value.set_sensitive(true);
                            asked.header(name, value)
                        }
                        Err(_) => {
                            return Err(SenderApiError::UnsendableToken {
                                sender,
                                help: self.api.token_help,
                            })
                        }
                    }
                }
            };
            let sent = asked.header("accept", "application/json").send().await;
            let response = sent.map_err(|error| SenderApiError::Unreachable {
                sender,
                base_url: self.base_url.clone(),
                why: if error.is_timeout() {
                    "timed out"
                } else if error.is_connect() {
                    "no connection"
                } else {
                    "the request failed"
                },
            })?;
            status = response.status().as_u16();
            match status {
                200..=299 => {
                    let bytes =
                        response
                            .bytes()
                            .await
                            .map_err(|_| SenderApiError::Unreachable {
                                sender,
                                base_url: self.base_url.clone(),
                                why: "the answer broke off",
                            })?;
                    return Ok(Some(bytes.to_vec()));
                }
                401 | 403 => {
                    return Err(SenderApiError::Refused {
                        sender,
                        status,
                        help: self.api.token_help,
                    })
                }
                404 => return Ok(None),
                429 => {
                    let wait = retry_after(response.headers()).unwrap_or(pause);
                    self.wait(form, wait.min(LONGEST_WAIT)).await?;
                }
                500..=599 => self.wait(form, pause).await?,
                _ => {
                    return Err(SenderApiError::Status {
                        sender,
                        status,
                        path: request.path.clone(),
                    })
                }
            }
            pause = (pause * 2).min(LONGEST_WAIT);
        }
        Err(SenderApiError::GaveUp { sender, status })
    }

    async fn wait_for_pace(&mut self) {
        if let Some(last) = self.last_request {
            let due = last + self.api.pace;
            let now = Instant::now();
            if due > now {
                tokio::time::sleep(due - now).await;
            }
        }
        self.last_request = Some(Instant::now());
    }
}

/// What a successful answer is read as: a page's bytes, or the form
/// definition's JSON.
trait FromBody: Sized {
    fn from_body(bytes: &[u8]) -> Option<Self>;
}

impl FromBody for Vec<u8> {
    fn from_body(bytes: &[u8]) -> Option<Self> {
        Some(bytes.to_vec())
    }
}

impl FromBody for Value {
    fn from_body(bytes: &[u8]) -> Option<Self> {
        serde_json::from_slice(bytes).ok()
    }
}

/// A 429's `Retry-After` in seconds (an HTTP date is not waited for: the
/// growing pause is).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};

    /// An API on 127.0.0.1 that answers every request with `body`.
    async fn answering(body: String) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request).await;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            }
        });
        url
    }

    /// Tally's pages by number never repeat a cursor; an API that lists
    /// the same submission on every page and says more follows would be
    /// read for ever (the CLI has no deadline).
    #[tokio::test]
    async fn a_listing_that_does_not_move_on_is_an_error() {
        let page = serde_json::json!({"page": 1, "hasMore": true, "questions": [],
            "submissions": [{"id": "a", "isCompleted": true,
                "submittedAt": "2026-12-01T10:00:00.000Z", "responses": []}]});
        let url = answering(page.to_string()).await;
        let api = Sender::Tally.api().unwrap();
        let mut client = SenderApiClient::new(Sender::Tally, api, Some(url), "t".to_owned());
        let now = SystemTime::now();
        let listed = client
            .list("f", now - Duration::from_secs(86_400), now, |_, _| {})
            .await;
        assert!(
            matches!(listed, Err(SenderApiError::ListingStalled { .. })),
            "{listed:?}"
        );
    }

    #[test]
    fn retry_after_in_seconds_only() {
        let rows = [
            ("2", Some(Duration::from_secs(2))),
            (" 0 ", Some(Duration::ZERO)),
            ("Wed, 21 Oct 2026 07:28:00 GMT", None),
            ("-1", None),
        ];
        for (value, expected) in rows {
            let mut headers = HeaderMap::new();
            headers.insert(RETRY_AFTER, HeaderValue::from_static(value));
            assert_eq!(retry_after(&headers), expected, "{value}");
        }
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }
}
