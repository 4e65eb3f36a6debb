//! Every kind of destination the worker can deliver to. What each kind is
//! (its name, variables, deploy surface) is declared once, in
//! `shared::destination`; its adapter (settings, client, builder) lives in
//! the module of the same name here, and [`read`] is the one place that
//! finds it. The worker's configuration reads a destination through
//! [`read`], `main` builds it with [`DestinationConfig::build`], and the
//! refusals of another kind's variables come from the catalog.
//!
//! The port every adapter implements is `port` (re-exported here); what
//! the HTTP adapters share is `client` and `token`; the newest-wins gates'
//! key, for any kind keyed by e-mail, is `gates`.

pub mod attio;
pub mod brevo;
pub mod client;
pub mod connect;
pub mod gates;
pub mod history;
pub mod http;
pub mod http_erase;
pub mod hubspot;
pub mod leads_table;
pub mod mailchimp;
pub mod memory;
pub mod per_person;
pub mod pipedrive;
pub mod port;
mod refusal;
pub mod salesforce;
pub mod shared_token;
pub mod slots;
pub mod token;
pub mod zoho;

pub use port::*;
pub use shared::destination::DestinationKind;

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use aws_sdk_dynamodb::Client;
use shared::config::{invalid, ConfigError};
use shared::destination::set::DestinationSet;
use shared::newest::{GateKeySetting, GateSecret};
use shared::{IdempotencyKey, Lead};

/// A future the erased destination returns.
pub type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a destination needs from the stack to be built.
pub struct BuildEnv<'a> {
    /// The receipts table (the leads table keeps its rows' receipts there).
    pub receipts_table: &'a str,
    pub sdk_config: &'a aws_config::SdkConfig,
    /// The DynamoDB client (the leads table's, and the receipts table's).
    pub dynamodb: &'a Client,
    /// For a destination named after the first in a stack of several, its
    /// name: its gates and person memories are its own
    /// (`GateKeySetting::for_destination`). `None` for the first (or
    /// only) one, which keeps the stack's gates as they always were.
    pub gate_scope: Option<&'static str>,
}

impl BuildEnv<'_> {
    pub fn secrets_client(&self) -> aws_sdk_secretsmanager::Client {
        aws_sdk_secretsmanager::Client::new(self.sdk_config)
    }

    /// The stack's gate key as this destination keeps its gates with it.
    pub fn own_gates(&self, setting: GateKeySetting) -> GateKeySetting {
        match self.gate_scope {
            Some(destination) => setting.for_destination(destination),
            None => setting,
        }
    }
}

/// One kind's settings, as read at init: each adapter's own type, built
/// into that adapter.
pub trait DestinationSettings: fmt::Debug + Send + Sync + AsAny {
    fn kind(&self) -> DestinationKind;

    /// The destination, its credentials read once (from Secrets Manager
    /// when so configured).
    fn build<'a>(
        self: Box<Self>,
        env: BuildEnv<'a>,
    ) -> Boxed<'a, Result<ConfiguredDestination, ConfigError>>;
}

/// A value seen as `Any`, so tests can look inside the settings; every
/// `'static` type is one.
pub trait AsAny: 'static {
    fn as_any(&self) -> &dyn Any;
}

impl<T: 'static> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `kind`'s settings, read through `get` (empty values unset), in a stack
/// of that one destination.
pub fn read(
    kind: DestinationKind,
    get: &dyn Fn(&str) -> Option<String>,
    allow_http: bool,
) -> Result<DestinationConfig, ConfigError> {
    let mut all = read_all(&DestinationSet::one(kind), get, allow_http)?;
    Ok(all.configs.remove(0))
}

/// The settings of every destination of `set`, read through `get`: a
/// variable only other destinations read is refused, and so is a
/// destination's missing or invalid setting, naming the destination in a
/// stack of several.
pub fn read_all(
    set: &DestinationSet,
    get: &dyn Fn(&str) -> Option<String>,
    allow_http: bool,
) -> Result<DestinationsConfig, ConfigError> {
    if let Some(variable) = set.foreign_variable(&get) {
        return Err(invalid(
            variable,
            format!("does not apply to DESTINATION={set}; unset it"),
        ));
    }
    let mut configs = Vec::with_capacity(set.kinds().len());
    for &kind in set.kinds() {
        let config = read_one(kind, get, allow_http).map_err(|error| match set.is_single() {
            true => error,
            false => naming_destination(error, kind),
        })?;
        configs.push(config);
    }
    Ok(DestinationsConfig {
        set: set.clone(),
        configs,
    })
}

