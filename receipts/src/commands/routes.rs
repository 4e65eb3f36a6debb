//! `receipts routes check FILE`: the routes file read whole, offline. Every
//! problem is one line on stderr naming its route and key; a good file is
//! summed up on stdout (forms and rules, no secret: a Static Forms form id
//! is its apiKey, so form ids are never printed).

use std::io::Write;
use std::path::Path;

use shared::routes::{self, Routes};

use super::{run_error, Failed};

pub fn check(file: &Path, out: &mut impl Write, problems: &mut impl Write) -> Result<(), Failed> {
    let shown = file.display();
    let text = std::fs::read_to_string(file)
        .map_err(|error| Failed::Usage(format!("cannot read {shown}: {error}")))?;
    match routes::parse(&text) {
        Ok(routes) => {
            writeln!(out, "{shown}: {}", summary(&routes)).map_err(run_error)?;
            Ok(())
        }
        Err(found) => {
            for problem in &found {
                writeln!(problems, "{shown}: {problem}").map_err(run_error)?;
            }
            Err(Failed::Run(format!(
                "{shown} has {} problem{}, each named above",
                found.len(),
                if found.len() == 1 { "" } else { "s" }
            )))
        }
    }
}

/// What a good file holds, without its form ids.
fn summary(routes: &Routes) -> String {
    let names: Vec<String> = routes
        .routes
        .iter()
        .enumerate()
        .map(|(index, route)| match &route.name {
            Some(name) => format!("{name:?}"),
            None => format!("#{}", index + 1),
        })
        .collect();
    let spam = &routes.spam;
    format!(
        "ok: {} route{}{}; for every form {} honeypot field{}, {} blocked domain{}, {}",
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        if names.is_empty() {
            String::new()
        } else {
            format!(" ({})", names.join(", "))
        },
        spam.honeypot.len(),
        if spam.honeypot.len() == 1 { "" } else { "s" },
        spam.block_email_domains.len(),
        if spam.block_email_domains.len() == 1 {
            ""
        } else {
            "s"
        },
        spam.max_links
            .map_or("no link limit".to_owned(), |n| format!("at most {n} links")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> (Result<(), Failed>, String, String) {
        let dir = std::env::temp_dir().join(format!("routes-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(format!(
            "{:x}.toml",
            text.len() * 31 + text.bytes().map(usize::from).sum::<usize>()
        ));
        std::fs::write(&file, text).unwrap();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let result = check(&file, &mut out, &mut err);
        std::fs::remove_file(&file).unwrap();
        let name = file.display().to_string();
        let strip = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap().replace(&name, "FILE");
        (result, strip(out), strip(err))
    }

    #[test]
    fn a_good_file_is_summed_up_without_its_form_ids() {
        let example = include_str!("../../../routes.example.toml");
        let (result, out, err) = run(example);
        assert!(result.is_ok(), "{err}");
        assert_eq!(
            out,
            "FILE: ok: 2 routes (\"Pricing page\", \"Newsletter\"); for every form 1 honeypot field, 1 blocked domain, at most 3 links\n"
        );
        assert!(!out.contains("VwbNEw"), "{out}");
    }

    #[test]
    fn each_problem_is_a_line_naming_its_route_and_key() {
        let (result, out, err) =
            run("[[route]]\nname = \"Pricing page\"\nform = \"\"\n[[route]]\nform = 3\n");
        assert_eq!(out, "");
        assert_eq!(
            err,
            "FILE: [[route]] #1 \"Pricing page\": form: is empty\nFILE: [[route]] #2: form: must be text (the sender's form id)\n"
        );
        match result {
            Err(Failed::Run(message)) => assert!(
                message.ends_with(".toml has 2 problems, each named above"),
                "{message}"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_missing_file_is_a_usage_error() {
        let mut sink = Vec::new();
        let result = check(
            Path::new("/nonexistent/routes.toml"),
            &mut sink,
            &mut Vec::new(),
        );
        assert!(
            matches!(result, Err(Failed::Usage(m)) if m.starts_with("cannot read /nonexistent/routes.toml"))
        );
    }
}
