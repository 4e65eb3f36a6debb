//! The CRMs' and the senders' APIs' local fakes, built from each vendor's documented requests and
//! answers, and the one place that names them: `LocalCrm`, the stand-in the
//! local pipeline starts for `DESTINATION` (the CRM stub for `http`).

pub mod hubspot;
pub mod salesforce;
pub mod sender_api;

use std::net::SocketAddr;
use std::sync::Arc;

use crate::crm_stub::CrmStub;
use crate::local;
use hubspot::{HubSpotFake, DEMO_HUBSPOT_TOKEN};
use salesforce::{SalesforceFake, DEMO_SALESFORCE_CLIENT_ID, DEMO_SALESFORCE_CLIENT_SECRET};

/// The local destination `DESTINATION` names.
pub enum LocalCrm {
    Stub(CrmStub),
    HubSpot(Arc<HubSpotFake>),
    Salesforce(Arc<SalesforceFake>),
}

/// Contacts or leads held, and the writes to them.
pub type Counts = Box<dyn Fn() -> (usize, u64) + Send>;

impl LocalCrm {
    /// Starts the stand-in `destination` names on `address`.
    pub async fn start(destination: &str, address: SocketAddr) -> Result<Self, String> {
        Ok(match destination {
            "http" => LocalCrm::Stub(
                CrmStub::start_on(address, true)
                    .await
                    .map_err(|e| format!("CRM stub on port {}: {e}", address.port()))?,
            ),
            "hubspot" => LocalCrm::HubSpot(Arc::new(
                HubSpotFake::start_on(address, DEMO_HUBSPOT_TOKEN)
                    .await
                    .map_err(|e| format!("HubSpot fake on port {}: {e}", address.port()))?,
            )),
            "salesforce" => LocalCrm::Salesforce(Arc::new(
                SalesforceFake::start_on(
                    address,
                    DEMO_SALESFORCE_CLIENT_ID,
                    DEMO_SALESFORCE_CLIENT_SECRET,
                )
                .await
                .map_err(|e| format!("Salesforce fake on port {}: {e}", address.port()))?,
            )),
            other => {
                return Err(format!(
                    "DESTINATION={other}: the local pipeline has http, hubspot or salesforce"
                ))
            }
        })
    }

    /// What the worker needs to reach it.
    pub fn worker_env(&self) -> Vec<(&'static str, String)> {
        match self {
            LocalCrm::Stub(stub) => vec![
                ("DESTINATION", "http".to_owned()),
                ("CRM_URL", stub.leads_url()),
            ],
            LocalCrm::HubSpot(fake) => vec![
                ("DESTINATION", "hubspot".to_owned()),
                ("HUBSPOT_TOKEN", DEMO_HUBSPOT_TOKEN.to_owned()),
                ("HUBSPOT_BASE_URL", fake.base_url()),
                ("GATE_KEY", local::DEMO_GATE_KEY.to_owned()),
            ],
            LocalCrm::Salesforce(fake) => vec![
                ("DESTINATION", "salesforce".to_owned()),
                ("SALESFORCE_LOGIN_URL", fake.login_url()),
                ("SALESFORCE_CLIENT_ID", DEMO_SALESFORCE_CLIENT_ID.to_owned()),
                (
                    "SALESFORCE_CLIENT_SECRET",
                    DEMO_SALESFORCE_CLIENT_SECRET.to_owned(),
                ),
            ],
        }
    }

    /// Its contacts or records, and the writes to them.
    pub fn counts(&self) -> Counts {
        match self {
            LocalCrm::Stub(stub) => {
                let view = stub.clone_handle();
                Box::new(move || (view.lead_count(), view.writes()))
            }
            LocalCrm::HubSpot(fake) => {
                let fake = Arc::clone(fake);
                Box::new(move || {
                    let contacts = fake.contacts();
                    let writes = contacts.iter().map(|c| u64::from(c.writes)).sum();
                    (contacts.len(), writes)
                })
            }
            LocalCrm::Salesforce(fake) => {
                let fake = Arc::clone(fake);
                Box::new(move || {
                    let records = fake.records();
                    let writes = records.iter().map(|r| u64::from(r.writes)).sum();
                    (records.len(), writes)
                })
            }
        }
    }

    /// One line saying where to look.
    pub fn describe(&self, port: u16) -> String {
        match self {
            LocalCrm::Stub(_) => format!("CRM stub  GET  http://127.0.0.1:{port}/leads   (POST/DELETE /faults to break and mend it)"),
            LocalCrm::HubSpot(_) => format!("HubSpot   GET  http://127.0.0.1:{port}/contacts   (a local fake; POST/DELETE /faults to break and mend it)"),
            LocalCrm::Salesforce(_) => format!("Salesforce GET http://127.0.0.1:{port}/records   (a local fake; POST/DELETE /faults to break and mend it)"),
        }
    }
}
