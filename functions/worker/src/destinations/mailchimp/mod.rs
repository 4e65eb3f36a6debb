//! The `mailchimp` destination: one member of an audience per e-mail
//! address, its merge fields newest-wins (the gates), and every submission
//! one note on its member, exactly once (`destinations::history`).
//!
//! Built from Mailchimp's pages:
//! - add or update a member, idempotent: `PUT /3.0/lists/{list_id}/members/{subscriber_hash}`
//!   with `email_address`, `status_if_new`, `merge_fields`; answer the
//!   member, with `web_id`:
//!   <https://mailchimp.com/developer/marketing/api/list-members/add-or-update-list-member/>.
//!   Only `status_if_new` is sent, never `status`: `status` would change an
//!   existing member, re-subscribing someone who unsubscribed;
//! - a route's tags: `POST /3.0/lists/{list_id}/members/{subscriber_hash}/tags`
//!   with `tags[]` of `{name, status: "active"}`, answer 204:
//!   <https://mailchimp.com/developer/marketing/api/list-member-tags/add-or-remove-member-tags/>;
//!   a checked consent box's marketing permission as `marketing_permissions[]`
//!   (`marketing_permission_id`, `enabled`) of the member's `PUT`;
//! - member notes: `POST /3.0/lists/{list_id}/members/{subscriber_hash}/notes`
//!   with `note` (at most 1,000 characters), answer `id`; `GET` the same path
//!   (`count`, `sort_field=created_at`, `sort_dir=DESC`), answer `notes[]`
//!   with `id`, `note`:
//!   <https://mailchimp.com/developer/marketing/api/list-member-notes/>;
//! - HTTP Basic with any user name and the API key as the password, at
//!   the key's data centre (`…-us21`: `https://us21.api.mailchimp.com`):
//!   <https://mailchimp.com/developer/marketing/docs/fundamentals/>.
//!
//! A member's status: `transactional` (Mailchimp keeps the address but
//! sends it no campaign) unless the lead's route names a consent checkbox
//! and the box is checked on a write that grants consent (the person's
//! newest submission, delivered within a day: `Write::grants_consent`):
//! then the route's consent status, `pending` (double opt-in) by default,
//! and its marketing permission. An existing member's status is never
//! changed. A member Mailchimp refuses for good (`answers::REFUSALS`) is
//! the receipt's answer: REFUSED, never retried.

mod answers;
pub mod build;
mod calls;
mod erase;
mod settings;

use std::sync::Arc;
use std::time::Duration;

use shared::consent::is_checked;
use shared::field_map::FieldMap;
use shared::history::SubmissionNote;
use shared::newest::GateSecret;
use shared::{IdempotencyKey, Lead};

use super::refusal::traced;
use crate::destinations::client;
use crate::destinations::history::{memory_error, note_item, waiting, Keeping, NOTE_IN_FLIGHT};
use crate::destinations::memory::PersonMemory;
use crate::destinations::per_person::{person_count, write_by_person};
use crate::destinations::port::{
    upsert_alone, Answer, CallDeadline, Destination, DestinationError, Forgotten, Person, Upserted,
    Write,
};
use crate::destinations::slots::{now_ms, AnySlots, CallSlots, Lease};
use crate::destinations::token::{BearerToken, CrmToken, Source, TokenError};

pub use answers::{BUSY_WAIT, REFUSALS};
pub use settings::*;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// A member note holds at most this many characters.
pub const NOTE_MAX_CHARS: usize = 1_000;

/// How long a note Mailchimp created may take to be listed: a started
/// note is looked for, and none created again, within it.
pub const NOTE_LAG: Duration = Duration::from_secs(30);

/// Mailchimp's limit of connections at once per account, held across
/// every instance of the worker (`destinations::slots`).
pub const MAX_CONNECTIONS: u32 = 10;

/// How often, and how long apart, a delivery tries again for a slot when
/// every one is held, before its leads wait for a later attempt.
const SLOT_TRIES: u32 = 8;
const SLOT_PAUSE: Duration = Duration::from_millis(250);

/// A lead that found every slot held waits this long before its next try:
/// calls end within a second or two.
pub const SLOT_WAIT: Duration = Duration::from_secs(1);

/// Why a note (or tags) could not be written: the member is not there.
pub const MEMBER_NOT_FOUND: &str = "member-not-found";

/// Why a lead waits when every connection of the account is in use.
pub const CONNECTIONS_BUSY: &str = "connections-busy";

/// A member's status when no checked consent box asks for more: kept, and
/// sent no campaign.
pub const WITHOUT_CONSENT: &str = "transactional";

pub struct Mailchimp<M> {
    client: reqwest::Client,
    base_url: String,
    list_id: String,
    field_map: FieldMap,
    key: BearerToken,
    gate_secret: GateSecret,
    memory: M,
    slots: AnySlots,
}

impl<M: PersonMemory> Mailchimp<M> {
    /// Builds the HTTP client once: rustls, timeouts, and no redirects (a
    /// redirect could carry the key elsewhere). `base_url` is where the
    /// API is (the key's data centre's host, or a fake's).
    pub fn new(
        settings: MailchimpSettings,
        base_url: String,
        key: Option<CrmToken>,
        gate_secret: GateSecret,
        memory: M,
        slots: AnySlots,
    ) -> Result<Self, reqwest::Error> {
        Ok(Mailchimp {
            client: client::client(REQUEST_TIMEOUT)?,
            base_url,
            list_id: settings.list_id,
            field_map: settings.field_map,
            key: BearerToken::new(key),
            gate_secret,
            memory,
            slots,
        })
    }

