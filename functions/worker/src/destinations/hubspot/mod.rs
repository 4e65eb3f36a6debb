//! The `hubspot` destination: contacts written with HubSpot's batch upsert,
//! up to 100 per call, keyed by email or by a unique property of the user's
//! choice, with the properties `FIELD_MAP` names.
//!
//! Built from HubSpot's reference pages:
//! - batch upsert (request `inputs[]` with `idProperty`, `id`, `properties`,
//!   `objectWriteTraceId`; answer `results[]` with `new` and
//!   `objectWriteTraceId`, `errors[]`, `numErrors`):
//!   <https://developers.hubspot.com/docs/api-reference/2026-03/crm/objects/contacts/batch/upsert-contacts>
//!   (date version, the newest documented, and this module's default) and
//!   <https://developers.hubspot.com/docs/api-reference/legacy/crm/objects/contacts/batch/upsert-contacts> (`v3`);
//! - errors (207 multi-status, 401, 403 `MISSING_SCOPES`, 429 with
//!   `policyName`, 477 migration in progress with `Retry-After`, the error
//!   body): <https://developers.hubspot.com/docs/api-reference/error-handling>;
//! - 409 when a write conflicts with an existing contact ("Contact already
//!   exists"): <https://developers.hubspot.com/docs/methods/contacts/create_or_update>.
//!
//! Every input carries `objectWriteTraceId` = the submission id, so each
//! result and each error maps back to its receipt. Two inputs for the same
//! contact in one call fail the whole call at HubSpot, so only the newest
//! (by the sender's timestamp) is sent; the others are done when it is.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use shared::field_map::FieldMap;

use super::refusal::traced;
use shared::newest::GateSecret;
use shared::{IdempotencyKey, Lead};

use crate::destinations::client;

use crate::destinations::port::{
    Answer, CallDeadline, Destination, DestinationError, Forgotten, Person, Upserted, Write,
};
use crate::destinations::token::{BearerToken, CrmToken, Source, TokenError};

mod answers;
pub mod build;
mod calls;
mod consent;
mod erase;
mod inputs;
pub mod notes;
mod settings;

use inputs::{plan, Held, Input};

pub use answers::DAILY_LIMIT_WAIT;
use answers::{answer_for, one_input_may_cause, BatchAnswer};
pub use settings::*;

/// Inputs HubSpot takes per batch call.
pub const MAX_INPUTS: usize = 100;

/// Calls one chunk of inputs may take to narrow whole-request answers down
/// to the inputs that cause them: enough to isolate a few bad leads among
/// 100 by halving (two calls per level).
const NARROWING_CALLS: usize = 24;

/// Why a submission keyed by its own id cannot be written: stored on the
/// receipt and shown by `receipts`, so it says what to do.
pub const EMAIL_ON_ANOTHER_CONTACT: &str = "email-on-another-contact: HubSpot keeps one contact per e-mail; use HUBSPOT_ID_PROPERTY=email, or merge the contacts in HubSpot, then redrive";

const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

pub struct HubSpot {
    client: reqwest::Client,
    url: String,
    base_url: String,
    api_version: ApiVersion,
    /// With contacts by email: each submission a note on its contact.
    notes: Option<notes::NoteKeeping>,
    id_property: IdProperty,
    field_map: FieldMap,
    token: BearerToken,
    /// Contacts by email: the key of the newest-wins gates.
    gate_secret: Option<GateSecret>,
}

/// Answers by slot, from `send` (boxed: it calls itself on a split).
type Sending<'a> = Pin<Box<dyn Future<Output = Vec<(usize, Answer)>> + Send + 'a>>;

impl HubSpot {
    /// Builds the HTTP client once: rustls, timeouts, and no redirects (a
    /// redirect could carry the token elsewhere).
    ///
    /// `gate_secret` is the key of the newest-wins gates (the setting
    /// resolved, see `build::connect`); it is used only for contacts by
    /// email, which without one would keep no gates.
    pub fn new(
        settings: HubSpotSettings,
        token: Option<CrmToken>,
        gate_secret: Option<GateSecret>,
    ) -> Result<Self, reqwest::Error> {
        let client = client::client(REQUEST_TIMEOUT)?;
        let by_email = settings.id_property == IdProperty::Email;
        let url = format!(
            "{}{}",
            settings.base_url.trim_end_matches('/'),
            settings.api_version.upsert_path()
        );
        Ok(HubSpot {
            client,
            url,
            base_url: settings.base_url.trim_end_matches('/').to_owned(),
            api_version: settings.api_version.clone(),
            notes: None,
            id_property: settings.id_property,
            field_map: settings.field_map,
            token: BearerToken::new(token),
            gate_secret: gate_secret.filter(|_| by_email),
        })
    }

