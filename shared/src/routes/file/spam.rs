//! A `[spam]` or `[route.spam]` table, read and checked.

use toml::Table;

use super::Problems;
use crate::spam::SpamRules;

pub(super) fn spam_rules(table: &Table, place: &str, problems: &mut Problems) -> SpamRules {
    let mut rules = SpamRules::default();
    for (key, value) in table {
        match key.as_str() {
            "honeypot" | "block_email_domains" => match texts(value) {
                Some(texts) if key == "honeypot" => rules.honeypot = texts,
                Some(texts) => rules.block_email_domains = texts,
                None => problems.add(place, key, "must be a list of texts that are not empty"),
            },
            "max_links" => match value.as_integer().map(u32::try_from) {
                Some(Ok(limit)) => rules.max_links = Some(limit),
                _ => problems.add(place, key, "must be a whole number, 0 or more"),
            },
            "min_fill_seconds" => match value.as_integer() {
                Some(seconds @ 1..=3600) => rules.min_fill_seconds = Some(seconds as u32),
                _ => problems.add(place, key, "must be a whole number of seconds, 1 to 3600"),
            },
            "render_time_field" => match value.as_str().map(str::trim) {
                Some(field) if !field.is_empty() => rules.render_time_field = Some(field.to_owned()),
                _ => problems.add(place, key, "must be a field's name"),
            },
            _ => problems.add(
                place,
                key,
                "unknown key: spam rules are honeypot, block_email_domains, max_links, min_fill_seconds and render_time_field",
            ),
        }
    }
    rules
}

pub(super) fn texts(value: &toml::Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|item| {
            item.as_str()
                .map(str::trim)
                .filter(|text| !text.is_empty())
                .map(str::to_owned)
        })
        .collect()
}
