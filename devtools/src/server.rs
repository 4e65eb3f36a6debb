//! What every local server here is made of, so a new fake is its routes and
//! its state only: a lock that survives a panicked test, a server on a
//! loopback port that stops when dropped, and a queue of faults, each
//! answering a number of calls, that tests fill by method and a person
//! fills over HTTP (`POST /faults`, `DELETE /faults`); an HTTP date for a
//! `Retry-After`; and `forward`, for a proxy in front of a real local
//! server.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use serde::de::DeserializeOwned;

/// Takes one `what` from `queue` if it holds one: whether it did. A
/// fake's answers to lose (`lose_answer`) are queued so.
pub fn take_one<T: PartialEq>(queue: &Mutex<Vec<T>>, what: &T) -> bool {
    let mut queue = lock(queue);
    match queue.iter().position(|queued| queued == what) {
        Some(at) => {
            queue.remove(at);
            true
        }
        None => false,
    }
}

/// The guarded value, even when a thread panicked while holding it: a fake
/// keeps answering after one test's assertion failed inside a handler.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `at` as an HTTP date (`Sun, 06 Dec 2026 01:20:00 GMT`), for a fake
/// whose vendor sends `Retry-After` as a date rather than seconds.
pub fn http_date(at: std::time::SystemTime) -> String {
    httpdate::fmt_http_date(at)
}

/// One request a fake answered: its method, its path with its query, and
/// the status it got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub method: String,
    pub path: String,
    pub status: u16,
}

/// A fake's door for each call of its API: `refused` answers instead of
/// the handler (a throttle, a refused credential, a queued fault), else
/// the call waits the fake's `delay` and reaches the handler; either way it
/// is recorded in `calls` with the status it got.
pub async fn answer_and_record(
    request: axum::extract::Request,
    next: axum::middleware::Next,
    refused: Option<axum::response::Response>,
    delay: std::time::Duration,
    calls: &Mutex<Vec<Call>>,
) -> axum::response::Response {
    let method = request.method().to_string();
    let path = request.uri().path_and_query().map_or_else(
        || request.uri().path().to_owned(),
        |p| p.as_str().to_owned(),
    );
    let response = match refused {
        Some(refused) => refused,
        None => {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            next.run(request).await
        }
    };
    lock(calls).push(Call {
        method,
        path,
        status: response.status().as_u16(),
    });
    response
}

/// Forwards a request to `upstream` as it came (but for `Host` and
/// `Content-Length`, which the client sets) and answers with what it
/// answered; 502 when it cannot be reached.
pub async fn forward(
    client: &reqwest::Client,
    upstream: &str,
    method: axum::http::Method,
    uri: &axum::http::Uri,
    headers: &axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let url = format!(
        "{upstream}{}",
        uri.path_and_query().map_or("/", |p| p.as_str())
    );
    let mut request = client.request(method, url).body(body);
    for (name, value) in headers {
        if name != "host" && name != "content-length" {
            request = request.header(name, value);
        }
    }
    match request.send().await {
        Ok(answer) => {
            let status = answer.status();
            let headers = answer.headers().clone();
            let body = answer.bytes().await.unwrap_or_default();
            let mut response = (status, body).into_response();
            for (name, value) in &headers {
                if name != "content-length" && name != "transfer-encoding" {
                    response.headers_mut().insert(name, value.clone());
                }
            }
            response
        }
        Err(_) => StatusCode::BAD_GATEWAY.into_response(),
    }
}

/// A bound port, before its routes exist (a fake whose answers carry its
/// own URL needs the address first).
pub struct Listener {
    listener: tokio::net::TcpListener,
    address: SocketAddr,
}

impl Listener {
    pub async fn bind(address: SocketAddr) -> std::io::Result<Listener> {
        let listener = tokio::net::TcpListener::bind(address).await?;
        let address = listener.local_addr()?;
        Ok(Listener { listener, address })
    }

    /// A free port on 127.0.0.1.
    pub async fn loopback() -> std::io::Result<Listener> {
        Self::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Serves `app` until the returned server is dropped.
    pub fn serve(self, app: Router) -> Server {
        let task = tokio::spawn(async move {
            let _ = axum::serve(self.listener, app).await;
        });
        Server {
            address: self.address,
            task,
        }
    }
}

/// A running server; it stops when dropped.
pub struct Server {
    address: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://` and the address.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }
}

/// A failure a fake answers instead of its normal work.
pub trait Fault: Clone + DeserializeOwned + Send + 'static {
    /// How many more calls it answers; every call while `None`.
    fn times_mut(&mut self) -> &mut Option<u32>;
    /// The HTTP status it answers, for the line a person sees.
    fn status(&self) -> u16;
}

