//! Every kind of destination, once: its name (`DESTINATION`, the template's
//! `Destination`) and the variables it reads. The worker's configuration
//! dispatches on it and derives from it which variables another kind's
//! stack must not set; `integration/tests/catalog.rs` checks the template,
//! the deploy wizard and the docs against it. A new destination starts here.

use shared::config::{invalid, ConfigError};
use shared::field_map::FIELD_MAP;

use super::client::CRM_ALLOW_HTTP;
use super::http::{CRM_TOKEN, CRM_TOKEN_SECRET_ARN, CRM_URL};
use super::hubspot::HUBSPOT_ONLY;
use super::leads_table::{LEADS_TABLE, LEAD_KEY, LEAD_RETENTION_DAYS};
use super::salesforce::SALESFORCE_ONLY;

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
