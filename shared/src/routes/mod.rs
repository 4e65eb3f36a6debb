//! The routes file (`routes.toml`): per form, which CRM property gets which
//! form field, the constants every lead of the form carries, and spam
//! rules added to the stack's. Read whole and checked whole: every problem
//! is found, each said in one line that names its route and key, so a
//! person fixes the file in one pass.
//!
//! ```toml
//! [spam]
//! honeypot = ["website_url"]
//! block_email_domains = ["mailinator.com"]
//! max_links = 3
//!
//! [[route]]
//! form = "the sender's form id"
//! name = "Pricing page"
//! [route.fields]
//! company_size = "numemployees"
//! [route.set]
//! lead_source = "Pricing page"
//! [route.spam]
//! honeypot = ["fax"]
//! ```

use std::borrow::Cow;

use crate::spam::SpamRules;

mod destinations;
mod file;
mod model;

pub use crate::keys::{form_ref, CONFIG_KEY_PREFIX};
pub use file::{check, parse};
pub use model::{Route, RouteProblem, Routes};

/// The item that holds the routes in force, as `receipts routes apply`
/// stores them: `routes` (their JSON), `version` (one more at every
/// change, so two operators never overwrite each other) and `appliedAt`.
pub const ROUTES_KEY: &str = "config#routes";
/// How often both functions read the routes again, at most: the time
/// within which `receipts routes apply` takes effect without a deploy.
pub const ROUTES_REREAD: std::time::Duration = std::time::Duration::from_secs(300);
pub mod stored {
    pub const ROUTES: &str = "routes";
    pub const VERSION: &str = "version";
    pub const APPLIED_AT: &str = "appliedAt";
}

impl Routes {
    /// How a route is shown to an operator: by its name (`"Pricing page"`),
    /// else its place (`#2`); never by its form id, which for Static Forms
    /// is the form's apiKey.
    pub fn shown(&self, route: &Route) -> String {
        match &route.name {
            Some(name) => format!("{name:?}"),
            None => {
                let number = self.routes.iter().position(|r| r == route).unwrap_or(0) + 1;
                format!("#{number}")
            }
        }
    }

    /// The route of `form`, if it has one.
    pub fn route(&self, form: &str) -> Option<&Route> {
        self.routes.iter().find(|route| route.form == form)
    }

    /// The route of the form whose [`form_ref`] is `reference`: a hash per
    /// route, a handful per lead, far less than the CRM call it serves.
    pub fn route_by_ref(&self, reference: &str) -> Option<&Route> {
        self.routes
            .iter()
            .find(|route| form_ref(&route.form) == reference)
    }

    /// The spam rule `submission` breaks, if any: one rule for a webhook
    /// (ingest) and for a submission imported from the sender's own list,
    /// which is a delivery by another door.
    pub fn rule_broken_by(
        &self,
        submission: &crate::FormSubmission,
        received_at: std::time::SystemTime,
    ) -> Option<crate::spam::SpamRule> {
        let rules = self.spam_rules(submission.form_id());
        if rules.is_empty() {
            return None;
        }
        // When it was submitted: as the sender says, else when it came.
        let submitted_at = submission
            .sender
            .submitted_at(&submission.payload)
            .as_deref()
            .and_then(crate::time::parse_timestamp)
            .unwrap_or(received_at);
        rules.verdict(
            &submission.sender.answers(&submission.payload),
            submitted_at,
        )
    }

    /// The rules a submission of `form` is held to: the stack's, and its
    /// route's added to them. Borrowed when the form adds none, so the
    /// common delivery copies nothing.
    pub fn spam_rules(&self, form: Option<&str>) -> Cow<'_, SpamRules> {
        match form.and_then(|form| self.route(form)) {
            Some(route) if !route.spam.is_empty() => Cow::Owned(self.spam.with(&route.spam)),
            _ => Cow::Borrowed(&self.spam),
        }
    }
}

