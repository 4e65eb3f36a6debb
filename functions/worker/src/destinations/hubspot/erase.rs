//! A person erased at HubSpot (`receipts forget --everywhere`): the
//! contact deleted by HubSpot's GDPR delete, which deletes it permanently
//! and also keeps forms from re-creating it with that address:
//! `POST /crm/v3/objects/contacts/gdpr-delete` with `objectId` (and
//! `idProperty: email` when the object id is the address); 204 when
//! deleted, 404 when there is no such contact. It needs the token's
//! `crm.objects.contacts.write` scope.
//! <https://developers.hubspot.com/docs/api-reference/legacy/crm/objects/contacts/gdpr/gdpr-delete-contact>

use reqwest::Method;
use serde_json::json;

use super::calls::Calls;
use super::HubSpot;
use crate::destinations::port::{CallDeadline, DestinationError, Forgotten, Person};

/// The GDPR delete's path.
pub const GDPR_DELETE_PATH: &str = "/crm/v3/objects/contacts/gdpr-delete";

/// How long one deletion may take.
const ERASE_TIME: std::time::Duration = std::time::Duration::from_secs(30);

impl HubSpot {
    /// By the contact ids the stack kept, else by the address (HubSpot
    /// keeps one contact per address).
    pub(super) async fn erase_person(
        &self,
        person: Person<'_>,
    ) -> Result<Forgotten, DestinationError> {
        let calls = Calls {
            hubspot: self,
            deadline: CallDeadline::after(ERASE_TIME),
            refused: "GDPR_DELETE_REFUSED",
        };
        let url = calls.url(GDPR_DELETE_PATH)?;
        let bodies: Vec<serde_json::Value> = match person.record_ids {
            [] => vec![json!({"objectId": person.email, "idProperty": "email"})],
            ids => ids.iter().map(|id| json!({ "objectId": id })).collect(),
        };
        let mut deleted = 0;
        for body in &bodies {
            if calls
                .call(Method::POST, url.clone(), Some(body))
                .await?
                .is_some()
            {
                deleted += 1;
            }
        }
        Ok(Forgotten::counted(deleted))
    }
}
