//! The destinations of one stack: `DESTINATION` (and the template's
//! `Destination`) names one or more, comma-separated (`hubspot,mailchimp`).
//! One name alone is a stack as it always was. The order is the operator's
//! and is kept (logs and `receipts show` list lanes in it); a name listed
//! twice, an unknown one or an empty list is refused, naming it.

use std::fmt;

use super::DestinationKind;

/// One or more destinations, each kind at most once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestinationSet(Vec<DestinationKind>);

/// Why a list of destinations is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetError {
    #[error("names no destination; expected one or more of {names}, comma-separated", names = DestinationKind::names())]
    Empty,
    #[error("names an unknown destination `{0}`; expected {names}", names = DestinationKind::names())]
    Unknown(String),
    #[error("names {0} twice; a stack delivers to each destination once")]
    Twice(&'static str),
}

impl DestinationSet {
    /// The longest unknown name an error repeats: the value is the
    /// operator's configuration, but a message stays one line.
    const MAX_ECHO: usize = 40;

    /// `hubspot`, or `hubspot,mailchimp`: blanks around names are ignored,
    /// an empty item is not.
    pub fn parse(raw: &str) -> Result<Self, SetError> {
        if raw.trim().is_empty() {
            return Err(SetError::Empty);
        }
        let mut kinds = Vec::new();
        for name in raw.split(',') {
            let name = name.trim();
            let kind = DestinationKind::parse(name)
                .ok_or_else(|| SetError::Unknown(name.chars().take(Self::MAX_ECHO).collect()))?;
            if kinds.contains(&kind) {
                return Err(SetError::Twice(kind.name()));
            }
            kinds.push(kind);
        }
        Ok(DestinationSet(kinds))
    }

    /// A stack of one destination.
    pub fn one(kind: DestinationKind) -> Self {
        DestinationSet(vec![kind])
    }

    /// The kinds, in the order they were named.
    pub fn kinds(&self) -> &[DestinationKind] {
        &self.0
    }

    pub fn contains(&self, kind: DestinationKind) -> bool {
        self.0.contains(&kind)
    }

    /// Whether the stack has one destination only: then every receipt has
    /// one lane, stored exactly as before several existed.
    pub fn is_single(&self) -> bool {
        self.0.len() == 1
    }

    /// The first variable set (`get` answers it) that only destinations
    /// outside this set read: set, it says the stack was meant for another.
    pub fn foreign_variable(&self, get: &impl Fn(&str) -> Option<String>) -> Option<&'static str> {
        DestinationKind::ALL
            .into_iter()
            .filter(|other| !self.contains(*other))
            .flat_map(|other| {
                let mut all = other.profile().variables.to_vec();
                all.extend(other.shared_variables());
                all
            })
            .find(|variable| {
                !self.0.iter().any(|kind| kind.reads(variable)) && get(variable).is_some()
            })
    }
}

impl fmt::Display for DestinationSet {
    /// As `DESTINATION` names it: `hubspot,mailchimp`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|kind| kind.name()).collect();
        f.write_str(&names.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DestinationKind::*;

    #[test]
    fn a_list_of_destinations_parses_or_names_what_is_wrong() {
        let cases: &[(&str, Result<&[DestinationKind], SetError>)] = &[
            ("hubspot", Ok(&[HubSpot])),
            (" hubspot ", Ok(&[HubSpot])),
            ("hubspot,mailchimp", Ok(&[HubSpot, Mailchimp])),
            (
                "mailchimp, dynamodb ,http",
                Ok(&[Mailchimp, LeadsTable, Http]),
            ),
            ("", Err(SetError::Empty)),
            ("  ", Err(SetError::Empty)),
            ("hubspot,", Err(SetError::Unknown(String::new()))),
            ("hubspot,,mailchimp", Err(SetError::Unknown(String::new()))),
            ("hubspot,marketo", Err(SetError::Unknown("marketo".into()))),
            ("HubSpot", Err(SetError::Unknown("HubSpot".into()))),
            ("hubspot,mailchimp,hubspot", Err(SetError::Twice("hubspot"))),
        ];
        for (raw, expected) in cases {
            let parsed = DestinationSet::parse(raw);
            match expected {
                Ok(kinds) => assert_eq!(parsed.as_ref().map(|s| s.kinds()), Ok(*kinds), "{raw:?}"),
                Err(error) => assert_eq!(parsed.as_ref().err(), Some(error), "{raw:?}"),
            }
        }
    }

    #[test]
    fn an_unknown_name_is_echoed_short_and_the_list_round_trips() {
        let long = "x".repeat(500);
        let Err(SetError::Unknown(echoed)) = DestinationSet::parse(&long) else {
            panic!("refused");
        };
        assert_eq!(echoed.len(), DestinationSet::MAX_ECHO);
        let set = DestinationSet::parse("zoho , http").unwrap();
        assert_eq!(set.to_string(), "zoho,http");
        assert_eq!(DestinationSet::parse(&set.to_string()), Ok(set));
        assert!(DestinationSet::parse("http").unwrap().is_single());
    }

    #[test]
    fn a_variable_is_foreign_only_when_no_destination_of_the_set_reads_it() {
        let set = |raw: &str| DestinationSet::parse(raw).unwrap();
        for kind in DestinationKind::ALL {
            for variable in kind.profile().variables {
                let get = |name: &str| (name == *variable).then(|| "x".to_owned());
                assert_eq!(set(kind.name()).foreign_variable(&get), None, "{variable}");
                let others: Vec<&str> = DestinationKind::ALL
                    .into_iter()
                    .filter(|other| *other != kind && !other.reads(variable))
                    .map(|other| other.name())
                    .collect();
                for other in others {
                    assert_eq!(
                        set(other).foreign_variable(&get),
                        Some(*variable),
                        "{variable} for {other}"
                    );
                    let both = format!("{other},{}", kind.name());
                    assert_eq!(
                        set(&both).foreign_variable(&get),
                        None,
                        "{variable} for {both}"
                    );
                }
            }
        }
    }
}
