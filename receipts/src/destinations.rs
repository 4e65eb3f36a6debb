//! What the operator's CLI says about each destination: the one file of
//! `receipts` that names them (the worker's catalog, `DestinationKind`,
//! lists them all). Where the smoke test's lead is cleaned up, and where a
//! person is erased in a CRM this tool holds no credentials for.

/// What becomes of the lead the smoke test wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cleanup {
    /// The stack's own leads table: this row is deleted.
    DeleteRow { pk: String },
    /// A CRM this tool holds no credentials for: what to delete there.
    Tell(String),
}

/// The smoke lead's clean-up for a stack's `Destination` and `LeadKey`
/// (empty: the template's defaults, `dynamodb` and `submission`).
pub fn smoke_cleanup(
    destination: &str,
    lead_key: &str,
    submission_id: &str,
    smoke_email: &str,
) -> Cleanup {
    match destination {
        "" | "dynamodb" if lead_key == "email" => Cleanup::DeleteRow {
            pk: format!("email#{smoke_email}"),
        },
        "" | "dynamodb" => Cleanup::DeleteRow {
            pk: format!("submission#{submission_id}"),
        },
        "hubspot" => Cleanup::Tell(format!(
            "delete the smoke contact in HubSpot: CRM > Contacts, search {smoke_email}, Delete"
        )),
        "salesforce" => Cleanup::Tell(format!(
            "delete the smoke Lead in Salesforce: Leads, search {smoke_email} (submission {submission_id}), Delete"
        )),
        _ => Cleanup::Tell(format!(
            "delete the smoke lead in your CRM: externalId {submission_id}, {smoke_email}"
        )),
    }
}

/// Erasure in the CRM is the CRM's job: where to do it.
pub fn crm_erasure_note(out: &mut impl std::io::Write) {
    let _ = writeln!(
        out,
        "The CRM keeps its own copy; erase the person there too:\n  \
         HubSpot: POST https://api.hubapi.com/crm/v3/objects/contacts/gdpr-delete with \
         {{\"idProperty\":\"email\",\"objectId\":\"<address>\"}} (permanent)\n  \
         Salesforce: delete the Lead (DELETE /services/data/vXX.X/sobjects/Lead/<Id>), then \
         empty it from the Recycle Bin or use a Bulk API hardDelete job; Privacy Center \
         automates right-to-be-forgotten requests"
    );
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
        for (destination, names) in [
            ("hubspot", "HubSpot"),
            ("salesforce", "Salesforce"),
            ("http", "externalId smoke_1"),
        ] {
            match smoke_cleanup(destination, "", "smoke_1", SMOKE_EMAIL) {
                Cleanup::Tell(text) => {
                    assert!(text.contains(names) && text.contains(SMOKE_EMAIL), "{text}")
                }
                other => panic!("{destination}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_erasure_note_names_each_crm() {
        let mut out = Vec::new();
        crm_erasure_note(&mut out);
        let text = String::from_utf8(out).unwrap();
        for crm in ["HubSpot", "Salesforce"] {
            assert!(text.contains(crm), "{text}");
        }
    }
}
