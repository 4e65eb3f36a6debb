//! The `zoho` destination: Zoho CRM Leads (or Contacts), upserted in calls
//! of up to 100 records, keyed by e-mail (one record per person, newest
//! wins by the gates, every submission one note on it, exactly once) or by
//! a unique submission-id field (one record per submission, its message in
//! `Description`).
//!
//! OAuth only: the Self Client's refresh token buys access tokens that last
//! an hour, and Zoho keeps at most 30 of them live per refresh token. So
//! every instance of the worker shares one (`destinations::shared_token`):
//! refreshed a tenth of its life early, or when an answer says
//! `INVALID_TOKEN`, once per token across all of them.
//!
//! Built from Zoho's pages:
//! - the token: `POST {accounts}/oauth/v2/token` with `refresh_token`,
//!   `client_id`, `client_secret`, `grant_type=refresh_token`:
//!   <https://www.zoho.com/crm/developer/docs/api/v8/refresh.html>;
//! - upsert: `POST {api}/crm/v8/{module}/upsert` with `data[]` (at most
//!   100), `duplicate_check_fields`, `trigger`; `Authorization:
//!   Zoho-oauthtoken <token>`:
//!   <https://www.zoho.com/crm/developer/docs/api/v8/upsert-records.html>;
//! - a record found by e-mail: `GET {api}/crm/v8/{module}/search?email=`:
//!   <https://www.zoho.com/crm/developer/docs/api/v8/search-records.html>;
//! - notes: `POST`/`GET {api}/crm/v8/{module}/{id}/Notes` (`Note_Title`,
//!   `Note_Content`): <https://www.zoho.com/crm/developer/docs/api/v8/create-notes.html>.

mod answers;
pub mod build;
mod calls;
mod erase;
mod settings;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};
use shared::field_map::FieldMap;
use shared::history::SubmissionNote;
use shared::newest::GateSecret;
use shared::refresh::Refreshing;
use shared::{IdempotencyKey, Lead};

use super::refusal::traced;
use crate::destinations::client;
use crate::destinations::history::{memory_error, note_item, Keeping, NOTE_IN_FLIGHT};
use crate::destinations::memory::PersonMemory;
use crate::destinations::port::{
    upsert_alone, Answer, CallDeadline, DeliveredRecord, Destination, DestinationError, Forgotten,
    Person, Upserted, Write,
};
use crate::destinations::shared_token::{AnyTokenStore, SharedToken};
use crate::destinations::token::TokenError;

pub use answers::{BUSY_WAIT, DEFAULT_TOKEN_LIFE};
pub use settings::*;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// The most records one upsert call carries.
pub const MAX_RECORDS_PER_CALL: usize = 100;

/// Why a note could not be written: its record is not there.
pub const RECORD_NOT_FOUND: &str = "record-not-found";

/// How long a note Zoho created may take to be listed.
pub const NOTE_LAG: Duration = Duration::from_secs(30);

pub struct Zoho<M> {
    client: reqwest::Client,
    accounts_url: String,
    api_url: String,
    module: String,
    duplicate_check_field: String,
    trigger: Vec<String>,
    field_map: FieldMap,
    credentials: Refreshing<ZohoCredentials, TokenError>,
    token: SharedToken<AnyTokenStore>,
    /// Only when keyed by e-mail.
    gate_secret: Option<GateSecret>,
    memory: M,
    note_lag: Duration,
}

impl<M: PersonMemory> Zoho<M> {
    /// Builds the HTTP client once: rustls, timeouts, and no redirects.
    pub fn new(
        settings: ZohoSettings,
        credentials: Refreshing<ZohoCredentials, TokenError>,
        token_store: AnyTokenStore,
        gate_secret: Option<GateSecret>,
        memory: M,
    ) -> Result<Self, reqwest::Error> {
        Ok(Zoho {
            client: client::client(REQUEST_TIMEOUT)?,
            accounts_url: settings.accounts_url,
            api_url: settings.api_url,
            module: settings.module,
            duplicate_check_field: settings.duplicate_check_field,
            trigger: settings.trigger,
            field_map: settings.field_map,
            credentials,
            token: SharedToken::new(token_store),
            gate_secret,
            memory,
            note_lag: NOTE_LAG,
        })
    }

