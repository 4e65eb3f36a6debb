//! The docs hold together: every relative link in README.md, the project's
//! other top-level pages and docs/ reaches a file that exists, and a link
//! to a heading (`page.md#heading`) reaches a heading of that page, by
//! GitHub's anchor rule. The README stays a front door: at most 250 lines.
//! The architecture map names only what exists: every path it gives, and
//! every test or function it cites as holding an invariant.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

/// The Markdown pages under test: the top-level ones and docs/, recursively.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    found.extend(integration::files_under(&root.join("docs"), "md"));
    found.sort();
    found
}

/// The text outside fenced code blocks and inline code.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            let mut in_code = false;
            for c in line.chars() {
                if c == '`' {
                    in_code = !in_code;
                } else if !in_code {
                    out.push(c);
                }
            }
            out.push('\n');
        }
    }
    out
}

/// The targets of `[text](target)` links.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut targets = Vec::new();
    let mut rest = prose.as_str();
    while let Some(start) = rest.find("](") {
        let after = &rest[start + 2..];
        let Some(end) = after.find(')') else { break };
        targets.push(after[..end].trim().to_owned());
        rest = &after[end..];
    }
    targets
}

/// GitHub's anchor of a heading: lower case; letters, digits, spaces,
/// hyphens and underscores kept, the rest dropped; spaces become hyphens.
fn anchor_of(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> HashSet<String> {
    let mut fenced = false;
    let mut found = HashSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced && line.starts_with('#') {
            found.insert(anchor_of(line.trim_start_matches('#')));
        }
    }
    found
}

/// Every relative link of `pages` that reaches nothing, as `page: target`.
fn broken_links(root: &Path, pages: &[PathBuf]) -> Vec<String> {
    let mut broken = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(page).unwrap();
        let shown = page
            .strip_prefix(root)
            .unwrap_or(page)
            .display()
            .to_string();
        for target in links(&text) {
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with("mailto:")
            {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            if !file.exists() {
                broken.push(format!("{shown}: {target} (no such file)"));
                continue;
            }
            if let Some(anchor) = anchor {
                let file = if file.is_dir() {
                    file.join("README.md")
                } else {
                    file
                };
                let headings = anchors(&std::fs::read_to_string(&file).unwrap_or_default());
                if !headings.contains(anchor) {
                    broken.push(format!("{shown}: {target} (no such heading)"));
                }
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = workspace();
    let pages = pages(&root);
    assert!(
        pages.iter().any(|p| p.ends_with("README.md")) && pages.len() >= 10,
        "{pages:?}"
    );
    let broken = broken_links(&root, &pages);
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_is_a_front_door() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines: move detail into docs/"
    );
    for must in [
        "make run",
        "make test",
        "make deploy",
        "```mermaid",
        "docs/",
    ] {
        assert!(readme.contains(must), "README.md says nothing of {must}");
    }
}

/// The checker itself finds what is broken (a test that cannot fail is a
/// defect).
#[test]
fn the_checker_finds_a_missing_file_and_a_missing_heading() {
    let root = std::env::temp_dir().join(format!("docs-links-{}", std::process::id()));
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(
        root.join("docs/page.md"),
        "# A page\n\n## Its `part`: one\n\n```\n[ignored](in-a-fence.md)\n```\n",
    )
    .unwrap();
    std::fs::write(
        root.join("README.md"),
        "[ok](docs/page.md) [ok](docs/page.md#its-part-one) [web](https://example.com/x)\n\
         [gone](docs/missing.md) [nohead](docs/page.md#nowhere) `[code](skipped.md)`\n",
    )
    .unwrap();
    let broken = broken_links(&root, &pages(&root));
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(
        broken,
        [
            "README.md: docs/missing.md (no such file)",
            "README.md: docs/page.md#nowhere (no such heading)"
        ]
    );
}

/// The inline code spans of one line.
fn code_spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

fn is_path(token: &str) -> bool {
    let extensions = [".rs", ".yaml", ".toml", ".py", ".sh", ".md", ".json"];
    !token.is_empty()
        && token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c))
        && (token.contains('/') || extensions.iter().any(|e| token.ends_with(e)))
}

/// A snake_case name of three words or more: a test or a function.
fn is_function_name(token: &str) -> bool {
    token.starts_with(|c: char| c.is_ascii_lowercase())
        && token
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && token.matches('_').count() >= 2
}

/// Every `fn` name in the workspace's Rust sources.
fn defined_functions(root: &Path) -> HashSet<String> {
    let mut names = HashSet::new();
    for folder in [
        "shared",
        "aws-edge",
        "sender-audit",
        "functions",
        "receipts",
        "devtools",
        "integration",
    ] {
        for file in integration::files_under(&root.join(folder), "rs") {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            for (at, _) in text.match_indices("fn ") {
                let name: String = text[at + 3..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                names.insert(name);
            }
        }
    }
    names
}

/// What a map names that does not exist. A path resolves from the
/// workspace, from its section's heading path (and its `src/`), or from a
/// folder named earlier in the same paragraph or list item.
fn unknown_names(root: &Path, text: &str, defined: &HashSet<String>) -> Vec<String> {
    let mut unknown = Vec::new();
    let mut section: Option<PathBuf> = None;
    let mut folders: Vec<PathBuf> = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if line.starts_with('#') {
            section = code_spans(line)
                .into_iter()
                .find(|token| is_path(token))
                .map(PathBuf::from);
            folders.clear();
            continue;
        }
        if line.trim().is_empty() || line.starts_with("- ") {
            folders.clear();
        }
        for token in code_spans(line) {
            if is_path(token) {
                let mut candidates = vec![PathBuf::from(token)];
                if let Some(base) = &section {
                    candidates.push(base.join(token));
                    candidates.push(base.join("src").join(token));
                }
                candidates.extend(folders.iter().rev().map(|folder| folder.join(token)));
                match candidates.into_iter().find(|c| root.join(c).exists()) {
                    Some(found) if root.join(&found).is_dir() => folders.push(found),
                    Some(_) => {}
                    None => unknown.push(format!("{token} (no such file or folder)")),
                }
            } else if is_function_name(token) && !defined.contains(token) {
                unknown.push(format!("{token} (no such test or function)"));
            }
        }
    }
    unknown
}

