//! The CRMs' and the senders' APIs' local fakes, built from each vendor's documented requests and
//! answers, and the one place that names them: `LocalCrm`, the stand-in the
//! local pipeline starts for `DESTINATION` (the CRM stub for `http`).

pub mod hubspot;
pub mod mailchimp;
pub mod pipedrive;
pub mod salesforce;
pub mod sender_api;
pub mod stand_in;
pub mod zoho;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use shared::destination::DestinationKind;
pub use stand_in::{Counts, LocalDestination};

use crate::crm_stub::CrmStub;
use hubspot::{HubSpotFake, DEMO_HUBSPOT_TOKEN};
use mailchimp::{MailchimpFake, DEMO_MAILCHIMP_API_KEY, DEMO_MAILCHIMP_LIST_ID};
use pipedrive::{PipedriveFake, DEMO_PIPEDRIVE_TOKEN, LOCAL_SEARCH_LAG};
use salesforce::{SalesforceFake, DEMO_SALESFORCE_CLIENT_ID, DEMO_SALESFORCE_CLIENT_SECRET};
use zoho::{ZohoFake, DEMO_ZOHO_CLIENT_ID, DEMO_ZOHO_CLIENT_SECRET, DEMO_ZOHO_REFRESH_TOKEN};

/// The local destination `DESTINATION` names.
pub struct LocalCrm {
    kind: DestinationKind,
    fake: Box<dyn LocalDestination>,
}

impl LocalCrm {
    /// Starts the stand-in for `destination` (a `DESTINATION` value) on
    /// `address`: the one place each kind's fake is found.
    pub async fn start(destination: &str, address: SocketAddr) -> Result<Self, String> {
        let kind = DestinationKind::parse(destination).ok_or_else(|| {
            format!(
                "DESTINATION={destination}: expected {}",
                DestinationKind::names()
            )
        })?;
        let port = address.port();
        let fake: Box<dyn LocalDestination> = match kind {
            DestinationKind::Http => Box::new(
                CrmStub::start_on(address, true)
                    .await
                    .map_err(|e| format!("CRM stub on port {port}: {e}"))?,
            ),
            DestinationKind::HubSpot => Box::new(Arc::new(
                HubSpotFake::start_on(address, DEMO_HUBSPOT_TOKEN)
                    .await
                    .map_err(|e| format!("HubSpot fake on port {port}: {e}"))?,
            )),
            DestinationKind::Salesforce => Box::new(Arc::new(
                SalesforceFake::start_on(
                    address,
                    DEMO_SALESFORCE_CLIENT_ID,
                    DEMO_SALESFORCE_CLIENT_SECRET,
                )
                .await
                .map_err(|e| format!("Salesforce fake on port {port}: {e}"))?,
            )),
            DestinationKind::Pipedrive => Box::new(Arc::new(
                PipedriveFake::start_on(address, DEMO_PIPEDRIVE_TOKEN, LOCAL_SEARCH_LAG)
                    .await
                    .map_err(|e| format!("Pipedrive fake on port {port}: {e}"))?,
            )),
            DestinationKind::Mailchimp => Box::new(Arc::new(
                MailchimpFake::start_on(address, DEMO_MAILCHIMP_API_KEY, DEMO_MAILCHIMP_LIST_ID)
                    .await
                    .map_err(|e| format!("Mailchimp fake on port {port}: {e}"))?,
            )),
            DestinationKind::Zoho => Box::new(Arc::new(
                ZohoFake::start_on(
                    address,
                    DEMO_ZOHO_CLIENT_ID,
                    DEMO_ZOHO_CLIENT_SECRET,
                    DEMO_ZOHO_REFRESH_TOKEN,
                    Duration::from_secs(3600),
                )
                .await
                .map_err(|e| format!("Zoho fake on port {port}: {e}"))?,
            )),
            DestinationKind::LeadsTable => {
                return Err(format!(
                    "DESTINATION={destination}: the local pipeline delivers to a local CRM; choose one of {}",
                    DestinationKind::ALL
                        .iter()
                        .filter(|kind| **kind != DestinationKind::LeadsTable)
                        .map(|kind| kind.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
        };
        Ok(LocalCrm { kind, fake })
    }

    /// What the worker needs to reach it.
    pub fn worker_env(&self) -> Vec<(&'static str, String)> {
        // Every stack has a gate key (double submits; newest-wins gates
        // where the kind keeps them): the demo one, locally.
        let mut env = vec![
            ("DESTINATION", self.kind.name().to_owned()),
            (
                shared::newest::GATE_KEY,
                crate::local::DEMO_GATE_KEY.to_owned(),
            ),
        ];
        env.extend(self.fake.worker_env());
        env
    }

    /// Its contacts or records, and the writes to them.
    pub fn counts(&self) -> Counts {
        self.fake.counts()
    }

    /// One line saying where to look.
    pub fn describe(&self, port: u16) -> String {
        self.fake.describe(port)
    }

    /// `make bench`: a CRM that takes `delay` to answer each call.
    pub fn set_delay(&self, delay: Duration) -> Result<(), String> {
        self.fake.set_delay(delay)
    }
}

impl LocalDestination for CrmStub {
    fn worker_env(&self) -> Vec<(&'static str, String)> {
        vec![("CRM_URL", self.leads_url())]
    }

    fn counts(&self) -> Counts {
        let view = self.clone_handle();
        Box::new(move || (view.lead_count(), view.writes()))
    }

    fn describe(&self, port: u16) -> String {
        format!("CRM stub  GET  http://127.0.0.1:{port}/leads   (POST/DELETE /faults to break and mend it)")
    }

    fn set_delay(&self, delay: Duration) -> Result<(), String> {
        CrmStub::set_delay(self, delay);
        Ok(())
    }
}
