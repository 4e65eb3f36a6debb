//! The destinations a deployment can deliver to. Each one's module
//! declares its whole profile once (`PROFILE`), as each sender's does:
//! its name, the variables the worker reads for it, whether it maps form
//! fields or keeps newest-wins gates, its deploy surface (the template
//! parameters that feed those variables, which of them are secrets, and
//! what `make deploy` asks), where the smoke test's lead is cleaned up and
//! how a person is erased there. The worker's adapter for each kind sits in
//! `worker::destinations::<kind>` and is found from this catalog; the
//! template, `make deploy` (through `shared::catalog`), the local
//! fakes and the docs are checked against it (integration/tests/contract/catalog.rs).
//!
//! Adding a destination: its module here and its adapter in the worker,
//! one `DestinationKind` variant with its entry in `ALL` and in `profile`;
//! the compiler and the catalog test then name every other place.

pub mod attio;
pub mod brevo;
pub mod http;
pub mod hubspot;
pub mod leads_table;
pub mod mailchimp;
pub mod pipedrive;
pub mod salesforce;
pub mod set;
pub mod zoho;

use crate::field_map::FIELD_MAP;
use crate::newest::{GATE_KEY, GATE_KEY_SECRET_ARN};

/// `CRM_ALLOW_HTTP=true` allows `http://` to any host: local runs only.
/// Read by every destination called over HTTP.
pub const CRM_ALLOW_HTTP: &str = "CRM_ALLOW_HTTP";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DestinationKind {
    /// Your CRM's upsert URL.
    Http,
    /// A DynamoDB table the stack creates.
    LeadsTable,
    /// HubSpot contacts.
    HubSpot,
    /// Salesforce Leads, or another object.
    Salesforce,
    /// Pipedrive persons, by e-mail, with a note per submission.
    Pipedrive,
    /// Members of a Mailchimp audience, by e-mail, with a note per
    /// submission.
    Mailchimp,
    /// Zoho CRM Leads (or Contacts), by e-mail or by submission.
    Zoho,
    /// Brevo contacts, by e-mail, on the route's lists, with a note per
    /// submission.
    Brevo,
    /// Attio person records, by e-mail, with a note per submission.
    Attio,
}

/// What makes a destination, declared once in its module.
pub struct Profile {
    /// Its name in `DESTINATION` and the template's `Destination`.
    pub name: &'static str,
    /// How docs and messages call it.
    pub title: &'static str,
    /// What it is, in `make deploy`'s question: `a table in the stack`.
    pub summary: &'static str,
    /// The worker variables only it reads.
    pub variables: &'static [&'static str],
    /// Whether it takes a field map (`FIELD_MAP`, the template's
    /// `FieldMap`): CRM property to form field.
    pub maps_fields: bool,
    /// The route keys only some destinations take that this one does
    /// (`[route.consent]`, `tags`, `lead`): a route whose destinations take
    /// none of a key it sets is refused (`Routes::check_destinations`).
    pub route_keys: &'static [RouteKey],
    /// Whether it is called over HTTP (`CRM_ALLOW_HTTP` applies).
    pub over_http: bool,
    /// When it keeps newest-wins gates (`shared::newest`), and so needs the
    /// gate key.
    pub gates: Gates,
    /// Its deploy surface: each worker variable a template parameter (or a
    /// resource of the stack) feeds.
    pub settings: &'static [Setting],
    /// Where the smoke test's lead goes once the smoke test has seen it.
    pub smoke_cleanup: fn(&SmokeLead<'_>) -> Cleanup,
    /// How an operator erases a person there, after `receipts forget`
    /// erased them in the stack; empty for the stack's own table, which
    /// forget erases itself.
    pub erasure: &'static str,
    /// Where `receipts forget --everywhere` finds the ids of the person's
    /// records there before the destination looks them up by address.
    pub erasure_ids: ErasureIds,
    /// What its credential must be allowed, beyond its writes, for that
    /// deletion: said when the destination refuses it (empty: nothing).
    pub erasure_needs: &'static str,
}

/// Where the ids of a person's records at a destination are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErasureIds {
    /// The person memory on the destination's gate item (`recordId`).
    PersonMemory,
    /// The record id of each of the person's receipts (one record per
    /// submission), while a receipt still names the person.
    Receipts,
    /// Nowhere: the destination finds the person by the address.
    Address,
}

/// A route key that means something to some destinations only; a route's
/// `fields` mean something to those that map fields (`maps_fields`), and
/// its `set` to every destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteKey {
    /// `[route.consent]`: a subscription status, or a note's consent line.
    Consent,
    /// `tags`: a member's tags.
    Tags,
    /// `lead = true`: a lead of its own per submission.
    Lead,
    /// `lists`: the contact lists a lead joins, by id.
    Lists,
}

impl RouteKey {
    /// Its name in a routes file.
    pub fn name(self) -> &'static str {
        match self {
            RouteKey::Consent => "consent",
            RouteKey::Tags => "tags",
            RouteKey::Lead => "lead",
            RouteKey::Lists => "lists",
        }
    }
}

