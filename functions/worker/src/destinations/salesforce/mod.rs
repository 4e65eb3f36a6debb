//! The `salesforce` destination: Leads (or another object) upserted by an
//! external ID field that holds the submission id, 200 per call with sObject
//! Collections, after an OAuth 2.0 client-credentials login.
//!
//! Built from Salesforce's pages:
//! - the client credentials flow (`POST {My Domain}/services/oauth2/token`,
//!   `grant_type=client_credentials`; `instance_url` is the API's base; no
//!   `expires_in`, so a token is used until a 401 `INVALID_SESSION_ID`):
//!   <https://help.salesforce.com/s/articleView?id=sf.remoteaccess_oauth_client_credentials_flow.htm>;
//! - sObject Collections upsert (`PATCH /services/data/vXX.X/composite/sobjects/{object}/{field}`,
//!   up to 200 records with `attributes.type`, `allOrNone: false`; one
//!   result per record, in order, with `success`, `created`, `errors[].statusCode`):
//!   <https://developer.salesforce.com/docs/platform/api-rest/guide/resources-composite-sobjects-collections-upsert.html>;
//! - one-record upsert by external ID (300 when several records match):
//!   <https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_upsert.htm>;
//! - status codes and error bodies (`[{"errorCode", "message"}]`), and the
//!   `Sforce-Limit-Info` header:
//!   <https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/errorcodes.htm>;
//! - API versions (Summer '26 is API version 67.0):
//!   <https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_versions.htm>.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde_json::{json, Value};
use shared::{IdempotencyKey, Lead};

use crate::destinations::client;
use crate::destinations::refusal::traced;

use crate::destinations::port::{
    Answer, CallDeadline, DeliveredRecord, Destination, DestinationError, Forgotten, Person,
    Upserted, Write,
};
use crate::destinations::token::TokenError;
use shared::refresh::{Refreshing, Source};

mod answers;
pub mod build;
mod erase;
mod login;
mod settings;

pub use answers::REQUEST_LIMIT_WAIT;
use answers::{linked, record_result, request_result, unknown_column};
use login::{Login, Session, CREDENTIALS};
pub use settings::*;

/// Records per sObject Collections call.
pub const MAX_RECORDS: usize = 200;

/// Calls one chunk of records may take to narrow whole-request 400s down to
/// the records that cause them: enough to isolate a few bad records among
/// 200 by halving (about two calls per level). Records still grouped with a
/// bad one when it runs out wait for the next pass, which narrows again.
const NARROWING_CALLS: usize = 24;

/// The results of narrowing, one per lead (a boxed future: it recurses).
type Narrowing<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Vec<Result<Upserted, DestinationError>>> + Send + 'a>,
>;

/// One call's answer: per record, or one answer for the whole request.
enum BatchAnswer {
    PerRecord(Vec<Result<Upserted, DestinationError>>),
    Whole {
        status: u16,
        retry_after: Option<Duration>,
        answer: Value,
    },
}

const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

pub struct Salesforce {
    client: reqwest::Client,
    settings: SalesforceSettings,
    login: Login,
}

impl Salesforce {
    pub fn new(
        settings: SalesforceSettings,
        credentials: ClientCredentials,
    ) -> Result<Self, reqwest::Error> {
        let client = client::client(REQUEST_TIMEOUT)?;
        let token_url = format!(
            "{}/services/oauth2/token",
            settings.login_url.trim_end_matches('/')
        );
        Ok(Salesforce {
            login: Login {
                client: client.clone(),
                token_url,
                credentials: Refreshing::fixed(credentials, CREDENTIALS),
                refresh_interval: Duration::ZERO,
                session: tokio::sync::Mutex::new(None),
                generation: AtomicU64::new(0),
            },
            client,
            settings,
        })
    }

    /// Re-reads the client credentials from `source` when the token
    /// endpoint refuses them, at most once per `interval` (counted from now:
    /// the credentials in force were just read).
    pub fn refreshing_credentials_from(
        mut self,
        source: Arc<dyn Source<ClientCredentials, TokenError>>,
        interval: Duration,
    ) -> Self {
        if let Ok(current) = self.login.credentials.current() {
            self.login.credentials = Refreshing::from_source(current, source, CREDENTIALS);
        }
        self.login.refresh_interval = interval;
        self
    }

