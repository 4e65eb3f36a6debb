//! The `pipedrive` destination: one person per e-mail address, its fields
//! newest-wins (the gates), and every submission one note on its person.
//!
//! Pipedrive has no upsert and no idempotency key, and its search may lag
//! behind its writes. So each step records what it knows or may have done
//! on the person's gate item (`destinations::memory`) before the next
//! attempt needs it:
//! - the person's id, once found or created: later submissions update it
//!   by id, with no search;
//! - a create in flight: until `PIPEDRIVE_SEARCH_LAG_SECONDS` after it
//!   started, no other create starts (the first one may be done and still
//!   invisible to search); the lead waits, then searches again;
//! - each submission's note, started then written: a note whose answer was
//!   lost is looked for on the person (by its reference) before another is
//!   created, and none is created again within the lag either.
//!
//! Built from Pipedrive's pages (and its client libraries, generated from
//! its OpenAPI description):
//! - search persons, v2: `GET /api/v2/persons/search?term=&fields=email&exact_match=true`,
//!   answer `data.items[].item.id`:
//!   <https://developers.pipedrive.com/docs/api/v1/Persons#searchPersons> (v2 tab);
//! - add a person, v2: `POST /api/v2/persons` with `name`, `emails[]`
//!   (`value`, `primary`, `label`), `phones[]`, `custom_fields` (by their
//!   40-character keys), answer `data.id`; update: `PATCH /api/v2/persons/{id}`:
//!   <https://developers.pipedrive.com/docs/api/v1/Persons#addPerson>;
//! - notes, v1 (no v2 yet): `POST /api/v1/notes` with `content` (HTML) and
//!   `person_id`, answer `data.id`; `GET /api/v1/notes?person_id=&limit=&sort=`,
//!   answer `data[]` with `id`, `content`:
//!   <https://developers.pipedrive.com/docs/api/v1/Notes>;
//! - the token in the `x-api-token` header:
//!   <https://pipedrive.readme.io/docs/core-api-concepts-authentication>;
//! - v1 person endpoints out of support since 1 August 2026:
//!   <https://developers.pipedrive.com/changelog/post/deprecated-apiv1-endpoints-become-out-of-support>.

mod answers;
pub mod build;
mod calls;
mod erase;
mod items;
mod settings;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use shared::field_map::FieldMap;
use shared::newest::GateSecret;
use shared::{IdempotencyKey, Lead};

use super::refusal::traced;
use crate::destinations::client;
use crate::destinations::history::{epoch_seconds, in_flight_wait, memory_error, waiting};
use crate::destinations::memory::{Begun, PersonMemory, Recalled};
use crate::destinations::per_person::write_by_person;
use crate::destinations::port::{
    Answer, CallDeadline, DeliveredRecord, Destination, DestinationError, Forgotten, Person,
    Upserted, Write,
};
use crate::destinations::token::{BearerToken, CrmToken, Source, TokenError};

pub use answers::{BURST_WAIT, MAX_RATE_WAIT};
pub use settings::*;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// Why a lead waits for an earlier create to show in search.
pub const CREATE_IN_FLIGHT: &str = "person-create-in-flight";

/// Why an older submission settled without its note: its person was
/// deleted in Pipedrive.
pub const PERSON_GONE: &str = "person-gone";

pub struct Pipedrive<M> {
    client: reqwest::Client,
    base_url: String,
    search_lag: Duration,
    field_map: FieldMap,
    token: BearerToken,
    gate_secret: GateSecret,
    memory: M,
}

