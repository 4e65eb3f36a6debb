//! The CRMs' and the senders' APIs' local fakes, built from each vendor's documented requests and
//! answers, and the one place that names them: `LocalCrm`, the stand-ins the
//! local pipeline starts for `DESTINATION`'s destinations (the CRM stub for
//! `http`).

pub mod attio;
pub mod brevo;
pub mod hubspot;
pub mod mailchimp;
pub mod pipedrive;
pub mod salesforce;
pub mod sender_api;
pub mod stand_in;
pub mod turnstile;
pub mod zoho;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use shared::destination::{set::DestinationSet, DestinationKind};
pub use stand_in::{Counts, LocalDestination};

use crate::crm_stub::CrmStub;
use attio::{AttioFake, DEMO_ATTIO_API_TOKEN};
use brevo::{BrevoFake, DEMO_BREVO_API_KEY};
use hubspot::{HubSpotFake, DEMO_HUBSPOT_TOKEN};
use mailchimp::{MailchimpFake, DEMO_MAILCHIMP_API_KEY, DEMO_MAILCHIMP_LIST_ID};
use pipedrive::{PipedriveFake, DEMO_PIPEDRIVE_TOKEN, LOCAL_SEARCH_LAG};
use salesforce::{SalesforceFake, DEMO_SALESFORCE_CLIENT_ID, DEMO_SALESFORCE_CLIENT_SECRET};
use zoho::{ZohoFake, DEMO_ZOHO_CLIENT_ID, DEMO_ZOHO_CLIENT_SECRET, DEMO_ZOHO_REFRESH_TOKEN};

/// The local destinations `DESTINATION` names: one, or several
/// comma-separated (`DESTINATION=hubspot,mailchimp make run`), each its
/// own fake on its own port.
pub struct LocalCrm {
    set: DestinationSet,
    fakes: Vec<(u16, Box<dyn LocalDestination>)>,
}

impl LocalCrm {
    /// Starts the stand-in for each destination of `destinations` (a
    /// `DESTINATION` value): the first on `address`, each next one on the
    /// next port.
    pub async fn start(destinations: &str, address: SocketAddr) -> Result<Self, String> {
        let set = DestinationSet::parse(destinations)
            .map_err(|error| format!("DESTINATION={destinations} {error}"))?;
        let mut fakes = Vec::with_capacity(set.kinds().len());
        for (offset, kind) in (0u16..).zip(set.kinds()) {
            let port = address.port().checked_add(offset).ok_or("no port left")?;
            let at = SocketAddr::new(address.ip(), port);
            fakes.push((port, start_one(*kind, at).await?));
        }
        Ok(LocalCrm { set, fakes })
    }

    /// What the worker needs to reach them.
    pub fn worker_env(&self) -> Vec<(&'static str, String)> {
        // Every stack has a gate key (double submits; newest-wins gates
        // where the kind keeps them): the demo one, locally.
        let mut env = vec![
            ("DESTINATION", self.set.to_string()),
            (
                shared::newest::GATE_KEY,
                crate::local::DEMO_GATE_KEY.to_owned(),
            ),
        ];
        for (_, fake) in &self.fakes {
            env.extend(fake.worker_env());
        }
        env
    }

    /// Their contacts or records, and the writes to them, added up.
    pub fn counts(&self) -> Counts {
        let each: Vec<Counts> = self.fakes.iter().map(|(_, fake)| fake.counts()).collect();
        Box::new(move || {
            each.iter().fold((0, 0), |(records, writes), counts| {
                let (r, w) = counts();
                (records + r, writes + w)
            })
        })
    }

    /// One line for each, saying where to look.
    pub fn describe(&self) -> String {
        let lines: Vec<String> = self
            .fakes
            .iter()
            .map(|(port, fake)| fake.describe(*port))
            .collect();
        lines.join("\n  ")
    }

    /// `make bench`: a CRM that takes `delay` to answer each call.
    pub fn set_delay(&self, delay: Duration) -> Result<(), String> {
        self.fakes
            .iter()
            .try_for_each(|(_, fake)| fake.set_delay(delay))
    }
}

/// Starts the stand-in for `kind` on `address`: the one place each kind's
/// fake is found.
async fn start_one(
    kind: DestinationKind,
    address: SocketAddr,
) -> Result<Box<dyn LocalDestination>, String> {
    let port = address.port();
    Ok(match kind {
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
        DestinationKind::Brevo => Box::new(Arc::new(
            BrevoFake::start_on(address, DEMO_BREVO_API_KEY)
                .await
                .map_err(|e| format!("Brevo fake on port {port}: {e}"))?,
        )),
        DestinationKind::Attio => Box::new(Arc::new(
            AttioFake::start_on(address, DEMO_ATTIO_API_TOKEN)
                .await
                .map_err(|e| format!("Attio fake on port {port}: {e}"))?,
        )),
        DestinationKind::LeadsTable => {
            return Err(format!(
                "DESTINATION={}: the local pipeline delivers to a local CRM; choose among {}",
                kind.name(),
                DestinationKind::ALL
                    .iter()
                    .filter(|kind| **kind != DestinationKind::LeadsTable)
                    .map(|kind| kind.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        }
    })
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
