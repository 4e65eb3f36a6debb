//! `FIELD_MAP`: which CRM property gets which form field, for every CRM
//! destination that maps fields (each declares its default map beside its
//! settings). A JSON object from CRM property name
//! to form field name; a value starting with `=` is a literal, e.g.
//! `{"email":"email","firstname":"firstName","hs_lead_status":"=NEW"}`.
//!
//! Only mapped properties are sent: a CRM such as HubSpot refuses a whole
//! batch for one property it does not know, so a form field nobody mapped
//! never becomes a property of its own. It is not dropped either: the value
//! `*` ([`Source::MessageAndRest`]) is the message followed by a
//! `name: value` line for every form field no other entry reads, and every
//! CRM's default map sends it to a property every account has, so the
//! person reading the lead sees everything the form sent. A form field the submission lacks is left out too, so an update
//! never blanks a property the CRM already holds.

use serde_json::{Map, Value};

/// The variable that holds a CRM's field map (JSON).
pub const FIELD_MAP: &str = "FIELD_MAP";

use crate::lead::Lead;
use crate::routes::Route;

pub use crate::fields::is_property_name;

/// Where a CRM property's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A form field, by its name in the submission (`name`, `email`,
    /// `message`, or any other field).
    Field(String),
    /// The same text for every lead (`"=NEW"`).
    Literal(String),
    /// `firstName`, else `name` before its last space (`Ada` of `Ada
    /// Lovelace`), else all of `name`.
    FirstName,
    /// `lastName`, else `name` after its last space, else nothing.
    LastName,
    /// `*`: the message, then a `name: value` line for every form field no
    /// other entry of the map reads; at most [`MAX_TEXT_CHARS`].
    MessageAndRest,
}

/// The longest text `*` gives: the smallest of the CRMs' long text
/// properties holds 32,000 characters; a longer one is cut.
pub const MAX_TEXT_CHARS: usize = 32_000;

#[derive(Debug, Clone)]
pub struct FieldMap {
    /// In the order given, so requests and tests are stable.
    entries: Vec<(String, Source)>,
    /// Values for properties the CRM requires, used when the map gives
    /// none (`with_fallbacks`).
    fallbacks: Vec<(String, String)>,
    /// Where the map came from, for an error that names a property of it:
    /// `FIELD_MAP`, or a destination's default mapping.
    origin: &'static str,
}

/// Two maps are the same when they send the same: where each came from
/// is only for messages.
impl PartialEq for FieldMap {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries && self.fallbacks == other.fallbacks
    }
}

impl Eq for FieldMap {}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldMapError {
    /// SAM's `--parameter-overrides` cuts an unquoted `FieldMap={...}` at
    /// its first quote, leaving `{`: the message says how to quote it.
    #[error("is not a JSON object of property names to form field names (with sam deploy, quote the FieldMap parameter whole: FieldMap='{{\"email\":\"email\"}}')")]
    NotAnObject,
    #[error("maps property {0:?} to something other than a text")]
    NotText(String),
    #[error("has an empty property name or form field name")]
    Empty,
    #[error("maps property {0:?} twice")]
    Repeated(String),
}

impl FieldMap {
    /// A destination's own default mapping.
    pub fn new(entries: Vec<(String, Source)>) -> Self {
        FieldMap {
            entries,
            fallbacks: Vec::new(),
            origin: "the default mapping",
        }
    }

