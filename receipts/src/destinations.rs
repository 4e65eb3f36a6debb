//! What the operator's CLI says about each destination, read from its
//! profile in the catalog (`shared::destination`): where the smoke test's
//! lead is cleaned up, and where a person is erased in a CRM this tool
//! holds no credentials for.

use shared::destination::{Cleanup, DestinationKind, SmokeLead};

/// The template's default `Destination`, for a stack whose parameter is
/// empty.
const DEFAULT_DESTINATION: DestinationKind = DestinationKind::LeadsTable;

/// The smoke lead's clean-up for a stack's `Destination` and `LeadKey`
/// (empty: the template's defaults). A destination this tool does not know
/// (a newer stack) is named by what identifies the lead.
pub fn smoke_cleanup(
    destination: &str,
    lead_key: &str,
    submission_id: &str,
    smoke_email: &str,
) -> Cleanup {
    let kind = match destination {
        "" => Some(DEFAULT_DESTINATION),
        name => DestinationKind::parse(name),
    };
    let lead = SmokeLead {
        lead_key,
        submission_id,
        email: smoke_email,
    };
    match kind {
        Some(kind) => (kind.profile().smoke_cleanup)(&lead),
        None => Cleanup::Tell(format!(
            "delete the smoke lead in {destination}: submission {submission_id}, {smoke_email}"
        )),
    }
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
                expected,
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
            match smoke_cleanup(destination, "", "smoke_1", SMOKE_EMAIL) {
                Cleanup::Tell(text) => assert!(text.contains(SMOKE_EMAIL), "{text}"),
                other => panic!("{destination}: {other:?}"),
            }
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