/// A setting's error, saying which destination of several needs it.
fn naming_destination(error: ConfigError, kind: DestinationKind) -> ConfigError {
    match error {
        ConfigError::Missing(name) => invalid(
            name,
            format!("required by the destination {}, but not set", kind.name()),
        ),
        ConfigError::Invalid { name, reason } => invalid(
            name,
            format!("{reason} (for the destination {})", kind.name()),
        ),
    }
}

/// One kind's adapter settings: the one place each kind's adapter is found.
fn read_one(
    kind: DestinationKind,
    get: &dyn Fn(&str) -> Option<String>,
    allow_http: bool,
) -> Result<DestinationConfig, ConfigError> {
    let settings: Box<dyn DestinationSettings> = match kind {
        DestinationKind::Http => Box::new(http::HttpConfig::from_lookup(&get, allow_http)?),
        DestinationKind::LeadsTable => {
            Box::new(leads_table::LeadsTableSettings::from_lookup(&get)?)
        }
        DestinationKind::HubSpot => Box::new(hubspot::build::HubSpotConfig::from_lookup(
            &get, allow_http,
        )?),
        DestinationKind::Salesforce => Box::new(salesforce::build::SalesforceConfig::from_lookup(
            &get, allow_http,
        )?),
        DestinationKind::Pipedrive => Box::new(pipedrive::build::PipedriveConfig::from_lookup(
            &get, allow_http,
        )?),
        DestinationKind::Mailchimp => Box::new(mailchimp::build::MailchimpConfig::from_lookup(
            &get, allow_http,
        )?),
        DestinationKind::Zoho => Box::new(zoho::build::ZohoConfig::from_lookup(&get, allow_http)?),
        DestinationKind::Brevo => {
            Box::new(brevo::build::BrevoConfig::from_lookup(&get, allow_http)?)
        }
        DestinationKind::Attio => {
            Box::new(attio::build::AttioConfig::from_lookup(&get, allow_http)?)
        }
    };
    Ok(DestinationConfig(settings))
}

/// A destination's settings, as read at init.
#[derive(Debug)]
pub struct DestinationConfig(Box<dyn DestinationSettings>);

impl DestinationConfig {
    pub fn new(settings: impl DestinationSettings) -> Self {
        DestinationConfig(Box::new(settings))
    }

    pub fn kind(&self) -> DestinationKind {
        self.0.kind()
    }

    /// The settings, when they are `T`'s (tests look inside).
    pub fn settings<T: DestinationSettings>(&self) -> Option<&T> {
        // Through the trait object, not the box (a Box is `Any` too).
        (*self.0).as_any().downcast_ref()
    }

    /// The destination, its credentials read once (each kind's builder
    /// sits beside its adapter). `dynamodb` is the client of the leads
    /// table (and the receipts table).
    pub async fn build(
        self,
        receipts_table: &str,
        sdk_config: &aws_config::SdkConfig,
        dynamodb: &Client,
    ) -> Result<ConfiguredDestination, ConfigError> {
        self.0
            .build(BuildEnv {
                receipts_table,
                sdk_config,
                dynamodb,
                gate_scope: None,
            })
            .await
    }
}

/// Every destination of the stack (`DESTINATION`), as read at init, in the
/// order named.
#[derive(Debug)]
pub struct DestinationsConfig {
    pub set: DestinationSet,
    pub configs: Vec<DestinationConfig>,
}

impl DestinationsConfig {
    /// The first destination's settings: the stack's only one, in a stack
    /// of one.
    pub fn first(&self) -> &DestinationConfig {
        &self.configs[0]
    }

