//! A person erased at Salesforce (`receipts forget --everywhere`): each of
//! their records of the object (`SALESFORCE_OBJECT`, a Lead by default)
//! deleted, `DELETE /services/data/vXX.X/sobjects/{object}/{id}` (204 when
//! deleted; 404 `NOT_FOUND` or `ENTITY_IS_DELETED` for one already gone):
//! <https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_delete_record.htm>.
//! The records are the ids the stack's receipts kept, else the ones a SOQL
//! query finds by the address, `GET /services/data/vXX.X/query?q=SELECT Id
//! FROM {object} WHERE Email = '…'`:
//! <https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_query.htm>.
//! The connected app's user needs the Delete permission on the object.

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use reqwest::Method;
use serde_json::Value;

use super::{Salesforce, Session};
use crate::destinations::client;
use crate::destinations::port::{CallDeadline, DestinationError, Forgotten, Person};

const ERASE_TIME: std::time::Duration = std::time::Duration::from_secs(30);

/// Records one query answers with, at most (a person has a few).
const MAX_FOUND: usize = 200;

impl Salesforce {
    pub(super) async fn erase_person(
        &self,
        person: Person<'_>,
    ) -> Result<Forgotten, DestinationError> {
        let deadline = CallDeadline::after(ERASE_TIME);
        deadline
            .bound(async {
                let ids = match person.record_ids {
                    [] => self.ids_of(person.email).await?,
                    ids => ids.to_vec(),
                };
                let mut deleted = 0;
                for id in &ids {
                    let path = format!(
                        "sobjects/{}/{}",
                        utf8_percent_encode(&self.settings.object, NON_ALPHANUMERIC),
                        utf8_percent_encode(id, NON_ALPHANUMERIC)
                    );
                    if self.call_sobject(Method::DELETE, &path).await?.is_some() {
                        deleted += 1;
                    }
                }
                Ok(Forgotten::counted(deleted))
            })
            .await
    }

    /// The ids of the object's records whose `Email` is `email`.
    async fn ids_of(&self, email: &str) -> Result<Vec<String>, DestinationError> {
        let soql = format!(
            "SELECT Id FROM {} WHERE Email = '{}' LIMIT {MAX_FOUND}",
            self.settings.object,
            soql_text(email)
        );
        let path = format!("query?q={}", utf8_percent_encode(&soql, NON_ALPHANUMERIC));
        let answer = self.call_sobject(Method::GET, &path).await?;
        Ok(answer
            .as_ref()
            .and_then(|answer| answer.get("records"))
            .and_then(Value::as_array)
            .map(|records| {
                records
                    .iter()
                    .filter_map(|record| record.get("Id").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default())
    }

    /// One REST call under `/services/data/{version}/`, renewing the
    /// session once on a 401: the answer, or `None` for a 404.
    async fn call_sobject(
        &self,
        method: Method,
        path: &str,
    ) -> Result<Option<Value>, DestinationError> {
        let mut session = self.login.current().await?;
        let mut answered = self.rest(&session, method.clone(), path).await?;
        if answered.0 == 401 {
            session = self.login.renew(&session).await?;
            answered = self.rest(&session, method, path).await?;
        }
        let (status, retry_after, answer) = answered;
        match status {
            200..=299 => Ok(Some(answer)),
            404 => Ok(None),
            401 | 403 => Err(DestinationError::Unauthorized { status }),
            400 => Err(DestinationError::Misconfigured {
                status: Some(400),
                reason: "DELETE_REFUSED".to_owned(),
            }),
            _ => Err(DestinationError::Retryable {
                status: Some(status),
                retry_after,
                reason: format!("HTTP {status}"),
            }),
        }
    }

    async fn rest(
        &self,
        session: &Session,
        method: Method,
        path: &str,
    ) -> Result<(u16, Option<std::time::Duration>, Value), DestinationError> {
        let url = format!(
            "{}/services/data/{}/{path}",
            session.instance_url, self.settings.api_version
        );
        let response = self
            .client
            .request(method, url)
            .bearer_auth(session.token.expose())
            .send()
            .await
            .map_err(|error| client::transport_error(&error))?;
        let status = response.status().as_u16();
        let retry_after = client::retry_after(&response);
        let answer = match status {
            204 => Value::Null,
            _ => client::json_capped(response).await,
        };
        Ok((status, retry_after, answer))
    }
}

/// Text inside a SOQL string literal: quotes and backslashes escaped
/// (<https://developer.salesforce.com/docs/atlas.en-us.soql_sosl.meta/soql_sosl/sforce_api_calls_soql_select_quotedstringescapes.htm>).
fn soql_text(raw: &str) -> String {
    raw.replace('\\', "\\\\").replace('\'', "\\'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_cannot_end_its_soql_string() {
        assert_eq!(soql_text("ada@example.com"), "ada@example.com");
        assert_eq!(soql_text("o'neil@example.com"), "o\\'neil@example.com");
        assert_eq!(soql_text("a\\'b"), "a\\\\\\'b");
    }
}