    /// Sessions opened so far (logins), for tests and logs.
    pub fn logins(&self) -> u64 {
        self.login.sessions()
    }

    fn record(&self, lead: &Lead) -> Value {
        let mut fields = self.settings.field_map.apply(lead);
        fields.insert(
            self.settings.external_id_field.clone(),
            Value::String(lead.external_id.clone()),
        );
        let mut record = json!({"attributes": {"type": self.settings.object}});
        if let Some(record) = record.as_object_mut() {
            record.extend(fields);
        }
        record
    }

    /// Upserts `leads` (at most 200): one result per lead, in order. A
    /// whole-request 400 is narrowed before it is classified, so the leads
    /// that do not cause it complete: an unknown field refuses only the
    /// records that carry it (the others go again, together), and any other
    /// 400 is split in halves until the record that causes it stands alone.
    async fn upsert_records(
        &self,
        leads: &[&Lead],
        deadline: CallDeadline,
    ) -> Vec<Result<Upserted, DestinationError>> {
        let mut budget = NARROWING_CALLS;
        let called = self.call_once(leads, deadline).await;
        self.narrow(leads, called, &mut budget, deadline).await
    }

    /// The results for `leads`, given what a call for them answered.
    fn narrow<'a>(
        &'a self,
        leads: &'a [&'a Lead],
        called: BatchAnswer,
        budget: &'a mut usize,
        deadline: CallDeadline,
    ) -> Narrowing<'a> {
        Box::pin(async move {
            let (status, retry_after, answer) = match called {
                BatchAnswer::PerRecord(results) => return results,
                BatchAnswer::Whole {
                    status,
                    retry_after,
                    answer,
                } => (status, retry_after, answer),
            };
            if status != 400 || leads.len() < 2 {
                return vec![request_result(status, retry_after, &answer); leads.len()];
            }
            if *budget == 0 || deadline.time_left().is_none() {
                return vec![
                    Err(DestinationError::retryable("narrowing-continues-next-pass"));
                    leads.len()
                ];
            }
            // An unknown field: refuse the records that carry it.
            if let Some(column) = unknown_column(&answer) {
                let carries = |lead: &Lead| self.record(lead).get(&column).is_some();
                let (carrying, others): (Vec<usize>, Vec<usize>) =
                    (0..leads.len()).partition(|&n| carries(leads[n]));
                if !carrying.is_empty() && !others.is_empty() {
                    let mut results =
                        vec![Ok(Upserted::Written(DeliveredRecord::unknown())); leads.len()];
                    let refusal = request_result(status, retry_after, &answer);
                    for &n in &carrying {
                        results[n] = refusal.clone();
                    }
                    let rest: Vec<&Lead> = others.iter().map(|&n| leads[n]).collect();
                    *budget -= 1;
                    let called = self.call_once(&rest, deadline).await;
                    let rest_results = self.narrow(&rest, called, budget, deadline).await;
                    for (&n, result) in others.iter().zip(rest_results) {
                        results[n] = result;
                    }
                    return results;
                }
            }
            let (left, right) = leads.split_at(leads.len() / 2);
            *budget = budget.saturating_sub(2);
            let left_called = self.call_once(left, deadline).await;
            let right_called = self.call_once(right, deadline).await;
            let mut results = self.narrow(left, left_called, budget, deadline).await;
            results.extend(self.narrow(right, right_called, budget, deadline).await);
            results
        })
    }

    /// One sObject Collections call for `leads` within `deadline` (the
    /// session's renewal included).
    async fn call_once(&self, leads: &[&Lead], deadline: CallDeadline) -> BatchAnswer {
        deadline
            .bound(async { Ok(self.call_renewing(leads).await) })
            .await
            .unwrap_or_else(|error| BatchAnswer::PerRecord(vec![Err(error); leads.len()]))
    }

    /// One sObject Collections call for `leads`, renewing the session once
    /// if it expired.
    async fn call_renewing(&self, leads: &[&Lead]) -> BatchAnswer {
        let whole = |result: Result<Upserted, DestinationError>| {
            BatchAnswer::PerRecord(vec![result; leads.len()])
        };
        let body = json!({
            "allOrNone": false,
            "records": leads.iter().map(|lead| self.record(lead)).collect::<Vec<_>>(),
        });
        let mut session = match self.login.current().await {
            Ok(session) => session,
            Err(error) => return whole(Err(error)),
        };
        let mut answered = self.call(&session, &body).await;
        if matches!(answered, Ok((401, _, _))) {
            session = match self.login.renew(&session).await {
                Ok(session) => session,
                Err(error) => return whole(Err(error)),
            };
            answered = self.call(&session, &body).await;
        }
        let (status, retry_after, answer) = match answered {
            Ok(answered) => answered,
            Err(error) => return whole(Err(error)),
        };
        match status {
            200 => {
                let results = answer.as_array().cloned().unwrap_or_default();
                BatchAnswer::PerRecord(
                    (0..leads.len())
                        .map(|n| match results.get(n) {
                            Some(result) => linked(
                                record_result(result, &leads[n].external_id),
                                &session.instance_url,
                                &self.settings.object,
                            ),
                            None => Err(DestinationError::retryable(
                                "Salesforce gave no result for this record",
                            )),
                        })
                        .collect(),
                )
            }
            _ => BatchAnswer::Whole {
                status,
                retry_after,
                answer,
            },
        }
    }

    async fn call(
        &self,
        session: &Session,
        body: &Value,
    ) -> Result<(u16, Option<Duration>, Value), DestinationError> {
        let url = format!(
            "{}/services/data/{}/composite/sobjects/{}/{}",
            session.instance_url,
            self.settings.api_version,
            utf8_percent_encode(&self.settings.object, NON_ALPHANUMERIC),
            utf8_percent_encode(&self.settings.external_id_field, NON_ALPHANUMERIC),
        );
        let response = self
            .client
            .patch(url)
            .bearer_auth(session.token.expose())
            .header(AUTO_ASSIGN_HEADER, self.settings.auto_assign_header())
            .json(body)
            .send()
            .await
            .map_err(|error| client::transport_error(&error))?;
        let status = response.status().as_u16();
        let api_usage = response
            .headers()
            .get("sforce-limit-info")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("api-usage="))
            .map(str::to_owned);
        let retry_after = client::retry_after(&response);
        let records = body["records"].as_array().map_or(0, Vec::len);
        tracing::info!(
            destination = "salesforce",
            http_status = status,
            records,
            api_usage,
            "Salesforce upsert call"
        );
        Ok((status, retry_after, client::json_capped(response).await))
    }
}

