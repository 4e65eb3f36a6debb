//! `DESTINATION=salesforce`: Salesforce Leads, or another object, upserted
//! by an external id field (the worker's `destinations::salesforce`).

use super::{
    Check, CheckCall, Cleanup, CredentialCheck, ErasureIds, Gates, Profile, Secret, SecretValue,
    Setting, SmokeLead, Source,
};

pub const SALESFORCE_LOGIN_URL: &str = "SALESFORCE_LOGIN_URL";
pub const SALESFORCE_AUTO_ASSIGN: &str = "SALESFORCE_AUTO_ASSIGN";
pub const SALESFORCE_CLIENT_ID: &str = "SALESFORCE_CLIENT_ID";
pub const SALESFORCE_CLIENT_SECRET: &str = "SALESFORCE_CLIENT_SECRET";
pub const SALESFORCE_CREDENTIALS_SECRET_ARN: &str = "SALESFORCE_CREDENTIALS_SECRET_ARN";
pub const SALESFORCE_OBJECT: &str = "SALESFORCE_OBJECT";
pub const SALESFORCE_EXTERNAL_ID_FIELD: &str = "SALESFORCE_EXTERNAL_ID_FIELD";
pub const SALESFORCE_API_VERSION: &str = "SALESFORCE_API_VERSION";

const CREDENTIALS: Secret = Secret {
    check: Some(CredentialCheck {
        call: CheckCall::Grant {
            grant_type: "client_credentials",
            base_parameter: "SalesforceLoginUrl",
            path: "/services/oauth2/token",
        },
        what: "the client credentials",
        expected: "the External Client App's consumer key and secret, with the client credentials \
                   flow enabled and a run-as user",
    }),
    parameter: "SalesforceCredentialsSecretArn",
    flag: "--salesforce-credentials-secret-arn",
    name: "salesforce-credentials",
    optional: false,
    values: &[
        SecretValue {
            variable: SALESFORCE_CLIENT_ID,
            key: Some("client_id"),
            why: "The External Client App's consumer key (client credentials flow).",
            prompt: "Client id",
        },
        SecretValue {
            variable: SALESFORCE_CLIENT_SECRET,
            key: Some("client_secret"),
            why: "Its consumer secret; both are stored in Secrets Manager.",
            prompt: "Client secret",
        },
    ],
};

pub const PROFILE: Profile = Profile {
    name: "salesforce",
    title: "Salesforce",
    summary: "Salesforce Leads",
    variables: &[
        SALESFORCE_LOGIN_URL,
        SALESFORCE_AUTO_ASSIGN,
        SALESFORCE_CLIENT_ID,
        SALESFORCE_CLIENT_SECRET,
        SALESFORCE_CREDENTIALS_SECRET_ARN,
        SALESFORCE_OBJECT,
        SALESFORCE_EXTERNAL_ID_FIELD,
        SALESFORCE_API_VERSION,
    ],
    maps_fields: true,
    route_keys: &[],
    over_http: true,
    gates: Gates::Never,
    settings: &[
        Setting {
            variable: SALESFORCE_LOGIN_URL,
            source: Source::Asked {
                parameter: "SalesforceLoginUrl",
                flag: "--salesforce-login-url",
                why: "Your org's My Domain URL.",
                prompt: "Salesforce login URL",
                check: Check::Https,
                default: None,
            },
        },
        Setting {
            variable: SALESFORCE_CREDENTIALS_SECRET_ARN,
            source: Source::Secret(&CREDENTIALS),
        },
        Setting {
            variable: SALESFORCE_OBJECT,
            source: Source::Parameter("SalesforceObject"),
        },
        Setting {
            variable: SALESFORCE_EXTERNAL_ID_FIELD,
            source: Source::Parameter("SalesforceExternalIdField"),
        },
        Setting {
            variable: SALESFORCE_API_VERSION,
            source: Source::Parameter("SalesforceApiVersion"),
        },
        Setting {
            variable: SALESFORCE_AUTO_ASSIGN,
            source: Source::Parameter("SalesforceAutoAssign"),
        },
    ],
    smoke_cleanup,
    erasure: "delete the Lead (DELETE /services/data/vXX.X/sobjects/Lead/<Id>), then empty it \
              from the Recycle Bin or use a Bulk API hardDelete job; Privacy Center automates \
              right-to-be-forgotten requests",
    erasure_ids: ErasureIds::Receipts,
    erasure_needs: "the Delete permission on the object for the connected app's run-as user",
};

fn smoke_cleanup(lead: &SmokeLead<'_>) -> Cleanup {
    Cleanup::Tell(format!(
        "delete the smoke Lead in Salesforce: Leads, search {} (submission {}), Delete",
        lead.email, lead.submission_id
    ))
}
