//! A webhook body parsed without changing a number. `serde_json::Value`
//! holds a number as a 64-bit integer or float, so `123456789012345678901234`
//! would reach the CRM as `1.2345678901234568e23`, and `1e15` would be stored
//! as `1000000000000000.0` (a body of them grows past DynamoDB's item limit).
//! Here a number whose text a `Value` would not write back unchanged is kept
//! as a string of its exact text; every other number stays a number.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Number, Value};

/// Nesting deeper than this is refused, as `serde_json` refuses it when it
/// builds a `Value` (a raw value is not held to that limit, and each level
/// here is a call).
const MAX_DEPTH: usize = 127;

/// `body` as JSON, each number kept digit for digit.
pub fn parse(body: &[u8]) -> Result<Value, serde_json::Error> {
    let raw: &RawValue = serde_json::from_slice(body)?;
    exact(raw, MAX_DEPTH)
}

fn exact(raw: &RawValue, depth_left: usize) -> Result<Value, serde_json::Error> {
    let text = raw.get();
    let nested = matches!(text.as_bytes().first(), Some(b'{' | b'['));
    if nested && depth_left == 0 {
        return Err(<serde_json::Error as serde::de::Error>::custom(
            "nested too deeply",
        ));
    }
    let inner = |raw: &RawValue| exact(raw, depth_left.saturating_sub(1));
    Ok(match text.as_bytes().first() {
        Some(b'{') => {
            let Members(members) = serde_json::from_str(text)?;
            Value::Object(
                members
                    .into_iter()
                    .map(|(name, value)| Ok((name, inner(value)?)))
                    .collect::<Result<_, serde_json::Error>>()?,
            )
        }
        Some(b'[') => {
            let items: Vec<&RawValue> = serde_json::from_str(text)?;
            Value::Array(items.into_iter().map(inner).collect::<Result<_, _>>()?)
        }
        Some(b'-' | b'0'..=b'9') => {
            let number: Number = serde_json::from_str(text)?;
            if number.to_string() == text {
                Value::Number(number)
            } else {
                Value::String(text.to_owned())
            }
        }
        _ => serde_json::from_str(text)?,
    })
}

/// An object's members in the order sent (a `Value` built from them keeps
/// that order when serde_json preserves it; a repeated name: the last).
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Members<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Members<'de>, M::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, &'de RawValue>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(MembersVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_are_kept_digit_for_digit() {
        let rows = [
            ("3", json!(3)),
            ("-5", json!(-5)),
            ("12.5", json!(12.5)),
            ("0.1", json!(0.1)),
            ("1.0", json!(1.0)),
            ("18446744073709551615", json!(u64::MAX)),
            (
                "123456789012345678901234",
                json!("123456789012345678901234"),
            ),
            ("1e15", json!("1e15")),
            ("1E2", json!("1E2")),
            ("1.50", json!("1.50")),
            ("-0", json!("-0")),
            ("\"text\"", json!("text")),
            ("true", json!(true)),
            ("null", json!(null)),
        ];
        for (text, expected) in rows {
            assert_eq!(parse(text.as_bytes()).unwrap(), expected, "{text}");
        }
        let body = r#"{"a": [1e15, {"b": 123456789012345678901234, "c": "x"}], "d": 2, "d": 3}"#;
        assert_eq!(
            parse(body.as_bytes()).unwrap(),
            json!({"a": ["1e15", {"b": "123456789012345678901234", "c": "x"}], "d": 3}),
            "nested, and the last of a repeated name, as a Value keeps it"
        );
    }

    #[test]
    fn what_is_not_json_is_refused_as_before() {
        for text in ["", "{", "[1,]", "01", "{\"a\":}", "nul", "\u{0}"] {
            assert!(parse(text.as_bytes()).is_err(), "{text:?}");
            assert!(serde_json::from_str::<Value>(text).is_err(), "{text:?}");
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(
            parse(deep.as_bytes()).is_err(),
            "nesting beyond serde_json's limit"
        );
        let deepest = "[".repeat(100_000) + &"]".repeat(100_000);
        assert!(
            parse(deepest.as_bytes()).is_err(),
            "refused, never a stack overflow"
        );
        for (levels, ok) in [(127, true), (128, false)] {
            let nested = "[".repeat(levels) + &"]".repeat(levels);
            assert_eq!(parse(nested.as_bytes()).is_ok(), ok, "{levels}");
            assert_eq!(
                serde_json::from_str::<Value>(&nested).is_ok(),
                ok,
                "{levels}"
            );
        }
    }

    #[test]
    fn a_body_of_exponents_does_not_grow_when_stored() {
        let body = format!("[{}1]", "1e15,".repeat(50_000));
        let stored = parse(body.as_bytes()).unwrap().to_string();
        assert!(stored.len() <= body.len() + 2 * 50_000, "{}", stored.len());
        let lossy = serde_json::from_str::<Value>(&body).unwrap().to_string();
        assert!(
            lossy.len() > 3 * body.len(),
            "the lossy parse grows: {}",
            lossy.len()
        );
    }
}