/// When a destination keeps newest-wins gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gates {
    /// Never: each lead is keyed by its submission, or the destination
    /// keeps newest-wins in its own conditional write.
    Never,
    /// Always: the destination keeps one record per e-mail address, whatever
    /// its settings.
    Always,
    /// When the worker variable `variable` (fed by the template parameter
    /// `parameter`) is `value`: one record per e-mail address.
    When {
        parameter: &'static str,
        variable: &'static str,
        value: &'static str,
    },
}

/// One worker variable of a destination, and where a deployed stack gets
/// its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    pub variable: &'static str,
    pub source: Source,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A resource of the stack (its name in the template).
    Resource(&'static str),
    /// A template parameter with a default, not asked by `make deploy`.
    Parameter(&'static str),
    /// A template parameter that, when empty, leaves the variable unset.
    Optional(&'static str),
    /// A template parameter `make deploy` asks for.
    Asked {
        parameter: &'static str,
        /// The deploy flag that gives it: `--crm-url`.
        flag: &'static str,
        why: &'static str,
        prompt: &'static str,
        check: Check,
        /// The answer Enter takes (and a run without a terminal, unasked);
        /// `None`: it must be given.
        default: Option<&'static str>,
    },
    /// The ARN of a Secrets Manager secret (one `GetSecretValue` grant),
    /// which `make deploy` creates from values it asks for.
    Secret(&'static Secret),
}

impl Source {
    /// The template parameter behind it, if a parameter.
    pub fn parameter(&self) -> Option<&'static str> {
        match self {
            Source::Resource(_) => None,
            Source::Parameter(name) | Source::Optional(name) => Some(name),
            Source::Asked { parameter, .. } => Some(parameter),
            Source::Secret(secret) => Some(secret.parameter),
        }
    }
}

/// How `make deploy` checks a typed value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// An `https://` URL.
    Https,
    /// An `https://` URL with `{externalId}` exactly once.
    UpsertUrl,
    /// `email`, or a property's internal name (letters, digits, `_`).
    EmailOrProperty,
    /// An id of letters and digits (a Mailchimp audience's).
    Identifier,
}

/// A secret a destination reads, as `make deploy` makes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Secret {
    /// The template parameter holding its ARN.
    pub parameter: &'static str,
    /// The deploy flag that names an existing secret instead.
    pub flag: &'static str,
    /// Its name after the stack's: `<stack>/hubspot-token`.
    pub name: &'static str,
    /// Whether the destination works without it (no secret is made when
    /// every value is left empty).
    pub optional: bool,
    /// What it holds: one value as the whole secret, or several as the
    /// keys of a JSON object.
    pub values: &'static [SecretValue],
    /// The one call `make deploy` makes with the values typed, before it
    /// stores them: a wrong credential is said then, not after the deploy.
    pub check: Option<CredentialCheck>,
}

/// How `make deploy` tries a credential before storing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CredentialCheck {
    pub call: CheckCall,
    /// What the credential is called in the verdict: `the token`.
    pub what: &'static str,
    /// What to give instead, when refused.
    pub expected: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckCall {
    /// `GET base + path`, the secret's one value in `header` after
    /// `prefix`: a read any valid credential may make.
    Read {
        base: &'static str,
        path: &'static str,
        header: &'static str,
        prefix: &'static str,
    },
    /// `GET base + path` with HTTP Basic, the secret's one value as the
    /// password; `{dc}` in `base` is the data centre at the value's end
    /// (`…-us21`, a Mailchimp key).
    BasicRead {
        base: &'static str,
        path: &'static str,
    },
    /// An OAuth token request of `grant_type` (`client_credentials`,
    /// `refresh_token`): `POST` to the URL the asked parameter
    /// `base_parameter` gives, plus `path`, with the secret's keyed values
    /// as the form. An answer with an `error`, whatever its status, is a
    /// refusal (Zoho answers a refused grant with 200).
    Grant {
        grant_type: &'static str,
        base_parameter: &'static str,
        path: &'static str,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecretValue {
    /// Where `make deploy` and a local run read it: `HUBSPOT_TOKEN`.
    pub variable: &'static str,
    /// Its key in the secret's JSON object; `None`: the whole secret.
    pub key: Option<&'static str>,
    pub why: &'static str,
    pub prompt: &'static str,
}

/// The smoke test's lead, as the stack keyed it.
#[derive(Debug, Clone, Copy)]
pub struct SmokeLead<'a> {
    /// The stack's `LeadKey` parameter (empty: the template's default).
    pub lead_key: &'a str,
    pub submission_id: &'a str,
    pub email: &'a str,
}

/// What becomes of the lead the smoke test wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cleanup {
    /// The stack's own leads table: this row is deleted.
    DeleteRow { pk: String },
    /// A CRM the operator's tool holds no credentials for: what to delete
    /// there.
    Tell(String),
}

impl DestinationKind {
    pub const ALL: [DestinationKind; 9] = [
        DestinationKind::Http,
        DestinationKind::LeadsTable,
        DestinationKind::HubSpot,
        DestinationKind::Salesforce,
        DestinationKind::Pipedrive,
        DestinationKind::Mailchimp,
        DestinationKind::Zoho,
        DestinationKind::Brevo,
        DestinationKind::Attio,
    ];