    /// How long a note Zoho created may take to be listed ([`NOTE_LAG`]
    /// unless a test waits less).
    pub fn with_note_lag(mut self, lag: Duration) -> Self {
        self.note_lag = lag;
        self
    }

    fn by_email(&self) -> bool {
        self.gate_secret.is_some()
    }

    /// One round of writes (at most one per person): the records upserted
    /// in calls of up to 100, then, by e-mail, each write's note.
    async fn write_round(
        &self,
        writes: &[Write<'_>],
        round: &[usize],
        concurrency: usize,
        deadline: CallDeadline,
    ) -> Vec<(usize, Result<Upserted, DestinationError>)> {
        let fields: Vec<usize> = round
            .iter()
            .copied()
            .filter(|&i| !writes[i].history_only)
            .collect();
        let mut records: HashMap<usize, Result<String, DestinationError>> = HashMap::new();
        for chunk in fields.chunks(MAX_RECORDS_PER_CALL) {
            let leads: Vec<&Lead> = chunk.iter().map(|&i| writes[i].lead).collect();
            let results = match deadline.time_left() {
                Some(_) => self.upsert_records(&leads, deadline).await,
                None => vec![Err(DestinationError::NotSent); chunk.len()],
            };
            records.extend(chunk.iter().copied().zip(results));
        }
        if !self.by_email() {
            return round
                .iter()
                .map(|&i| {
                    let result = records
                        .remove(&i)
                        .unwrap_or_else(|| Err(DestinationError::retryable("no answer")))
                        .map(|id| Upserted::Written(DeliveredRecord::with_id(&id)));
                    (i, result)
                })
                .collect();
        }
        let notes: Vec<_> = round
            .iter()
            .map(|&i| {
                let record = records.remove(&i);
                async move { (i, self.keep_note(writes[i], record, deadline).await) }
            })
            .collect();
        stream::iter(notes)
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await
    }

    /// A write keyed by e-mail after its record's upsert (`record`, or none
    /// for a history-only write, whose record is the one remembered, else
    /// the one found by e-mail, else written now as a new submission's):
    /// the record id remembered on the person's gate item, then the
    /// submission's note on it, exactly once.
    async fn keep_note(
        &self,
        write: Write<'_>,
        record: Option<Result<String, DestinationError>>,
        deadline: CallDeadline,
    ) -> Result<Upserted, DestinationError> {
        let (Some(gates), Some(email)) = (&self.gate_secret, write.lead.normalised_email()) else {
            return Err(DestinationError::Permanent {
                status: None,
                reason: "no-email".to_owned(),
            });
        };
        let gate = gates.gate_key(&email);
        let recalled = self.memory.recall(&gate).await.map_err(memory_error)?;
        let written = record.transpose()?;
        let (id, wrote) = match (written, &recalled.record_id) {
            (Some(id), _) => (id, true),
            (None, Some(id)) => (id.clone(), false),
            (None, None) => match self.find_by_email(&email, deadline).await? {
                Some(id) => (id, false),
                // No record to keep a late, older submission on (deleted
                // in Zoho): written as a new submission would be.
                None => {
                    let mut results = self.upsert_records(&[write.lead], deadline).await;
                    let id = results
                        .pop()
                        .unwrap_or_else(|| Err(DestinationError::retryable("no answer")))?;
                    (id, true)
                }
            },
        };
        if recalled.record_id.as_deref() != Some(id.as_str()) {
            self.memory
                .remember_record(&gate, &id)
                .await
                .map_err(memory_error)?;
        }
        let note = SubmissionNote::of(write.lead, write.key, &self.field_map);
        let keeping = Keeping {
            memory: &self.memory,
            gate: &gate,
            recalled: &recalled,
            lag: self.note_lag,
            retried: write.retried,
        };
        let notes = calls::Notes {
            zoho: self,
            record: &id,
            note: &note,
            deadline,
        };
        let kept = keeping
            .once(&notes, &id, &note_item(write.key.as_str()), NOTE_IN_FLIGHT)
            .await;
        if let Err(DestinationError::Retryable { reason, .. }) = &kept {
            if reason == RECORD_NOT_FOUND {
                // Deleted in Zoho: forgotten here, so the next attempt
                // finds the person's record again, or writes a new one.
                self.memory
                    .forget_record(&gate, &id)
                    .await
                    .map_err(memory_error)?;
            }
        }
        kept?;
        Ok(if wrote {
            Upserted::Written(DeliveredRecord::with_id(&id))
        } else {
            Upserted::Stale
        })
    }
}

impl<M: PersonMemory> Destination for Zoho<M> {
    fn newest_gates(&self) -> Option<&GateSecret> {
        self.gate_secret.as_ref()
    }

