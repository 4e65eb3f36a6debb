//! The catalog as data for the tools that are not Rust: `make deploy`
//! (scripts/deploy.py) reads it as JSON. It is written, never kept in git,
//! so a new sender or destination touches no file for it: from source,
//! `make deploy` writes `.tools/catalog.json` with this crate's `catalog`
//! binary (`cargo run -p shared --bin catalog`, which builds `shared`
//! alone); a release carries its own copy, written by `make package`, so a
//! deploy from it needs no Rust.

use serde_json::{json, Value};

use crate::destination::{Check, CheckCall, DestinationKind, Source};
use crate::sender::Sender;

/// The catalog as `make deploy` reads it (pretty, sorted keys, a final
/// newline).
pub fn catalog_json() -> String {
    let mut text = serde_json::to_string_pretty(&sorted(catalog())).expect("the catalog is JSON");
    text.push('\n');
    text
}

/// `value` with every object's keys in order: the same text whether or
/// not another crate in the build turns on serde_json's `preserve_order`.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

fn catalog() -> Value {
    let senders: Vec<Value> = Sender::ALL
        .into_iter()
        .map(|sender| {
            let profile = sender.profile();
            json!({
                "name": profile.name,
                "title": profile.title,
                "webhook_settings": profile.webhook_settings,
                "signs": profile.signature.is_some(),
                "browser": profile.browser,
                "key_chosen_by_sender": profile.signature.is_some_and(|s| s.key_chosen_by_sender),
                "audit_token": profile.api.map(|api| api.token_help),
            })
        })
        .collect();
    let destinations: Vec<Value> = DestinationKind::ALL
        .into_iter()
        .map(|kind| {
            let profile = kind.profile();
            let asked: Vec<Value> = profile
                .settings
                .iter()
                .filter_map(|setting| match setting.source {
                    Source::Asked {
                        parameter,
                        flag,
                        why,
                        prompt,
                        check,
                        default,
                    } => Some(json!({
                        "parameter": parameter,
                        "flag": flag,
                        "why": why,
                        "prompt": prompt,
                        "check": match check {
                            Check::Https => "https",
                            Check::UpsertUrl => "upsert_url",
                            Check::EmailOrProperty => "email_or_property",
                            Check::Identifier => "identifier",
                        },
                        "default": default,
                    })),
                    _ => None,
                })
                .collect();
            let secrets: Vec<Value> = kind
                .secrets()
                .map(|secret| {
                    json!({
                        "parameter": secret.parameter,
                        "flag": secret.flag,
                        "name": secret.name,
                        "optional": secret.optional,
                        "values": secret.values.iter().map(|value| json!({
                            "variable": value.variable,
                            "key": value.key,
                            "why": value.why,
                            "prompt": value.prompt,
                        })).collect::<Vec<Value>>(),
                        "check": secret.check.map(|check| {
                            let call = match check.call {
                                CheckCall::Read { base, path, header, prefix } => json!({
                                    "read": {"base": base, "path": path, "header": header, "prefix": prefix},
                                }),
                                CheckCall::BasicRead { base, path } => json!({
                                    "basic_read": {"base": base, "path": path},
                                }),
                                CheckCall::Grant { grant_type, base_parameter, path } => json!({
                                    "grant": {"grant_type": grant_type, "base_parameter": base_parameter, "path": path},
                                }),
                            };
                            json!({"call": call, "what": check.what, "expected": check.expected})
                        }),
                    })
                })
                .collect();
            json!({
                "name": profile.name,
                "title": profile.title,
                "summary": profile.summary,
                "maps_fields": profile.maps_fields,
                "asked": asked,
                "secrets": secrets,
            })
        })
        .collect();
    json!({
        "generated_by": "cargo run -p shared --bin catalog (from shared::sender and shared::destination)",
        "senders": senders,
        "destinations": destinations,
    })
}