    /// Re-reads the token from `source` after a 401, at most once per
    /// `interval`.
    pub fn refreshing_from(
        mut self,
        source: Arc<dyn Source<CrmToken, TokenError>>,
        interval: Duration,
    ) -> Self {
        self.token = self.token.refreshing_from(source, interval);
        self
    }

    /// Sends `inputs` (at most 100): one answer per input, by slot. A
    /// whole-request answer that one input may have caused (a 400 about a
    /// value, a 409 conflict) is split in halves until that input stands
    /// alone: one bad lead never fails or holds the others. A 400 about a
    /// property (`PROPERTY_DOESNT_EXIST`) applies to every input that
    /// carries it. Splitting takes at most `budget` more calls and ends at
    /// `deadline`; inputs still grouped with a bad one then wait for the
    /// next attempt, which narrows again.
    fn send<'a>(
        &'a self,
        inputs: &'a [Input],
        budget: &'a AtomicUsize,
        deadline: CallDeadline,
    ) -> Sending<'a> {
        Box::pin(async move {
            let called = Instant::now();
            let outcome = self
                .token
                .call_renewing_once(
                    || self.call_by(inputs, deadline),
                    |called| {
                        matches!(
                            called,
                            BatchAnswer::Whole(Err(DestinationError::Unauthorized { status: 401 }))
                        )
                    },
                )
                .await;
            let latency = called.elapsed();
            match outcome {
                BatchAnswer::Whole(Err(error))
                    if inputs.len() > 1 && one_input_may_cause(&error) =>
                {
                    let spent = budget.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                        left.checked_sub(2)
                    });
                    if spent.is_err() || deadline.time_left().is_none() {
                        let waits = Err(DestinationError::retryable(
                            "narrowing-continues-next-attempt",
                        ));
                        return inputs
                            .iter()
                            .map(|input| {
                                (
                                    input.slot,
                                    Answer {
                                        result: waits.clone(),
                                        latency,
                                    },
                                )
                            })
                            .collect();
                    }
                    let (left, right) = inputs.split_at(inputs.len() / 2);
                    let mut answers = self.send(left, budget, deadline).await;
                    answers.extend(self.send(right, budget, deadline).await);
                    answers
                }
                BatchAnswer::Whole(Err(DestinationError::Retryable {
                    status: Some(409), ..
                })) if inputs.len() == 1 && self.id_property != IdProperty::Email => {
                    // One submission, keyed by its own id, conflicts: its
                    // e-mail is on another contact (HubSpot keeps e-mails
                    // unique). Every submission is claimed before it is
                    // sent, so no race of our own causes it: retrying for
                    // days would not help. A person decides.
                    vec![(
                        inputs[0].slot,
                        Answer {
                            result: Err(DestinationError::Permanent {
                                status: Some(409),
                                reason: EMAIL_ON_ANOTHER_CONTACT.to_owned(),
                            }),
                            latency,
                        },
                    )]
                }
                BatchAnswer::Whole(result) => inputs
                    .iter()
                    .map(|input| {
                        (
                            input.slot,
                            Answer {
                                result: result.clone(),
                                latency,
                            },
                        )
                    })
                    .collect(),
                BatchAnswer::PerInput(results) => inputs
                    .iter()
                    .map(|input| {
                        let result = results
                            .iter()
                            .find(|(trace, _)| *trace == input.trace)
                            .map(|(_, result)| result.clone())
                            .unwrap_or_else(|| {
                                Err(DestinationError::retryable(
                                    "HubSpot gave no result for this input",
                                ))
                            });
                        (input.slot, Answer { result, latency })
                    })
                    .collect(),
            }
        })
    }

    /// One call for `inputs`, within `deadline`.
    async fn call_by(&self, inputs: &[Input], deadline: CallDeadline) -> BatchAnswer {
        deadline
            .bound(async { Ok(self.call(inputs).await) })
            .await
            .unwrap_or_else(|error| BatchAnswer::Whole(Err(error)))
    }

    async fn call(&self, inputs: &[Input]) -> BatchAnswer {
        let body = json!({
            "inputs": inputs.iter().map(|input| json!({
                "idProperty": self.id_property.name(),
                "id": input.id,
                "objectWriteTraceId": input.trace,
                "properties": input.properties,
            })).collect::<Vec<_>>()
        });
        let mut request = self.client.post(&self.url).json(&body);
        match self.token.current() {
            Ok(Some(token)) => request = request.bearer_auth(token.expose()),
            Ok(None) => {}
            Err(unavailable) => {
                return BatchAnswer::Whole(Err(DestinationError::CredentialsUnavailable(
                    unavailable,
                )))
            }
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => return BatchAnswer::Whole(Err(client::transport_error(&error))),
        };
        let status = response.status().as_u16();
        let retry_after = client::retry_after(&response);
        let body: Value = client::json_capped(response).await;
        answer_for(status, retry_after, &body)
    }
}

