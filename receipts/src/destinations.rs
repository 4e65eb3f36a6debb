//! What the operator's CLI says about each destination, read from its
//! profile in the catalog (`shared::destination`): where the smoke test's
//! lead is cleaned up, and where a person is erased in a CRM this tool
//! holds no credentials for.

use shared::destination::{Cleanup, DestinationKind, Gates, SmokeLead};

/// The template's default `Destination`, for a stack whose parameter is
/// empty.
const DEFAULT_DESTINATION: DestinationKind = DestinationKind::LeadsTable;

/// The smoke lead's clean-up for each destination of a stack's
/// `Destination` (one name or several, comma-separated) and `LeadKey`
/// (empty: the template's defaults). A destination this tool does not know
/// (a newer stack) is named by what identifies the lead.
pub fn smoke_cleanup(
    destination: &str,
    lead_key: &str,
    submission_id: &str,
    smoke_email: &str,
) -> Vec<Cleanup> {
    let lead = SmokeLead {
        lead_key,
        submission_id,
        email: smoke_email,
    };
    destination
        .split(',')
        .map(str::trim)
        .map(|name| {
            let kind = match name {
                "" => Some(DEFAULT_DESTINATION),
                name => DestinationKind::parse(name),
            };
            match kind {
                Some(kind) => (kind.profile().smoke_cleanup)(&lead),
                None => Cleanup::Tell(format!(
                    "delete the smoke lead in {name}: submission {submission_id}, {smoke_email}"
                )),
            }
        })
        .collect()
}

/// Whether a stack of `destination` (its parameter, as `smoke_cleanup`
/// reads it) keeps newest-wins gates, each kind's parameters read by
/// `parameter`: a kind that always does, or one whose deciding parameter
/// has the value that does (HubSpot by e-mail). A kind this tool does not
/// know, or a parameter the stack does not have, may.
pub fn keeps_gates(destination: &str, parameter: impl Fn(&str) -> String) -> bool {
    destination.split(',').map(str::trim).any(|name| {
        let kind = match name {
            "" => Some(DEFAULT_DESTINATION),
            name => DestinationKind::parse(name),
        };
        match kind.map(|kind| kind.profile().gates) {
            None | Some(Gates::Always) => true,
            Some(Gates::Never) => false,
            Some(Gates::When {
                parameter: name,
                value,
                ..
            }) => {
                // A stack older than that parameter: it may.
                let given = parameter(name);
                given == value || given.is_empty()
            }
        }
    })
}

/// Erasure in the CRM is the CRM's job: where to do it, for each
/// destination that keeps its own copy.
pub fn crm_erasure_note(out: &mut impl std::io::Write) {
    let _ = writeln!(
        out,
        "The CRM keeps its own copy; erase the person there too:"
    );
    for kind in DestinationKind::ALL {
        let profile = kind.profile();
        if !profile.erasure.is_empty() {
            let _ = writeln!(out, "  {}: {}", profile.title, profile.erasure);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMOKE_EMAIL: &str = "smoke-test@example.com";

    #[test]
    fn the_smoke_lead_is_deleted_where_the_stack_owns_it_and_named_elsewhere() {
        let rows = [
            (
                "",
                "",
                Cleanup::DeleteRow {
                    pk: "submission#smoke_1".into(),
                },
            ),
            (
                "dynamodb",
                "submission",
                Cleanup::DeleteRow {
                    pk: "submission#smoke_1".into(),
                },
            ),
            (
                "dynamodb",
                "email",
                Cleanup::DeleteRow {
                    pk: format!("email#{SMOKE_EMAIL}"),
                },
            ),
        ];
        for (destination, lead_key, expected) in rows {
            assert_eq!(
                smoke_cleanup(destination, lead_key, "smoke_1", SMOKE_EMAIL),
                [expected],
                "{destination}"
            );
        }
        // Every other kind, and one this tool does not know, is told, with
        // what finds the lead.
        let told = DestinationKind::ALL
            .into_iter()
            .filter(|kind| *kind != DEFAULT_DESTINATION)
            .map(|kind| kind.name())
            .chain(["a-destination-of-a-newer-stack"]);
        for destination in told {
            match &smoke_cleanup(destination, "", "smoke_1", SMOKE_EMAIL)[..] {
                [Cleanup::Tell(text)] => assert!(text.contains(SMOKE_EMAIL), "{text}"),
                other => panic!("{destination}: {other:?}"),
            }
        }
        // A stack of several: one clean-up each, in its order.
        match &smoke_cleanup("dynamodb,hubspot", "submission", "smoke_1", SMOKE_EMAIL)[..] {
            [Cleanup::DeleteRow { pk }, Cleanup::Tell(text)] => {
                assert_eq!(pk, "submission#smoke_1");
                assert!(text.contains(SMOKE_EMAIL), "{text}");
            }
            other => panic!("dynamodb,hubspot: {other:?}"),
        }
    }

    #[test]
    fn a_stack_keeps_gates_when_one_of_its_destinations_does() {
        // (Destination, HubSpotIdProperty, keeps gates)
        let rows = [
            ("", "email", false),
            ("dynamodb", "email", false),
            ("http,salesforce", "email", false),
            ("hubspot", "email", true),
            ("hubspot", "submission_id", false),
            ("hubspot", "", true),
            ("hubspot,mailchimp", "submission_id", true),
            ("salesforce,pipedrive", "submission_id", true),
            ("a-destination-of-a-newer-stack", "submission_id", true),
        ];
        for (destination, id_property, keeps) in rows {
            let parameter = |name: &str| match name {
                "HubSpotIdProperty" => id_property.to_owned(),
                _ => String::new(),
            };
            assert_eq!(
                keeps_gates(destination, parameter),
                keeps,
                "{destination} {id_property}"
            );
        }
    }

    #[test]
    fn the_erasure_note_names_each_crm() {
        let mut out = Vec::new();
        crm_erasure_note(&mut out);
        let text = String::from_utf8(out).unwrap();
        for kind in DestinationKind::ALL {
            let profile = kind.profile();
            if !profile.erasure.is_empty() {
                assert!(text.contains(profile.title), "{text}");
            }
        }
        assert!(
            text.contains("HubSpot") && text.contains("gdpr-delete"),
            "{text}"
        );
    }
}
