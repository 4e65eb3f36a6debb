//! Reading a routes file: its TOML checked whole, every problem named
//! with its route and key; and stored routes held to the same rules.

use std::collections::BTreeMap;

use serde_json::Value;
use toml::Table;

use super::model::{Route, RouteProblem, Routes};
use crate::duplicate_window::Window;
use crate::spam::SpamRules;

mod consent;
mod destinations;
mod spam;

/// Reads a routes file, or says everything wrong with it.
pub fn parse(text: &str) -> Result<Routes, Vec<RouteProblem>> {
    let table: Table = match text.parse() {
        Ok(table) => table,
        Err(error) => {
            let line = error
                .span()
                .map(|span| text.get(..span.start).unwrap_or(text).matches('\n').count() + 1);
            return Err(vec![RouteProblem {
                place: "the file".to_owned(),
                key: line.map_or("TOML".to_owned(), |line| format!("line {line}")),
                problem: error.message().trim().to_owned(),
            }]);
        }
    };
    read_table(&table)
}

/// Holds stored routes (read back from the table, where anyone with write
/// access to its item could have put them) to the very rules `parse`
/// applies to a file: `routes check`'s. A route's `fields` and `set` go to
/// the CRM and its spam rules decide what is held back, so both functions
/// keep the last good routes rather than take ones that break them.
pub fn check(routes: &Routes) -> Result<(), Vec<RouteProblem>> {
    let refused = |problem: &str| {
        vec![RouteProblem {
            place: "the stored routes".to_owned(),
            key: "routes".to_owned(),
            problem: problem.to_owned(),
        }]
    };
    let Ok(mut json) = serde_json::to_value(routes) else {
        return Err(refused("cannot be written as a routes file"));
    };
    // The file names its array of routes `route` ([[route]]).
    if let Some(object) = json.as_object_mut() {
        if let Some(entries) = object.remove("routes") {
            object.insert("route".to_owned(), entries);
        }
    }
    match toml_of(json) {
        Some(toml::Value::Table(table)) if read_table(&table).as_ref() == Ok(routes) => Ok(()),
        Some(toml::Value::Table(table)) => {
            read_table(&table).and_then(|_| Err(refused("read back, they are not what was stored")))
        }
        _ => Err(refused(
            "hold a value no routes file can (a null in a list)",
        )),
    }
}

/// A JSON value as TOML: nulls in objects left out, as a file leaves a key
/// out; `None` for what TOML cannot hold.
fn toml_of(value: Value) -> Option<toml::Value> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(flag) => toml::Value::Boolean(flag),
        Value::Number(number) => match number.as_i64() {
            Some(whole) => toml::Value::Integer(whole),
            None => toml::Value::Float(number.as_f64()?),
        },
        Value::String(text) => toml::Value::String(text),
        Value::Array(items) => {
            toml::Value::Array(items.into_iter().map(toml_of).collect::<Option<_>>()?)
        }
        Value::Object(entries) => toml::Value::Table(
            entries
                .into_iter()
                .filter(|(_, value)| !value.is_null())
                .map(|(key, value)| Some((key, toml_of(value)?)))
                .collect::<Option<_>>()?,
        ),
    })
}

/// A routes file's table read as routes, or everything wrong with it.
fn read_table(table: &Table) -> Result<Routes, Vec<RouteProblem>> {
    let mut problems = Problems::default();
    for key in table.keys() {
        if !["spam", "route", "duplicate_window", "destinations"].contains(&key.as_str()) {
            problems.add(
                "the file",
                key,
                "unknown key: the file holds destinations, duplicate_window, [spam] and [[route]]",
            );
        }
    }
    let destinations = table
        .get("destinations")
        .map(|value| destinations::destinations(value, "the file", &mut problems))
        .unwrap_or_default();
    let duplicate_window = table
        .get("duplicate_window")
        .and_then(|value| window(value, "the file", &mut problems));
    let spam = match table.get("spam") {
        None => SpamRules::default(),
        Some(toml::Value::Table(spam)) => spam::spam_rules(spam, "[spam]", &mut problems),
        Some(_) => {
            problems.add("the file", "spam", "must be a table ([spam])");
            SpamRules::default()
        }
    };
    let mut routes: Vec<Route> = Vec::new();
    match table.get("route") {
        None => {}
        Some(toml::Value::Array(entries)) => {
            for (index, entry) in entries.iter().enumerate() {
                let Some(entry) = entry.as_table() else {
                    problems.add(
                        &format!("[[route]] #{}", index + 1),
                        "route",
                        "must be a table ([[route]])",
                    );
                    continue;
                };
                let route = route(entry, index + 1, &mut problems);
                let place = place_of(&route, index + 1);
                if let Some(first) = routes
                    .iter()
                    .position(|r| !route.form.is_empty() && r.form == route.form)
                {
                    problems.add(
                        &place,
                        "form",
                        &format!("route #{} is for this form already", first + 1),
                    );
                }
                routes.push(route);
            }
        }
        Some(_) => problems.add(
            "the file",
            "route",
            "must be an array of tables ([[route]])",
        ),
    }
    // A fill time needs the field that holds the render time, in the same
    // table or the top-level one.
    if spam.min_fill_seconds.is_some() && spam.render_time_field.is_none() {
        problems.add("[spam]", "min_fill_seconds", NEEDS_RENDER_TIME_FIELD);
    }
    for (index, route) in routes.iter().enumerate() {
        let rules = spam.with(&route.spam);
        if route.spam.min_fill_seconds.is_some() && rules.render_time_field.is_none() {
            let place = format!("{} spam", place_of(route, index + 1));
            problems.add(&place, "min_fill_seconds", NEEDS_RENDER_TIME_FIELD);
        }
    }
    let routes = Routes {
        spam,
        duplicate_window,
        destinations,
        routes,
    };
    for problem in routes.key_problems() {
        problems.add(&problem.place, &problem.key, &problem.problem);
    }
    problems.into_result(routes)
}