impl Destination for HubSpot {
    fn newest_gates(&self) -> Option<&GateSecret> {
        self.gate_secret.as_ref()
    }

    fn name(&self) -> &'static str {
        "hubspot"
    }

    async fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> Result<Upserted, DestinationError> {
        let write = Write::lead(lead, key);
        let mut answers = self
            .upsert_batch(&[write], 1, CallDeadline::client_timeout_only())
            .await;
        answers
            .pop()
            .map(|answer| answer.result)
            .unwrap_or_else(|| Err(DestinationError::retryable("no answer")))
    }

    fn keeps_history(&self) -> bool {
        self.notes.is_some()
    }

    async fn erase(&self, person: Person<'_>) -> Result<Forgotten, DestinationError> {
        self.erase_person(person).await
    }

    /// As few calls as HubSpot allows: 100 inputs each, one after the other
    /// (HubSpot's limits are per account, not per connection); then, with
    /// contacts by email, each submission's note (`notes`), at most
    /// `concurrency` at once.
    async fn upsert_batch(
        &self,
        writes: &[Write<'_>],
        concurrency: usize,
        deadline: CallDeadline,
    ) -> Vec<Answer> {
        let (history, leads): (Vec<usize>, Vec<usize>) =
            (0..writes.len()).partition(|&slot| writes[slot].history_only);
        let lead_writes: Vec<Write<'_>> = leads.iter().map(|&slot| writes[slot]).collect();
        let mut answers: Vec<Answer> = vec![
            Answer {
                result: Ok(Upserted::Stale),
                latency: Duration::ZERO,
            };
            writes.len()
        ];
        for (slot, answer) in leads
            .iter()
            .zip(self.upsert_contacts(&lead_writes, deadline).await)
        {
            answers[*slot] = answer;
        }
        self.set_subscriptions(writes, &mut answers, concurrency, deadline)
            .await;
        if let Some(notes) = &self.notes {
            self.keep_history(notes, writes, &mut answers, concurrency, deadline)
                .await;
        } else {
            for slot in history {
                answers[slot].result = Err(DestinationError::Permanent {
                    status: None,
                    reason: "history-not-kept".to_owned(),
                });
            }
        }
        answers
    }
}

