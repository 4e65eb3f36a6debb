//! A person erased at Pipedrive (`receipts forget --everywhere`): the
//! person deleted by id, `DELETE /api/v2/persons/{id}` (200 when deleted,
//! 404 when there is no such person; Pipedrive keeps a deleted person 30
//! days in its recycle bin, then removes it for good):
//! <https://developers.pipedrive.com/docs/api/v1/Persons#deletePerson> (v2 tab).
//! The id is the one the person memory kept, else the one the search
//! finds for the address. The token needs no scope beyond the writes.

use reqwest::Method;

use super::answers::Called;
use super::{person_path, Pipedrive};
use crate::destinations::memory::PersonMemory;
use crate::destinations::port::{CallDeadline, DestinationError, Forgotten, Person};

const ERASE_TIME: std::time::Duration = std::time::Duration::from_secs(30);

impl<M: PersonMemory> Pipedrive<M> {
    pub(super) async fn erase_person(
        &self,
        person: Person<'_>,
    ) -> Result<Forgotten, DestinationError> {
        let deadline = CallDeadline::after(ERASE_TIME);
        let ids: Vec<String> = match person.record_ids {
            [] => self
                .search(person.email, deadline)
                .await?
                .into_iter()
                .collect(),
            ids => ids.to_vec(),
        };
        let mut deleted = 0;
        for id in &ids {
            let path = person_path(id)?;
            match self
                .call(Method::DELETE, &path, &[], None, &[], deadline)
                .await
            {
                Called::Done(_) => deleted += 1,
                Called::NotFound => {}
                Called::Failed(error) => return Err(error),
            }
        }
        Ok(match deleted {
            0 => Forgotten::NotFound,
            n => Forgotten::Deleted(n),
        })
    }
}