    /// Parses `FIELD_MAP`. Errors never quote a value (a literal could be
    /// something the user considers private); the caller adds the variable.
    pub fn parse(text: &str) -> Result<Self, FieldMapError> {
        // Read as a list of pairs first: a JSON object parsed into a map
        // would drop a repeated key silently.
        let pairs: Vec<(String, Value)> = serde_json::from_str::<PairList>(text)
            .map_err(|_| FieldMapError::NotAnObject)?
            .0;
        let mut entries: Vec<(String, Source)> = Vec::with_capacity(pairs.len());
        for (property, value) in pairs {
            let Value::String(field) = value else {
                return Err(FieldMapError::NotText(property));
            };
            let source = match field.strip_prefix('=') {
                Some(literal) => Source::Literal(literal.to_owned()),
                None if field.trim() == "*" => Source::MessageAndRest,
                None => Source::Field(field.trim().to_owned()),
            };
            let property = property.trim().to_owned();
            if property.is_empty() || source == Source::Field(String::new()) {
                return Err(FieldMapError::Empty);
            }
            if entries.iter().any(|(known, _)| *known == property) {
                return Err(FieldMapError::Repeated(property));
            }
            entries.push((property, source));
        }
        Ok(FieldMap {
            origin: FIELD_MAP,
            ..FieldMap::new(entries)
        })
    }

    /// Values for properties the CRM requires, sent when the map gives
    /// none (a CRM object with required fields).
    pub fn with_fallbacks(mut self, fallbacks: &[(&str, &str)]) -> Self {
        self.fallbacks = fallbacks
            .iter()
            .map(|(property, value)| ((*property).to_owned(), (*value).to_owned()))
            .collect();
        self
    }

    /// The CRM properties this map can send, in order.
    pub fn properties(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(property, _)| property.as_str())
    }

    pub fn entries(&self) -> &[(String, Source)] {
        &self.entries
    }

    /// The CRM properties of `lead`: mapped ones only, and only those with
    /// a non-blank value; by its form's route's map when it has one.
    pub fn apply(&self, lead: &Lead) -> Map<String, Value> {
        match lead.route.as_deref() {
            Some(route) if !(route.fields.is_empty() && route.set.is_empty()) => {
                self.routed(route).apply_own(lead)
            }
            _ => self.apply_own(lead),
        }
    }

    /// What a submission's note holds: the message, a blank line, then
    /// `name: value` for each form field this map (by the lead's route,
    /// where it has one) sends nowhere else; cut at [`MAX_TEXT_CHARS`].
    pub fn history_text(&self, lead: &Lead) -> String {
        match lead.route.as_deref() {
            Some(route) if !(route.fields.is_empty() && route.set.is_empty()) => {
                self.routed(route).message_and_rest(lead)
            }
            _ => self.message_and_rest(lead),
        }
    }

    /// This map with a route's: each of its `fields` and `set` entries
    /// replaces the entry for the same property, or follows the others.
    pub fn routed(&self, route: &Route) -> FieldMap {
        let mut map = self.clone();
        let fields = route
            .fields
            .iter()
            .map(|(field, property)| (property, Source::Field(field.clone())));
        let set = route
            .set
            .iter()
            .map(|(property, value)| (property, Source::Literal(literal_text(value))));
        for (property, source) in fields.chain(set) {
            match map.entries.iter_mut().find(|(known, _)| known == property) {
                Some(entry) => entry.1 = source,
                None => map.entries.push((property.clone(), source)),
            }
        }
        map
    }

    fn apply_own(&self, lead: &Lead) -> Map<String, Value> {
        let mut properties = Map::new();
        for (property, source) in &self.entries {
            let value = match source {
                Source::Literal(text) => Some(text.clone()),
                Source::Field(name) => field(lead, name),
                Source::FirstName => field(lead, "firstName").or_else(|| split_name(lead).0),
                Source::LastName => field(lead, "lastName").or_else(|| split_name(lead).1),
                Source::MessageAndRest => Some(self.message_and_rest(lead)),
            };
            if let Some(value) = value.filter(|v| !v.trim().is_empty()) {
                properties.insert(property.clone(), Value::String(value));
            }
        }
        for (property, value) in &self.fallbacks {
            if !properties.contains_key(property) {
                properties.insert(property.clone(), Value::String(value.clone()));
            }
        }
        properties
    }
}