const NEEDS_RENDER_TIME_FIELD: &str =
    "needs render_time_field, the hidden field the page fills with its render time (here or in [spam])";

#[derive(Default)]
pub(super) struct Problems(Vec<RouteProblem>);

impl Problems {
    pub(super) fn add(&mut self, place: &str, key: &str, problem: &str) {
        self.0.push(RouteProblem {
            place: place.to_owned(),
            key: key.to_owned(),
            problem: problem.to_owned(),
        });
    }

    fn into_result<T>(self, value: T) -> Result<T, Vec<RouteProblem>> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(self.0)
        }
    }
}

/// A route's `tags`: a list of distinct texts, each 1 to 100 characters.
fn tags(value: &toml::Value, place: &str, problems: &mut Problems) -> Vec<String> {
    let mut tags: Vec<String> = Vec::new();
    let Some(items) = value.as_array() else {
        problems.add(
            place,
            "tags",
            "must be a list of texts: tags = [\"pricing\"]",
        );
        return tags;
    };
    for item in items {
        match item.as_str().map(str::trim) {
            Some(tag) if !tag.is_empty() && tag.chars().count() <= 100 => {
                if tags.iter().any(|known| known == tag) {
                    problems.add(place, "tags", &format!("{tag:?} is listed twice"));
                } else {
                    tags.push(tag.to_owned());
                }
            }
            _ => problems.add(
                place,
                "tags",
                "each tag must be a text of 1 to 100 characters",
            ),
        }
    }
    tags
}

/// The largest list id a route may name: far above any account's lists,
/// and exact in every JSON reader.
pub const MAX_LIST_ID: i64 = 1_000_000_000;

/// A route's `lists`: distinct whole numbers from 1 to [`MAX_LIST_ID`].
fn lists(value: &toml::Value, place: &str, problems: &mut Problems) -> Vec<u64> {
    let mut lists: Vec<u64> = Vec::new();
    let Some(items) = value.as_array() else {
        problems.add(place, "lists", "must be a list of list ids: lists = [2, 7]");
        return lists;
    };
    for item in items {
        match item.as_integer() {
            Some(id @ 1..=MAX_LIST_ID) => {
                let id = id.unsigned_abs();
                if lists.contains(&id) {
                    problems.add(place, "lists", &format!("{id} is listed twice"));
                } else {
                    lists.push(id);
                }
            }
            _ => problems.add(
                place,
                "lists",
                "each list is its id, a whole number from 1 (Contacts > Lists: the number beside its name)",
            ),
        }
    }
    lists
}

pub(super) const NOT_A_PROPERTY: &str =
    "must be a CRM property's internal name: letters, digits and _, at most 100";

fn place_of(route: &Route, number: usize) -> String {
    match &route.name {
        Some(name) => format!("[[route]] #{number} {name:?}"),
        None => format!("[[route]] #{number}"),
    }
}

