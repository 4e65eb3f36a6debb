//! Which destinations a form's leads go to, in a stack of several: the
//! route's `destinations`, else the file's, else every destination of the
//! stack. A name the stack does not have is an error naming the route and
//! the destination (`check_destinations`): `receipts routes check --stack`
//! reports it, and a worker keeps its last good routes rather than take it.
//! So is a route key that means nothing to any destination a route (or
//! the file) names (`key_problems`): `tags` for a route to HubSpot alone.
//! A route naming no destinations, in a file naming none, keeps its keys
//! as it always did (each destination ignores those it does not take).

use super::model::{Route, RouteProblem, Routes};
use crate::destination::set::DestinationSet;
use crate::destination::{DestinationKind, RouteKey};

impl Routes {
    /// The destinations a lead of `route` (none: a form without one) goes
    /// to, by name; `None`: every destination of the stack.
    pub fn destinations_of<'a>(&'a self, route: Option<&'a Route>) -> Option<&'a [String]> {
        route
            .map(|route| route.destinations.as_slice())
            .filter(|names| !names.is_empty())
            .or(Some(self.destinations.as_slice()).filter(|names| !names.is_empty()))
    }

    /// Every route key that means nothing to any destination the route
    /// names (its own list, else the file's); none when neither names any.
    pub fn key_problems(&self) -> Vec<RouteProblem> {
        let mut problems = Vec::new();
        for route in &self.routes {
            let Some(names) = self.destinations_of(Some(route)) else {
                continue;
            };
            let kinds: Vec<DestinationKind> = names
                .iter()
                .filter_map(|name| DestinationKind::parse(name))
                .collect();
            let takes = |key: RouteKey| {
                kinds
                    .iter()
                    .any(|kind| kind.profile().route_keys.contains(&key))
            };
            let set = [
                (
                    "fields",
                    !route.fields.is_empty(),
                    kinds.iter().any(|k| k.profile().maps_fields),
                ),
                ("consent", route.consent.is_some(), takes(RouteKey::Consent)),
                ("tags", !route.tags.is_empty(), takes(RouteKey::Tags)),
                ("lists", !route.lists.is_empty(), takes(RouteKey::Lists)),
                ("lead", route.lead, takes(RouteKey::Lead)),
            ];
            for (key, given, taken) in set {
                if given && !taken {
                    problems.push(RouteProblem {
                        place: format!("[[route]] {}", self.shown(route)),
                        key: key.to_owned(),
                        problem: format!(
                            "means nothing to its destinations ({}); remove it or add one that takes it",
                            names.join(", ")
                        ),
                    });
                }
            }
        }
        problems
    }

