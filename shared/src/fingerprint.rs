//! The payload fingerprint: tells a retried delivery of the same content apart
//! from a reuse of the same key for different content.
//!
//! It is the SHA-256 of a canonical JSON form (object keys sorted, no
//! insignificant whitespace), so a proxy that reorders keys or reformats the
//! body does not make a retry look like new content.

use serde_json::Value;
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadFingerprint(String);

impl PayloadFingerprint {
    pub fn of(value: &Value) -> Self {
        let mut canonical = String::new();
        write_canonical(value, &mut canonical);
        PayloadFingerprint(hex::encode(Sha256::digest(canonical.as_bytes())))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Writes `value` with object keys in byte order and no whitespace. Written
/// by hand rather than relying on `serde_json::Map` ordering, which changes
/// with the `preserve_order` feature of any crate in the build.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fingerprint(text: &str) -> PayloadFingerprint {
        PayloadFingerprint::of(&serde_json::from_str(text).unwrap())
    }

    #[test]
    fn fingerprint_rules() {
        let base =
            r#"{"submissionId":"s1","formData":{"name":"Ada","email":"a@x.io","tags":[1,2]}}"#;
        let cases = [
            ("identical", base, true),
            ("keys reordered", r#"{"formData":{"tags":[1,2],"email":"a@x.io","name":"Ada"},"submissionId":"s1"}"#, true),
            ("whitespace added", "{ \"submissionId\" : \"s1\",\n \"formData\": {\"name\":\"Ada\", \"email\":\"a@x.io\", \"tags\": [1, 2]} }", true),
            ("escaped the same text", r#"{"submissionId":"s1","formData":{"name":"\u0041da","email":"a@x.io","tags":[1,2]}}"#, true),
            ("value changed", r#"{"submissionId":"s1","formData":{"name":"Bob","email":"a@x.io","tags":[1,2]}}"#, false),
            ("array reordered", r#"{"submissionId":"s1","formData":{"name":"Ada","email":"a@x.io","tags":[2,1]}}"#, false),
            ("field added", r#"{"submissionId":"s1","formData":{"name":"Ada","email":"a@x.io","tags":[1,2],"x":null}}"#, false),
            ("type changed", r#"{"submissionId":"s1","formData":{"name":"Ada","email":"a@x.io","tags":["1",2]}}"#, false),
        ];
        let reference = fingerprint(base);
        for (name, text, same) in cases {
            assert_eq!(fingerprint(text) == reference, same, "case {name}");
        }
    }

    #[test]
    fn fingerprint_is_lowercase_hex_sha256() {
        let fp = fingerprint("{}");
        // SHA-256 of the two bytes "{}".
        assert_eq!(
            fp.as_str(),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }

    #[test]
    fn keys_that_need_escaping_are_canonical_too() {
        assert_eq!(
            fingerprint(r#"{"a\"b":1,"a":2}"#),
            fingerprint(r#"{"a":2,"a\"b":1}"#)
        );
    }
}
