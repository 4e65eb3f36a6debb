//! The `brevo` destination: one contact per e-mail address, its attributes
//! newest-wins (the gates), the route's lists joined, and every submission
//! one CRM note on its contact, exactly once (`destinations::history`).
//!
//! Built from Brevo's pages:
//! - create or update a contact in one call: `POST /v3/contacts` with
//!   `email`, `attributes` (names in capitals, as the account defines
//!   them), `listIds`, `updateEnabled: true`; 201 with the new contact's
//!   `id`, 204 with no body when an existing contact was updated:
//!   <https://developers.brevo.com/reference/create-contact>,
//!   <https://developers.brevo.com/changelog/operations-and-management-for-contacts>;
//!   without `updateEnabled` an existing address is refused
//!   (`duplicate_parameter`) and joins no list;
//! - a contact by its address: `GET /v3/contacts/{identifier}?identifierType=email_id`,
//!   answer the contact with its `id`:
//!   <https://developers.brevo.com/reference/get-contact-info>;
//! - CRM notes: `POST /v3/crm/notes` with `text` (HTML: `<p>`, `<b>`,
//!   `<br />`…) and `contactIds`, answer `{"id": "…"}`; `GET /v3/crm/notes`
//!   with `entity=contacts`, `entityIds`, `limit` (50 by default),
//!   `offset`, `sort` (newest first by default), answer an array of notes
//!   (`id`, `text`, `contactIds`):
//!   <https://developers.brevo.com/reference/create-a-note>,
//!   <https://developers.brevo.com/reference/get-all-notes>;
//! - the key in the `api-key` header:
//!   <https://developers.brevo.com/docs/getting-started>.
//!
//! Lists (a route's `lists`): a route without a consent box adds every lead
//! of its form to them; a route with one adds a lead only when its box is
//! checked on a write that grants consent (`Write::grants_consent`). Brevo
//! adds a contact to the lists named and never removes one. Double opt-in
//! (a confirmation e-mail before the list) is Brevo's own form feature and
//! the operator's choice there; this destination does not send one.

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
use crate::destinations::history::{memory_error, note_item, Keeping, NOTE_IN_FLIGHT};
use crate::destinations::memory::PersonMemory;
use crate::destinations::per_person::write_by_person;
use crate::destinations::port::{
    upsert_alone, Answer, CallDeadline, DeliveredRecord, Destination, DestinationError, Forgotten,
    Person, Upserted, Write,
};
use crate::destinations::token::{BearerToken, CrmToken, Source, TokenError};

pub use answers::{RATE_WAIT, RESET_HEADER};
pub use settings::*;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// A note's text is kept within this many characters before it is written
/// as HTML (Brevo documents no limit; a form's answers are far shorter).
pub const NOTE_MAX_CHARS: usize = 5_000;

/// How long a note Brevo created may take to be listed: a started note is
/// looked for, and none created again, within it.
pub const NOTE_LAG: Duration = Duration::from_secs(30);

/// Why a note could not be written: the contact is not there.
pub const CONTACT_NOT_FOUND: &str = "contact-not-found";

pub struct Brevo<M> {
    client: reqwest::Client,
    base_url: String,
    field_map: FieldMap,
    key: BearerToken,
    gate_secret: GateSecret,
    memory: M,
}

impl<M: PersonMemory> Brevo<M> {
    /// Builds the HTTP client once: rustls, timeouts, and no redirects (a
    /// redirect could carry the key elsewhere).
    pub fn new(
        settings: BrevoSettings,
        key: Option<CrmToken>,
        gate_secret: GateSecret,
        memory: M,
    ) -> Result<Self, reqwest::Error> {
        Ok(Brevo {
            client: client::client(REQUEST_TIMEOUT)?,
            base_url: settings.base_url,
            field_map: settings.field_map,
            key: BearerToken::new(key),
            gate_secret,
            memory,
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

    /// One write: the contact created or updated (unless history-only),
    /// then its note.
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
        let lead = (write.lead, write.grants_consent);
        let (contact, written) = if write.history_only {
            match self.contact_of(&email, deadline).await? {
                Some(contact) => (contact, false),
                // No contact to keep a late, older submission on (deleted
                // since): it is made again from this one, as a new
                // submission would make it.
                None => (self.upsert_contact(&email, lead, deadline).await?, false),
            }
        } else {
            (self.upsert_contact(&email, lead, deadline).await?, true)
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
            brevo: self,
            deadline,
            text: as_html(&note.text_within(NOTE_MAX_CHARS)),
            reference: note.reference,
        };
        keeping
            .once(
                &notes,
                &contact.to_string(),
                &note_item(write.key.as_str()),
                NOTE_IN_FLIGHT,
            )
            .await?;
        Ok(if written {
            Upserted::Written(DeliveredRecord::with_id(&contact.to_string()))
        } else {
            Upserted::Stale
        })
    }
}

/// The lists a write adds its contact to: its route's, unless the route
/// has a consent box that is unchecked, missing, or on a write that may
/// not grant consent.
pub fn lists_to_join(lead: &Lead, grants_consent: bool) -> &[u64] {
    let Some(route) = lead.route.as_deref() else {
        return &[];
    };
    match &route.consent {
        None => &route.lists,
        Some(consent) if grants_consent && is_checked(lead.answer(&consent.field)) => &route.lists,
        Some(_) => &[],
    }
}

/// A note's plain text as Brevo's HTML note: `&`, `<` and `>` escaped (a
/// form's answer is never markup there), each line break a `<br />`.
pub fn as_html(text: &str) -> String {
    let mut html = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => html.push_str("&amp;"),
            '<' => html.push_str("&lt;"),
            '>' => html.push_str("&gt;"),
            '\n' => html.push_str("<br />"),
            '\r' => {}
            c => html.push(c),
        }
    }
    html
}

impl<M: PersonMemory> Destination for Brevo<M> {
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
        "brevo"
    }

    async fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> Result<Upserted, DestinationError> {
        upsert_alone(self, lead, key, CallDeadline::after(REQUEST_TIMEOUT * 4)).await
    }

    /// Person by person (`per_person`): one contact's writes in order,
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
    fn a_note_is_escaped_html_with_its_line_breaks() {
        assert_eq!(
            as_html("Hi <b>team</b> & co\r\nline 2\n(ref 0123)"),
            "Hi &lt;b&gt;team&lt;/b&gt; &amp; co<br />line 2<br />(ref 0123)"
        );
    }
}