    /// The one place a destination is registered.
    pub fn profile(self) -> &'static Profile {
        match self {
            DestinationKind::Http => &http::PROFILE,
            DestinationKind::LeadsTable => &leads_table::PROFILE,
            DestinationKind::HubSpot => &hubspot::PROFILE,
            DestinationKind::Salesforce => &salesforce::PROFILE,
            DestinationKind::Pipedrive => &pipedrive::PROFILE,
            DestinationKind::Mailchimp => &mailchimp::PROFILE,
            DestinationKind::Zoho => &zoho::PROFILE,
            DestinationKind::Brevo => &brevo::PROFILE,
            DestinationKind::Attio => &attio::PROFILE,
        }
    }

    /// Its one name: `DESTINATION`'s value and the template's.
    pub fn name(self) -> &'static str {
        self.profile().name
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == raw.trim())
    }

    /// Every name, for a message: `http, dynamodb, hubspot or salesforce`.
    pub fn names() -> String {
        crate::text::or_list(Self::ALL.iter().map(|kind| kind.name()))
    }

    /// The variables it reads with other kinds: the stack's gate key
    /// (every kind: double submits), a field map for the CRMs that map
    /// fields, `CRM_ALLOW_HTTP` for those called over HTTP.
    pub fn shared_variables(self) -> Vec<&'static str> {
        let profile = self.profile();
        let mut variables = vec![GATE_KEY, GATE_KEY_SECRET_ARN];
        if profile.maps_fields {
            variables.push(FIELD_MAP);
        }
        if profile.over_http {
            variables.push(CRM_ALLOW_HTTP);
        }
        variables
    }

    /// Whether it reads `variable`.
    pub fn reads(self, variable: &str) -> bool {
        self.profile().variables.contains(&variable) || self.shared_variables().contains(&variable)
    }

    /// The first variable set (`get` answers it) that another kind reads
    /// and this one does not: set, it says the stack was meant for another
    /// destination.
    pub fn foreign_variable(self, get: &impl Fn(&str) -> Option<String>) -> Option<&'static str> {
        Self::ALL
            .into_iter()
            .filter(|other| *other != self)
            .flat_map(|other| {
                let mut all = other.profile().variables.to_vec();
                all.extend(other.shared_variables());
                all
            })
            .find(|variable| !self.reads(variable) && get(variable).is_some())
    }

    /// Its secrets, as the template and `make deploy` know them.
    pub fn secrets(self) -> impl Iterator<Item = &'static Secret> {
        self.profile()
            .settings
            .iter()
            .filter_map(|setting| match setting.source {
                Source::Secret(secret) => Some(secret),
                _ => None,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_read_as_one_list() {
        for kind in DestinationKind::ALL {
            assert_eq!(DestinationKind::parse(kind.name()), Some(kind));
            assert_eq!(
                DestinationKind::parse(&format!(" {} ", kind.name())),
                Some(kind)
            );
        }
        assert_eq!(DestinationKind::parse("leads_table"), None, "one name each");
        let names = DestinationKind::names();
        for kind in DestinationKind::ALL {
            assert!(names.contains(kind.name()), "{names}");
        }
    }

    /// Each kind refuses every variable only others read, and takes its
    /// own and the shared ones it reads.
    #[test]
    fn another_kinds_variable_is_found_by_name() {
        for kind in DestinationKind::ALL {
            for other in DestinationKind::ALL {
                let mut variables = other.profile().variables.to_vec();
                variables.extend(other.shared_variables());
                for variable in variables {
                    let set = |name: &str| (name == variable).then(|| "x".to_owned());
                    let found = kind.foreign_variable(&set);
                    let expected = (!kind.reads(variable)).then_some(variable);
                    assert_eq!(found, expected, "{variable} on {}", kind.name());
                }
            }
        }
    }

    /// Every variable a setting feeds is one the kind reads; every secret
    /// is fed to a `*_SECRET_ARN` variable; every gate variable is read.
    #[test]
    fn each_profile_feeds_only_the_variables_it_reads() {
        for kind in DestinationKind::ALL {
            let profile = kind.profile();
            for setting in profile.settings {
                assert!(
                    kind.reads(setting.variable),
                    "{}: {}",
                    profile.name,
                    setting.variable
                );
                if let Source::Secret(secret) = setting.source {
                    assert!(
                        setting.variable.ends_with("_SECRET_ARN"),
                        "{}",
                        setting.variable
                    );
                    assert!(!secret.values.is_empty(), "{}", secret.parameter);
                    let keyed = secret.values.iter().filter(|v| v.key.is_some()).count();
                    assert!(
                        keyed == 0 || keyed == secret.values.len(),
                        "{}: every value keyed, or one whole value",
                        secret.parameter
                    );
                    assert!(
                        keyed > 0 || secret.values.len() == 1,
                        "{}",
                        secret.parameter
                    );
                }
            }
            if let Gates::When { variable, .. } = profile.gates {
                assert!(kind.reads(variable), "{}: {variable}", profile.name);
            }
        }
    }
}