    /// Each destination, built as [`DestinationConfig::build`] does, each
    /// with gates of its own: the first named keeps the stack's gate key
    /// (so a destination added after it leaves its gates and person
    /// memories as they were), each other one a key derived for it.
    pub async fn build(
        self,
        receipts_table: &str,
        sdk_config: &aws_config::SdkConfig,
        dynamodb: &Client,
    ) -> Result<Vec<ConfiguredDestination>, ConfigError> {
        let mut built = Vec::with_capacity(self.configs.len());
        for (index, config) in self.configs.into_iter().enumerate() {
            let kind = config.kind();
            let env = BuildEnv {
                receipts_table,
                sdk_config,
                dynamodb,
                gate_scope: (index > 0).then(|| kind.name()),
            };
            built.push(config.0.build(env).await?);
        }
        Ok(built)
    }
}

/// A [`Destination`] whose futures are boxed, so that any kind fits one
/// type: the adapters implement `Destination`, and this is derived.
trait ErasedDestination: Send + Sync {
    fn newest_gates(&self) -> Option<&GateSecret>;
    fn keeps_history(&self) -> bool;
    fn name(&self) -> &'static str;
    fn upsert<'a>(
        &'a self,
        lead: &'a Lead,
        key: &'a IdempotencyKey,
    ) -> Boxed<'a, Result<Upserted, DestinationError>>;
    fn upsert_batch<'a>(
        &'a self,
        writes: &'a [Write<'a>],
        concurrency: usize,
        deadline: CallDeadline,
    ) -> Boxed<'a, Vec<Answer>>;
    fn erase<'a>(&'a self, person: Person<'a>) -> Boxed<'a, Result<Forgotten, DestinationError>>;
}

impl<D: Destination> ErasedDestination for D {
    fn newest_gates(&self) -> Option<&GateSecret> {
        Destination::newest_gates(self)
    }

    fn keeps_history(&self) -> bool {
        Destination::keeps_history(self)
    }

    fn name(&self) -> &'static str {
        Destination::name(self)
    }

    fn upsert<'a>(
        &'a self,
        lead: &'a Lead,
        key: &'a IdempotencyKey,
    ) -> Boxed<'a, Result<Upserted, DestinationError>> {
        Box::pin(Destination::upsert(self, lead, key))
    }

    fn upsert_batch<'a>(
        &'a self,
        writes: &'a [Write<'a>],
        concurrency: usize,
        deadline: CallDeadline,
    ) -> Boxed<'a, Vec<Answer>> {
        Box::pin(Destination::upsert_batch(
            self,
            writes,
            concurrency,
            deadline,
        ))
    }

    fn erase<'a>(&'a self, person: Person<'a>) -> Boxed<'a, Result<Forgotten, DestinationError>> {
        Box::pin(Destination::erase(self, person))
    }
}

/// The destination chosen by `DESTINATION`, as one type for the worker.
pub struct ConfiguredDestination(Box<dyn ErasedDestination>);

impl ConfiguredDestination {
    pub fn new(destination: impl Destination + 'static) -> Self {
        ConfiguredDestination(Box::new(destination))
    }
}

impl Destination for ConfiguredDestination {
    fn newest_gates(&self) -> Option<&GateSecret> {
        self.0.newest_gates()
    }

    fn keeps_history(&self) -> bool {
        self.0.keeps_history()
    }

    fn name(&self) -> &'static str {
        self.0.name()
    }

    async fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> Result<Upserted, DestinationError> {
        self.0.upsert(lead, key).await
    }

    async fn upsert_batch(
        &self,
        writes: &[Write<'_>],
        concurrency: usize,
        deadline: CallDeadline,
    ) -> Vec<Answer> {
        self.0.upsert_batch(writes, concurrency, deadline).await
    }

    async fn erase(&self, person: Person<'_>) -> Result<Forgotten, DestinationError> {
        self.0.erase(person).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind refuses every variable only others read, by name, before
    /// reading its own.
    #[test]
    fn another_kinds_variable_is_refused_by_name() {
        let field_map =
            |name: &str| (name == shared::field_map::FIELD_MAP).then(|| "{}".to_owned());
        assert_eq!(
            read(DestinationKind::LeadsTable, &field_map, false).map(|c| c.kind()),
            Err(invalid(
                shared::field_map::FIELD_MAP,
                "does not apply to DESTINATION=dynamodb; unset it"
            ))
        );
    }
}
