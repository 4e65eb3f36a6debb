//! `DESTINATION=dynamodb`: a DynamoDB table the stack creates (the
//! worker's `destinations::leads_table`).

use super::{Cleanup, ErasureIds, Gates, Profile, Setting, SmokeLead, Source};

/// The leads table.
pub const LEADS_TABLE: &str = "LEADS_TABLE";
/// `submission` or `email`: what makes two submissions one lead.
pub const LEAD_KEY: &str = "LEAD_KEY";
/// Days a lead is kept after its newest submission; `0` or unset: kept
/// until deleted.
pub const LEAD_RETENTION_DAYS: &str = "LEAD_RETENTION_DAYS";

pub const PROFILE: Profile = Profile {
    name: "dynamodb",
    title: "The leads table",
    summary: "a table in the stack",
    variables: &[LEADS_TABLE, LEAD_KEY, LEAD_RETENTION_DAYS],
    maps_fields: false,
    route_keys: &[],
    over_http: false,
    // Newest-wins lives in the table's own conditional write.
    gates: Gates::Never,
    settings: &[
        Setting {
            variable: LEADS_TABLE,
            source: Source::Resource("LeadsTable"),
        },
        Setting {
            variable: LEAD_KEY,
            source: Source::Parameter("LeadKey"),
        },
        Setting {
            variable: LEAD_RETENTION_DAYS,
            source: Source::Parameter("LeadRetentionDays"),
        },
    ],
    smoke_cleanup,
    erasure: "",
    erasure_ids: ErasureIds::Address,
    erasure_needs: "",
};

/// The row the smoke lead was written to, deleted by the smoke test.
fn smoke_cleanup(lead: &SmokeLead<'_>) -> Cleanup {
    let pk = if lead.lead_key == "email" {
        format!("email#{}", lead.email)
    } else {
        format!("submission#{}", lead.submission_id)
    };
    Cleanup::DeleteRow { pk }
}
