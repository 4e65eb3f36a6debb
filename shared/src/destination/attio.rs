//! `DESTINATION=attio`: one Attio person record per e-mail address, and
//! every submission a note on it (the worker's `destinations::attio`).

use super::{
    CheckCall, Cleanup, CredentialCheck, ErasureIds, Gates, Profile, RouteKey, Secret, SecretValue,
    Setting, SmokeLead, Source,
};

pub const ATTIO_API_TOKEN: &str = "ATTIO_API_TOKEN";
pub const ATTIO_API_TOKEN_SECRET_ARN: &str = "ATTIO_API_TOKEN_SECRET_ARN";
/// Where the API is: `https://api.attio.com` by default; tests point it at
/// a fake.
pub const ATTIO_BASE_URL: &str = "ATTIO_BASE_URL";

/// Attio's API.
pub const DEFAULT_BASE_URL: &str = "https://api.attio.com";

const TOKEN: Secret = Secret {
    // Identifies the token, its workspace and scopes; any valid token may
    // ask: <https://docs.attio.com/rest-api/endpoint-reference/meta/identify>.
    check: Some(CredentialCheck {
        call: CheckCall::Read {
            base: DEFAULT_BASE_URL,
            path: "/v2/self",
            header: "Authorization",
            prefix: "Bearer ",
        },
        what: "the token",
        expected: "an access token (Workspace settings > Developers > New access token) with \
                   record_permission:read-write, object_configuration:read and note:read-write",
    }),
    parameter: "AttioApiTokenSecretArn",
    flag: "--attio-api-token-secret-arn",
    name: "attio-api-token",
    optional: false,
    values: &[SecretValue {
        variable: ATTIO_API_TOKEN,
        key: None,
        why: "An Attio access token (Workspace settings > Developers > New access token; scopes \
              record_permission:read-write, object_configuration:read, note:read-write); stored \
              in Secrets Manager.",
        prompt: "Attio access token",
    }],
};

pub const PROFILE: Profile = Profile {
    name: "attio",
    title: "Attio",
    summary: "Attio person records, a note per submission",
    variables: &[ATTIO_API_TOKEN, ATTIO_API_TOKEN_SECRET_ARN, ATTIO_BASE_URL],
    maps_fields: true,
    route_keys: &[RouteKey::Consent],
    over_http: true,
    gates: Gates::Always,
    settings: &[Setting {
        variable: ATTIO_API_TOKEN_SECRET_ARN,
        source: Source::Secret(&TOKEN),
    }],
    smoke_cleanup,
    erasure: "delete the person record (People, the address > Delete record; or DELETE \
              https://api.attio.com/v2/objects/people/records/<record id>) after its notes: \
              Attio does not document that a record's notes go with it, and a company it made \
              from the address's domain stays",
    erasure_ids: ErasureIds::Address,
    erasure_needs: "",
};

fn smoke_cleanup(lead: &SmokeLead<'_>) -> Cleanup {
    Cleanup::Tell(format!(
        "delete the smoke person in Attio: People, search {}, delete its note, then Delete record",
        lead.email
    ))
}
