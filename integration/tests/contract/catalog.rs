//! The catalogs, `shared::Sender::ALL` and
//! `shared::destination::DestinationKind::ALL`, against every list
//! that must name each kind and cannot be derived from them: the
//! template's `Sender` and `Destination` values, the stream filter's key
//! prefixes, `make deploy`'s catalog (written from the code by
//! `shared::catalog`, never kept in git), the `events/` samples, the docs (each destination's page
//! documents every variable it reads). A kind added to a catalog and
//! missed anywhere here fails `make check` with a message naming the file
//! and the missing entry. Each kind's deploy surface is checked in
//! surface.rs, its secrets' grants in grants.rs. Needs no
//! server.

use std::path::{Path, PathBuf};

use devtools::template::{self, filter_matches};
use shared::destination::DestinationKind;

use crate::{destinations, senders};
use shared::{IdempotencyKey, Sender, SubmissionId};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// What `found` (the entries a file holds, as `what` names them) lacks of
/// `catalog`, and what it names that no catalog entry is: one message each.
fn differences(file: &str, what: &str, catalog: &[&str], found: &[String]) -> Vec<String> {
    let lacking = catalog
        .iter()
        .filter(|entry| !found.iter().any(|f| f == *entry))
        .map(|entry| format!("{file}: {what} lacks {entry:?}"));
    let unknown = found
        .iter()
        .filter(|f| !catalog.contains(&f.as_str()))
        .map(|f| format!("{file}: {what} names {f:?}, which no catalog entry is"));
    lacking.chain(unknown).collect()
}

fn allowed_values(template: &serde_norway::Value, parameter: &str) -> Vec<String> {
    template["Parameters"][parameter]["AllowedValues"]
        .as_sequence()
        .unwrap_or_else(|| panic!("the template's {parameter} has no AllowedValues"))
        .iter()
        .map(|value| value.as_str().unwrap().to_owned())
        .collect()
}

/// The senders whose receipts the worker's stream filter passes: those of
/// `Sender::ALL` whose key (`<name>:<event>:<id>`) matches it.
fn senders_the_filter_passes(template: &serde_norway::Value) -> Vec<String> {
    let pattern: serde_json::Value = serde_json::from_str(
        template["Resources"]["ReceiptStreamMapping"]["Properties"]["FilterCriteria"]["Filters"][0]
            ["Pattern"]
            .as_str()
            .expect("the stream filter's pattern"),
    )
    .unwrap();
    let insert = |key: &str| serde_json::json!({"eventName": "INSERT", "dynamodb": {"Keys": {"pk": {"S": key}}}});
    Sender::ALL
        .iter()
        .filter(|sender| {
            let key = IdempotencyKey::for_submission(**sender, &SubmissionId::parse("s1").unwrap());
            filter_matches(&pattern, &insert(key.as_str()))
        })
        .map(|sender| sender.name().to_owned())
        .collect()
}

