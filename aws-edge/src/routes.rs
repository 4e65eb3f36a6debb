//! The routes both functions keep in force: the one item
//! `receipts routes apply` stores under `shared::routes::ROUTES_KEY`, read
//! at init and again every `ROUTES_REREAD_SECONDS` (five minutes at most),
//! so a change takes effect without a deploy. The read asks for the
//! `routes` attribute alone, which is all the template lets the functions
//! read of that item. Routes read back are held to `routes check`'s rules
//! (`shared::routes::check`): stored ones that break them are refused, the
//! last good ones stay in force, and `RoutesRefused` says so.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use shared::metrics::{catalog, Metrics, Values, FUNCTION};
use shared::receipt::attr;
use shared::refresh::{Refreshing, Source, SourceError, Unavailable};
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

/// The routes in force, and how often they are read again.
pub struct RoutesInForce {
    routes: Refreshing<Arc<Routes>, RoutesUnreadable>,
    reread: Duration,
}

impl RoutesInForce {
    /// Routes that never change: none (`Routes::default()`), or a test's.
    pub fn fixed(routes: Arc<Routes>) -> Self {
        RoutesInForce {
            routes: Refreshing::fixed(routes, "routes"),
            reread: shared::routes::ROUTES_REREAD,
        }
    }

    /// The routes read now from `source`, kept in force and read again from
    /// it every `reread`. When this first read fails, none are in force
    /// (one log line says so) until a read succeeds; each function says
    /// what it does meanwhile.
    pub async fn read_from(
        source: Arc<dyn Source<Arc<Routes>, RoutesUnreadable>>,
        reread: Duration,
    ) -> Self {
        let routes = match source.fetch().await {
            Ok(routes) => Refreshing::from_source(routes, source, "routes"),
            Err(error) => {
                tracing::warn!(error = %error, "the routes could not be read; they are read again at the next delivery");
                Refreshing::unread(source, "routes")
            }
        };
        RoutesInForce { routes, reread }
    }

    /// The routes in force now, read again first when the last read is
    /// `reread` old, and at every ask while none could be read yet (their
    /// first read failed: `Unavailable`). A failed re-read keeps the last
    /// ones read, for as long as reads fail.
    pub async fn now(&self) -> Result<Arc<Routes>, Unavailable> {
        let due = match self.routes.current() {
            Ok(_) => self.reread,
            Err(_) => Duration::ZERO,
        };
        self.routes.renew_if_older(due, "interval").await;
        self.routes.current()
    }
}

/// The routes item of a receipts table, read whole; none stored is no
/// route and no spam rule.
pub struct StoredRoutes {
    client: Client,
    table: String,
    /// Where a refusal is counted, and for which function.
    metrics: Option<(Metrics, &'static str)>,
    /// The stack's destinations, where the reader knows them (the
    /// worker): routes naming another are refused too.
    destinations: Option<shared::destination::set::DestinationSet>,
}

impl StoredRoutes {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        StoredRoutes {
            client,
            table: table.into(),
            metrics: None,
            destinations: None,
        }
    }

    /// Refuses stored routes that name a destination the stack lacks
    /// (`Routes::check_destinations`), as any routes that break the rules.
    pub fn for_destinations(mut self, stack: shared::destination::set::DestinationSet) -> Self {
        self.destinations = Some(stack);
        self
    }

    /// Stored routes refused by the rules emit `RoutesRefused` for
    /// `function`.
    pub fn with_metrics(mut self, metrics: Metrics, function: &'static str) -> Self {
        self.metrics = Some((metrics, function));
        self
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
        let routes: Routes = match item.get(stored::ROUTES) {
            Some(AttributeValue::S(json)) => serde_json::from_str(json)
                .map_err(|_| RoutesUnreadable("not routes JSON".to_owned()))?,
            _ => return Err(RoutesUnreadable("no routes attribute".to_owned())),
        };
        let checked = shared::routes::check(&routes).and_then(|()| match &self.destinations {
            Some(stack) => routes.check_destinations(stack),
            None => Ok(()),
        });
        if let Err(problems) = checked {
            if let Some((metrics, function)) = &self.metrics {
                metrics.emit(
                    &[(FUNCTION, function)],
                    &[(catalog::ROUTES_REFUSED, Values::One(1.0))],
                    &[],
                );
            }
            // Route names and keys, never a form id or a value.
            let first = problems
                .first()
                .map(ToString::to_string)
                .unwrap_or_default();
            return Err(RoutesUnreadable(format!(
                "the stored routes break the rules routes check applies ({} problems, the first: {first}); the last good ones stay in force",
                problems.len()
            )));
        }
        Ok(Arc::new(routes))
    }

    /// These routes kept in force (`RoutesInForce::read_from`).
    pub async fn into_force(self, reread: Duration) -> RoutesInForce {
        RoutesInForce::read_from(Arc::new(self), reread).await
    }
}

impl Source<Arc<Routes>, RoutesUnreadable> for StoredRoutes {
    fn fetch(
        &self,
    ) -> Pin<Box<dyn Future<Output = Result<Arc<Routes>, RoutesUnreadable>> + Send + '_>> {
        Box::pin(self.read())
    }
}
