//! `DESTINATION=zoho`: Zoho CRM Leads (or Contacts), upserted by e-mail or
//! by a unique submission-id field, each submission a note where a record
//! is a person's (the worker's `destinations::zoho`).

use super::{
    Check, CheckCall, Cleanup, CredentialCheck, ErasureIds, Gates, Profile, RouteKey, Secret,
    SecretValue, Setting, SmokeLead, Source,
};

pub const ZOHO_CLIENT_ID: &str = "ZOHO_CLIENT_ID";
pub const ZOHO_CLIENT_SECRET: &str = "ZOHO_CLIENT_SECRET";
pub const ZOHO_REFRESH_TOKEN: &str = "ZOHO_REFRESH_TOKEN";
pub const ZOHO_CREDENTIALS_SECRET_ARN: &str = "ZOHO_CREDENTIALS_SECRET_ARN";
/// The data centre's accounts server (`https://accounts.zoho.eu`).
pub const ZOHO_ACCOUNTS_URL: &str = "ZOHO_ACCOUNTS_URL";
/// The data centre's API domain (`https://www.zohoapis.eu`).
pub const ZOHO_API_URL: &str = "ZOHO_API_URL";
/// `Leads` (default) or `Contacts`.
pub const ZOHO_MODULE: &str = "ZOHO_MODULE";
/// `Email` (default: one record per address, newest wins) or a unique
/// field's API name (one record per submission).
pub const ZOHO_DUPLICATE_CHECK_FIELD: &str = "ZOHO_DUPLICATE_CHECK_FIELD";
/// Which of Zoho's automations run on our writes: `workflow` (default),
/// any of `workflow,approval,blueprint`, or `none`.
pub const ZOHO_TRIGGER: &str = "ZOHO_TRIGGER";

/// The duplicate check field that keys a record by e-mail.
pub const BY_EMAIL: &str = "Email";

const CREDENTIALS: Secret = Secret {
    // One access token from the refresh token, at the data centre's
    // accounts server: <https://www.zoho.com/crm/developer/docs/api/v8/refresh.html>.
    check: Some(CredentialCheck {
        call: CheckCall::Grant {
            grant_type: "refresh_token",
            base_parameter: "ZohoAccountsUrl",
            path: "/oauth/v2/token",
        },
        what: "the Self Client's credentials",
        expected: "the Self Client's client id and secret and a refresh token from a grant code, \
                   all of this data centre (docs/destinations/zoho.md)",
    }),
    parameter: "ZohoCredentialsSecretArn",
    flag: "--zoho-credentials-secret-arn",
    name: "zoho-credentials",
    optional: false,
    values: &[
        SecretValue {
            variable: ZOHO_CLIENT_ID,
            key: Some("client_id"),
            why: "The Self Client's client id (api-console.zoho.com > Self Client > Client Secret).",
            prompt: "Zoho client id",
        },
        SecretValue {
            variable: ZOHO_CLIENT_SECRET,
            key: Some("client_secret"),
            why: "Its client secret.",
            prompt: "Zoho client secret",
        },
        SecretValue {
            variable: ZOHO_REFRESH_TOKEN,
            key: Some("refresh_token"),
            why: "A refresh token from a grant code with scope ZohoCRM.modules.ALL (docs/destinations/zoho.md \
                  says how); the three are stored in Secrets Manager.",
            prompt: "Zoho refresh token",
        },
    ],
};

pub const PROFILE: Profile = Profile {
    name: "zoho",
    title: "Zoho CRM",
    summary: "Zoho CRM Leads, by e-mail or by submission",
    variables: &[
        ZOHO_CLIENT_ID,
        ZOHO_CLIENT_SECRET,
        ZOHO_REFRESH_TOKEN,
        ZOHO_CREDENTIALS_SECRET_ARN,
        ZOHO_ACCOUNTS_URL,
        ZOHO_API_URL,
        ZOHO_MODULE,
        ZOHO_DUPLICATE_CHECK_FIELD,
        ZOHO_TRIGGER,
    ],
    maps_fields: true,
    route_keys: &[RouteKey::Consent],
    over_http: true,
    gates: Gates::When {
        parameter: "ZohoDuplicateCheckField",
        variable: ZOHO_DUPLICATE_CHECK_FIELD,
        value: BY_EMAIL,
    },
    settings: &[
        Setting {
            variable: ZOHO_CREDENTIALS_SECRET_ARN,
            source: Source::Secret(&CREDENTIALS),
        },
        Setting {
            variable: ZOHO_ACCOUNTS_URL,
            source: Source::Asked {
                parameter: "ZohoAccountsUrl",
                flag: "--zoho-accounts-url",
                why:
                    "Your data centre's accounts server: https://accounts.zoho.com (US), .eu, .in, \
                      .com.au, .jp, or https://accounts.zohocloud.ca.",
                prompt: "Zoho accounts URL",
                check: Check::Https,
                default: Some("https://accounts.zoho.com"),
            },
        },
        Setting {
            variable: ZOHO_API_URL,
            source: Source::Asked {
                parameter: "ZohoApiUrl",
                flag: "--zoho-api-url",
                why:
                    "Its API domain (the api_domain of the token answer): https://www.zohoapis.com \
                      (US), .eu, .in, .com.au, .jp, or https://www.zohoapis.ca.",
                prompt: "Zoho API URL",
                check: Check::Https,
                default: Some("https://www.zohoapis.com"),
            },
        },
        Setting {
            variable: ZOHO_MODULE,
            source: Source::Parameter("ZohoModule"),
        },
        Setting {
            variable: ZOHO_DUPLICATE_CHECK_FIELD,
            source: Source::Parameter("ZohoDuplicateCheckField"),
        },
        Setting {
            variable: ZOHO_TRIGGER,
            source: Source::Parameter("ZohoTrigger"),
        },
    ],
    smoke_cleanup,
    erasure:
        "delete the record (Leads, the address, Delete; it stays in the Recycle Bin for 60 days \
              unless emptied there) with its notes; or DELETE /crm/v8/Leads/<id>",
    erasure_ids: ErasureIds::PersonMemory,
    erasure_needs: "the scope ZohoCRM.modules.ALL (or ZohoCRM.modules.<module>.DELETE)",
};

fn smoke_cleanup(lead: &SmokeLead<'_>) -> Cleanup {
    Cleanup::Tell(format!(
        "delete the smoke Lead in Zoho CRM: Leads, search {}, Delete (and empty it from the Recycle Bin)",
        lead.email
    ))
}
