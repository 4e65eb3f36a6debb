//! The routes both functions keep in force: the one item
//! `receipts routes apply` stores under `shared::routes::ROUTES_KEY`, read
//! at init and again at most every `shared::config::routes_reread` (five
//! minutes unless set lower), so a change takes effect without a deploy. The read
//! asks for the `routes` attribute alone, which is all the template lets
//! the functions read of that item.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use shared::receipt::attr;
use shared::refresh::{Refreshing, Source, SourceError};
use shared::routes::{stored, Routes, ROUTES_KEY};

/// Why the routes could not be read: the service's code, or what kept the
/// call from it. Never definitive: the routes last read stay in force.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the routes could not be read ({0})")]
pub struct RoutesUnreadable(pub String);

impl SourceError for RoutesUnreadable {
    fn definitive(&self) -> bool {
        false
    }
}

/// The routes in force and where they are read again.
pub type RoutesInForce = Refreshing<Arc<Routes>, RoutesUnreadable>;

/// The routes item of a receipts table, read whole; none stored is no
/// route and no spam rule.
pub struct StoredRoutes {
    client: Client,
    table: String,
}

impl StoredRoutes {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        StoredRoutes {
            client,
            table: table.into(),
        }
    }

    pub async fn read(&self) -> Result<Arc<Routes>, RoutesUnreadable> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, AttributeValue::S(ROUTES_KEY.to_owned()))
            .projection_expression("#routes")
            .expression_attribute_names("#routes", stored::ROUTES)
            .send()
            .await
            .map_err(|error| {
                RoutesUnreadable(
                    error
                        .as_service_error()
                        .and_then(|e| e.code())
                        .unwrap_or("unreachable")
                        .to_owned(),
                )
            })?;
        let Some(item) = output.item else {
            return Ok(Arc::default());
        };
        match item.get(stored::ROUTES) {
            Some(AttributeValue::S(json)) => serde_json::from_str(json)
                .map(Arc::new)
                .map_err(|_| RoutesUnreadable("not routes JSON".to_owned())),
            _ => Err(RoutesUnreadable("no routes attribute".to_owned())),
        }
    }

    /// The routes read now, kept in force and read again from here. A
    /// first read that fails leaves none in force (every form then uses
    /// the stack's field map and no spam rule) until a re-read succeeds,
    /// and says so in one log line.
    pub async fn into_force(self) -> RoutesInForce {
        let in_force = self.read().await.unwrap_or_else(|error| {
            tracing::warn!(error = %error, "no routes nor spam rules in force until they can be read");
            Arc::default()
        });
        Refreshing::from_source(in_force, Arc::new(self), "routes")
    }
}

impl Source<Arc<Routes>, RoutesUnreadable> for StoredRoutes {
    fn fetch(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<Arc<Routes>, RoutesUnreadable>> + Send + '_>> {
        Box::pin(self.read())
    }
}
