//! Every kind of destination, registered once: its module, its name
//! (`DESTINATION`, the template's `Destination`), the variables it reads,
//! its settings and how it is built. The worker's configuration reads a
//! destination through `DestinationKind::read_settings`, `main` builds it
//! with `DestinationConfig::build`, and the refusals of another kind's
//! variables are derived from the variables each kind declares;
//! `integration/tests/catalog.rs` checks the template, the deploy wizard
//! and the docs against `DestinationKind::ALL`. A new destination starts
//! here: its module beside the others (settings, adapter, builder), one
//! variant in each enum below.
//!
//! The port every adapter implements is `port` (re-exported here); what
//! the HTTP adapters share is `client` and `token`.

pub mod client;
pub mod http;
pub mod hubspot;
pub mod leads_table;
pub mod port;
mod refusal;
pub mod salesforce;
pub mod token;

pub use port::*;

use aws_sdk_dynamodb::Client;
use shared::config::{invalid, ConfigError};
use shared::field_map::FIELD_MAP;
use shared::newest::GateSecret;
use shared::{IdempotencyKey, Lead};

use client::CRM_ALLOW_HTTP;
use http::{HttpCrm, CRM_TOKEN, CRM_TOKEN_SECRET_ARN, CRM_URL};
use hubspot::{HubSpot, HubSpotSettings, HUBSPOT_ONLY};
use leads_table::{LeadsTable, LeadsTableSettings, LEADS_TABLE, LEAD_KEY, LEAD_RETENTION_DAYS};
use salesforce::{CredentialsSetting, Salesforce, SalesforceSettings, SALESFORCE_ONLY};
use token::{TokenSetting, TOKEN_REFRESH_INTERVAL};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DestinationKind {
    /// Your CRM's upsert URL (`destinations::http`).
    Http,
    /// A DynamoDB table the stack creates (`destinations::leads_table`).
    LeadsTable,
    /// HubSpot contacts (`destinations::hubspot`).
    HubSpot,
    /// Salesforce Leads, or another object (`destinations::salesforce`).
    Salesforce,
}

impl DestinationKind {
    pub const ALL: [DestinationKind; 4] = [
        DestinationKind::Http,
        DestinationKind::LeadsTable,
        DestinationKind::HubSpot,
        DestinationKind::Salesforce,
    ];

