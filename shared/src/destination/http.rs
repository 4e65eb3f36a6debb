//! `DESTINATION=http`: your CRM's upsert URL, called with a PUT per lead
//! (the worker's `destinations::http`).

use super::{
    Check, Cleanup, ErasureIds, Gates, Profile, Secret, SecretValue, Setting, SmokeLead, Source,
};

/// The upsert URL, with `{externalId}` where the submission id goes.
pub const CRM_URL: &str = "CRM_URL";
/// The bearer token inline, for local use.
pub const CRM_TOKEN: &str = "CRM_TOKEN";
/// The bearer token's Secrets Manager secret.
pub const CRM_TOKEN_SECRET_ARN: &str = "CRM_TOKEN_SECRET_ARN";
/// Where a person is deleted (`receipts forget --everywhere`): `DELETE`
/// with `{"email": ...}`; unset, the operator deletes them by hand.
pub const CRM_ERASE_URL: &str = "CRM_ERASE_URL";

const TOKEN: Secret = Secret {
    check: None,
    parameter: "CrmTokenSecretArn",
    flag: "--crm-token-secret-arn",
    name: "crm-token",
    optional: true,
    values: &[SecretValue {
        variable: CRM_TOKEN,
        key: None,
        why: "The CRM's bearer token, stored in Secrets Manager (empty: none).",
        prompt: "CRM token",
    }],
};

pub const PROFILE: Profile = Profile {
    name: "http",
    title: "Your CRM (http)",
    summary: "your CRM's upsert URL",
    variables: &[CRM_URL, CRM_TOKEN, CRM_TOKEN_SECRET_ARN, CRM_ERASE_URL],
    maps_fields: false,
    route_keys: &[],
    over_http: true,
    gates: Gates::Never,
    settings: &[
        Setting {
            variable: CRM_URL,
            source: Source::Asked {
                parameter: "CrmUrl",
                flag: "--crm-url",
                why: "Your CRM's upsert URL, with {externalId} where the submission id goes.",
                prompt: "CRM URL",
                check: Check::UpsertUrl,
                default: None,
            },
        },
        Setting {
            variable: CRM_TOKEN_SECRET_ARN,
            source: Source::Secret(&TOKEN),
        },
        Setting {
            variable: CRM_ERASE_URL,
            source: Source::Optional("CrmEraseUrl"),
        },
    ],
    smoke_cleanup,
    erasure: "delete the person's lead through your CRM's own API or console (or give the \
              stack CrmEraseUrl, and forget --everywhere deletes them there)",
    erasure_ids: ErasureIds::Address,
    erasure_needs: "",
};

fn smoke_cleanup(lead: &SmokeLead<'_>) -> Cleanup {
    Cleanup::Tell(format!(
        "delete the smoke lead in your CRM: externalId {}, {}",
        lead.submission_id, lead.email
    ))
}
