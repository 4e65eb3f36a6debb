//! The shape docs/architecture.md promises, held by tests over the source:
//! `shared` knows no AWS; no two modules of a crate import each other,
//! directly or in a loop; only configuration reads the environment; no
//! source file in functions/, aws-edge/, receipts/ or devtools/ grows past
//! 500 lines before its tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    integration::files_under(dir, "rs")
}

/// A file's code before its `#[cfg(test)]` module.
fn production_part(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    match text.find("#[cfg(test)]") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// `crate::a::b` for `src/a/b.rs` or `src/a/b/mod.rs`.
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    std::iter::once("crate".to_owned())
        .chain(parts)
        .collect::<Vec<_>>()
        .join("::")
}

/// The modules each module of `src` imports (`use` lines of its production
/// part, resolved against the crate's modules, its own children included:
/// a parent that uses its child and a child that uses its parent import
/// each other).
fn import_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files = rust_files(src);
    let modules: BTreeMap<String, PathBuf> = files
        .iter()
        .filter(|f| !f.ends_with("main.rs"))
        .map(|f| (module_of(src, f), f.clone()))
        .collect();
    let mut graph = BTreeMap::new();
    for (module, file) in &modules {
        let mut imports = BTreeSet::new();
        for line in production_part(file).lines() {
            let line = line.trim_start();
            let Some(path) = line
                .strip_prefix("use ")
                .or_else(|| line.strip_prefix("pub use "))
                .or_else(|| line.strip_prefix("pub(crate) use "))
            else {
                continue;
            };
            // `use crate::a::b;` names crate::a::b, not crate::a.
            let path = path.trim_end().trim_end_matches(';');
            let parent = module.rsplit_once("::").map_or("crate", |(p, _)| p);
            let path = if let Some(rest) = path.strip_prefix("super::") {
                format!("{parent}::{rest}")
            } else if let Some(rest) = path.strip_prefix("self::") {
                format!("{module}::{rest}")
            } else if path.starts_with("crate::") {
                path.to_owned()
            } else {
                let first = path.split("::").next().unwrap_or("");
                let child = format!("{module}::{first}");
                if modules.contains_key(&child) {
                    format!("{module}::{path}")
                } else {
                    continue;
                }
            };
            let target = modules
                .keys()
                .filter(|m| path == **m || path.starts_with(&format!("{m}::")))
                .max_by_key(|m| m.len());
            if let Some(target) = target {
                if target != module {
                    imports.insert(target.clone());
                }
            }
        }
        graph.insert(module.clone(), imports);
    }
    graph
}

/// Every cycle of the graph, as `a -> b -> a`.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
    fn walk(
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        found: &mut BTreeSet<String>,
    ) {
        let last = path.last().unwrap().clone();
        for next in graph.get(&last).into_iter().flatten() {
            if let Some(at) = path.iter().position(|m| m == next) {
                let mut cycle = path[at..].to_vec();
                cycle.push(next.clone());
                found.insert(cycle.join(" -> "));
            } else if path.len() < 12 {
                path.push(next.clone());
                walk(graph, path, found);
                path.pop();
            }
        }
    }
    let mut found = BTreeSet::new();
    for start in graph.keys() {
        walk(graph, &mut vec![start.clone()], &mut found);
    }
    found
}

const CRATES: &[&str] = &[
    "shared/src",
    "aws-edge/src",
    "functions/ingest/src",
    "functions/worker/src",
    "receipts/src",
    "devtools/src",
];

#[test]
fn no_two_modules_import_each_other() {
    let root = workspace();
    let mut found = Vec::new();
    for krate in CRATES {
        for cycle in cycles(&import_graph(&root.join(krate))) {
            found.push(format!("{krate}: {cycle}"));
        }
    }
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    let graph = BTreeMap::from([
        (
            "crate::a".to_owned(),
            BTreeSet::from(["crate::b".to_owned()]),
        ),
        (
            "crate::b".to_owned(),
            BTreeSet::from(["crate::a".to_owned()]),
        ),
        (
            "crate::c".to_owned(),
            BTreeSet::from(["crate::a".to_owned()]),
        ),
    ]);
    let found = cycles(&graph);
    assert!(
        found.contains("crate::a -> crate::b -> crate::a"),
        "{found:?}"
    );
    assert!(!found.iter().any(|c| c.contains("crate::c")), "{found:?}");
}

#[test]
fn shared_knows_no_aws() {
    let manifest = std::fs::read_to_string(workspace().join("shared/Cargo.toml")).unwrap();
    let dependencies = manifest
        .split("[dependencies]")
        .nth(1)
        .unwrap_or("")
        .split("\n[")
        .next()
        .unwrap_or("");
    for forbidden in ["aws", "lambda"] {
        assert!(
            !dependencies.contains(forbidden),
            "shared depends on {forbidden}: the rules must stay free of AWS types"
        );
    }
    for file in rust_files(&workspace().join("shared/src")) {
        let code = production_part(&file);
        assert!(
            !code.contains("aws_"),
            "{} names an AWS crate",
            file.display()
        );
    }
}

#[test]
fn only_configuration_reads_the_environment() {
    let root = workspace();
    let allowed = [
        "functions/ingest/src/config.rs",
        "functions/worker/src/config.rs",
        // The log level, read by the subscriber both functions share.
        "shared/src/logging.rs",
    ];
    let mut readers = Vec::new();
    for krate in ["shared/src", "functions/ingest/src", "functions/worker/src"] {
        for file in rust_files(&root.join(krate)) {
            let shown = file.strip_prefix(&root).unwrap().display().to_string();
            if production_part(&file).contains("env::var") && !allowed.contains(&shown.as_str()) {
                readers.push(shown);
            }
        }
    }
    assert!(
        readers.is_empty(),
        "read the environment outside configuration: {readers:?}"
    );
}

/// The folders whose source files stay short enough to read in one sitting:
/// the functions, and the crates beside them.
const SHORT_FILES_IN: &[&str] = &["functions", "aws-edge", "receipts", "devtools"];

#[test]
fn no_source_file_passes_500_lines_before_its_tests() {
    let root = workspace();
    let mut long = Vec::new();
    for folder in SHORT_FILES_IN {
        for file in rust_files(&root.join(folder)) {
            if !file.components().any(|c| c.as_os_str() == "src") {
                continue;
            }
            let lines = production_part(&file).lines().count();
            if lines > 500 {
                long.push(format!(
                    "{} ({lines})",
                    file.strip_prefix(&root).unwrap().display()
                ));
            }
        }
    }
    assert!(long.is_empty(), "split these: {long:?}");
}
