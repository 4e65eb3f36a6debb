//! A person erased at Mailchimp (`receipts forget --everywhere`): the
//! member deleted for good, with their history, and never to be
//! re-imported: `POST /3.0/lists/{list_id}/members/{subscriber_hash}/actions/delete-permanent`
//! (204 when deleted, 404 when there is no such member):
//! <https://mailchimp.com/developer/marketing/api/list-members/delete-list-member/>.
//! The member is found by the hash of the address, which is its id.

use reqwest::Method;
use shared::destination::mailchimp::subscriber_hash;

use super::answers::Called;
use super::Mailchimp;
use crate::destinations::memory::PersonMemory;
use crate::destinations::port::{CallDeadline, DestinationError, Forgotten, Person};

const ERASE_TIME: std::time::Duration = std::time::Duration::from_secs(30);

impl<M: PersonMemory> Mailchimp<M> {
    pub(super) async fn erase_person(
        &self,
        person: Person<'_>,
    ) -> Result<Forgotten, DestinationError> {
        let path = format!(
            "/3.0/lists/{}/members/{}/actions/delete-permanent",
            self.list_id,
            subscriber_hash(person.email)
        );
        let deadline = CallDeadline::after(ERASE_TIME);
        match self
            .call(Method::POST, &path, &[], None, &[], deadline)
            .await
        {
            Called::Done(_) => Ok(Forgotten::Deleted(1)),
            Called::NotFound => Ok(Forgotten::NotFound),
            Called::Failed(error) => Err(error),
        }
    }
}