impl Destination for Salesforce {
    async fn erase(&self, person: Person<'_>) -> Result<Forgotten, DestinationError> {
        self.erase_person(person).await
    }

    fn name(&self) -> &'static str {
        "salesforce"
    }

    async fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> Result<Upserted, DestinationError> {
        let mut answers = self
            .upsert_batch(
                &[Write::lead(lead, key)],
                1,
                CallDeadline::client_timeout_only(),
            )
            .await;
        answers
            .pop()
            .map(|answer| answer.result)
            .unwrap_or_else(|| Err(DestinationError::retryable("no answer")))
    }

    /// 200 records per call, one call after the other.
    async fn upsert_batch(
        &self,
        writes: &[Write<'_>],
        _concurrency: usize,
        deadline: CallDeadline,
    ) -> Vec<Answer> {
        let mut answers = Vec::with_capacity(writes.len());
        for chunk in writes.chunks(MAX_RECORDS) {
            let leads: Vec<&Lead> = chunk.iter().map(|write| write.lead).collect();
            let called = Instant::now();
            let results = self.upsert_records(&leads, deadline).await;
            let latency = called.elapsed();
            answers.extend(
                results
                    .into_iter()
                    .zip(&leads)
                    .map(|(result, lead)| Answer {
                        result: traced(result, lead, &self.settings.field_map),
                        latency,
                    }),
            );
        }
        answers
    }
}

