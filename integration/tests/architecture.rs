//! The shape docs/architecture.md promises, held by tests over the source:
//! `shared` knows no AWS; no two modules of a crate import each other,
//! directly or in a loop; only configuration reads the environment; no
//! source file in functions/, aws-edge/, sender-audit/, receipts/ or devtools/ grows past
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

/// A token of Rust source, as far as imports need: identifiers, `::` and
/// the punctuation of `use` trees.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    End,
    Other,
}

/// `code` as tokens, with comments, strings and characters left out (a
/// URL's `//` or a `crate::` in a message is no import).
fn tokens(code: &str) -> Vec<Token> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(Token::Other);
        } else if c == 'r' && matches!(next, Some('"') | Some('#')) {
            // A raw string: r"..." or r#"..."#.
            let mut hashes = 0;
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) == Some(&'"') {
                j += 1;
                loop {
                    if j >= chars.len() {
                        break;
                    }
                    if chars[j] == '"' && (1..=hashes).all(|k| chars.get(j + k) == Some(&'#')) {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                i = j;
                out.push(Token::Other);
            } else {
                out.push(Token::Ident("r".to_owned()));
                i += 1;
            }
        } else if c == '\'' {
            // A character ('x', '\n') or a lifetime ('a): skip a character
            // only when it closes.
            let close = if next == Some('\\') { i + 3 } else { i + 2 };
            i = if chars.get(close) == Some(&'\'') {
                close + 1
            } else {
                i + 1
            };
            out.push(Token::Other);
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
        } else {
            out.push(match (c, next) {
                (':', Some(':')) => {
                    i += 1;
                    Token::PathSep
                }
                ('{', _) => Token::Open,
                ('}', _) => Token::Close,
                (',', _) => Token::Comma,
                (';', _) => Token::End,
                _ => Token::Other,
            });
            i += 1;
        }
    }
    out
}

/// The paths a `use` tree starting at `at` names, each as its segments,
/// groups expanded (`crate::{a::x, b}` names `crate::a::x` and
/// `crate::b`); `at` is left after the tree.
fn use_tree(tokens: &[Token], at: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    loop {
        match tokens.get(*at) {
            Some(Token::Ident(name)) if name == "as" => {
                *at += 2;
                break;
            }
            Some(Token::Ident(name)) => {
                path.push(name.clone());
                *at += 1;
            }
            Some(Token::PathSep) => *at += 1,
            Some(Token::Open) => {
                *at += 1;
                loop {
                    use_tree(tokens, at, &path, out);
                    match tokens.get(*at) {
                        Some(Token::Comma) => *at += 1,
                        Some(Token::Close) => {
                            *at += 1;
                            break;
                        }
                        _ => break,
                    }
                    if tokens.get(*at) == Some(&Token::Close) {
                        *at += 1;
                        break;
                    }
                }
                return;
            }
            _ => break,
        }
    }
    if path.len() > prefix.len() {
        out.push(path);
    }
}

/// Every path `code` names a module by: its `use` trees, and every inline
/// `crate::`, `super::` or `self::` path.
fn named_paths(code: &str) -> Vec<Vec<String>> {
    let tokens = tokens(code);
    let mut paths = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Ident(word) if word == "use" => {
                i += 1;
                use_tree(&tokens, &mut i, &[], &mut paths);
            }
            Token::Ident(word)
                if ["crate", "super", "self"].contains(&word.as_str())
                    && tokens.get(i + 1) == Some(&Token::PathSep)
                    && (i == 0 || tokens[i - 1] != Token::PathSep) =>
            {
                let mut path = vec![word.clone()];
                let mut j = i + 1;
                while tokens.get(j) == Some(&Token::PathSep) {
                    match tokens.get(j + 1) {
                        Some(Token::Ident(name)) => {
                            path.push(name.clone());
                            j += 2;
                        }
                        _ => break,
                    }
                }
                paths.push(path);
                i = j;
            }
            _ => i += 1,
        }
    }
    paths
}

/// The items the crate root re-exports (`pub use receipt::{Receipt, ...}`),
/// by name, with the module they come from: `crate::Receipt` names
/// `crate::receipt`.
fn root_reexports(root: &str) -> BTreeMap<String, String> {
    let tokens = tokens(root);
    let mut found = BTreeMap::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] == Token::Ident("pub".to_owned())
            && tokens.get(i + 1) == Some(&Token::Ident("use".to_owned()))
        {
            i += 2;
            let mut paths = Vec::new();
            use_tree(&tokens, &mut i, &[], &mut paths);
            for path in paths {
                if let (Some(module), Some(item)) = (path.first(), path.last()) {
                    if path.len() > 1 {
                        found.insert(item.clone(), format!("crate::{module}"));
                    }
                }
            }
        } else {
            i += 1;
        }
    }
    found
}

