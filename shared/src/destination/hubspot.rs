//! `DESTINATION=hubspot`: HubSpot contacts, by e-mail or by a custom
//! property holding the submission id (the worker's
//! `destinations::hubspot`).

use super::{
    Check, CheckCall, Cleanup, CredentialCheck, ErasureIds, Gates, Profile, RouteKey, Secret,
    SecretValue, Setting, SmokeLead, Source,
};

pub const HUBSPOT_TOKEN: &str = "HUBSPOT_TOKEN";
pub const HUBSPOT_TOKEN_SECRET_ARN: &str = "HUBSPOT_TOKEN_SECRET_ARN";
pub const HUBSPOT_BASE_URL: &str = "HUBSPOT_BASE_URL";
pub const HUBSPOT_API_VERSION: &str = "HUBSPOT_API_VERSION";
pub const HUBSPOT_ID_PROPERTY: &str = "HUBSPOT_ID_PROPERTY";
pub const HUBSPOT_MESSAGE_PROPERTY: &str = "HUBSPOT_MESSAGE_PROPERTY";

const TOKEN: Secret = Secret {
    check: Some(CredentialCheck {
        call: CheckCall::Read {
            base: "https://api.hubapi.com",
            path: "/crm/v3/properties/contacts/email",
            header: "Authorization",
            prefix: "Bearer ",
        },
        what: "the token",
        expected: "a service key or private app token with crm.objects.contacts.write",
    }),
    parameter: "HubSpotTokenSecretArn",
    flag: "--hubspot-token-secret-arn",
    name: "hubspot-token",
    optional: false,
    values: &[SecretValue {
        variable: HUBSPOT_TOKEN,
        key: None,
        why: "A HubSpot service key (Settings > Integrations > Service Keys) or private app \
              token with crm.objects.contacts.write; stored in Secrets Manager.",
        prompt: "HubSpot token",
    }],
};

pub const PROFILE: Profile = Profile {
    name: "hubspot",
    title: "HubSpot",
    summary: "HubSpot contacts",
    variables: &[
        HUBSPOT_TOKEN,
        HUBSPOT_TOKEN_SECRET_ARN,
        HUBSPOT_BASE_URL,
        HUBSPOT_API_VERSION,
        HUBSPOT_ID_PROPERTY,
        HUBSPOT_MESSAGE_PROPERTY,
    ],
    maps_fields: true,
    route_keys: &[RouteKey::Consent],
    over_http: true,
    gates: Gates::When {
        parameter: "HubSpotIdProperty",
        variable: HUBSPOT_ID_PROPERTY,
        value: "email",
    },
    settings: &[
        Setting {
            variable: HUBSPOT_TOKEN_SECRET_ARN,
            source: Source::Secret(&TOKEN),
        },
        Setting {
            variable: HUBSPOT_ID_PROPERTY,
            source: Source::Asked {
                parameter: "HubSpotIdProperty",
                flag: "--hubspot-id-property",
                why: "One contact per person: email (a repeat submitter's newest data wins). One \
                      contact per submission: the internal name of a unique-value contact \
                      property that receives the submission id (docs/destinations/hubspot.md).",
                prompt: "HubSpot contacts by",
                check: Check::EmailOrProperty,
                default: Some("email"),
            },
        },
        Setting {
            variable: HUBSPOT_API_VERSION,
            source: Source::Parameter("HubSpotApiVersion"),
        },
        Setting {
            variable: HUBSPOT_MESSAGE_PROPERTY,
            source: Source::Optional("HubSpotMessageProperty"),
        },
    ],
    smoke_cleanup,
    erasure: "POST https://api.hubapi.com/crm/v3/objects/contacts/gdpr-delete with \
              {\"idProperty\":\"email\",\"objectId\":\"<address>\"} (permanent)",
    erasure_ids: ErasureIds::Address,
    erasure_needs: "the token's crm.objects.contacts.write scope",
};

fn smoke_cleanup(lead: &SmokeLead<'_>) -> Cleanup {
    Cleanup::Tell(format!(
        "delete the smoke contact in HubSpot: CRM > Contacts, search {}, Delete",
        lead.email
    ))
}