#[test]
fn the_architecture_map_names_only_what_exists() {
    let root = workspace();
    let map = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let defined = defined_functions(&root);
    let unknown = unknown_names(&root, &map, &defined);
    assert!(
        unknown.is_empty(),
        "docs/architecture.md names what does not exist:\n{}",
        unknown.join("\n")
    );
    let named = map
        .lines()
        .flat_map(code_spans)
        .filter(|t| is_function_name(t))
        .count();
    assert!(
        named >= 20,
        "the map cites only {named} tests: is the check reading it?"
    );
}

#[test]
fn the_map_check_finds_a_missing_path_and_a_missing_test() {
    let root = workspace();
    let defined = defined_functions(&root);
    let map = "### `functions/worker/`\n\n\
               - `functions/worker/src/deliver/`: `claim.rs`, `gone.rs`; `src/main.rs`\n\
               - `claim.rs` alone is not in this item's folder\n\n\
               Held by `shared_knows_no_aws` and `a_test_nobody_wrote`.\n";
    assert_eq!(
        unknown_names(&root, map, &defined),
        [
            "gone.rs (no such file or folder)",
            "claim.rs (no such file or folder)",
            "a_test_nobody_wrote (no such test or function)",
        ]
    );
}

/// The text of `page` from the heading `## title` to the next `## `.
fn section<'a>(page: &'a str, title: &str) -> &'a str {
    let start = page
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("no section {title:?}"));
    let rest = &page[start + title.len() + 5..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}

/// What the README's lists of senders and destinations leave out of the
/// catalog: none, or what to add where. (docs/deploy.md points at the
/// senders' and destinations' pages instead of listing them.)
fn left_out(readme: &str) -> Vec<String> {
    use shared::destination::CheckCall;
    let mut missing = Vec::new();
    let senders = section(readme, "Senders");
    let what_it_is = section(readme, "What it is");
    let destinations = section(readme, "Choose a destination");
    for sender in shared::Sender::ALL {
        let profile = sender.profile();
        for (place, text) in [
            ("README.md, Senders", senders),
            ("README.md, What it is", what_it_is),
        ] {
            if !text.contains(profile.title) {
                missing.push(format!("{place}: {}", profile.title));
            }
        }
    }
    for kind in shared::destination::DestinationKind::ALL {
        let profile = kind.profile();
        if !destinations.contains(&format!("| `{}`", profile.name)) {
            missing.push(format!(
                "README.md, Choose a destination: `{}`",
                profile.name
            ));
        }
        // Its page says which call `make deploy` tries its credential with.
        let page = std::fs::read_to_string(
            workspace().join(format!("docs/destinations/{}.md", profile.name)),
        )
        .unwrap_or_default();
        for secret in kind.secrets() {
            let Some(check) = secret.check else { continue };
            let path = match check.call {
                CheckCall::Read { path, .. }
                | CheckCall::BasicRead { path, .. }
                | CheckCall::Grant { path, .. } => path,
            };
            let path = path.split('?').next().unwrap_or(path);
            if !page.contains(&format!("{path}`")) || page.contains("not tried before") {
                missing.push(format!(
                    "docs/destinations/{}.md, Set up: make deploy tries {} with `{path}`",
                    profile.name, check.what
                ));
            }
        }
    }
    missing
}

/// README.md names every sender and destination the catalog has, where a
/// new user reads them, and each destination's page
/// names the call `make deploy` tries its credential with.
#[test]
fn the_docs_name_every_sender_and_destination_of_the_catalog() {
    let root = workspace();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert_eq!(left_out(&readme), Vec::<String>::new());
    // Tally taken out of the Senders section alone.
    let at = readme.find("\n## Senders\n").unwrap();
    let without_tally = format!(
        "{}{}",
        &readme[..at],
        readme[at..].replacen("Tally, ", "", 1)
    );
    assert!(
        left_out(&without_tally)
            .iter()
            .any(|missing| missing.contains("Tally")),
        "the check finds a sender left out of the README's list"
    );
}

/// A bare `make` prints every target with its line and builds nothing.
#[test]
fn make_alone_lists_every_target_and_builds_nothing() {
    let root = workspace();
    let makefile = std::fs::read_to_string(root.join("Makefile")).unwrap();
    let phony = makefile
        .lines()
        .find_map(|line| line.strip_prefix(".PHONY:"))
        .expect("a .PHONY line");
    let dry = std::process::Command::new("make")
        .arg("-n")
        .current_dir(&root)
        .output()
        .expect("make is installed");
    let planned = String::from_utf8_lossy(&dry.stdout);
    assert!(
        planned
            .lines()
            .all(|line| !line.contains("cargo") && !line.contains("scripts/")),
        "make alone runs only its help: {planned}"
    );
    let help = std::process::Command::new("make")
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(help.status.success());
    let listed = String::from_utf8_lossy(&help.stdout);
    for target in phony.split_whitespace() {
        assert!(
            listed.contains(&format!("make {target} ")),
            "{target} is not in make's help: {listed}"
        );
    }
}