#[cfg(test)]
mod tests {
    use super::answers::*;
    use super::*;

    /// What Salesforce gives no meaning of its own follows the one rule.
    #[test]
    fn an_answer_of_no_meaning_of_its_own_follows_the_one_rule() {
        let own = [401, 403, 404];
        for status in crate::destinations::client::UNSPECIFIC
            .iter()
            .filter(|s| !own.contains(s))
        {
            assert_eq!(
                request_result(*status, None, &serde_json::Value::Null),
                Err(crate::destinations::client::by_status(*status, None)),
                "{status}"
            );
        }
    }

    #[test]
    fn the_session_token_goes_only_to_an_https_instance() {
        let with_login = |login_url: &str| {
            let settings = SalesforceSettings {
                login_url: login_url.to_owned(),
                api_version: "v67.0".into(),
                object: "Lead".into(),
                external_id_field: "Id__c".into(),
                field_map: default_field_map(),
                auto_assign: false,
            };
            Salesforce::new(settings, ClientCredentials::new("id", "secret").unwrap()).unwrap()
        };
        let deployed = with_login("https://acme.my.salesforce.com");
        let local = with_login("http://127.0.0.1:9001");
        let rows = [
            ("https://acme.my.salesforce.com", true, true),
            ("http://acme.my.salesforce.com", false, true),
            ("ftp://acme.my.salesforce.com", false, false),
            ("https://", false, false),
            ("not a url", false, false),
            ("", false, false),
        ];
        for (instance_url, from_https, from_local_http) in rows {
            assert_eq!(
                deployed.login.may_send_token_to(instance_url),
                from_https,
                "{instance_url}"
            );
            assert_eq!(
                local.login.may_send_token_to(instance_url),
                from_local_http,
                "{instance_url}"
            );
        }
    }

    #[test]
    fn credentials_from_a_secret() {
        let good = ClientCredentials::from_secret_json(
            r#"{"client_id":"3MVG9","client_secret":"s3cr3t"}"#,
        )
        .unwrap();
        assert_eq!(good, ClientCredentials::new("3MVG9", "s3cr3t").unwrap());
        assert!(!format!("{good:?}").contains("s3cr3t"));
        for bad in [
            "s3cr3t",
            r#"{"client_id":"3MVG9"}"#,
            r#"{"client_id":" ","client_secret":"x"}"#,
            "[]",
        ] {
            let error = ClientCredentials::from_secret_json(bad).unwrap_err();
            assert!(
                !error.contains("s3cr3t") && !error.contains("3MVG9"),
                "{error}"
            );
        }
    }

    #[test]
    fn record_results() {
        let failed = |code: &str| json!({"success": false, "errors": [{"statusCode": code, "message": "m", "fields": []}]});
        let permanent = |reason: &str, status: u16| {
            Err(DestinationError::Permanent {
                status: Some(status),
                reason: reason.into(),
            })
        };
        let rows: Vec<(Value, Result<Upserted, DestinationError>)> = vec![
            (
                json!({"id": "00Q1", "success": true, "created": true, "errors": []}),
                Ok(Upserted::Written(DeliveredRecord::with_id("00Q1"))),
            ),
            (
                json!({"id": "00Q1", "success": true, "created": false, "errors": []}),
                Ok(Upserted::Written(DeliveredRecord::with_id("00Q1"))),
            ),
            (
                json!({"success": true, "created": false, "errors": []}),
                Ok(Upserted::Written(DeliveredRecord::unknown())),
            ),
            (
                failed("CANNOT_UPDATE_CONVERTED_LEAD"),
                Ok(Upserted::Written(DeliveredRecord::unknown())),
            ),
            (
                failed("UNABLE_TO_LOCK_ROW"),
                Err(DestinationError::retryable("UNABLE_TO_LOCK_ROW")),
            ),
            (
                failed("DUPLICATE_VALUE"),
                Err(DestinationError::retryable("DUPLICATE_VALUE")),
            ),
            (
                failed("DUPLICATE_EXTERNAL_ID"),
                permanent("external-id-not-unique", 300),
            ),
            (
                failed("REQUIRED_FIELD_MISSING"),
                permanent("REQUIRED_FIELD_MISSING", 200),
            ),
            (failed("INVALID_FIELD"), permanent("INVALID_FIELD", 200)),
            (
                failed("FIELD_CUSTOM_VALIDATION_EXCEPTION"),
                permanent("FIELD_CUSTOM_VALIDATION_EXCEPTION", 200),
            ),
            (
                failed("DUPLICATES_DETECTED"),
                permanent("DUPLICATES_DETECTED", 200),
            ),
            (failed("STRING_TOO_LONG"), permanent("STRING_TOO_LONG", 200)),
            (
                failed("INVALID_EMAIL_ADDRESS"),
                permanent("INVALID_EMAIL_ADDRESS", 200),
            ),
            (
                failed("SOMETHING_NEW"),
                Err(DestinationError::retryable("SOMETHING_NEW")),
            ),
        ];
        for (result, expected) in rows {
            assert_eq!(record_result(&result, "sub_1"), expected, "{result}");
        }
    }

