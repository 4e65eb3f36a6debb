//! `SENDER=html make run`: a page on the loopback carrying the snippet of
//! docs/senders/html.md, which posts to the local pipeline, and its
//! thank-you page; with Cloudflare Turnstile's documented test keys (the
//! widget's always-passing site key, whose dummy token the local siteverify
//! fake passes with the always-passing secret). Without a network the
//! widget cannot load, so the page puts the dummy token in itself then, as
//! the widget would.

use std::net::SocketAddr;

use axum::response::Html;
use axum::routing::get;
use axum::Router;

use crate::fakes::turnstile::{
    TurnstileFake, ALWAYS_PASSES_SECRET, ALWAYS_PASSES_SITE_KEY, DUMMY_TOKEN,
};
use crate::server::{Listener, Server};

pub struct DemoPage {
    _server: Server,
    turnstile: TurnstileFake,
    origin: String,
}

impl DemoPage {
    /// Serves the page on `port` (0: any free one), posting to `webhook_url`.
    pub async fn start(port: u16, webhook_url: &str) -> Result<DemoPage, String> {
        let listener = Listener::bind(SocketAddr::from(([127, 0, 0, 1], port)))
            .await
            .map_err(|e| format!("demo page on port {port}: {e}"))?;
        let page = page(webhook_url);
        let app = Router::new()
            .route("/", get(move || async move { Html(page) }))
            .route("/thanks", get(|| async { Html(THANKS) }));
        let server = listener.serve(app);
        let origin = server.url();
        let turnstile = TurnstileFake::start(ALWAYS_PASSES_SECRET)
            .await
            .map_err(|e| format!("Turnstile fake: {e}"))?;
        Ok(DemoPage {
            _server: server,
            turnstile,
            origin,
        })
    }

    /// The page's address, to open in a browser.
    pub fn url(&self) -> String {
        format!("{}/", self.origin)
    }

    /// What ingest needs to take this page's posts.
    pub fn ingest_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("SENDER", "html".to_owned()),
            ("ALLOWED_ORIGINS", self.origin.clone()),
            ("THANK_YOU_URL", format!("{}/thanks", self.origin)),
            ("TURNSTILE_SECRET", ALWAYS_PASSES_SECRET.to_owned()),
            ("TURNSTILE_VERIFY_URL", self.turnstile.verify_url()),
        ]
    }
}

const THANKS: &str = "<!doctype html><meta charset=utf-8><title>Thank you</title>\
<h1>Thank you</h1><p>Your message was received. <a href=\"/\">Back to the form</a></p>";

fn page(webhook_url: &str) -> String {
    format!(
        r#"<!doctype html>
<meta charset="utf-8">
<title>Contact (local demo)</title>
<h1>Contact</h1>
<form action="{webhook_url}" method="post">
  <input type="hidden" name="_form" value="contact">
  <input type="hidden" name="_submission_id">
  <input type="hidden" name="rendered_at">
  <p><label>Name <input name="name" required></label></p>
  <p><label>E-mail <input name="email" type="email" required></label></p>
  <p><label>Message <textarea name="message"></textarea></label></p>
  <div class="cf-turnstile" data-sitekey="{ALWAYS_PASSES_SITE_KEY}"></div>
  <p><button type="submit">Send</button></p>
</form>
<script src="https://challenges.cloudflare.com/turnstile/v0/api.js" async defer></script>
<script>
  document.querySelector('[name=_submission_id]').value = crypto.randomUUID();
  document.querySelector('[name=rendered_at]').value = Math.floor(Date.now() / 1000);
  // Offline, the widget never loads: its test token, as it would give it.
  document.querySelector('form').addEventListener('submit', function () {{
    if (!this.querySelector('[name="cf-turnstile-response"]')) {{
      const token = document.createElement('input');
      token.type = 'hidden';
      token.name = 'cf-turnstile-response';
      token.value = '{DUMMY_TOKEN}';
      this.appendChild(token);
    }}
  }});
</script>
"#
    )
}