/// The modules each module of `src` names in its production part, by any
/// form: `use` trees (groups expanded), inline `crate::`, `super::` and
/// `self::` paths, and `use` of its own children (a parent that uses its
/// child and a child that uses its parent import each other). A name the
/// crate root re-exports counts as its module's.
fn import_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files = rust_files(src);
    let modules: BTreeMap<String, PathBuf> = files
        .iter()
        .filter(|f| !f.ends_with("main.rs"))
        .map(|f| (module_of(src, f), f.clone()))
        .collect();
    let reexports = modules
        .get("crate")
        .map(|root| root_reexports(&production_part(root)))
        .unwrap_or_default();
    let mut graph = BTreeMap::new();
    for (module, file) in &modules {
        let mut imports = BTreeSet::new();
        for segments in named_paths(&production_part(file)) {
            let mut base: Vec<String> = module.split("::").map(str::to_owned).collect();
            let mut rest = segments.as_slice();
            let absolute: Vec<String> = match rest.first().map(String::as_str) {
                Some("crate") => match (rest.get(1), rest.len()) {
                    (Some(item), 2) if reexports.contains_key(item) => {
                        vec![reexports[item].clone()]
                    }
                    _ => rest.to_vec(),
                },
                Some("super") | Some("self") => {
                    while let Some(first) = rest.first() {
                        match first.as_str() {
                            "super" => {
                                base.pop();
                            }
                            "self" => {}
                            _ => break,
                        }
                        rest = &rest[1..];
                    }
                    base.extend(rest.iter().cloned());
                    base
                }
                Some(first) if modules.contains_key(&format!("{module}::{first}")) => {
                    base.extend(rest.iter().cloned());
                    base
                }
                _ => continue,
            };
            let path = absolute.join("::");
            let target = modules
                .keys()
                .filter(|m| path == **m || path.starts_with(&format!("{m}::")))
                .filter(|m| m.as_str() != "crate")
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
    "sender-audit/src",
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

/// The reader sees every import form: a loop of two files, one side an
/// inline `crate::` path, the other a grouped `use`, is found; the same
/// names in a comment, a string or a test are not imports.
#[test]
fn the_import_reader_finds_a_loop_made_with_an_inline_path() {
    let dir = std::env::temp_dir().join(format!("import-loop-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("b")).unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    write("lib.rs", "mod a;\nmod b;\nmod c;\npub use c::Thing;\n");
    write("a.rs", "pub fn f() -> u32 {\n    crate::b::g() + 1\n}\n");
    write(
        "b/mod.rs",
        "pub mod inner;\nuse crate::{a::f, c};\npub fn g() -> u32 { 1 }\n",
    );
    write(
        "b/inner.rs",
        "pub fn h() -> u32 { super::super::c::h() }\npub type T = crate::Thing;\n",
    );
    write(
        "c.rs",
        "// crate::a::f is named in a comment\npub struct Thing;\npub fn h() -> u32 { let _ = \"crate::a::f\"; 1 }\n#[cfg(test)]\nmod tests { use crate::a::f; }\n",
    );
    let graph = import_graph(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    let set = |modules: &[&str]| -> BTreeSet<String> {
        modules.iter().map(|m| (*m).to_owned()).collect()
    };
    assert_eq!(graph["crate::a"], set(&["crate::b"]), "an inline path");
    assert_eq!(
        graph["crate::b"],
        set(&["crate::a", "crate::c"]),
        "a grouped use"
    );
    assert_eq!(
        graph["crate::b::inner"],
        set(&["crate::c"]),
        "super::super, and a name the root re-exports"
    );
    assert!(
        graph["crate::c"].is_empty(),
        "comments, strings and tests are no imports: {:?}",
        graph["crate::c"]
    );
    let found = cycles(&graph);
    assert!(
        found.contains("crate::a -> crate::b -> crate::a"),
        "{found:?}"
    );
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
const SHORT_FILES_IN: &[&str] = &[
    "functions",
    "aws-edge",
    "sender-audit",
    "receipts",
    "devtools",
];

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
