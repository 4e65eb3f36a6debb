//! A person erased at Zoho CRM (`receipts forget --everywhere`): their
//! record deleted, `DELETE {api}/crm/v8/{module}?ids={id}`, whose answer
//! says per record `data[].code`: `SUCCESS` when deleted, another code
//! (`INVALID_DATA`) for an id that is no record (already deleted). Zoho
//! keeps a deleted record 60 days in its recycle bin. The token needs the
//! scope `ZohoCRM.modules.ALL` (or the module's `DELETE`):
//! <https://www.zoho.com/crm/developer/docs/api/v8/delete-records.html>.
//! The id is the one the person memory kept, else the one the search
//! finds for the address.

use reqwest::Method;
use serde_json::Value;

use super::Zoho;
use crate::destinations::client::Called;
use crate::destinations::memory::PersonMemory;
use crate::destinations::port::{CallDeadline, DestinationError, Forgotten, Person};

const ERASE_TIME: std::time::Duration = std::time::Duration::from_secs(30);

impl<M: PersonMemory> Zoho<M> {
    pub(super) async fn erase_person(
        &self,
        person: Person<'_>,
    ) -> Result<Forgotten, DestinationError> {
        let deadline = CallDeadline::after(ERASE_TIME);
        let ids: Vec<String> = match person.record_ids {
            [] => self
                .find_by_email(person.email, deadline)
                .await?
                .into_iter()
                .collect(),
            ids => ids.to_vec(),
        };
        let path = format!("/crm/v8/{}", self.module);
        let mut deleted = 0;
        for id in &ids {
            match self
                .call(Method::DELETE, &path, &[("ids", id)], None, deadline)
                .await
            {
                Called::Done(answer) if deleted_in(&answer) => deleted += 1,
                Called::Done(_) | Called::NotFound => {}
                Called::Failed(error) => return Err(error),
            }
        }
        Ok(Forgotten::counted(deleted))
    }
}

/// Whether a deletion's answer says its one record was deleted.
fn deleted_in(answer: &Value) -> bool {
    answer
        .pointer("/data/0/code")
        .and_then(Value::as_str)
        .is_some_and(|code| code == "SUCCESS")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_deletion_answer_per_record() {
        assert!(deleted_in(&json!({"data": [{"code": "SUCCESS"}]})));
        assert!(!deleted_in(&json!({"data": [{"code": "INVALID_DATA"}]})));
        assert!(!deleted_in(&json!({})));
    }
}