/// Faults in the order they were set; the first answers calls until its
/// `times` run out, then the next one does.
pub struct FaultQueue<F> {
    /// Who prints what a person set over HTTP (`"crm-stub"`).
    name: &'static str,
    faults: Mutex<VecDeque<F>>,
}

impl<F: Fault> FaultQueue<F> {
    pub fn new(name: &'static str) -> Arc<Self> {
        Arc::new(FaultQueue {
            name,
            faults: Mutex::new(VecDeque::new()),
        })
    }

    pub fn push(&self, fault: F) {
        lock(&self.faults).push_back(fault);
    }

    pub fn clear(&self) {
        lock(&self.faults).clear();
    }

    /// The fault this call gets, counting it; `None`: answer normally.
    pub fn next(&self) -> Option<F> {
        let mut faults = lock(&self.faults);
        let fault = faults.front_mut()?;
        let given = fault.clone();
        if let Some(times) = fault.times_mut() {
            *times = times.saturating_sub(1);
            if *times == 0 {
                faults.pop_front();
            }
        }
        Some(given)
    }

    /// `POST /faults` (a fault as JSON) and `DELETE /faults` (recover), to
    /// merge into the fake's router.
    pub fn routes(self: &Arc<Self>) -> Router {
        Router::new()
            .route("/faults", post(set::<F>).delete(clear::<F>))
            .with_state(Arc::clone(self))
    }
}

async fn set<F: Fault>(
    State(queue): State<Arc<FaultQueue<F>>>,
    Json(fault): Json<F>,
) -> StatusCode {
    let mut shown = fault.clone();
    let times = shown
        .times_mut()
        .map_or("every call".to_owned(), |n| format!("{n} call(s)"));
    println!(
        "{}: answering HTTP {} to {times} until DELETE /faults",
        queue.name,
        fault.status()
    );
    queue.push(fault);
    StatusCode::NO_CONTENT
}

async fn clear<F: Fault>(State(queue): State<Arc<FaultQueue<F>>>) -> StatusCode {
    println!(
        "{}: recovered; calls are answered normally again",
        queue.name
    );
    queue.clear();
    StatusCode::NO_CONTENT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, serde::Deserialize)]
    struct Outage {
        status: u16,
        times: Option<u32>,
    }

    impl Fault for Outage {
        fn times_mut(&mut self) -> &mut Option<u32> {
            &mut self.times
        }
        fn status(&self) -> u16 {
            self.status
        }
    }

    fn outage(status: u16, times: Option<u32>) -> Outage {
        Outage { status, times }
    }

    #[test]
    fn each_fault_answers_its_count_of_calls_in_order() {
        let queue = FaultQueue::new("test");
        queue.push(outage(429, Some(2)));
        queue.push(outage(503, Some(1)));
        let statuses: Vec<Option<u16>> = (0..4).map(|_| queue.next().map(|f| f.status)).collect();
        assert_eq!(statuses, [Some(429), Some(429), Some(503), None]);
    }

    #[test]
    fn a_fault_without_a_count_answers_until_cleared() {
        let queue = FaultQueue::new("test");
        queue.push(outage(500, None));
        queue.push(outage(429, Some(1)));
        for _ in 0..5 {
            assert_eq!(queue.next().map(|f| f.status), Some(500));
        }
        queue.clear();
        assert_eq!(queue.next(), None);
    }

    #[tokio::test]
    async fn faults_are_set_and_cleared_over_http() {
        let queue = FaultQueue::<Outage>::new("test");
        let server = Listener::loopback().await.unwrap().serve(queue.routes());
        let client = reqwest::Client::new();
        let url = format!("{}/faults", server.url());
        let set = client
            .post(&url)
            .json(&serde_json::json!({"status": 503, "times": 1}))
            .send()
            .await
            .unwrap();
        assert_eq!(set.status(), 204);
        assert_eq!(queue.next(), Some(outage(503, Some(1))));
        assert_eq!(queue.next(), None);

        queue.push(outage(500, None));
        let cleared = client.delete(&url).send().await.unwrap();
        assert_eq!(cleared.status(), 204);
        assert_eq!(queue.next(), None);
    }
}