    #[test]
    fn a_written_record_links_to_its_page_on_an_https_instance() {
        let written = || Ok(Upserted::Written(DeliveredRecord::with_id("00Q1")));
        let on = |instance: &str| match linked(written(), instance, "Lead") {
            Ok(Upserted::Written(record)) => record.url().map(str::to_owned),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            on("https://acme.my.salesforce.com").as_deref(),
            Some("https://acme.my.salesforce.com/lightning/r/Lead/00Q1/view")
        );
        assert_eq!(on("http://127.0.0.1:9000"), None, "no link to plain http");
        let unknown = Ok(Upserted::Written(DeliveredRecord::unknown()));
        assert_eq!(
            linked(unknown.clone(), "https://acme.my.salesforce.com", "Lead"),
            unknown
        );
        let refused = Err(DestinationError::retryable("x"));
        assert_eq!(
            linked(refused.clone(), "https://a.example", "Lead"),
            refused
        );
    }

    #[test]
    fn request_results() {
        let error = |code: &str| json!([{"errorCode": code, "message": "m"}]);
        assert_eq!(request_result(300, None, &json!([])), Err(not_unique()));
        assert_eq!(
            request_result(401, None, &error("INVALID_SESSION_ID")),
            Err(DestinationError::Unauthorized { status: 401 })
        );
        assert!(matches!(
            request_result(403, None, &error("REQUEST_LIMIT_EXCEEDED")),
            Err(DestinationError::Retryable { retry_after: Some(wait), .. }) if wait == REQUEST_LIMIT_WAIT
        ));
        assert_eq!(
            request_result(403, None, &error("INSUFFICIENT_ACCESS")),
            Err(DestinationError::Unauthorized { status: 403 })
        );
        assert_eq!(
            request_result(404, None, &error("NOT_FOUND")),
            Err(DestinationError::Unauthorized { status: 404 })
        );
        assert_eq!(
            request_result(400, None, &error("INVALID_FIELD")),
            Err(DestinationError::Misconfigured {
                status: Some(400),
                reason: "INVALID_FIELD".into()
            }),
            "a field the org lacks is our configuration: the lead waits"
        );
        assert_eq!(
            request_result(400, None, &error("JSON_PARSER_ERROR")),
            Err(DestinationError::Permanent {
                status: Some(400),
                reason: "JSON_PARSER_ERROR".into()
            }),
            "a value the org cannot read is the lead's"
        );
        assert_eq!(
            unknown_column(
                &serde_json::json!([{"errorCode": "INVALID_FIELD", "message": "No such column 'Bogus__c' on sobject of type Lead"}])
            ),
            Some("Bogus__c".to_owned())
        );
        assert_eq!(unknown_column(&error("INVALID_FIELD")), None);
        assert!(matches!(
            request_result(503, Some(Duration::from_secs(5)), &Value::Null),
            Err(DestinationError::Retryable { retry_after: Some(wait), .. }) if wait == Duration::from_secs(5)
        ));
    }
}
