//! `DESTINATION=mailchimp`: one member of a Mailchimp audience per e-mail
//! address, and every submission a note on its member (the worker's
//! `destinations::mailchimp`).

use super::{
    Check, CheckCall, Cleanup, CredentialCheck, ErasureIds, Gates, Profile, RouteKey, Secret,
    SecretValue, Setting, SmokeLead, Source,
};

pub const MAILCHIMP_API_KEY: &str = "MAILCHIMP_API_KEY";
pub const MAILCHIMP_API_KEY_SECRET_ARN: &str = "MAILCHIMP_API_KEY_SECRET_ARN";
pub const MAILCHIMP_LIST_ID: &str = "MAILCHIMP_LIST_ID";
/// Where the API is: by default `https://<dc>.api.mailchimp.com`, the data
/// centre read from the key's end (`…-us21`); tests point it at a fake.
pub const MAILCHIMP_BASE_URL: &str = "MAILCHIMP_BASE_URL";

const API_KEY: Secret = Secret {
    // The API root answers any valid key, at the key's data centre:
    // <https://mailchimp.com/developer/marketing/api/ping/>.
    check: Some(CredentialCheck {
        call: CheckCall::BasicRead {
            base: "https://{dc}.api.mailchimp.com",
            path: "/3.0/ping",
        },
        what: "the API key",
        expected: "an API key (profile > Extras > API keys), whole, with its data centre at its end (-us21)",
    }),
    parameter: "MailchimpApiKeySecretArn",
    flag: "--mailchimp-api-key-secret-arn",
    name: "mailchimp-api-key",
    optional: false,
    values: &[SecretValue {
        variable: MAILCHIMP_API_KEY,
        key: None,
        why: "A Mailchimp API key (profile > Extras > API keys), ending in its data centre \
              (-us21); stored in Secrets Manager.",
        prompt: "Mailchimp API key",
    }],
};

pub const PROFILE: Profile = Profile {
    name: "mailchimp",
    title: "Mailchimp",
    summary: "members of a Mailchimp audience, a note per submission",
    variables: &[
        MAILCHIMP_API_KEY,
        MAILCHIMP_API_KEY_SECRET_ARN,
        MAILCHIMP_LIST_ID,
        MAILCHIMP_BASE_URL,
    ],
    maps_fields: true,
    route_keys: &[RouteKey::Consent, RouteKey::Tags],
    over_http: true,
    gates: Gates::Always,
    settings: &[
        Setting {
            variable: MAILCHIMP_API_KEY_SECRET_ARN,
            source: Source::Secret(&API_KEY),
        },
        Setting {
            variable: MAILCHIMP_LIST_ID,
            source: Source::Asked {
                parameter: "MailchimpListId",
                flag: "--mailchimp-list-id",
                why: "The audience's id (Audience > Settings > Audience name and defaults > \
                      Audience ID).",
                prompt: "Mailchimp audience id",
                check: Check::Identifier,
                default: None,
            },
        },
    ],
    smoke_cleanup,
    erasure: "delete the member for good (Audience > All contacts, the address > Actions > \
              Delete permanently; or POST /3.0/lists/<list>/members/<hash>/actions/delete-permanent): \
              Mailchimp then refuses the address until the person subscribes again themselves. \
              Archiving keeps the member's data",
    erasure_ids: ErasureIds::Address,
    erasure_needs: "",
};

fn smoke_cleanup(lead: &SmokeLead<'_>) -> Cleanup {
    Cleanup::Tell(format!(
        "archive the smoke member in Mailchimp: Audience > All contacts, search {}, Actions > Archive \
         (not Delete permanently, which would refuse the address for good)",
        lead.email
    ))
}

/// A member's id in its audience: the MD5 of the lower-cased address, in
/// hex (<https://mailchimp.com/developer/marketing/docs/methods-parameters/#path-parameters>).
pub fn subscriber_hash(normalised_email: &str) -> String {
    use md5::{Digest, Md5};
    hex::encode(Md5::digest(normalised_email.to_lowercase().as_bytes()))
}

/// The data centre at the end of an API key (`…-us21`: `us21`), when it
/// is one (letters and digits, so it can only name a Mailchimp host).
pub fn data_centre(api_key: &str) -> Option<&str> {
    let (_, centre) = api_key.trim().rsplit_once('-')?;
    (!centre.is_empty()
        && centre.len() <= 12
        && centre
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()))
    .then_some(centre)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_is_the_md5_of_its_lower_cased_address() {
        // Mailchimp's own example address and hash (the members page).
        assert_eq!(
            subscriber_hash("urist.mcvankab@freddiesjokes.com"),
            "62eeb292278cc15f5817cb78f7790b08"
        );
        assert_eq!(
            subscriber_hash("Urist.McVankab@FreddiesJokes.com"),
            subscriber_hash("urist.mcvankab@freddiesjokes.com")
        );
    }

    #[test]
    fn the_data_centre_is_the_keys_end() {
        let rows = [
            ("0123456789abcdef0123456789abcdef-us21", Some("us21")),
            (" abc-us6 ", Some("us6")),
            ("no-data-centre-", None),
            ("nodash", None),
            ("abc-us21.evil.example", None),
            ("abc-US21", None),
        ];
        for (key, centre) in rows {
            assert_eq!(data_centre(key), centre, "{key}");
        }
    }
}