/// What changes when `new` replaces `old`, a line each, naming routes by
/// their name (or number) and never by form id (a Static Forms form id is
/// its apiKey): `+ route "Pricing page"`, `- route #2`,
/// `~ route "Pricing page": fields, set`, `~ spam rules for every form`.
pub fn changes(old: &Routes, new: &Routes) -> Vec<String> {
    let mut lines = Vec::new();
    if old.spam != new.spam {
        lines.push("~ spam rules for every form".to_owned());
    }
    let shown = |route: &Route, routes: &Routes| routes.shown(route);
    for route in &old.routes {
        if new.route(&route.form).is_none() {
            lines.push(format!("- route {}", shown(route, old)));
        }
    }
    for route in &new.routes {
        match old.route(&route.form) {
            None => lines.push(format!("+ route {}", shown(route, new))),
            Some(before) if before != route => {
                let parts: Vec<&str> = [
                    ("name", before.name != route.name),
                    ("fields", before.fields != route.fields),
                    ("set", before.set != route.set),
                    ("spam", before.spam != route.spam),
                    ("destinations", before.destinations != route.destinations),
                ]
                .into_iter()
                .filter_map(|(part, changed)| changed.then_some(part))
                .collect();
                lines.push(format!(
                    "~ route {}: {}",
                    shown(route, new),
                    parts.join(", ")
                ));
            }
            Some(_) => {}
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::file::NOT_A_PROPERTY;
    use super::*;
    use crate::consent::{Consent, ConsentStatus};
    use serde_json::Value;

    const EXAMPLE: &str = r#"
duplicate_window = "5m"

[spam]
honeypot = ["website_url"]
block_email_domains = ["mailinator.com"]
max_links = 3

[[route]]
form = "VwbNEw"
name = "Pricing page"
[route.fields]
company_size = "numemployees"
[route.set]
lead_source = "Pricing page"
score = 10
[route.spam]
honeypot = ["fax"]

[[route]]
form = "lT4Z3j"
thank_you_url = "https://example.com/thanks/contact"
tags = ["newsletter", "website"]
lists = [2, 7]
duplicate_window = "0s"
notify = false
notify_fields = ["plan"]
[route.consent]
field = "newsletter"
marketing_permission = "3c9a1b2e5f"
"#;

    fn problems(text: &str) -> Vec<String> {
        match parse(text) {
            Ok(routes) => panic!("accepted: {routes:?}"),
            Err(problems) => problems.iter().map(ToString::to_string).collect(),
        }
    }

    #[test]
    fn the_example_reads_whole() {
        let routes = parse(EXAMPLE).unwrap();
        assert_eq!(routes.spam.honeypot, ["website_url"]);
        assert_eq!(routes.spam.max_links, Some(3));
        let pricing = routes.route("VwbNEw").unwrap();
        assert_eq!(pricing.name.as_deref(), Some("Pricing page"));
        assert_eq!(pricing.fields["company_size"], "numemployees");
        assert_eq!(pricing.set["lead_source"], "Pricing page");
        assert_eq!(pricing.set["score"], 10);
        assert_eq!(
            routes.spam_rules(Some("VwbNEw")).honeypot,
            ["website_url", "fax"]
        );
        assert_eq!(routes.spam_rules(Some("lT4Z3j")).honeypot, ["website_url"]);
        assert_eq!(routes.spam_rules(None).honeypot, ["website_url"]);
        assert_eq!(routes.route("unknown"), None);
        assert_eq!(pricing.consent, None);
        assert_eq!(
            routes.route("lT4Z3j").unwrap().consent,
            Some(Consent {
                field: "newsletter".into(),
                status: ConsentStatus::Pending,
                marketing_permission: Some("3c9a1b2e5f".into()),
                subscription_id: None,
                legal_basis: None,
                explanation: None,
            }),
            "double opt-in unless the route says otherwise"
        );
        assert_eq!(
            routes.route("lT4Z3j").unwrap().tags,
            ["newsletter", "website"]
        );
        assert_eq!(routes.route("lT4Z3j").unwrap().lists, [2, 7]);
        assert_eq!(
            routes.duplicate_window.map(|w| w.duration().as_secs()),
            Some(300)
        );
        assert_eq!(pricing.duplicate_window, None, "the file's applies");
        assert!(routes
            .route("lT4Z3j")
            .unwrap()
            .duplicate_window
            .unwrap()
            .is_off());
        assert_eq!(routes.route("lT4Z3j").unwrap().notify, Some(false));
        assert_eq!(pricing.notify, None, "announced unless muted");
        assert_eq!(routes.route("lT4Z3j").unwrap().notify_fields, ["plan"]);
        assert!(pricing.notify_fields.is_empty(), "no answer unless named");
        assert_eq!(parse("").unwrap(), Routes::default());
    }

    #[test]
    fn changes_name_routes_never_form_ids() {
        let old = parse(EXAMPLE).unwrap();
        assert_eq!(changes(&old, &old), Vec::<String>::new());
        let new = parse(
            &EXAMPLE
                .replace("score = 10", "score = 11")
                .replace(
                    "[[route]]\nform = \"lT4Z3j\"\n",
                    "[[route]]\nform = \"w3\"\nname = \"Contact\"\n",
                )
                .replace("max_links = 3", "max_links = 2"),
        )
        .unwrap();
        assert_eq!(
            changes(&old, &new),
            [
                "~ spam rules for every form",
                "- route #2",
                "~ route \"Pricing page\": set",
                "+ route \"Contact\"",
            ]
        );
        assert_eq!(
            changes(&Routes::default(), &old),
            [
                "~ spam rules for every form",
                "+ route \"Pricing page\"",
                "+ route #2"
            ]
        );
        for line in changes(&old, &new) {
            assert!(
                !line.contains("VwbNEw") && !line.contains("lT4Z3j") && !line.contains("w3\""),
                "{line}"
            );
        }
    }

    /// The worker finds a receipt's route by the hash the receipt keeps,
    /// and the hash does not show the form id (a Static Forms apiKey).
    #[test]
    fn a_route_is_found_by_its_forms_ref() {
        let routes = parse(EXAMPLE).unwrap();
        let reference = form_ref("VwbNEw");
        assert_eq!(reference.len(), 16);
        assert!(reference.bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(!reference.contains("VwbNEw"));
        assert_eq!(form_ref("VwbNEw"), reference, "the same form, the same ref");
        assert_ne!(form_ref("VwbNEx"), reference);
        assert_eq!(
            routes
                .route_by_ref(&reference)
                .and_then(|r| r.name.as_deref()),
            Some("Pricing page")
        );
        assert_eq!(routes.route_by_ref(&form_ref("another")), None);
        assert_eq!(Routes::default().route_by_ref(&reference), None);
    }

    #[test]
    fn stored_routes_read_back_whole() {
        let routes = parse(EXAMPLE).unwrap();
        let text = serde_json::to_string(&routes).unwrap();
        assert_eq!(serde_json::from_str::<Routes>(&text).unwrap(), routes);
    }

    #[test]
    fn the_example_in_the_repository_reads() {
        let example = include_str!("../../../routes.example.toml");
        let routes = parse(example).unwrap_or_else(|problems| panic!("{problems:?}"));
        assert!(!routes.routes.is_empty());
    }

    #[test]
    fn every_problem_is_named_by_route_and_key() {
        let rows: [(&str, &[&str]); 26] = [
            (
                "[[route]]\nform = \"f\"\nthank_you_url = \"http://evil.example/t\"\n",
                &["[[route]] #1: thank_you_url: must be an https address (a page on one of the stack's allowed origins)"],
            ),
            (
                "[[route]]\nform = \"f\"\nnotify = \"no\"\n",
                &["[[route]] #1: notify: must be true or false"],
            ),
            (
                "[[route]]\nform = \"f\"\nnotify_fields = [\"\"]\n",
                &["[[route]] #1: notify_fields: must be a list of field names that are not empty"],
            ),
            (
                "duplicate_window = 120\n",
                &[r#"the file: duplicate_window: must be a duration such as "2m", "90s" or "1h" ("0s" turns it off), at most a day"#],
            ),
            (
                "[[route]]\nform = \"f\"\nduplicate_window = \"2d\"\n",
                &[r#"[[route]] #1: duplicate_window: must be a duration such as "2m", "90s" or "1h" ("0s" turns it off), at most a day"#],
            ),
            (
                "[[route]]\nform = \"f\"\ntags = [\"a\", \"a\", 3]\n",
                &[
                    r#"[[route]] #1: tags: "a" is listed twice"#,
                    "[[route]] #1: tags: each tag must be a text of 1 to 100 characters",
                ],
            ),
            (
                "[[route]]\nform = \"f\"\nlists = [2, 2, 0, \"7\", 1000000001]\n",
                &[
                    "[[route]] #1: lists: 2 is listed twice",
                    "[[route]] #1: lists: each list is its id, a whole number from 1 (Contacts > Lists: the number beside its name)",
                    "[[route]] #1: lists: each list is its id, a whole number from 1 (Contacts > Lists: the number beside its name)",
                    "[[route]] #1: lists: each list is its id, a whole number from 1 (Contacts > Lists: the number beside its name)",
                ],
            ),
            (
                "[[route]]\nform = \"f\"\nlists = 2\n",
                &["[[route]] #1: lists: must be a list of list ids: lists = [2, 7]"],
            ),
            (
                "[[route]]\nform = \"f\"\n[route.consent]\nfield = \"news\"\nmarketing_permission = \"a b\"\n",
                &["[[route]] #1: consent.marketing_permission: must be a marketing permission's id (letters and digits)"],
            ),
            (
                "[[route]]\nform = \"f\"\n[route.consent]\nstatus = \"subscribed\"\n",
                &["[[route]] #1: consent.field: must name the form's consent checkbox"],
            ),
            (
                "[[route]]\nform = \"f\"\n[route.consent]\nfield = \"news\"\nstatus = \"opted-in\"\n",
                &[r#"[[route]] #1: consent.status: must be "pending" (double opt-in) or "subscribed""#],
            ),
            (
                "[[route]]\nform = \"f\"\nconsent = \"news\"\n",
                &["[[route]] #1: consent: must be a table: [route.consent] with field and status"],
            ),
            (
                "[[route]]\nname = \"Pricing page\"\nform = \"\"\n",
                &[r#"[[route]] #1 "Pricing page": form: is empty"#],
            ),
            (
                "[[route]]\nform = 5\n",
                &["[[route]] #1: form: must be text (the sender's form id)"],
            ),
            (
                "[[route]]\nname = \"A\"\n",
                &[r#"[[route]] #1 "A": form: is missing (the sender's form id)"#],
            ),
            (
                "[[route]]\nform = \"f\"\n[[route]]\nform = \"f\"\nname = \"Again\"\n",
                &[r#"[[route]] #2 "Again": form: route #1 is for this form already"#],
            ),
            (
                "[[route]]\nform = \"f\"\nfrom = \"typo\"\n",
                &["[[route]] #1: from: unknown key: a route has form, name, destinations, fields, set, spam, lead, consent, tags, lists, duplicate_window, notify, notify_fields and thank_you_url"],
            ),
            (
                "[[route]]\nform = \"f\"\n[route.fields]\nsize = \"numemployees\"\nemployees = \"numemployees\"\n",
                &[r#"[[route]] #1: fields.size: property "numemployees" gets field "employees" already"#],
            ),
            (
                "[[route]]\nform = \"f\"\n[route.fields]\nsize = \"numemployees\"\n[route.set]\nnumemployees = 5\n",
                &[r#"[[route]] #1: set.numemployees: property "numemployees" gets field "size" already"#],
            ),
            (
                "[[route]]\nform = \"f\"\n[route.fields]\nsize = 3\n[route.set]\nwhen = 2026-12-01\n",
                &[
                    "[[route]] #1: fields.size: must be a CRM property's internal name: letters, digits and _, at most 100",
                    "[[route]] #1: set.when: must be text, a number, true or false, or a list of them",
                ],
            ),
            (
                "[[route]]\nform = \"f\"\n[route.fields]\nsize = \"Company size\"\n[route.set]\n\"Lead source\" = \"x\"\n",
                &[
                    "[[route]] #1: fields.size: must be a CRM property's internal name: letters, digits and _, at most 100",
                    "[[route]] #1: set.Lead source: must be a CRM property's internal name: letters, digits and _, at most 100",
                ],
            ),
            (
                "[[route]]\nform = \"f\"\n[route.set]\nemail = \"sales@example.com\"\n",
                &["[[route]] #1: set.email: is the person's own field; a constant would give every lead the same"],
            ),
            (
                "[spam]\nhoneypot = \"website\"\nmax_links = -1\ncaptcha = true\n",
                &[
                    "[spam]: captcha: unknown key: spam rules are honeypot, block_email_domains, max_links, min_fill_seconds and render_time_field",
                    "[spam]: honeypot: must be a list of texts that are not empty",
                    "[spam]: max_links: must be a whole number, 0 or more",
                ],
            ),
            (
                "[spam]\nmin_fill_seconds = 0\nrender_time_field = \" \"\n",
                &[
                    "[spam]: min_fill_seconds: must be a whole number of seconds, 1 to 3600",
                    "[spam]: render_time_field: must be a field's name",
                ],
            ),
            (
                "[spam]\nmin_fill_seconds = 3\n[[route]]\nform = \"f\"\nname = \"N\"\n[route.spam]\nmin_fill_seconds = 5\n",
                &[
                    "[spam]: min_fill_seconds: needs render_time_field, the hidden field the page fills with its render time (here or in [spam])",
                    "[[route]] #1 \"N\" spam: min_fill_seconds: needs render_time_field, the hidden field the page fills with its render time (here or in [spam])",
                ],
            ),
            (
                "spam = 1\nroutes = []\n",
                &[
                    "the file: routes: unknown key: the file holds destinations, duplicate_window, [spam] and [[route]]",
                    "the file: spam: must be a table ([spam])",
                ],
            ),
        ];
        for (text, expected) in rows {
            assert_eq!(problems(text), expected, "{text}");
        }
    }

    #[test]
    fn a_routes_own_spam_rules_are_checked_too() {
        assert_eq!(
            problems("[[route]]\nform = \"f\"\nname = \"N\"\n[route.spam]\nblock_email_domains = [\"\"]\n"),
            [r#"[[route]] #1 "N" spam: block_email_domains: must be a list of texts that are not empty"#]
        );
    }

    #[test]
    fn a_file_that_is_no_toml_is_one_line_with_its_place() {
        let said = problems("[[route]]\nform = \"f\"\nname = \"unterminated\n");
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].starts_with("the file: line 3: "), "{said:?}");
        assert!(!said[0].contains('\n'), "{said:?}");
        let twice = problems("[[route]]\nform = \"f\"\nform = \"g\"\n");
        assert!(twice[0].starts_with("the file: line 3: "), "{twice:?}");
    }

    /// Stored routes are held to the file's rules: what a file may hold
    /// passes, what `routes check` would refuse is refused with the same
    /// words.
    #[test]
    fn stored_routes_are_held_to_the_files_rules() {
        assert_eq!(check(&parse(EXAMPLE).unwrap()), Ok(()));
        assert_eq!(check(&Routes::default()), Ok(()));
        let mut bad = parse(EXAMPLE).unwrap();
        bad.routes[0]
            .fields
            .insert("budget".to_owned(), "not a property!".to_owned());
        bad.routes[0].set.insert(
            "email".to_owned(),
            Value::String("x@example.com".to_owned()),
        );
        let problems: Vec<String> = check(&bad)
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            problems,
            [
                format!("[[route]] #1 \"Pricing page\": fields.budget: {NOT_A_PROPERTY}"),
                "[[route]] #1 \"Pricing page\": set.email: is the person's own field; a constant would give every lead the same".to_owned(),
            ]
        );
        let mut twice = parse(EXAMPLE).unwrap();
        twice.routes[1].form = twice.routes[0].form.clone();
        assert!(check(&twice).is_err());
        let mut null = parse(EXAMPLE).unwrap();
        null.routes[0]
            .set
            .insert("tags".to_owned(), serde_json::json!(["a", null]));
        assert!(check(&null).is_err());
    }
}
