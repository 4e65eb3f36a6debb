//! `receipts routes`: the routes file checked offline (`check`), stored in
//! the stack's receipts table (`apply`), and shown (`show`). Every problem of a file is one line on stderr naming its route
//! and key. Form ids are never printed: a Static Forms form id is its
//! apiKey, so routes are named by name or number.

use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

use shared::destination::set::DestinationSet;
use shared::receipt::format_timestamp;
use shared::routes::{self, Routes};

use super::{run_error, Failed};
use crate::table::config::Stored;
use crate::table::ReceiptsTable;

/// Checks `file`; where the stack's destinations are known (`--stack`,
/// `--destinations`), also that every destination it names is one of them.
pub fn check(
    file: &Path,
    stack: Option<&DestinationSet>,
    out: &mut impl Write,
    problems: &mut impl Write,
) -> Result<(), Failed> {
    let routes = read(file, stack, problems)?;
    writeln!(out, "{}: {}", file.display(), summary(&routes)).map_err(run_error)?;
    Ok(())
}

/// The stack's destinations, as `--destinations` gives them.
pub fn destinations_given(raw: &str) -> Result<DestinationSet, Failed> {
    DestinationSet::parse(raw).map_err(|error| Failed::Usage(format!("--destinations {error}")))
}

/// The routes of `file`, or every problem of it (with `stack`, a
/// destination it lacks too) on `problems`.
fn read(
    file: &Path,
    stack: Option<&DestinationSet>,
    problems: &mut impl Write,
) -> Result<Routes, Failed> {
    let shown = file.display();
    let text = std::fs::read_to_string(file)
        .map_err(|error| Failed::Usage(format!("cannot read {shown}: {error}")))?;
    let checked = routes::parse(&text).and_then(|routes| match stack {
        Some(stack) => routes.check_destinations(stack).map(|()| routes),
        None => Ok(routes),
    });
    checked.or_else(|found| {
        for problem in &found {
            writeln!(problems, "{shown}: {problem}").map_err(run_error)?;
        }
        Err(Failed::Run(format!(
            "{shown} has {} problem{}, each named above",
            found.len(),
            if found.len() == 1 { "" } else { "s" }
        )))
    })
}

pub async fn apply(
    table: &ReceiptsTable,
    file: &Path,
    (dry_run, stack): (bool, Option<&DestinationSet>),
    now: SystemTime,
    out: &mut impl Write,
) -> Result<(), Failed> {
    let routes = read(file, stack, &mut std::io::stderr().lock())?;
    let current = table.routes().await.map_err(run_error)?;
    let before = current
        .as_ref()
        .map(|stored| stored.routes.clone())
        .unwrap_or_default();
    let changes = routes::changes(&before, &routes);
    if changes.is_empty() && current.is_some() {
        writeln!(out, "no change: the stored routes are {}", file.display()).map_err(run_error)?;
        return Ok(());
    }
    for line in &changes {
        writeln!(out, "{line}").map_err(run_error)?;
    }
    if dry_run {
        writeln!(out, "dry run: nothing stored").map_err(run_error)?;
        return Ok(());
    }
    let read_version = current.map(|stored| stored.version);
    match table
        .store_routes(&routes, read_version, &format_timestamp(now))
        .await
        .map_err(run_error)?
    {
        Stored::Version(version) => {
            writeln!(out, "stored as version {version}: {}", summary(&routes)).map_err(run_error)?;
            Ok(())
        }
        Stored::ChangedMeanwhile => Err(Failed::RunAgainLater(
            "someone stored other routes since they were read: nothing stored; run apply again to see their changes"
                .to_owned(),
        )),
    }
}

pub async fn show(table: &ReceiptsTable, out: &mut impl Write) -> Result<(), Failed> {
    let Some(stored) = table.routes().await.map_err(run_error)? else {
        writeln!(
            out,
            "no routes stored: every form uses the stack's FieldMap and no spam rule"
        )
        .map_err(run_error)?;
        return Ok(());
    };
    writeln!(
        out,
        "version {}, applied {}: {}",
        stored.version,
        stored.applied_at,
        summary(&stored.routes)
    )
    .map_err(run_error)?;
    for (index, route) in stored.routes.routes.iter().enumerate() {
        let name = route
            .name
            .as_ref()
            .map_or(format!("#{}", index + 1), |name| format!("{name:?}"));
        let fields: Vec<String> = route
            .fields
            .iter()
            .map(|(field, property)| format!("{field} -> {property}"))
            .collect();
        let set: Vec<&str> = route.set.keys().map(String::as_str).collect();
        writeln!(
            out,
            "route {name}: fields [{}], set [{}], {} more honeypot field(s), {} more blocked domain(s)",
            fields.join(", "),
            set.join(", "),
            route.spam.honeypot.len(),
            route.spam.block_email_domains.len(),
        )
        .map_err(run_error)?;
    }
    Ok(())
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
        let result = check(&file, None, &mut out, &mut err);
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
    fn a_destination_the_stack_lacks_is_a_problem_naming_its_route() {
        let dir = std::env::temp_dir().join(format!("routes-dest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("routes.toml");
        let text =
            "[[route]]\nform = \"f\"\nname = \"Newsletter\"\ndestinations = [\"mailchimp\"]\n";
        std::fs::write(&file, text).unwrap();
        let check_for = |raw: &str| {
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let stack = destinations_given(raw).unwrap();
            let result = check(&file, Some(&stack), &mut out, &mut err);
            (result.is_ok(), String::from_utf8(err).unwrap())
        };
        assert_eq!(check_for("hubspot,mailchimp"), (true, String::new()));
        let (ok, err) = check_for("hubspot");
        assert!(!ok);
        assert!(
            err.ends_with(": [[route]] \"Newsletter\": destinations: \"mailchimp\" is not a destination of this stack (DESTINATION=hubspot)\n"),
            "{err}"
        );
        std::fs::remove_file(&file).unwrap();
        assert!(matches!(
            destinations_given("hubspot,marketo"),
            Err(Failed::Usage(_))
        ));
    }

    #[test]
    fn a_missing_file_is_a_usage_error() {
        let mut sink = Vec::new();
        let result = check(
            Path::new("/nonexistent/routes.toml"),
            None,
            &mut sink,
            &mut Vec::new(),
        );
        assert!(
            matches!(result, Err(Failed::Usage(m)) if m.starts_with("cannot read /nonexistent/routes.toml"))
        );
    }
}