/// The senders whose receipts the worker may update: those whose key
/// prefix (`<name>:*`) its `UpdateItem` grant names.
fn senders_the_worker_may_update(template: &serde_norway::Value) -> Vec<String> {
    let policies = &template["Resources"]["WorkerFunction"]["Properties"]["Policies"];
    let statements = policies
        .as_sequence()
        .into_iter()
        .flatten()
        .flat_map(|policy| {
            policy["Statement"]
                .as_sequence()
                .cloned()
                .unwrap_or_default()
        });
    let update = statements
        .into_iter()
        .find(|statement| statement["Action"].as_str() == Some("dynamodb:UpdateItem"))
        .expect("the worker's UpdateItem statement");
    update["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
        .as_sequence()
        .expect("its dynamodb:LeadingKeys")
        .iter()
        .filter_map(|key| key.as_str()?.strip_suffix(":*").map(str::to_owned))
        .collect()
}

#[test]
fn every_list_of_senders_and_destinations_names_each_catalog_entry() {
    let template = template::load(&template::workspace_template()).unwrap();
    let deploy = read("scripts/deploy.py");
    let readme = read("README.md");
    let exists = |path: String| root().join(&path).exists().then_some(path);
    let mut problems = Vec::new();
    problems.extend(differences(
        "template.yaml",
        "Parameters.Sender.AllowedValues",
        &senders(),
        &allowed_values(&template, "Sender"),
    ));
    problems.extend(differences(
        "template.yaml",
        "Parameters.Destination.AllowedValues",
        &destinations(),
        &allowed_values(&template, "Destination"),
    ));
    problems.extend(differences(
        "template.yaml",
        "ReceiptStreamMapping's filter (a key prefix per sender)",
        &senders(),
        &senders_the_filter_passes(&template),
    ));
    problems.extend(differences(
        "template.yaml",
        "WorkerFunction's UpdateItem keys (a <sender>:* per sender)",
        &senders(),
        &senders_the_worker_may_update(&template),
    ));
    // make deploy reads the catalog as shared::catalog writes it.
    let catalog: serde_json::Value =
        serde_json::from_str(&shared::catalog::catalog_json()).expect("the catalog is JSON");
    let named = |list: &str| -> Vec<String> {
        catalog[list]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|entry| entry["name"].as_str().map(str::to_owned))
            .collect()
    };
    problems.extend(differences(
        "shared::catalog",
        "senders",
        &senders(),
        &named("senders"),
    ));
    problems.extend(differences(
        "shared::catalog",
        "destinations",
        &destinations(),
        &named("destinations"),
    ));
    if root().join("scripts/catalog.json").exists() {
        problems.push(
            "scripts/catalog.json: the catalog is written, not kept (make deploy writes .tools/catalog.json)"
                .to_owned(),
        );
    }
    for list in ["SENDERS = [\"", "DESTINATIONS = [\""] {
        if deploy.contains(list) {
            problems.push(format!(
                "scripts/deploy.py: keeps its own list ({list}...); read it from CATALOG"
            ));
        }
    }
    // A sample delivery per sender (Static Forms': the first one written).
    let samples: Vec<String> = senders()
        .into_iter()
        .filter(|name| {
            let file = match *name {
                "staticforms" => "events/ingest-valid.json".to_owned(),
                other => format!("events/ingest-{other}.json"),
            };
            exists(file).is_some()
        })
        .map(str::to_owned)
        .collect();
    problems.extend(differences(
        "events/",
        "a sample delivery ingest-<sender>.json",
        &senders(),
        &samples,
    ));
    let pages: Vec<String> = destinations()
        .into_iter()
        .filter(|name| exists(format!("docs/destinations/{name}.md")).is_some())
        .map(str::to_owned)
        .collect();
    problems.extend(differences(
        "docs/destinations/",
        "a page <destination>.md",
        &destinations(),
        &pages,
    ));
    let senders_table = read("docs/senders/README.md");
    let sender_rows: Vec<String> = senders()
        .into_iter()
        .filter(|name| senders_table.contains(&format!("| `{name}`")))
        .map(str::to_owned)
        .collect();
    problems.extend(differences(
        "docs/senders/README.md",
        "the senders table",
        &senders(),
        &sender_rows,
    ));
    // Every variable a destination reads is documented on its page.
    for kind in DestinationKind::ALL {
        let page = format!("docs/destinations/{}.md", kind.name());
        let Some(text) = exists(page.clone()).map(|_| read(&page)) else {
            continue;
        };
        for variable in kind.profile().variables {
            if !text.contains(variable) {
                problems.push(format!("{page}: does not document {variable}"));
            }
        }
    }
    let rows: Vec<String> = destinations()
        .into_iter()
        .filter(|name| readme.contains(&format!("| `{name}`")))
        .map(str::to_owned)
        .collect();
    problems.extend(differences(
        "README.md",
        "the destinations table",
        &destinations(),
        &rows,
    ));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The comparison itself, on doctored lists: a missing entry and an
/// unknown one are each named with the file.
#[test]
fn a_missing_or_unknown_entry_is_named_with_its_file() {
    // Never a plausible next kind as the unknown one: adding it would
    // break this test for the wrong reason.
    let found = vec!["staticforms".to_owned(), "no-such-sender".to_owned()];
    assert_eq!(
        differences("template.yaml", "Sender", &["staticforms", "tally"], &found),
        [
            "template.yaml: Sender lacks \"tally\"",
            "template.yaml: Sender names \"no-such-sender\", which no catalog entry is",
        ]
    );
    // A sender the filter does not pass is missing from its list.
    let template = template::load(&template::workspace_template()).unwrap();
    let mut text = serde_norway::to_string(&template).unwrap();
    text = text.replace("{\"prefix\": \"tally:\"}, ", "");
    let doctored: serde_norway::Value = serde_norway::from_str(&text).unwrap();
    let without_tally: Vec<&str> = senders().into_iter().filter(|s| *s != "tally").collect();
    assert_eq!(
        senders_the_filter_passes(&doctored),
        without_tally,
        "the doctored filter lost tally, and only tally"
    );
}
