//! The `attio` destination: one person record per e-mail address, its name
//! and mapped attributes newest-wins (the gates), and every submission one
//! note on its record, exactly once (`destinations::history`).
//!
//! Built from Attio's pages:
//! - a person by address: `POST /v2/objects/people/records/query` with the
//!   shorthand filter `{"email_addresses": …}`:
//!   <https://docs.attio.com/rest-api/endpoint-reference/people/list-person-records>,
//!   <https://docs.attio.com/rest-api/guides/filtering-and-sorting>;
//! - assert (create, or update the one matched):
//!   `PUT /v2/objects/people/records?matching_attribute=email_addresses`,
//!   `{"data": {"values": …}}`, answer the record with `id.record_id` and
//!   `web_url`; it *overwrites* multiselect values, `email_addresses`
//!   among them:
//!   <https://docs.attio.com/rest-api/endpoint-reference/people/upsert-a-person-record>;
//! - update by id: `PATCH /v2/objects/people/records/{record_id}`, which
//!   adds to a multiselect's values and removes none:
//!   <https://docs.attio.com/rest-api/endpoint-reference/people/update-a-person-record>;
//! - a name is one value of three parts, all set:
//!   <https://docs.attio.com/docs/attribute-types/attribute-types-personal-name>;
//! - notes: `POST /v2/notes` (`parent_object`, `parent_record_id`,
//!   `title`, `format: plaintext`, `content`), `GET /v2/notes` with
//!   `parent_object`, `parent_record_id`, `limit` (at most 50), `offset`:
//!   <https://docs.attio.com/rest-api/endpoint-reference/notes/create-a-note>,
//!   <https://docs.attio.com/rest-api/endpoint-reference/notes/list-notes>;
//! - the token as a bearer token:
//!   <https://docs.attio.com/rest-api/guides/authentication>.
//!
//! So a write looks the address up first: a known person is updated by
//! id, and only an address no record has is asserted. Another address the
//! person has in Attio is never removed.

mod answers;
pub mod build;
mod calls;
mod erase;
mod settings;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use shared::field_map::FieldMap;
use shared::history::SubmissionNote;
use shared::newest::GateSecret;
use shared::record::DeliveredRecord;
use shared::{IdempotencyKey, Lead};

use super::refusal::traced;
use crate::destinations::client;
use crate::destinations::history::{memory_error, note_item, Keeping, NOTE_IN_FLIGHT};
use crate::destinations::memory::PersonMemory;
use crate::destinations::per_person::write_by_person;
use crate::destinations::port::{
    upsert_alone, Answer, CallDeadline, Destination, DestinationError, Forgotten, Person, Upserted,
    Write,
};
use crate::destinations::token::{BearerToken, CrmToken, Source, TokenError};

pub use answers::{PersonRecord, RATE_WAIT};
pub use settings::*;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// A note's text is kept within this many characters (Attio documents no
/// limit; a form's answers are far shorter).
pub const NOTE_MAX_CHARS: usize = 10_000;

/// Every note's title: the submission's own time and reference are in its
/// text.
pub const NOTE_TITLE: &str = "Form submission";

/// How long a note Attio created may take to be listed: a started note is
/// looked for, and none created again, within it.
pub const NOTE_LAG: Duration = Duration::from_secs(30);

/// Why a note could not be written: the record is not there.
pub const RECORD_NOT_FOUND: &str = "record-not-found";

pub struct Attio<M> {
    client: reqwest::Client,
    base_url: String,
    field_map: FieldMap,
    token: BearerToken,
    gate_secret: GateSecret,
    memory: M,
}

impl<M: PersonMemory> Attio<M> {
    /// Builds the HTTP client once: rustls, timeouts, and no redirects (a
    /// redirect could carry the token elsewhere).
    pub fn new(
        settings: AttioSettings,
        token: Option<CrmToken>,
        gate_secret: GateSecret,
        memory: M,
    ) -> Result<Self, reqwest::Error> {
        Ok(Attio {
            client: client::client(REQUEST_TIMEOUT)?,
            base_url: settings.base_url,
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

    /// One write: the person found and updated, or asserted (unless
    /// history-only, which only finds or makes the record), then its note.
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
        let values = person_values(&self.field_map.apply(write.lead));
        let person = match self.find_person(&email, deadline).await? {
            Some(found) if write.history_only || values.is_empty() => Some(found),
            Some(found) => self.update_person(&found.id, &values, deadline).await?,
            None => None,
        };
        // None had the address (or the record went meanwhile): asserted, so
        // a concurrent write of the same address still makes one record.
        let person = match person {
            Some(person) => person,
            None => self.assert_person(&email, &values, deadline).await?,
        };
        let gate = self.gate_secret.gate_key(&email);
        let recalled = self.memory.recall(&gate).await.map_err(memory_error)?;
        let note = SubmissionNote::of(write.lead, write.key, &self.field_map);
        let keeping = Keeping {
            memory: &self.memory,
            gate: &gate,
            recalled: &recalled,
            lag: NOTE_LAG,
            retried: write.retried,
        };
        let notes = calls::Notes {
            attio: self,
            deadline,
            text: note.text_within(NOTE_MAX_CHARS),
            reference: note.reference,
        };
        keeping
            .once(
                &notes,
                &person.id,
                &note_item(write.key.as_str()),
                NOTE_IN_FLIGHT,
            )
            .await?;
        Ok(if write.history_only {
            Upserted::Stale
        } else {
            let record = DeliveredRecord::with_id(&person.id);
            Upserted::Written(match &person.web_url {
                Some(url) => record.linked(url),
                None => record,
            })
        })
    }
}

/// A lead's mapped properties as a person's values: `first_name` and
/// `last_name` joined into the one `name` value (its three parts all set,
/// as Attio asks), every other property as it is.
pub fn person_values(properties: &Map<String, Value>) -> Map<String, Value> {
    let part = |name: &str| {
        properties
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    let (first, last) = (part(FIRST_NAME), part(LAST_NAME));
    let mut values: Map<String, Value> = properties
        .iter()
        .filter(|(name, _)| *name != FIRST_NAME && *name != LAST_NAME)
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    if !(first.is_empty() && last.is_empty()) {
        let full = [first.as_str(), last.as_str()]
            .into_iter()
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        values.insert(
            "name".to_owned(),
            json!([{"first_name": first, "last_name": last, "full_name": full}]),
        );
    }
    values
}

impl<M: PersonMemory> Destination for Attio<M> {
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
        "attio"
    }

    async fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> Result<Upserted, DestinationError> {
        upsert_alone(self, lead, key, CallDeadline::after(REQUEST_TIMEOUT * 4)).await
    }

    /// Person by person (`per_person`): one record's writes in order,
    /// oldest first, up to `concurrency` people at once.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_is_one_value_of_three_parts_and_the_rest_is_as_mapped() {
        let rows = [
            (
                json!({"first_name": "Ada", "last_name": "Lovelace", "job_title": "Countess"}),
                json!({"job_title": "Countess",
                       "name": [{"first_name": "Ada", "last_name": "Lovelace", "full_name": "Ada Lovelace"}]}),
            ),
            (
                json!({"first_name": "Ada"}),
                json!({"name": [{"first_name": "Ada", "last_name": "", "full_name": "Ada"}]}),
            ),
            (
                json!({"job_title": "Countess"}),
                json!({"job_title": "Countess"}),
            ),
            (json!({}), json!({})),
        ];
        for (properties, expected) in rows {
            let values = person_values(properties.as_object().unwrap());
            assert_eq!(Value::Object(values), expected, "{properties}");
        }
    }
}
