//! A form the visitor's browser posts from the user's own page
//! (`Profile::browser`): only the allowed page origins may post (`Origin`,
//! and a CORS preflight answered for them alone), every post must carry a
//! bot check token that passes (Turnstile), and the browser is answered as
//! a browser: a form post sent on to the thank-you page (303, only ever to
//! an allowed origin), a script's `fetch` with JSON. The handler asks this
//! module at each of those steps; what is stored is decided there.

pub mod config;
pub mod turnstile;

use std::sync::Arc;

use http::header::{
    ACCEPT, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS,
    ACCESS_CONTROL_ALLOW_ORIGIN, ACCESS_CONTROL_MAX_AGE, CONTENT_TYPE, LOCATION, ORIGIN, VARY,
};
use http::HeaderMap;
use lambda_http::{Body, Response};

use config::{BrowserConfig, TurnstileSecret};
use turnstile::{idempotency_key, BotAsk, BotCheck, BotCheckUnavailable, BotVerdict, Turnstile};

/// Why a browser's post is refused before anything is stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BrowserRefusal {
    #[error("this page's origin may not post here (the stack's ALLOWED_ORIGINS)")]
    OriginNotAllowed,
    #[error("the bot check did not pass ({0}); reload the page and send again")]
    BotCheckFailed(String),
    #[error(transparent)]
    BotCheckUnavailable(#[from] BotCheckUnavailable),
}

pub struct Browser {
    origins: Vec<String>,
    thank_you_url: Option<String>,
    bot_check: Option<Arc<dyn BotCheck>>,
}

impl Browser {
    /// From its settings; with an inline Turnstile secret the check is
    /// ready, with one in Secrets Manager `startup` reads it and hands the
    /// check over (`with_bot_check`). Until then every post is refused as
    /// unavailable: nothing is taken unchecked.
    pub fn new(config: &BrowserConfig) -> Self {
        let bot_check: Option<Arc<dyn BotCheck>> = match &config.secret {
            TurnstileSecret::Inline(secret) => Turnstile::new(&config.verify_url, secret)
                .ok()
                .map(|check| Arc::new(check) as Arc<dyn BotCheck>),
            TurnstileSecret::SecretsManager(_) => None,
        };
        Browser {
            origins: config.origins.clone(),
            thank_you_url: config.thank_you_url.clone(),
            bot_check,
        }
    }

    pub fn with_bot_check(mut self, check: Arc<dyn BotCheck>) -> Self {
        self.bot_check = Some(check);
        self
    }

    /// The request's `Origin`, when it is one of the allowed.
    pub fn allowed_origin<'a>(&self, headers: &'a HeaderMap) -> Option<&'a str> {
        let mut sent = headers.get_all(ORIGIN).iter();
        let origin = sent.next()?.to_str().ok()?;
        (sent.next().is_none() && self.origins.iter().any(|allowed| allowed == origin))
            .then_some(origin)
    }

    /// Refuses a post whose page may not post here.
    pub fn check_origin(&self, headers: &HeaderMap) -> Result<(), BrowserRefusal> {
        self.allowed_origin(headers)
            .map(|_| ())
            .ok_or(BrowserRefusal::OriginNotAllowed)
    }

    /// Verifies the post's token for `submission_id`.
    pub async fn check_token(
        &self,
        token: Option<&str>,
        submission_id: &str,
    ) -> Result<(), BrowserRefusal> {
        let token = token
            .map(str::trim)
            .filter(|token| !token.is_empty() && token.len() <= 2048)
            .ok_or_else(|| BrowserRefusal::BotCheckFailed("missing-input-response".to_owned()))?;
        let check = self
            .bot_check
            .as_ref()
            .ok_or(BotCheckUnavailable("its secret was not read"))?;
        let key = idempotency_key(token, submission_id);
        match check
            .verify(BotAsk {
                token,
                idempotency_key: &key,
            })
            .await?
        {
            BotVerdict::Passed => Ok(()),
            BotVerdict::Refused(codes) => Err(BrowserRefusal::BotCheckFailed(codes)),
        }
    }

    /// The answer to a CORS preflight: the allowed origin may `POST`, with
    /// the headers a `fetch` of a form sends; any other learns nothing.
    pub fn preflight(&self, headers: &HeaderMap) -> Response<Body> {
        let mut response = Response::builder().header(VARY, "Origin");
        response = match self.allowed_origin(headers) {
            Some(origin) => response
                .status(204)
                .header(ACCESS_CONTROL_ALLOW_ORIGIN, origin)
                .header(ACCESS_CONTROL_ALLOW_METHODS, "POST")
                .header(ACCESS_CONTROL_ALLOW_HEADERS, "content-type, accept")
                .header(ACCESS_CONTROL_MAX_AGE, "600"),
            None => response.status(403),
        };
        response.body(Body::Empty).unwrap_or_default()
    }

    /// What the browser is answered: `answer` (the JSON every sender
    /// gets) to a script that asked for JSON, with CORS for an allowed
    /// origin; to a form post, the thank-you page (303) once stored, or a
    /// short page saying why not. The form's route's thank-you page
    /// (`routed`) comes first when it is on an allowed origin; never
    /// another site.
    pub fn answer(
        &self,
        headers: &HeaderMap,
        answer: Response<Body>,
        stored: bool,
        reason: Option<String>,
        routed: Option<&str>,
    ) -> Response<Body> {
        let wants_json = headers
            .get_all(ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains("application/json"));
        let origin = self.allowed_origin(headers).map(str::to_owned);
        if wants_json {
            let mut answer = answer;
            answer
                .headers_mut()
                .insert(VARY, "Origin".parse().expect("a header value"));
            if let Some(value) = origin.and_then(|o| o.parse().ok()) {
                answer
                    .headers_mut()
                    .insert(ACCESS_CONTROL_ALLOW_ORIGIN, value);
            }
            return answer;
        }
        let status = answer.status();
        let on_our_pages = |url: &&str| {
            shared::origin::origin_of(url).is_some_and(|origin| self.origins.contains(&origin))
        };
        let thank_you = routed
            .filter(on_our_pages)
            .or(self.thank_you_url.as_deref());
        let response = match (stored, thank_you) {
            (true, Some(url)) => Response::builder().status(303).header(LOCATION, url),
            (true, None) => Response::builder()
                .status(status)
                .header(CONTENT_TYPE, "text/plain; charset=utf-8"),
            (false, _) => Response::builder()
                .status(status)
                .header(CONTENT_TYPE, "text/plain; charset=utf-8"),
        };
        let text = match (stored, reason) {
            (true, _) => "Thank you: your message was received.".to_owned(),
            (false, Some(reason)) => format!("Your message was not sent: {reason}"),
            (false, None) => "Your message was not sent.".to_owned(),
        };
        response.body(Body::from(text)).unwrap_or_default()
    }
}
