//! `DESTINATION=brevo`: one Brevo contact per e-mail address, the route's
//! lists joined, and every submission a CRM note on its contact (the
//! worker's `destinations::brevo`).

use super::{
    CheckCall, Cleanup, CredentialCheck, ErasureIds, Gates, Profile, RouteKey, Secret, SecretValue,
    Setting, SmokeLead, Source,
};

pub const BREVO_API_KEY: &str = "BREVO_API_KEY";
pub const BREVO_API_KEY_SECRET_ARN: &str = "BREVO_API_KEY_SECRET_ARN";
/// Where the API is: `https://api.brevo.com` by default; tests point it at
/// a fake.
pub const BREVO_BASE_URL: &str = "BREVO_BASE_URL";

/// Brevo's API.
pub const DEFAULT_BASE_URL: &str = "https://api.brevo.com";

const API_KEY: Secret = Secret {
    // The account's own details answer any valid key:
    // <https://developers.brevo.com/reference/get-account>.
    check: Some(CredentialCheck {
        call: CheckCall::Read {
            base: DEFAULT_BASE_URL,
            path: "/v3/account",
            header: "api-key",
            prefix: "",
        },
        what: "the API key",
        expected: "an API key (your name > SMTP & API > API keys > Generate a new API key), \
                   whole: xkeysib-…",
    }),
    parameter: "BrevoApiKeySecretArn",
    flag: "--brevo-api-key-secret-arn",
    name: "brevo-api-key",
    optional: false,
    values: &[SecretValue {
        variable: BREVO_API_KEY,
        key: None,
        why: "A Brevo API key (your name > SMTP & API > API keys; it starts with xkeysib-); \
              stored in Secrets Manager.",
        prompt: "Brevo API key",
    }],
};

pub const PROFILE: Profile = Profile {
    name: "brevo",
    title: "Brevo",
    summary: "Brevo contacts on the route's lists, a note per submission",
    variables: &[BREVO_API_KEY, BREVO_API_KEY_SECRET_ARN, BREVO_BASE_URL],
    maps_fields: true,
    route_keys: &[RouteKey::Consent, RouteKey::Lists],
    over_http: true,
    gates: Gates::Always,
    settings: &[Setting {
        variable: BREVO_API_KEY_SECRET_ARN,
        source: Source::Secret(&API_KEY),
    }],
    smoke_cleanup,
    erasure: "delete the contact (Contacts, the address > Delete; or DELETE \
              https://api.brevo.com/v3/contacts/<address>?identifierType=email_id) after its notes \
              (CRM > the contact > Notes): Brevo does not document that a contact's notes go with it",
    erasure_ids: ErasureIds::Address,
    erasure_needs: "",
};

fn smoke_cleanup(lead: &SmokeLead<'_>) -> Cleanup {
    Cleanup::Tell(format!(
        "delete the smoke contact in Brevo: Contacts, search {}, delete its note, then Delete the contact",
        lead.email
    ))
}
