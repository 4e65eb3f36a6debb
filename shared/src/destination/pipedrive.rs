//! `DESTINATION=pipedrive`: one Pipedrive person per e-mail address, and
//! every submission a note on its person (the worker's
//! `destinations::pipedrive`).

use super::{
    CheckCall, Cleanup, CredentialCheck, ErasureIds, Gates, Profile, RouteKey, Secret, SecretValue,
    Setting, SmokeLead, Source,
};

pub const PIPEDRIVE_API_TOKEN: &str = "PIPEDRIVE_API_TOKEN";
pub const PIPEDRIVE_API_TOKEN_SECRET_ARN: &str = "PIPEDRIVE_API_TOKEN_SECRET_ARN";
pub const PIPEDRIVE_BASE_URL: &str = "PIPEDRIVE_BASE_URL";
pub const PIPEDRIVE_SEARCH_LAG_SECONDS: &str = "PIPEDRIVE_SEARCH_LAG_SECONDS";

/// How long after a create the worker assumes Pipedrive's search may still
/// miss the new person (or a new note), unless `PIPEDRIVE_SEARCH_LAG_SECONDS`
/// says otherwise: no second create starts within it.
pub const DEFAULT_SEARCH_LAG_SECONDS: u64 = 60;

const TOKEN: Secret = Secret {
    // One read any token may make (a page of one person field):
    // <https://developers.pipedrive.com/docs/api/v1/PersonFields#getPersonFields> (v2).
    check: Some(CredentialCheck {
        call: CheckCall::Read {
            base: "https://api.pipedrive.com",
            path: "/api/v2/personFields?limit=1",
            header: "x-api-token",
            prefix: "",
        },
        what: "the token",
        expected:
            "a personal API token (avatar > Personal preferences > API) of a user with API access",
    }),
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
    ],
    maps_fields: true,
    route_keys: &[RouteKey::Consent, RouteKey::Lead],
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
    erasure: "delete the person's notes and leads, then the person (Contacts > People, search the address; \
              or DELETE https://api.pipedrive.com/api/v2/persons/<id>): Pipedrive deletes a \
              person for good 30 days later, and does not document that its notes go with it",
    erasure_ids: ErasureIds::PersonMemory,
    erasure_needs: "a Pipedrive user allowed to delete persons",
};

fn smoke_cleanup(lead: &SmokeLead<'_>) -> Cleanup {
    Cleanup::Tell(format!(
        "delete the smoke person in Pipedrive: Contacts > People, search {}, delete its note, then Delete the person",
        lead.email
    ))
}