    /// Every destination these routes name that `stack` does not have,
    /// each a problem naming its route (or the file) and the destination.
    pub fn check_destinations(&self, stack: &DestinationSet) -> Result<(), Vec<RouteProblem>> {
        let mut problems = Vec::new();
        let mut missing = |place: String, names: &[String]| {
            for name in names {
                if !stack.kinds().iter().any(|kind| kind.name() == name) {
                    problems.push(RouteProblem {
                        place: place.clone(),
                        key: "destinations".to_owned(),
                        problem: format!(
                            "{name:?} is not a destination of this stack (DESTINATION={stack})"
                        ),
                    });
                }
            }
        };
        missing("the file".to_owned(), &self.destinations);
        for route in &self.routes {
            missing(
                format!("[[route]] {}", self.shown(route)),
                &route.destinations,
            );
        }
        match problems.is_empty() {
            true => Ok(()),
            false => Err(problems),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::parse;

    const FILE: &str = r#"
destinations = ["hubspot", "dynamodb"]

[[route]]
form = "contact"
name = "Contact"

[[route]]
form = "newsletter"
name = "Newsletter"
destinations = ["mailchimp", "dynamodb"]
"#;

    #[test]
    fn a_route_chooses_else_the_file_else_every_destination() {
        let routes = parse(FILE).unwrap();
        let names = |form: &str| {
            routes
                .destinations_of(routes.route(form))
                .map(<[String]>::to_vec)
        };
        assert_eq!(
            names("contact"),
            Some(vec!["hubspot".into(), "dynamodb".into()])
        );
        assert_eq!(
            names("newsletter"),
            Some(vec!["mailchimp".into(), "dynamodb".into()])
        );
        assert_eq!(
            names("unrouted"),
            Some(vec!["hubspot".into(), "dynamodb".into()])
        );
        let every = parse("[[route]]\nform = \"f\"\n").unwrap();
        assert_eq!(every.destinations_of(every.route("f")), None);
        assert_eq!(every.destinations_of(None), None);
    }

    #[test]
    fn a_destination_the_stack_lacks_is_named_with_its_route() {
        let routes = parse(FILE).unwrap();
        let stack = |raw: &str| DestinationSet::parse(raw).unwrap();
        assert_eq!(
            routes.check_destinations(&stack("hubspot,mailchimp,dynamodb")),
            Ok(())
        );
        let problems: Vec<String> = routes
            .check_destinations(&stack("hubspot,dynamodb"))
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            problems,
            [
                r#"[[route]] "Newsletter": destinations: "mailchimp" is not a destination of this stack (DESTINATION=hubspot,dynamodb)"#
            ]
        );
        let problems = routes.check_destinations(&stack("mailchimp")).unwrap_err();
        let places: Vec<&str> = problems.iter().map(|p| p.place.as_str()).collect();
        assert_eq!(
            places,
            ["the file", "the file", r#"[[route]] "Newsletter""#],
            "{problems:?}"
        );
    }

    #[test]
    fn a_key_that_means_nothing_to_a_routes_destinations_is_refused() {
        let problems = |text: &str| -> Vec<String> {
            match parse(text) {
                Ok(_) => Vec::new(),
                Err(problems) => problems.iter().map(ToString::to_string).collect(),
            }
        };
        let route = |destinations: &str, key: &str| {
            format!(
                "[[route]]\nform = \"f\"\nname = \"R\"\ndestinations = [{destinations}]\n{key}\n"
            )
        };
        #[rustfmt::skip]
        let rows: [(String, &[&str]); 8] = [
            (route("\"hubspot\"", "tags = [\"t\"]"), &[r#"[[route]] "R": tags: means nothing to its destinations (hubspot); remove it or add one that takes it"#]),
            (route("\"hubspot\", \"mailchimp\"", "tags = [\"t\"]"), &[]),
            (route("\"mailchimp\"", "lead = true"), &[r#"[[route]] "R": lead: means nothing to its destinations (mailchimp); remove it or add one that takes it"#]),
            (route("\"pipedrive\"", "lead = true"), &[]),
            (route("\"mailchimp\"", "lists = [2]"), &[r#"[[route]] "R": lists: means nothing to its destinations (mailchimp); remove it or add one that takes it"#]),
            (route("\"http\", \"dynamodb\"", "[route.fields]\nplan = \"plan\""), &[r#"[[route]] "R": fields: means nothing to its destinations (http, dynamodb); remove it or add one that takes it"#]),
            (route("\"salesforce\"", "[route.consent]\nfield = \"news\""), &[r#"[[route]] "R": consent: means nothing to its destinations (salesforce); remove it or add one that takes it"#]),
            // No destinations named: the keys are kept, as before lists existed.
            ("[[route]]\nform = \"f\"\ntags = [\"t\"]\nlead = true\n".to_owned(), &[]),
        ];
        for (text, expected) in rows {
            assert_eq!(problems(&text), expected, "{text}");
        }
        let file_wide = "destinations = [\"hubspot\"]\n[[route]]\nform = \"f\"\ntags = [\"t\"]\n";
        assert_eq!(
            problems(file_wide).len(),
            1,
            "the file's list is the route's"
        );
    }

    #[test]
    fn a_destinations_list_is_checked_in_the_file() {
        let problems = |text: &str| -> Vec<String> {
            parse(text)
                .unwrap_err()
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        assert_eq!(
            problems("destinations = []"),
            [
                r#"the file: destinations: must be a list of one or more destinations: destinations = ["hubspot"]"#
            ]
        );
        assert_eq!(
            problems("destinations = [\"hubspot\", \"hubspot\"]"),
            [r#"the file: destinations: "hubspot" is listed twice"#]
        );
        let unknown = problems("[[route]]\nform = \"f\"\ndestinations = [\"marketo\"]\n");
        assert_eq!(unknown.len(), 1);
        assert!(
            unknown[0].starts_with("[[route]] #1: destinations: each must be a destination's name"),
            "{unknown:?}"
        );
        assert!(parse("destinations = \"hubspot\"").is_err());
    }
}