    /// Its one name: `DESTINATION`'s value and the template's.
    pub fn name(self) -> &'static str {
        match self {
            DestinationKind::Http => "http",
            DestinationKind::LeadsTable => "dynamodb",
            DestinationKind::HubSpot => "hubspot",
            DestinationKind::Salesforce => "salesforce",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == raw.trim())
    }

    /// Every name, for a message: `http, dynamodb, hubspot or salesforce`.
    pub fn names() -> String {
        let names: Vec<&str> = Self::ALL.iter().map(|kind| kind.name()).collect();
        match names.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// The variables only it reads (besides the ones all kinds share).
    fn own_variables(self) -> &'static [&'static str] {
        match self {
            DestinationKind::Http => &[CRM_URL, CRM_TOKEN, CRM_TOKEN_SECRET_ARN],
            DestinationKind::LeadsTable => &[LEADS_TABLE, LEAD_KEY, LEAD_RETENTION_DAYS],
            DestinationKind::HubSpot => HUBSPOT_ONLY,
            DestinationKind::Salesforce => SALESFORCE_ONLY,
        }
    }

    /// The variables it reads with some other kinds: a field map for the
    /// CRMs that map fields, `CRM_ALLOW_HTTP` for those called over HTTP.
    fn shared_variables(self) -> &'static [&'static str] {
        match self {
            DestinationKind::Http => &[CRM_ALLOW_HTTP],
            DestinationKind::LeadsTable => &[],
            DestinationKind::HubSpot | DestinationKind::Salesforce => &[FIELD_MAP, CRM_ALLOW_HTTP],
        }
    }

    fn reads(self, variable: &str) -> bool {
        self.own_variables()
            .iter()
            .chain(self.shared_variables())
            .any(|own| *own == variable)
    }

    /// This kind's settings, read through `get` (empty values unset).
    pub fn read_settings(
        self,
        get: &impl Fn(&str) -> Option<String>,
        allow_http: bool,
    ) -> Result<DestinationConfig, ConfigError> {
        Ok(match self {
            DestinationKind::Http => {
                let (url, token) = http::settings_from_lookup(get, allow_http)?;
                DestinationConfig::Http { url, token }
            }
            DestinationKind::LeadsTable => {
                DestinationConfig::LeadsTable(LeadsTableSettings::from_lookup(get)?)
            }
            DestinationKind::HubSpot => {
                let (settings, token) = HubSpotSettings::from_lookup(get, allow_http)?;
                DestinationConfig::HubSpot { settings, token }
            }
            DestinationKind::Salesforce => {
                let (settings, credentials) = SalesforceSettings::from_lookup(get, allow_http)?;
                DestinationConfig::Salesforce {
                    settings,
                    credentials,
                }
            }
        })
    }

    /// Refuses a variable another kind reads and this one does not: set, it
    /// says the stack was meant for another destination.
    pub fn refuse_others(self, get: &impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        for other in Self::ALL.into_iter().filter(|other| *other != self) {
            for variable in other.own_variables().iter().chain(other.shared_variables()) {
                if !self.reads(variable) && get(variable).is_some() {
                    return Err(invalid(
                        variable,
                        format!("does not apply to DESTINATION={}; unset it", self.name()),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A destination's settings, as read at init.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DestinationConfig {
    Http {
        url: String,
        token: TokenSetting,
    },
    LeadsTable(LeadsTableSettings),
    HubSpot {
        settings: HubSpotSettings,
        token: TokenSetting,
    },
    Salesforce {
        settings: SalesforceSettings,
        credentials: CredentialsSetting,
    },
}

impl DestinationConfig {
    pub fn kind(&self) -> DestinationKind {
        match self {
            DestinationConfig::Http { .. } => DestinationKind::Http,
            DestinationConfig::LeadsTable(_) => DestinationKind::LeadsTable,
            DestinationConfig::HubSpot { .. } => DestinationKind::HubSpot,
            DestinationConfig::Salesforce { .. } => DestinationKind::Salesforce,
        }
    }

    /// The destination, its credentials read once (from Secrets Manager
    /// when so configured; each kind's builder sits beside its adapter).
    /// `dynamodb` is the client of the leads table (and the receipts
    /// table).
    pub async fn build(
        self,
        receipts_table: &str,
        sdk_config: &aws_config::SdkConfig,
        dynamodb: &Client,
    ) -> Result<ConfiguredDestination, ConfigError> {
        let secrets_client = || aws_sdk_secretsmanager::Client::new(sdk_config);
        Ok(match self {
            DestinationConfig::Http { url, token } => ConfiguredDestination::Http(
                http::build(url, token, secrets_client, TOKEN_REFRESH_INTERVAL).await?,
            ),
            DestinationConfig::HubSpot { settings, token } => ConfiguredDestination::HubSpot(
                hubspot::build::connect(settings, token, secrets_client, TOKEN_REFRESH_INTERVAL)
                    .await?,
            ),
            DestinationConfig::Salesforce {
                settings,
                credentials,
            } => ConfiguredDestination::Salesforce(
                salesforce::build::connect(
                    settings,
                    credentials,
                    secrets_client,
                    TOKEN_REFRESH_INTERVAL,
                )
                .await?,
            ),
            DestinationConfig::LeadsTable(settings) => ConfiguredDestination::LeadsTable(
                LeadsTable::new(
                    dynamodb.clone(),
                    settings.table,
                    settings.lead_key,
                    receipts_table,
                )
                .expiring_after(settings.retention),
            ),
        })
    }
}

/// The destination chosen by `DESTINATION`, as one type for the worker.
pub enum ConfiguredDestination {
    Http(HttpCrm),
    LeadsTable(LeadsTable),
    HubSpot(HubSpot),
    Salesforce(Salesforce),
}

impl Destination for ConfiguredDestination {
    fn newest_gates(&self) -> Option<&GateSecret> {
        match self {
            ConfiguredDestination::Http(crm) => crm.newest_gates(),
            ConfiguredDestination::LeadsTable(table) => table.newest_gates(),
            ConfiguredDestination::HubSpot(hubspot) => hubspot.newest_gates(),
            ConfiguredDestination::Salesforce(salesforce) => salesforce.newest_gates(),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            ConfiguredDestination::Http(crm) => crm.name(),
            ConfiguredDestination::LeadsTable(table) => table.name(),
            ConfiguredDestination::HubSpot(hubspot) => hubspot.name(),
            ConfiguredDestination::Salesforce(salesforce) => salesforce.name(),
        }
    }

    async fn upsert(
        &self,
        lead: &Lead,
        key: &IdempotencyKey,
    ) -> Result<Upserted, DestinationError> {
        match self {
            ConfiguredDestination::Http(crm) => crm.upsert(lead, key).await,
            ConfiguredDestination::LeadsTable(table) => table.upsert(lead, key).await,
            ConfiguredDestination::HubSpot(hubspot) => hubspot.upsert(lead, key).await,
            ConfiguredDestination::Salesforce(salesforce) => salesforce.upsert(lead, key).await,
        }
    }

    async fn upsert_batch(
        &self,
        writes: &[Write<'_>],
        concurrency: usize,
        deadline: CallDeadline,
    ) -> Vec<Answer> {
        match self {
            ConfiguredDestination::Http(crm) => {
                crm.upsert_batch(writes, concurrency, deadline).await
            }
            ConfiguredDestination::LeadsTable(table) => {
                table.upsert_batch(writes, concurrency, deadline).await
            }
            ConfiguredDestination::HubSpot(hubspot) => {
                hubspot.upsert_batch(writes, concurrency, deadline).await
            }
            ConfiguredDestination::Salesforce(salesforce) => {
                salesforce.upsert_batch(writes, concurrency, deadline).await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_read_as_one_list() {
        for kind in DestinationKind::ALL {
            assert_eq!(DestinationKind::parse(kind.name()), Some(kind));
        }
        assert_eq!(DestinationKind::parse("leads_table"), None, "one name each");
        assert_eq!(
            DestinationKind::names(),
            "http, dynamodb, hubspot or salesforce"
        );
    }

    /// Each kind refuses every variable only others read, and takes its
    /// own and the shared ones it reads.
    #[test]
    fn another_kinds_variable_is_refused_by_name() {
        for kind in DestinationKind::ALL {
            for other in DestinationKind::ALL {
                for variable in other.own_variables().iter().chain(other.shared_variables()) {
                    let set = |name: &str| (name == *variable).then(|| "x".to_owned());
                    let refused = kind.refuse_others(&set).is_err();
                    assert_eq!(
                        refused,
                        !kind.reads(variable),
                        "{variable} on {}",
                        kind.name()
                    );
                }
            }
        }
        let field_map = |name: &str| (name == FIELD_MAP).then(|| "{}".to_owned());
        assert!(DestinationKind::HubSpot.refuse_others(&field_map).is_ok());
        assert_eq!(
            DestinationKind::LeadsTable.refuse_others(&field_map),
            Err(invalid(
                FIELD_MAP,
                "does not apply to DESTINATION=dynamodb; unset it"
            ))
        );
    }
}