impl<M: PersonMemory> Pipedrive<M> {
    /// Builds the HTTP client once: rustls, timeouts, and no redirects (a
    /// redirect could carry the token elsewhere).
    pub fn new(
        settings: PipedriveSettings,
        token: Option<CrmToken>,
        gate_secret: GateSecret,
        memory: M,
    ) -> Result<Self, reqwest::Error> {
        Ok(Pipedrive {
            client: client::client(REQUEST_TIMEOUT)?,
            base_url: settings.base_url,
            search_lag: settings.search_lag,
            field_map: settings.field_map,
            token: BearerToken::new(token),
            gate_secret,
            memory,
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

    /// One write: the person found, created or updated, then its note.
    async fn write(
        &self,
        write: Write<'_>,
        deadline: CallDeadline,
    ) -> Result<Upserted, DestinationError> {
        let Some(email) = write.lead.normalised_email() else {
            return Err(DestinationError::Permanent {
                status: None,
                reason: "no-email".to_owned(),
            });
        };
        let gate = self.gate_secret.gate_key(&email);
        let recalled = self.memory.recall(&gate).await.map_err(memory_error)?;
        let Some(person) = self
            .person(&gate, &email, write, &recalled, deadline)
            .await?
        else {
            // An older submission whose person was deleted in Pipedrive
            // since: nowhere to keep its note, and never a person made
            // again from older data. Settled stale, not retried.
            tracing::warn!(
                destination = "pipedrive",
                reason = PERSON_GONE,
                "an older submission's person was deleted in Pipedrive: settled stale without its note"
            );
            return Ok(Upserted::Stale);
        };
        self.keep_items(&gate, &person, write, &recalled, deadline)
            .await?;
        Ok(if write.history_only {
            Upserted::Stale
        } else {
            Upserted::Written(DeliveredRecord::with_id(&person))
        })
    }

    /// The person's id: the one recorded (updated with this lead's fields
    /// unless history-only), or the one search finds (recorded, then
    /// updated), or a new one, created when no create may be in flight.
    /// A recorded person deleted in Pipedrive is forgotten; `None` for a
    /// history-only write whose person was deleted and none is found.
    async fn person(
        &self,
        gate: &str,
        email: &str,
        write: Write<'_>,
        recalled: &Recalled,
        deadline: CallDeadline,
    ) -> Result<Option<String>, DestinationError> {
        if let Some(id) = &recalled.record_id {
            let still_there = if write.history_only {
                self.exists(id, deadline).await?
            } else {
                self.update(id, write.lead, deadline).await?.is_some()
            };
            if still_there {
                return Ok(Some(id.clone()));
            }
            // Deleted or merged in Pipedrive: found again below.
            self.memory
                .forget_record(gate, id)
                .await
                .map_err(memory_error)?;
            if write.history_only {
                return self.found_again(gate, email, deadline).await;
            }
        }
        self.find_or_create(gate, email, write, recalled, deadline)
            .await
            .map(Some)
    }

    /// The person search finds for `email`, recorded as the person's.
    async fn found_again(
        &self,
        gate: &str,
        email: &str,
        deadline: CallDeadline,
    ) -> Result<Option<String>, DestinationError> {
        let found = self.search(email, deadline).await?;
        if let Some(id) = &found {
            self.memory
                .remember_record(gate, id)
                .await
                .map_err(memory_error)?;
        }
        Ok(found)
    }

    /// `person` when no recorded person stands: the one search finds, or a
    /// new one.
    async fn find_or_create(
        &self,
        gate: &str,
        email: &str,
        write: Write<'_>,
        recalled: &Recalled,
        deadline: CallDeadline,
    ) -> Result<String, DestinationError> {
        if let Some(id) = self.found_again(gate, email, deadline).await? {
            if !write.history_only && self.update(&id, write.lead, deadline).await?.is_none() {
                return Err(DestinationError::retryable("person-gone-after-search"));
            }
            return Ok(id);
        }
        let now = epoch_seconds();
        let lag = self.search_lag.as_secs();
        if let Some(wait) = in_flight_wait(recalled.create_started_at, now, lag) {
            return Err(waiting(CREATE_IN_FLIGHT, wait));
        }
        match self
            .memory
            .begin_create(gate, now, now.saturating_sub(lag))
            .await
            .map_err(memory_error)?
        {
            Begun::Begun => {
                // From here a lost answer leaves the start recorded: the
                // next attempt waits out the lag, then finds the person.
                let id = self.create(email, write.lead, deadline).await?;
                self.memory
                    .remember_record(gate, &id)
                    .await
                    .map_err(memory_error)?;
                Ok(id)
            }
            Begun::Refused => {
                // Another delivery of this person created it or is creating
                // it right now: its id is recorded, or will be.
                let again = self.memory.recall(gate).await.map_err(memory_error)?;
                match again.record_id {
                    Some(id) if write.history_only => Ok(id),
                    Some(id) => match self.update(&id, write.lead, deadline).await? {
                        Some(()) => Ok(id),
                        None => Err(DestinationError::retryable("person-gone-after-create")),
                    },
                    None => Err(waiting(
                        CREATE_IN_FLIGHT,
                        in_flight_wait(again.create_started_at, now, lag)
                            .unwrap_or(self.search_lag),
                    )),
                }
            }
        }
    }
}

impl<M: PersonMemory> Destination for Pipedrive<M> {
    fn newest_gates(&self) -> Option<&GateSecret> {
        Some(&self.gate_secret)
    }

    fn keeps_history(&self) -> bool {
        true
    }

    async fn erase(&self, person: Person<'_>) -> Result<Forgotten, DestinationError> {
        self.erase_person(person).await
    }

    fn name(&self) -> &'static str {
        "pipedrive"
    }

    async fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> Result<Upserted, DestinationError> {
        let result = self
            .write(Write::lead(lead, key), CallDeadline::client_timeout_only())
            .await;
        traced(result, lead, &self.field_map)
    }

    /// Person by person (`per_person`): one person's writes in order,
    /// oldest first.
    async fn upsert_batch(
        &self,
        writes: &[Write<'_>],
        concurrency: usize,
        deadline: CallDeadline,
    ) -> Vec<Answer> {
        write_by_person(writes, concurrency, deadline, |write| async move {
            traced(
                self.write(write, deadline).await,
                write.lead,
                &self.field_map,
            )
        })
        .await
    }
}

/// The path of the person `id` (Pipedrive's ids are whole numbers; a
/// recorded id that is not one was never Pipedrive's answer).
fn person_path(id: &str) -> Result<String, DestinationError> {
    if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) {
        Ok(format!("/api/v2/persons/{id}"))
    } else {
        Err(DestinationError::retryable(
            "recorded-person-id-not-numeric",
        ))
    }
}

/// An id as Pipedrive's JSON number (ids are integers); text otherwise.
fn numeric(id: &str) -> Value {
    id.parse::<u64>()
        .map(Value::from)
        .unwrap_or_else(|_| Value::String(id.to_owned()))
}