fn route(entry: &Table, number: usize, problems: &mut Problems) -> Route {
    let mut route = Route::default();
    // The name first, so every other problem can name the route by it.
    match entry.get("name") {
        None => {}
        Some(toml::Value::String(name)) if !name.trim().is_empty() => {
            route.name = Some(name.clone());
        }
        Some(_) => problems.add(
            &place_of(&route, number),
            "name",
            "must be text that is not empty",
        ),
    }
    let place = place_of(&route, number);
    for key in entry.keys() {
        if ![
            "form",
            "name",
            "fields",
            "set",
            "spam",
            "lead",
            "consent",
            "tags",
            "lists",
            "duplicate_window",
            "notify",
            "notify_fields",
            "destinations",
            "thank_you_url",
        ]
        .contains(&key.as_str())
        {
            problems.add(
                &place,
                key,
                "unknown key: a route has form, name, destinations, fields, set, spam, lead, consent, tags, lists, duplicate_window, notify, notify_fields and thank_you_url",
            );
        }
    }
    if let Some(value) = entry.get("destinations") {
        route.destinations = destinations::destinations(value, &place, problems);
    }
    if let Some(value) = entry.get("consent") {
        route.consent = consent::consent(value, &place, problems);
    }
    if let Some(value) = entry.get("duplicate_window") {
        route.duplicate_window = window(value, &place, problems);
    }
    if let Some(value) = entry.get("tags") {
        route.tags = tags(value, &place, problems);
    }
    if let Some(value) = entry.get("lists") {
        route.lists = lists(value, &place, problems);
    }
    match entry.get("thank_you_url") {
        None => {}
        Some(toml::Value::String(url)) if crate::origin::origin_of(url).is_some() => {
            route.thank_you_url = Some(url.trim().to_owned())
        }
        Some(_) => problems.add(
            &place,
            "thank_you_url",
            "must be an https address (a page on one of the stack's allowed origins)",
        ),
    }
    match entry.get("notify") {
        None => {}
        Some(toml::Value::Boolean(notify)) => route.notify = Some(*notify),
        Some(_) => problems.add(&place, "notify", "must be true or false"),
    }
    match entry.get("notify_fields") {
        None => {}
        Some(value) => match spam::texts(value) {
            Some(names) => route.notify_fields = names,
            None => problems.add(
                &place,
                "notify_fields",
                "must be a list of field names that are not empty",
            ),
        },
    }
    match entry.get("lead") {
        None => {}
        Some(toml::Value::Boolean(lead)) => route.lead = *lead,
        Some(_) => problems.add(&place, "lead", "must be true or false"),
    }
    match entry.get("form") {
        Some(toml::Value::String(form)) if !form.trim().is_empty() => {
            route.form = form.trim().to_owned();
        }
        Some(toml::Value::String(_)) => problems.add(&place, "form", "is empty"),
        Some(_) => problems.add(&place, "form", "must be text (the sender's form id)"),
        None => problems.add(&place, "form", "is missing (the sender's form id)"),
    }
    match entry.get("fields") {
        None => {}
        Some(toml::Value::Table(fields)) => {
            for (field, property) in fields {
                match property.as_str().map(str::trim) {
                    Some(property) if crate::fields::is_property_name(property) => {
                        route.fields.insert(field.clone(), property.to_owned());
                    }
                    _ => problems.add(&place, &format!("fields.{field}"), NOT_A_PROPERTY),
                }
            }
        }
        Some(_) => problems.add(&place, "fields", "must be a table ([route.fields])"),
    }
    let mut by_property: BTreeMap<&str, &str> = BTreeMap::new();
    for (field, property) in &route.fields {
        if let Some(first) = by_property.insert(property, field) {
            problems.add(
                &place,
                &format!("fields.{field}"),
                &format!("property {property:?} gets field {first:?} already"),
            );
        }
    }
    match entry.get("set") {
        None => {}
        Some(toml::Value::Table(set)) => {
            for (property, value) in set {
                if !crate::fields::is_property_name(property) {
                    problems.add(&place, &format!("set.{property}"), NOT_A_PROPERTY);
                } else if crate::fields::OWN_FIELDS.contains(&property.as_str()) {
                    problems.add(
                        &place,
                        &format!("set.{property}"),
                        "is the person's own field; a constant would give every lead the same",
                    );
                }
                match json_of(value) {
                    Some(value) => {
                        route.set.insert(property.clone(), value);
                    }
                    None => problems.add(
                        &place,
                        &format!("set.{property}"),
                        "must be text, a number, true or false, or a list of them",
                    ),
                }
                if let Some(field) = by_property.get(property.as_str()) {
                    problems.add(
                        &place,
                        &format!("set.{property}"),
                        &format!("property {property:?} gets field {field:?} already"),
                    );
                }
            }
        }
        Some(_) => problems.add(&place, "set", "must be a table ([route.set])"),
    }
    match entry.get("spam") {
        None => {}
        Some(toml::Value::Table(spam)) => {
            route.spam = spam::spam_rules(spam, &format!("{place} spam"), problems);
        }
        Some(_) => problems.add(&place, "spam", "must be a table ([route.spam])"),
    }
    route
}

/// A `duplicate_window`: a duration as text (`"2m"`).
fn window(value: &toml::Value, place: &str, problems: &mut Problems) -> Option<Window> {
    let parsed = match value.as_str() {
        Some(text) => Window::parse(text),
        None => Window::parse(""),
    };
    parsed
        .map_err(|why| problems.add(place, "duplicate_window", why))
        .ok()
}

/// A constant's JSON value: text, a number, true or false, or a list.
fn json_of(value: &toml::Value) -> Option<Value> {
    Some(match value {
        toml::Value::String(text) => Value::String(text.clone()),
        toml::Value::Integer(number) => Value::from(*number),
        toml::Value::Float(number) => serde_json::Number::from_f64(*number).map(Value::Number)?,
        toml::Value::Boolean(flag) => Value::Bool(*flag),
        toml::Value::Array(items) => {
            Value::Array(items.iter().map(json_of).collect::<Option<Vec<_>>>()?)
        }
        toml::Value::Datetime(_) | toml::Value::Table(_) => return None,
    })
}