impl HubSpot {
    /// The contacts of `writes` upserted: one answer per write, in order.
    async fn upsert_contacts(&self, writes: &[Write<'_>], deadline: CallDeadline) -> Vec<Answer> {
        let (inputs, held) = plan(writes, &self.id_property, &self.field_map);
        let mut answers: Vec<Option<Answer>> = vec![None; writes.len()];
        for chunk in inputs.chunks(MAX_INPUTS) {
            let budget = AtomicUsize::new(NARROWING_CALLS);
            for (slot, answer) in self.send(chunk, &budget, deadline).await {
                answers[slot] = Some(answer);
            }
        }
        for (slot, reason) in held {
            let answer = match reason {
                Held::NoEmail => Answer {
                    result: Err(DestinationError::Permanent {
                        status: None,
                        reason: "no-email".to_owned(),
                    }),
                    latency: Duration::ZERO,
                },
                Held::SameContactAs(winner) => {
                    let winner = answers[winner].clone();
                    match winner {
                        Some(Answer {
                            result: Ok(_),
                            latency,
                        }) => Answer {
                            result: Ok(Upserted::Stale),
                            latency,
                        },
                        // The newer submission's own data was refused: the
                        // older one is not refused with it, but sent on its
                        // own at the next attempt (the newer one is settled
                        // by then, so it holds nothing back).
                        Some(Answer {
                            result: Err(DestinationError::Permanent { .. }),
                            latency,
                        }) => Answer {
                            result: Err(DestinationError::retryable(
                                "held-back-newer-submission-refused",
                            )),
                            latency,
                        },
                        Some(failed) => failed,
                        None => Answer {
                            result: Err(DestinationError::retryable("no answer")),
                            latency: Duration::ZERO,
                        },
                    }
                }
            };
            answers[slot] = Some(answer);
        }
        answers
            .into_iter()
            .zip(writes)
            .map(|(answer, write)| {
                let answer = answer.unwrap_or(Answer {
                    result: Err(DestinationError::retryable("no answer")),
                    latency: Duration::ZERO,
                });
                Answer {
                    result: traced(answer.result, write.lead, &self.field_map),
                    ..answer
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::answers::*;
    use super::*;

    /// What HubSpot gives no meaning of its own waits as the one rule says.
    #[test]
    fn a_retryable_answer_of_no_meaning_of_its_own_follows_the_one_rule() {
        for status in [408, 425, 500, 502, 503, 504] {
            assert_eq!(
                answer_for(status, None, &serde_json::Value::Null),
                BatchAnswer::Whole(Err(crate::destinations::client::by_status(status, None))),
                "{status}"
            );
        }
    }
    use serde_json::Map;
    use shared::{Sender, SubmissionId};

    fn lead(id: &str, email: &str, submitted_at: Option<&str>) -> Lead {
        Lead {
            external_id: id.into(),
            name: "Ada Lovelace".into(),
            email: email.into(),
            message: "hello".into(),
            fields: Map::new(),
            aliases: Vec::new(),
            received_at: "2026-11-30T08:00:00.000Z".into(),
            submitted_at: submitted_at.map(str::to_owned),
            sender_time_replaced: false,
            route: None,
        }
    }

    fn key(id: &str) -> IdempotencyKey {
        IdempotencyKey::for_submission(Sender::StaticForms, &SubmissionId::parse(id).unwrap())
    }

    #[test]
    fn api_versions() {
        let rows = [
            ("v3", Some("/crm/v3/objects/contacts/batch/upsert")),
            (
                "2026-03",
                Some("/crm/objects/2026-03/contacts/batch/upsert"),
            ),
            (
                "2026-09",
                Some("/crm/objects/2026-09/contacts/batch/upsert"),
            ),
            (
                " 2025-09 ",
                Some("/crm/objects/2025-09/contacts/batch/upsert"),
            ),
            ("2026-13", None),
            ("26-03", None),
            ("v4", None),
            ("", None),
        ];
        for (raw, path) in rows {
            assert_eq!(
                ApiVersion::parse(raw).map(|v| v.upsert_path()),
                path.map(str::to_owned),
                "{raw:?}"
            );
        }
        assert!(ApiVersion::parse(DEFAULT_API_VERSION).is_some());
    }

    #[test]
    fn one_input_per_contact_the_newest_sent() {
        let leads = [
            lead("s1", " Ada@Example.com ", Some("2026-11-30T08:00:01.000Z")),
            lead("s2", "grace@example.com", None),
            lead("s3", "ada@example.com", Some("2026-11-30T08:00:05.000Z")),
            lead("s4", "", None),
            lead("s5", "ADA@example.com", Some("2026-11-30T08:00:03.000Z")),
        ];
        let keys: Vec<IdempotencyKey> = leads.iter().map(|l| key(&l.external_id)).collect();
        let writes: Vec<Write<'_>> = leads
            .iter()
            .zip(&keys)
            .map(|(lead, key)| Write::lead(lead, key))
            .collect();
        let (inputs, mut held) = plan(&writes, &IdProperty::Email, &default_field_map(None));
        let sent: Vec<(&str, &str, usize)> = inputs
            .iter()
            .map(|i| (i.id.as_str(), i.trace.as_str(), i.slot))
            .collect();
        assert_eq!(
            sent,
            [("ada@example.com", "s3", 2), ("grace@example.com", "s2", 1)]
        );
        assert_eq!(
            inputs[0].properties["email"], "ada@example.com",
            "normalised"
        );
        held.sort_by_key(|(slot, _)| *slot);
        assert_eq!(
            held,
            [
                (0, Held::SameContactAs(2)),
                (3, Held::NoEmail),
                (4, Held::SameContactAs(2))
            ]
        );

        // Keyed by a custom property: one contact per submission.
        let custom = IdProperty::Custom("staticforms_submission_id".into());
        let (inputs, held) = plan(&writes, &custom, &default_field_map(None));
        assert_eq!(inputs.len(), 5);
        assert!(held.is_empty());
        assert_eq!(inputs[3].id, "s4");
        assert!(
            !inputs[3].properties.contains_key("email"),
            "a blank email is not sent"
        );
    }

    fn whole(called: &BatchAnswer) -> &Result<Upserted, DestinationError> {
        match called {
            BatchAnswer::Whole(result) => result,
            other => panic!("expected one answer for all: {other:?}"),
        }
    }

    fn wait_of(result: &Result<Upserted, DestinationError>) -> Option<Duration> {
        match result {
            Err(DestinationError::Retryable { retry_after, .. }) => *retry_after,
            other => panic!("expected retryable: {other:?}"),
        }
    }

    #[test]
    fn answers_for_the_whole_request() {
        let policy =
            |name: &str| json!({"status": "error", "errorType": "RATE_LIMIT", "policyName": name});
        let five = Some(Duration::from_secs(5));
        let rows: [(u16, Option<Duration>, Value, Option<Duration>); 11] = [
            (
                429,
                None,
                policy("TEN_SECONDLY_ROLLING"),
                Some(TEN_SECONDLY_WAIT),
            ),
            (429, five, policy("TEN_SECONDLY_ROLLING"), five),
            (429, None, policy("SECONDLY"), Some(SECONDLY_WAIT)),
            (429, five, policy("DAILY"), Some(DAILY_LIMIT_WAIT)),
            (429, None, json!({}), Some(TEN_SECONDLY_WAIT)),
            (423, None, json!({}), Some(LOCKED_WAIT)),
            (
                423,
                Some(Duration::from_secs(1)),
                json!({}),
                Some(LOCKED_WAIT),
            ),
            (503, five, json!({}), five),
            (
                409,
                None,
                json!({"category": "OBJECT_ALREADY_EXISTS"}),
                None,
            ),
            (477, five, json!({}), five),
            (477, None, json!({}), Some(MIGRATION_WAIT)),
        ];
        for (status, retry_after, body, wait) in rows {
            assert_eq!(
                wait_of(whole(&answer_for(status, retry_after, &body))),
                wait,
                "{status} {body}"
            );
        }
        assert_eq!(
            whole(&answer_for(401, None, &json!({}))),
            &Err(DestinationError::Unauthorized { status: 401 })
        );
        assert_eq!(
            whole(&answer_for(
                403,
                None,
                &json!({"category": "MISSING_SCOPES"})
            )),
            &Err(DestinationError::Unauthorized { status: 403 }),
            "a configuration fault, never the lead's"
        );
        assert_eq!(
            whole(&answer_for(
                400,
                None,
                &json!({"category": "VALIDATION_ERROR", "errors": [{"code": "PROPERTY_DOESNT_EXIST"}]})
            )),
            &Err(DestinationError::Misconfigured {
                status: Some(400),
                reason: "PROPERTY_DOESNT_EXIST".into()
            })
        );
    }

    #[test]
    fn a_whole_request_refusal_names_its_code_or_its_category_never_its_message() {
        let rows = [
            (
                json!({"category": "VALIDATION_ERROR", "errors": [{"code": "INVALID_EMAIL", "message": "Email address ada@example.com is invalid"}]}),
                Some("INVALID_EMAIL"),
            ),
            (
                json!({"status": "error", "category": "VALIDATION_ERROR", "message": "Property \"company\" is required by a rule of this account"}),
                Some("VALIDATION_ERROR"),
            ),
            (
                json!({"category": "VALIDATION_ERROR", "message": "Ada Lovelace +44 20 7946 0000 breaks rule X", "correlationId": "aeb5f871-7f07-4993-9211-075dc63e7cbf"}),
                Some("VALIDATION_ERROR"),
            ),
            (json!({"category": "Ada Lovelace +44 20 7946 0000"}), None),
            (json!({"message": "Ada Lovelace is not allowed"}), None),
            (json!({}), None),
            (Value::Null, None),
        ];
        for (body, reason) in rows {
            assert_eq!(whole_request_reason(&body).as_deref(), reason, "{body}");
        }
    }

    #[test]
    fn whole_request_answers_one_input_may_cause_are_narrowed() {
        let refused = |reason: &str| DestinationError::Permanent {
            status: Some(400),
            reason: reason.into(),
        };
        let retryable = |status: u16| DestinationError::Retryable {
            status: Some(status),
            retry_after: None,
            reason: "r".into(),
        };
        let rows = [
            (refused("INVALID_EMAIL"), true),
            (refused("INVALID_OPTION"), true),
            (refused("INVALID_ID_PROPERTY"), false),
            (refused("PROPERTY_DOESNT_EXIST"), false),
            (refused("VALIDATION_ERROR: Company is required"), true),
            (refused("VALIDATION_ERROR"), true),
            (refused("HTTP 400"), true),
            (retryable(409), true),
            (retryable(503), false),
            (retryable(429), false),
            (DestinationError::Unauthorized { status: 401 }, false),
        ];
        for (error, narrowed) in rows {
            assert_eq!(one_input_may_cause(&error), narrowed, "{error:?}");
        }
        let conflict = answer_for(409, None, &json!({"category": "OBJECT_ALREADY_EXISTS"}));
        assert!(
            matches!(whole(&conflict), Err(DestinationError::Retryable { reason, .. }) if reason == "OBJECT_ALREADY_EXISTS")
        );
    }

    #[test]
    fn answers_per_input() {
        let body = json!({
            "status": "COMPLETE",
            "results": [{"id": "1", "new": true, "objectWriteTraceId": "s1"}],
            "numErrors": 2,
            "errors": [
                {"status": "error", "category": "VALIDATION_ERROR", "context": {"objectWriteTraceId": ["s2"]}, "errors": [{"code": "INVALID_EMAIL"}]},
                {"status": "error", "category": "INTERNAL_ERROR", "context": {"objectWriteTraceId": ["s3"]}}
            ]
        });
        let BatchAnswer::PerInput(results) = answer_for(207, None, &body) else {
            panic!("per input")
        };
        let contact_1 = Upserted::Written(crate::destinations::port::DeliveredRecord::with_id("1"));
        assert_eq!(results[0], ("s1".to_owned(), Ok(contact_1)));
        assert_eq!(
            results[1],
            (
                "s2".to_owned(),
                Err(DestinationError::Permanent {
                    status: Some(207),
                    reason: "INVALID_EMAIL".into()
                })
            )
        );
        assert!(
            matches!(&results[2], (trace, Err(DestinationError::Retryable { .. })) if trace == "s3")
        );
    }

    /// routes.example.toml's `lead_source`, copied into a portal without
    /// it: the reason names the property and the route that sends it, not
    /// a credential problem.
    #[test]
    fn a_missing_property_is_traced_to_the_route_or_map_that_sends_it() {
        let routes = shared::routes::parse(
            "[[route]]\nform = \"f\"\nname = \"Pricing page\"\n[route.set]\nlead_source = \"Pricing page\"\n",
        )
        .unwrap();
        let mut routed = lead("sub_1", "ada@example.com", None);
        routed.follow(Arc::new(routes.routes[0].clone()));
        let body = json!({"category": "VALIDATION_ERROR", "errors": [{"code": "PROPERTY_DOESNT_EXIST",
            "message": "Property \"lead_source\" does not exist", "context": {"propertyName": ["lead_source"]}}]});
        let BatchAnswer::Whole(refused) = answer_for(400, None, &body) else {
            panic!("a whole-request answer");
        };
        let map = default_field_map(None);
        assert_eq!(
            traced(refused.clone(), &routed, &map),
            Err(DestinationError::Misconfigured {
                status: Some(400),
                reason: "PROPERTY_DOESNT_EXIST: lead_source from route \"Pricing page\"".into()
            })
        );
        let unrouted = lead("sub_2", "ada@example.com", None);
        assert_eq!(
            traced(refused, &unrouted, &map),
            Err(DestinationError::Misconfigured {
                status: Some(400),
                reason: "PROPERTY_DOESNT_EXIST: lead_source".into()
            }),
            "a property no route or map sends is named alone"
        );
        // Free text never passes as a property.
        let hostile = json!({"errors": [{"code": "PROPERTY_DOESNT_EXIST", "context": {"propertyName": ["Ada Lovelace"]}}]});
        assert_eq!(missing_property(&hostile), None);
    }
}
