//! A real browser for the console's test: Debian's headless Chromium,
//! driven through its chromedriver with the W3C WebDriver protocol (JSON
//! over HTTP: <https://www.w3.org/TR/webdriver2/>), a few commands only.
//! `CHROMEDRIVER` names the driver (the test command installs Debian's
//! chromium and chromium-driver and sets it); without it the test fails,
//! saying what to install.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The key under which WebDriver names an element.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver with one headless Chromium session; both end when
/// dropped.
pub struct Browser {
    driver: Child,
    base: String,
    http: reqwest::Client,
}

impl Browser {
    pub async fn start() -> Browser {
        let driver_path = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| {
            panic!(
                "CHROMEDRIVER is not set: run the suite with `make test`, which installs Debian's \
                 chromium and chromium-driver (apt-get install chromium chromium-driver) and sets it"
            )
        });
        let port = crate::pipeline::two_free_ports().0;
        // A process group of its own: Chromium is the driver's child, and
        // ends with it (see `drop`).
        let driver = Command::new(&driver_path)
            .process_group(0)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("{driver_path} does not start: {error}"));
        let mut browser = Browser {
            driver,
            base: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
        };
        let ready = Instant::now() + Duration::from_secs(20);
        while browser
            .http
            .get(format!("{}/status", browser.base))
            .send()
            .await
            .is_err()
        {
            assert!(
                Instant::now() < ready,
                "chromedriver did not answer in 20 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let session = browser
            .call(
                reqwest::Method::POST,
                "/session",
                json!({"capabilities": {"alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {
                        "binary": "/usr/lib/chromium/chromium",
                        "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                                 "--disable-dev-shm-usage", "--window-size=1280,1000"]
                    }
                }}}),
            )
            .await;
        let id = session["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {session}"))
            .to_owned();
        browser.base = format!("{}/session/{id}", browser.base);
        browser
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        self.try_call(method, path, body)
            .await
            .unwrap_or_else(|error| panic!("WebDriver {path}: {error}"))
    }

    /// A command's value, or its error and message.
    async fn try_call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Value,
    ) -> Result<Value, String> {
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.base));
        if method != reqwest::Method::GET {
            request = request.json(&body);
        }
        let answer: Value = request
            .send()
            .await
            .unwrap_or_else(|error| panic!("WebDriver {path}: {error}"))
            .json()
            .await
            .unwrap_or(Value::Null);
        if let Some(error) = answer["value"]["error"].as_str() {
            return Err(format!("{error}: {}", answer["value"]["message"]));
        }
        Ok(answer["value"].clone())
    }

    pub async fn open(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", json!({ "url": url }))
            .await;
    }

    /// The value of `script` (a function body: `return …`) run in the page.
    pub async fn run(&self, script: &str) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
        .await
    }

    /// Clicks the first element `selector` finds, as a person would; found
    /// again when the page drew it anew between finding and clicking.
    pub async fn click(&self, selector: &str) {
        let mut last = String::new();
        for _ in 0..5 {
            let found = self
                .call(
                    reqwest::Method::POST,
                    "/element",
                    json!({"using": "css selector", "value": selector}),
                )
                .await;
            let element = found[ELEMENT]
                .as_str()
                .unwrap_or_else(|| panic!("no element {selector}: {found}"))
                .to_owned();
            match self
                .try_call(
                    reqwest::Method::POST,
                    &format!("/element/{element}/click"),
                    json!({}),
                )
                .await
            {
                Ok(_) => return,
                Err(error) if error.starts_with("stale element reference") => last = error,
                Err(error) => panic!("click {selector}: {error}"),
            }
        }
        panic!("click {selector}: {last}");
    }

    /// Accepts the page's confirmation dialog.
    pub async fn accept(&self) {
        self.call(reqwest::Method::POST, "/alert/accept", json!({}))
            .await;
    }

    /// Waits up to `within` for `script` to return true.
    pub async fn until(&self, within: Duration, what: &str, script: &str) {
        let end = Instant::now() + within;
        loop {
            if self.run(script).await == Value::Bool(true) {
                return;
            }
            assert!(Instant::now() < end, "not within {within:?}: {what}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The page as a PNG.
    pub async fn screenshot(&self) -> Vec<u8> {
        use base64::Engine;
        let shot = self
            .call(reqwest::Method::GET, "/screenshot", Value::Null)
            .await;
        base64::engine::general_purpose::STANDARD
            .decode(shot.as_str().unwrap_or_default())
            .expect("a screenshot is base64")
    }
}

impl Drop for Browser {
    /// The driver and every browser process it started: killing the
    /// driver alone leaves Chromium running after the test.
    fn drop(&mut self) {
        let group = format!("-{}", self.driver.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