impl FieldMap {
    /// Whether an entry other than `*` reads the form field `name` of
    /// `lead` (by its name, or by another of its names).
    fn reads(&self, lead: &Lead, name: &str) -> bool {
        self.entries.iter().any(|(_, source)| match source {
            Source::Field(read) => {
                read == name
                    || lead
                        .aliases
                        .iter()
                        .any(|(alias, known)| alias == read && known == name)
            }
            Source::FirstName => matches!(name, "firstName" | "name"),
            Source::LastName => matches!(name, "lastName" | "name"),
            Source::Literal(_) | Source::MessageAndRest => false,
        })
    }

    /// The message, a blank line, then `name: value` for each form field
    /// nothing else reads (the name and address first, then the rest in
    /// name order); cut at [`MAX_TEXT_CHARS`].
    fn message_and_rest(&self, lead: &Lead) -> String {
        let mut lines = Vec::new();
        for (name, value) in [("name", &lead.name), ("email", &lead.email)] {
            if !self.reads(lead, name) && !value.trim().is_empty() {
                lines.push(format!("{name}: {}", value.trim()));
            }
        }
        // A route's constants are in the fields too, but the form never
        // sent them.
        let constants = lead.route.as_deref().map(|route| &route.set);
        for name in lead.fields.keys() {
            if !self.reads(lead, name) && !constants.is_some_and(|set| set.contains_key(name)) {
                if let Some(value) = field(lead, name) {
                    lines.push(format!("{name}: {value}"));
                }
            }
        }
        let message = lead.message.trim();
        let text = match (message.is_empty(), lines.is_empty()) {
            (_, true) => message.to_owned(),
            (true, false) => lines.join("\n"),
            (false, false) => format!("{message}\n\n{}", lines.join("\n")),
        };
        if text.chars().count() <= MAX_TEXT_CHARS {
            return text;
        }
        let cut = text
            .char_indices()
            .nth(MAX_TEXT_CHARS - 1)
            .map_or(text.len(), |(at, _)| at);
        format!("{}…", &text[..cut])
    }
}