    fn keeps_history(&self) -> bool {
        self.by_email()
    }

    async fn erase(&self, person: Person<'_>) -> Result<Forgotten, DestinationError> {
        self.erase_person(person).await
    }

    fn name(&self) -> &'static str {
        "zoho"
    }

    async fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> Result<Upserted, DestinationError> {
        upsert_alone(self, lead, key, CallDeadline::after(REQUEST_TIMEOUT * 4)).await
    }

    /// In rounds of at most one write per person (by e-mail, oldest first,
    /// so the newest fields are written last), each round's records in
    /// upsert calls of up to 100.
    async fn upsert_batch(
        &self,
        writes: &[Write<'_>],
        concurrency: usize,
        deadline: CallDeadline,
    ) -> Vec<Answer> {
        let started = Instant::now();
        let mut answers: Vec<Option<Answer>> = vec![None; writes.len()];
        for round in rounds(writes, self.by_email()) {
            for (i, result) in self
                .write_round(writes, &round, concurrency, deadline)
                .await
            {
                answers[i] = Some(Answer {
                    result: traced(result, writes[i].lead, &self.field_map),
                    latency: started.elapsed(),
                });
            }
        }
        answers
            .into_iter()
            .map(|answer| {
                answer.unwrap_or(Answer {
                    result: Err(DestinationError::retryable("no answer")),
                    latency: Duration::ZERO,
                })
            })
            .collect()
    }
}

/// The writes in rounds: by e-mail, round `n` holds each person's `n`-th
/// oldest write; by submission, one round of all.
fn rounds(writes: &[Write<'_>], by_email: bool) -> Vec<Vec<usize>> {
    if !by_email {
        return vec![(0..writes.len()).collect()];
    }
    let mut people: Vec<Vec<usize>> = Vec::new();
    let mut by_address: HashMap<String, usize> = HashMap::new();
    for (i, write) in writes.iter().enumerate() {
        let address = write.lead.normalised_email().unwrap_or_default();
        match by_address.get(&address) {
            Some(&person) if !address.is_empty() => people[person].push(i),
            _ => {
                by_address.insert(address, people.len());
                people.push(vec![i]);
            }
        }
    }
    let mut rounds: Vec<Vec<usize>> = Vec::new();
    for mut person in people {
        person.sort_by(|a, b| {
            writes[*a]
                .lead
                .newest_by()
                .cmp(writes[*b].lead.newest_by())
                .then(a.cmp(b))
        });
        for (n, i) in person.into_iter().enumerate() {
            if rounds.len() <= n {
                rounds.push(Vec::new());
            }
            rounds[n].push(i);
        }
    }
    rounds
}
