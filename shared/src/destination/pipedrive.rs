//! `DESTINATION=pipedrive`: one Pipedrive person per e-mail address, and
//! every submission a note on its person (the worker's
//! `destinations::pipedrive`).

use super::{Cleanup, Gates, Profile, Secret, SecretValue, Setting, SmokeLead, Source};
use crate::newest::{GATE_KEY, GATE_KEY_SECRET_ARN};

pub const PIPEDRIVE_API_TOKEN: &str = "PIPEDRIVE_API_TOKEN";
pub const PIPEDRIVE_API_TOKEN_SECRET_ARN: &str = "PIPEDRIVE_API_TOKEN_SECRET_ARN";
pub const PIPEDRIVE_BASE_URL: &str = "PIPEDRIVE_BASE_URL";
pub const PIPEDRIVE_SEARCH_LAG_SECONDS: &str = "PIPEDRIVE_SEARCH_LAG_SECONDS";

/// How long after a create the worker assumes Pipedrive's search may still
/// miss the new person (or a new note), unless `PIPEDRIVE_SEARCH_LAG_SECONDS`
/// says otherwise: no second create starts within it.
pub const DEFAULT_SEARCH_LAG_SECONDS: u64 = 60;

const TOKEN: Secret = Secret {
    parameter: "PipedriveApiTokenSecretArn",
    flag: "--pipedrive-api-token-secret-arn",
    name: "pipedrive-api-token",
    optional: false,
    values: &[SecretValue {
        variable: PIPEDRIVE_API_TOKEN,
        key: None,
        why: "A Pipedrive personal API token (avatar > Personal preferences > API), best a \
              dedicated user's; stored in Secrets Manager.",
        prompt: "Pipedrive API token",
    }],
};

pub const PROFILE: Profile = Profile {
    name: "pipedrive",
    title: "Pipedrive",
    summary: "Pipedrive persons, a note per submission",
    variables: &[
        PIPEDRIVE_API_TOKEN,
        PIPEDRIVE_API_TOKEN_SECRET_ARN,
        PIPEDRIVE_BASE_URL,
        PIPEDRIVE_SEARCH_LAG_SECONDS,
        GATE_KEY,
        GATE_KEY_SECRET_ARN,
    ],
    maps_fields: true,
    over_http: true,
    gates: Gates::Always,
    settings: &[
        Setting {
            variable: PIPEDRIVE_API_TOKEN_SECRET_ARN,
            source: Source::Secret(&TOKEN),
        },
        Setting {
            variable: PIPEDRIVE_SEARCH_LAG_SECONDS,
            source: Source::Parameter("PipedriveSearchLagSeconds"),
        },
    ],
    smoke_cleanup,
    erasure: "DELETE https://api.pipedrive.com/api/v2/persons/<id> (the person, found by its \
              e-mail in Contacts > People; Pipedrive keeps a deleted person 30 days before it \
              is gone for good)",
};

fn smoke_cleanup(lead: &SmokeLead<'_>) -> Cleanup {
    Cleanup::Tell(format!(
        "delete the smoke person in Pipedrive: Contacts > People, search {}, Delete (its notes go with it)",
        lead.email
    ))
}
