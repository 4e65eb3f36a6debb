//! The stack's configuration in the receipts table: the routes in force, one
//! item under `shared::routes::ROUTES_KEY`. A change is one conditional
//! write on the version read, so two operators applying at once never
//! overwrite each other unseen.

use aws_sdk_dynamodb::types::AttributeValue;
use shared::receipt::attr;
use shared::routes::{stored, Routes, ROUTES_KEY};

use super::{failed_condition, s, ReceiptsTable, TableError};

/// The routes in force, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRoutes {
    pub routes: Routes,
    pub version: u64,
    pub applied_at: String,
}

/// What storing routes did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// In force from now on, as this version.
    Version(u64),
    /// Someone stored other routes since they were read: nothing written.
    ChangedMeanwhile,
}

impl ReceiptsTable {
    /// The routes in force; `None` when none were ever stored.
    pub async fn routes(&self) -> Result<Option<StoredRoutes>, TableError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, s(ROUTES_KEY))
            .consistent_read(true)
            .send()
            .await
            .map_err(TableError::store)?;
        let Some(item) = output.item else {
            return Ok(None);
        };
        let text = |name: &str| match item.get(name) {
            Some(AttributeValue::S(text)) => Some(text.as_str()),
            _ => None,
        };
        let unreadable = |what: &str| {
            TableError::Store(format!(
                "the stored routes ({ROUTES_KEY}) are unreadable: {what}; apply a routes file again"
            ))
        };
        let routes = text(stored::ROUTES)
            .and_then(|json| serde_json::from_str(json).ok())
            .ok_or_else(|| unreadable("no routes JSON"))?;
        let version = match item.get(stored::VERSION) {
            Some(AttributeValue::N(number)) => number.parse().ok(),
            _ => None,
        }
        .ok_or_else(|| unreadable("no version"))?;
        Ok(Some(StoredRoutes {
            routes,
            version,
            applied_at: text(stored::APPLIED_AT).unwrap_or_default().to_owned(),
        }))
    }

    /// Stores `routes` as the next version after `read` (`None`: none was
    /// stored when read), at `now` (receipt-timestamp text).
    pub async fn store_routes(
        &self,
        routes: &Routes,
        read: Option<u64>,
        now: &str,
    ) -> Result<Stored, TableError> {
        let json = serde_json::to_string(routes)
            .map_err(|error| TableError::Store(format!("routes not storable: {error}")))?;
        let version = read.map_or(1, |v| v + 1);
        let request = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(attr::PK, s(ROUTES_KEY))
            .item(stored::ROUTES, s(&json))
            .item(stored::VERSION, AttributeValue::N(version.to_string()))
            .item(stored::APPLIED_AT, s(now));
        let request = match read {
            None => request
                .condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", attr::PK),
            Some(read) => request
                .condition_expression("#version = :read")
                .expression_attribute_names("#version", stored::VERSION)
                .expression_attribute_values(":read", AttributeValue::N(read.to_string())),
        };
        if failed_condition(request.send().await)? {
            return Ok(Stored::ChangedMeanwhile);
        }
        Ok(Stored::Version(version))
    }
}

impl ReceiptsTable {
    /// Where the scheduled audit of the sender's list ended
    /// (`shared::audit::AUDITED_UNTIL` of `config#audit`); `None` when the
    /// stack never audited.
    pub async fn audited_until(&self) -> Result<Option<String>, TableError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, s(shared::audit::AUDIT_STATE_KEY))
            .consistent_read(true)
            .send()
            .await
            .map_err(TableError::store)?;
        Ok(output
            .item
            .and_then(|item| match item.get(shared::audit::AUDITED_UNTIL) {
                Some(AttributeValue::S(text)) => Some(text.clone()),
                _ => None,
            }))
    }
}