/// A form field of the lead as text: its own fields first, then the rest.
fn field(lead: &Lead, name: &str) -> Option<String> {
    let own = match name {
        "name" => Some(&lead.name),
        "email" => Some(&lead.email),
        "message" => Some(&lead.message),
        _ => None,
    };
    if let Some(text) = own {
        return Some(text.trim().to_owned()).filter(|t| !t.is_empty());
    }
    let value = lead.fields.get(name).or_else(|| {
        // Another name of an answer (a Tally key, a Typeform ref or id).
        let (_, known) = lead.aliases.iter().find(|(alias, _)| alias == name)?;
        lead.fields.get(known)
    });
    match value? {
        Value::String(text) => Some(text.trim().to_owned()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
    .filter(|t| !t.is_empty())
}

/// A route's constant as a CRM property's text: text as it is, a number or
/// `true`/`false` as written, a list's items joined by `;` (how HubSpot and
/// Salesforce take several values of one multi-select property).
fn literal_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(items) => items.iter().map(literal_text).collect::<Vec<_>>().join(";"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `name` split at its last space: (first, last); a single word is all
/// first name.
fn split_name(lead: &Lead) -> (Option<String>, Option<String>) {
    let name = lead.name.trim();
    match name.rsplit_once(char::is_whitespace) {
        Some((first, last)) => (Some(first.trim().to_owned()), Some(last.trim().to_owned())),
        None if name.is_empty() => (None, None),
        None => (Some(name.to_owned()), None),
    }
}

/// A JSON object read as its pairs, in order, repeats kept.
struct PairList(Vec<(String, Value)>);

impl<'de> serde::Deserialize<'de> for PairList {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Pairs;
        impl<'de> serde::de::Visitor<'de> for Pairs {
            type Value = PairList;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<PairList, A::Error> {
                let mut pairs = Vec::new();
                while let Some(pair) = map.next_entry::<String, Value>()? {
                    pairs.push(pair);
                }
                Ok(PairList(pairs))
            }
        }
        deserializer.deserialize_map(Pairs)
    }
}

/// Where a property a lead sends came from, for an error that names it (a
/// CRM without that property): its route by name (`route "Pricing page"`,
/// or `a route without a name`), else the stack's `FIELD_MAP`; `None` when
/// neither names it (a default mapping, an id property).
pub fn property_source(property: &str, route: Option<&Route>, map: &FieldMap) -> Option<String> {
    if let Some(route) = route {
        let in_route = route.set.contains_key(property)
            || route.fields.values().any(|mapped| mapped == property);
        if in_route {
            return Some(match &route.name {
                Some(name) => format!("route {name:?}"),
                None => "a route without a name".to_owned(),
            });
        }
    }
    map.properties()
        .any(|mapped| mapped == property)
        .then(|| map.origin.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lead(name: &str, email: &str, fields: Value) -> Lead {
        Lead {
            external_id: "sub_1".into(),
            name: name.into(),
            email: email.into(),
            message: "Please call".into(),
            fields: fields.as_object().cloned().unwrap_or_default(),
            aliases: Vec::new(),
            received_at: "2026-11-30T08:00:00.000Z".into(),
            submitted_at: None,
            sender_time_replaced: false,
            route: None,
        }
    }

    /// `FIELD_MAP`'s text, and the entries or error it gives.
    type ParseCase = (
        &'static str,
        Result<Vec<(&'static str, Source)>, FieldMapError>,
    );

    #[test]
    fn parsing() {
        let rows: Vec<ParseCase> = vec![
            (
                r#"{"email":"email","firstname":"firstName","hs_lead_status":"=NEW"}"#,
                Ok(vec![
                    ("email", Source::Field("email".into())),
                    ("firstname", Source::Field("firstName".into())),
                    ("hs_lead_status", Source::Literal("NEW".into())),
                ]),
            ),
            (
                r#"{" company ":" company "}"#,
                Ok(vec![("company", Source::Field("company".into()))]),
            ),
            (
                r#"{"source":"="}"#,
                Ok(vec![("source", Source::Literal(String::new()))]),
            ),
            ("{}", Ok(vec![])),
            ("[]", Err(FieldMapError::NotAnObject)),
            ("email=email", Err(FieldMapError::NotAnObject)),
            (
                r#"{"email":1}"#,
                Err(FieldMapError::NotText("email".into())),
            ),
            (
                r#"{"email":null}"#,
                Err(FieldMapError::NotText("email".into())),
            ),
            (r#"{"":"email"}"#, Err(FieldMapError::Empty)),
            (r#"{"email":"  "}"#, Err(FieldMapError::Empty)),
            (
                r#"{"email":"email","email":"mail"}"#,
                Err(FieldMapError::Repeated("email".into())),
            ),
        ];
        for (text, expected) in rows {
            let parsed = FieldMap::parse(text);
            let expected = expected.map(|entries| {
                FieldMap::new(
                    entries
                        .into_iter()
                        .map(|(p, s)| (p.to_owned(), s))
                        .collect(),
                )
            });
            assert_eq!(parsed, expected, "{text}");
        }
    }

    /// A Tally key or a Typeform ref names the answer it belongs to; a
    /// field name wins over an alias of another field.
    #[test]
    fn a_field_may_be_named_by_another_of_its_names() {
        let mut with_aliases = lead(
            "Ada",
            "ada@example.com",
            json!({"Plan": "Business", "question_9": "own"}),
        );
        with_aliases.aliases = vec![
            ("question_3qL4Gm".into(), "Plan".into()),
            ("question_9".into(), "Plan".into()),
        ];
        let map = FieldMap::parse(r#"{"plan":"question_3qL4Gm","by_label":"Plan","own":"question_9","none":"question_0"}"#).unwrap();
        let properties = map.apply(&with_aliases);
        assert_eq!(properties["plan"], "Business");
        assert_eq!(properties["by_label"], "Business");
        assert_eq!(properties["own"], "own");
        assert!(!properties.contains_key("none"));
    }

    #[test]
    fn applying() {
        let map = FieldMap::new(vec![
            ("email".into(), Source::Field("email".into())),
            ("firstname".into(), Source::FirstName),
            ("lastname".into(), Source::LastName),
            ("phone".into(), Source::Field("phone".into())),
            ("seats".into(), Source::Field("seats".into())),
            ("hs_lead_status".into(), Source::Literal("NEW".into())),
            ("notes".into(), Source::Field("message".into())),
        ]);
        let rows = [
            (
                lead(
                    "Ada King Lovelace",
                    "ada@example.com",
                    json!({"phone": "555", "seats": 3, "unmapped": "x"}),
                ),
                json!({"email": "ada@example.com", "firstname": "Ada King", "lastname": "Lovelace", "phone": "555", "seats": "3", "hs_lead_status": "NEW", "notes": "Please call"}),
            ),
            (
                lead(
                    "ignored",
                    "a@b.c",
                    json!({"firstName": "Grace", "lastName": "Hopper"}),
                ),
                json!({"email": "a@b.c", "firstname": "Grace", "lastname": "Hopper", "hs_lead_status": "NEW", "notes": "Please call"}),
            ),
            (
                lead("Prince", "", json!({"phone": "  ", "seats": null})),
                json!({"firstname": "Prince", "hs_lead_status": "NEW", "notes": "Please call"}),
            ),
            (
                lead("", "", json!({})),
                json!({"hs_lead_status": "NEW", "notes": "Please call"}),
            ),
        ];
        for (lead, expected) in rows {
            assert_eq!(Value::Object(map.apply(&lead)), expected, "{}", lead.name);
        }
    }

    /// `*`: the message, then every form field nothing else reads, so no
    /// field the form sent is lost; a mapped field is not repeated.
    #[test]
    fn the_rest_goes_with_the_message() {
        assert_eq!(
            FieldMap::parse(r#"{"Description":" * ","Email":"email"}"#)
                .unwrap()
                .entries()[0]
                .1,
            Source::MessageAndRest
        );
        let map = FieldMap::parse(r#"{"email":"email","plan":"question_3","notes":"*"}"#).unwrap();
        let mut ada = lead(
            "Ada Lovelace",
            "ada@example.com",
            json!({"Plan": "Business", "budget": 5000, "blank": " ", "none": null}),
        );
        ada.aliases = vec![("question_3".into(), "Plan".into())];
        assert_eq!(
            map.apply(&ada)["notes"],
            "Please call\n\nname: Ada Lovelace\nbudget: 5000",
            "the name, unread, and budget; Plan is read by its alias"
        );
        ada.message = String::new();
        assert_eq!(map.apply(&ada)["notes"], "name: Ada Lovelace\nbudget: 5000");
        let only_message = lead("", "", json!({}));
        assert_eq!(map.apply(&only_message)["notes"], "Please call");
        let mut long = lead("", "", json!({}));
        long.message = "é".repeat(MAX_TEXT_CHARS + 10);
        let cut = map.apply(&long)["notes"].as_str().unwrap().to_owned();
        assert_eq!(cut.chars().count(), MAX_TEXT_CHARS);
        assert!(cut.ends_with('…'));
        long.message = "é".repeat(MAX_TEXT_CHARS);
        assert_eq!(
            map.apply(&long)["notes"].as_str().unwrap().chars().count(),
            MAX_TEXT_CHARS,
            "exactly the limit is kept whole"
        );
    }

    /// A form's route adds to the stack's map for its leads only: a
    /// `fields` entry or `set` constant replaces the stack's entry for the
    /// same property or follows the others; the route's fields and
    /// constants are not repeated under `*`.
    #[test]
    fn a_route_adds_to_the_map_for_its_forms_leads() {
        let map = FieldMap::parse(
            r#"{"email":"email","lifecyclestage":"=lead","hs_lead_status":"=NEW","notes":"*"}"#,
        )
        .unwrap();
        let routes = crate::routes::parse(
            "[[route]]\nform = \"pricing\"\n[route.fields]\n\"Company size\" = \"numemployees\"\n\
             [route.set]\nlifecyclestage = \"opportunity\"\nlead_source = \"Pricing page\"\n\
             score = 10\ninterests = [\"pricing\", \"demo\"]\nvip = true\n\n\
             [[route]]\nform = \"spam-rules-only\"\n[route.spam]\nmax_links = 0\n",
        )
        .unwrap();
        let form = |answers: Value| {
            let mut lead = lead("Ada Lovelace", "ada@example.com", answers);
            lead.message = String::new();
            lead
        };
        let answers = json!({"Company size": "51-200", "budget": "5000", "lead_source": "typed by the person"});
        let mut routed = form(answers.clone());
        routed.follow(std::sync::Arc::new(routes.routes[0].clone()));
        let mut rules_only = form(answers.clone());
        rules_only.follow(std::sync::Arc::new(routes.routes[1].clone()));
        let rows = [
            (
                "the route's map",
                routed,
                json!({"email": "ada@example.com", "lifecyclestage": "opportunity", "hs_lead_status": "NEW",
                       "notes": "name: Ada Lovelace\nbudget: 5000",
                       "numemployees": "51-200", "interests": "pricing;demo", "lead_source": "Pricing page",
                       "score": "10", "vip": "true"}),
            ),
            (
                "a route with spam rules alone",
                rules_only,
                json!({"email": "ada@example.com", "lifecyclestage": "lead", "hs_lead_status": "NEW",
                       "notes": "name: Ada Lovelace\nCompany size: 51-200\nbudget: 5000\nlead_source: typed by the person"}),
            ),
            (
                "no route",
                form(answers),
                json!({"email": "ada@example.com", "lifecyclestage": "lead", "hs_lead_status": "NEW",
                       "notes": "name: Ada Lovelace\nCompany size: 51-200\nbudget: 5000\nlead_source: typed by the person"}),
            ),
        ];
        for (case, lead, expected) in rows {
            assert_eq!(Value::Object(map.apply(&lead)), expected, "{case}");
        }
    }

    #[test]
    fn errors_never_quote_a_value() {
        let error = FieldMap::parse(r#"{"email":{"secret":"s3cr3t"}}"#).unwrap_err();
        assert!(!error.to_string().contains("s3cr3t"), "{error}");
    }

    #[test]
    fn a_property_is_traced_to_the_route_or_the_map_that_sends_it() {
        let routes = crate::routes::parse(
            "[[route]]\nform = \"a\"\nname = \"Pricing page\"\n[route.fields]\nbudget = \"budget_range\"\n[route.set]\nlead_source = \"web\"\n[[route]]\nform = \"b\"\n[route.set]\nlead_source = \"b\"\n",
        )
        .unwrap();
        let map = FieldMap::parse(r#"{"company_size": "size"}"#).unwrap();
        let pricing = routes.route("a");
        let rows = [
            ("lead_source", pricing, Some("route \"Pricing page\"")),
            ("budget_range", pricing, Some("route \"Pricing page\"")),
            ("company_size", pricing, Some("FIELD_MAP")),
            ("company_size", None, Some("FIELD_MAP")),
            (
                "lead_source",
                routes.route("b"),
                Some("a route without a name"),
            ),
            ("firstname", pricing, None),
            ("firstname", None, None),
        ];
        let default = FieldMap::new(vec![(
            "phone".to_owned(),
            Source::Field("phone".to_owned()),
        )]);
        assert_eq!(
            property_source("phone", pricing, &default).as_deref(),
            Some("the default mapping")
        );
        for (property, route, source) in rows {
            assert_eq!(
                property_source(property, route, &map).as_deref(),
                source,
                "{property}"
            );
        }
    }
}
