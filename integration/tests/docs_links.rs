//! The docs hold together: every relative link in README.md, the project's
//! other top-level pages and docs/ reaches a file that exists, and a link
//! to a heading (`page.md#heading`) reaches a heading of that page, by
//! GitHub's anchor rule. The README stays a front door: at most 250 lines.

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
