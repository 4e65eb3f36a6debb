//! Which destinations a form's leads go to, in a stack of several: the
//! route's `destinations`, else the file's, else every destination of the
//! stack. A name the stack does not have is an error naming the route and
//! the destination (`check_destinations`): `receipts routes check --stack`
//! reports it, and a worker keeps its last good routes rather than take it.

use super::model::{Route, RouteProblem, Routes};
use crate::destination::set::DestinationSet;

impl Routes {
    /// The destinations a lead of `route` (none: a form without one) goes
    /// to, by name; `None`: every destination of the stack.
    pub fn destinations_of<'a>(&'a self, route: Option<&'a Route>) -> Option<&'a [String]> {
        route
            .map(|route| route.destinations.as_slice())
            .filter(|names| !names.is_empty())
            .or(Some(self.destinations.as_slice()).filter(|names| !names.is_empty()))
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