    /// Re-reads the key from `source` after a 401, at most once per
    /// `interval`.
    pub fn refreshing_from(
        mut self,
        source: Arc<dyn Source<CrmToken, TokenError>>,
        interval: Duration,
    ) -> Self {
        self.key = self.key.refreshing_from(source, interval);
        self
    }

    /// One write: the member added or updated (unless history-only), then
    /// its note.
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
        let member = subscriber_hash(&email);
        let record = if write.history_only {
            None
        } else {
            Some(
                self.put_member(
                    &member,
                    &email,
                    (write.lead, write.grants_consent),
                    deadline,
                )
                .await?,
            )
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
            mailchimp: self,
            deadline,
            text: note.text_within(NOTE_MAX_CHARS),
            reference: note.reference,
        };
        let kept = keeping
            .once(
                &notes,
                &member,
                &note_item(write.key.as_str()),
                NOTE_IN_FLIGHT,
            )
            .await;
        match kept {
            // No member to keep a late, older submission on: the newer one
            // was refused, or the member deleted. This one is written as a
            // new submission would be: refused the same way (REFUSED), or
            // the member made again and its note written by a later attempt.
            Err(DestinationError::Retryable { reason, .. })
                if record.is_none() && reason == MEMBER_NOT_FOUND =>
            {
                self.put_member(
                    &member,
                    &email,
                    (write.lead, write.grants_consent),
                    deadline,
                )
                .await?;
                return Err(waiting(NOTE_IN_FLIGHT, NOTE_LAG));
            }
            kept => kept?,
        }
        Ok(match record {
            Some(record) => Upserted::Written(record),
            None => Upserted::Stale,
        })
    }
}

/// The marketing permission a checked consent box enables, where the
/// route names one (a GDPR-enabled audience's).
pub fn marketing_permission(lead: &Lead) -> Option<&str> {
    let consent = lead.route.as_deref()?.consent.as_ref()?;
    is_checked(lead.answer(&consent.field))
        .then_some(consent.marketing_permission.as_deref())
        .flatten()
}

/// A new member's status: the route's consent status when its consent box
/// is checked; `transactional` otherwise (no box, unchecked, or missing).
pub fn status_if_new(lead: &Lead) -> &'static str {
    lead.route
        .as_deref()
        .and_then(|route| route.consent.as_ref())
        .filter(|consent| is_checked(lead.answer(&consent.field)))
        .map_or(WITHOUT_CONSENT, |consent| consent.status.as_str())
}

impl<M: PersonMemory> Destination for Mailchimp<M> {
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
        "mailchimp"
    }

    async fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> Result<Upserted, DestinationError> {
        upsert_alone(self, lead, key, CallDeadline::after(REQUEST_TIMEOUT * 4)).await
    }

    /// Person by person (`per_person`): one member's writes in order,
    /// oldest first; at once, only as many as the slots this delivery
    /// holds of the account's [`MAX_CONNECTIONS`].
    async fn upsert_batch(
        &self,
        writes: &[Write<'_>],
        concurrency: usize,
        deadline: CallDeadline,
    ) -> Vec<Answer> {
        let Some(left) = deadline.time_left() else {
            return every(writes, DestinationError::NotSent);
        };
        let want = concurrency.min(person_count(writes)).max(1);
        let lease = Lease::for_the_next(left);
        let slots = match self.take_slots(want, &lease, deadline).await {
            Ok(slots) if !slots.is_empty() => slots,
            Ok(_) => {
                return every(
                    writes,
                    DestinationError::Retryable {
                        status: None,
                        retry_after: Some(SLOT_WAIT),
                        reason: CONNECTIONS_BUSY.to_owned(),
                    },
                )
            }
            Err(error) => {
                return every(
                    writes,
                    DestinationError::retryable(format!(
                        "receipts table unavailable ({})",
                        error.0
                    )),
                )
            }
        };
        let answers = write_by_person(writes, slots.len(), deadline, |write| async move {
            traced(
                self.write(write, deadline).await,
                write.lead,
                &self.field_map,
            )
        })
        .await;
        // One not given back is free again when the lease ends.
        if let Err(error) = self.slots.give_back(&slots, &lease).await {
            tracing::warn!(error = %error, "call slots not given back; free at the lease's end");
        }
        answers
    }
}

impl<M: PersonMemory> Mailchimp<M> {
    /// Up to `want` of the account's slots, trying again a few times while
    /// every one is held and time is left.
    async fn take_slots(
        &self,
        want: usize,
        lease: &Lease,
        deadline: CallDeadline,
    ) -> Result<Vec<u32>, crate::destinations::slots::SlotsError> {
        let want = u32::try_from(want)
            .unwrap_or(u32::MAX)
            .min(self.slots.total());
        for _ in 0..SLOT_TRIES {
            let taken = self.slots.take(want, lease, now_ms()).await?;
            if !taken.is_empty() {
                return Ok(taken);
            }
            match deadline.time_left() {
                Some(left) if left > SLOT_PAUSE * 4 => tokio::time::sleep(SLOT_PAUSE).await,
                _ => break,
            }
        }
        Ok(Vec::new())
    }
}

/// The same answer for every write.
fn every(writes: &[Write<'_>], error: DestinationError) -> Vec<Answer> {
    writes
        .iter()
        .map(|_| Answer {
            result: Err(error.clone()),
            latency: Duration::ZERO,
        })
        .collect()
}
