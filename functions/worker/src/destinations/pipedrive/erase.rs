//! A person erased at Pipedrive (`receipts forget --everywhere`): the
//! person deleted by id, `DELETE /api/v2/persons/{id}` (200 when deleted,
//! 404 when there is no such person; Pipedrive keeps a deleted person 30
//! days in its recycle bin, then removes it for good):
//! <https://developers.pipedrive.com/docs/api/v1/Persons#deletePerson> (v2 tab).
//! Its notes and leads first (they hold the submissions' messages, and
//! Pipedrive does not say they go with the person): each listed by
//! `person_id`, `DELETE /api/v1/notes/{id}` and `DELETE /api/v1/leads/{id}`
//! (<https://developers.pipedrive.com/docs/api/v1/Notes#deleteNote>,
//! <https://developers.pipedrive.com/docs/api/v1/Leads#deleteLead>).
//! The id is the one the person memory kept, else the one the search
//! finds for the address. The user of the token must be allowed to delete.

use reqwest::Method;

use serde_json::Value;

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
            for items in ["/api/v1/notes", "/api/v1/leads"] {
                self.delete_items(items, id, deadline).await?;
            }
            match self
                .call(Method::DELETE, &path, &[], None, &[], deadline)
                .await
            {
                Called::Done(_) => deleted += 1,
                Called::NotFound => {}
                Called::Failed(error) => return Err(error),
            }
        }
        Ok(Forgotten::counted(deleted))
    }

    /// Deletes every item of the person at `path` (notes, leads): the
    /// first page listed, each deleted, until a listing is empty.
    async fn delete_items(
        &self,
        path: &str,
        person: &str,
        deadline: CallDeadline,
    ) -> Result<(), DestinationError> {
        for _ in 0..MAX_ITEM_PAGES {
            let query = [("person_id", person), ("start", "0"), ("limit", "500")];
            let listed = match self
                .call(Method::GET, path, &query, None, &[], deadline)
                .await
            {
                Called::Done(body) => item_ids(&body),
                Called::NotFound => return Ok(()),
                Called::Failed(error) => return Err(error),
            };
            if listed.is_empty() {
                return Ok(());
            }
            for item in listed {
                let item_path = format!("{path}/{item}");
                if let Called::Failed(error) = self
                    .call(Method::DELETE, &item_path, &[], None, &[], deadline)
                    .await
                {
                    return Err(error);
                }
            }
        }
        Err(DestinationError::retryable("too-many-items-to-delete"))
    }
}

/// Pages of items deleted before a run gives up (the next run goes on).
const MAX_ITEM_PAGES: usize = 40;

/// The ids of a list page's items (`data[].id`), as path segments: a
/// number, or a UUID's letters, digits and dashes.
fn item_ids(body: &Value) -> Vec<String> {
    body.get("data")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| match item.get("id")? {
                    Value::Number(n) => Some(n.to_string()),
                    Value::String(s)
                        if !s.is_empty()
                            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') =>
                    {
                        Some(s.clone())
                    }
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pages_item_ids_are_path_segments() {
        let page = json!({"data": [{"id": 7}, {"id": "5f3b-aa"}, {"id": "../x"}, {"id": ""}, {}]});
        assert_eq!(item_ids(&page), ["7", "5f3b-aa"]);
        assert!(item_ids(&json!({"data": null})).is_empty());
    }
}
