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

    /// Found by the property tests: without exact float parsing, the same
    /// number written two ways parsed to two doubles, so a retry whose
    /// sender formats floats differently was a 422.
    #[test]
    fn a_number_written_two_ways_has_one_fingerprint() {
        let rows = [
            ("[1.0680502086605122e-7]", "[0.00000010680502086605122]"),
            ("[-5.827533727867016e273]", "[-5827533727867016e258]"),
        ];
        for (one, other) in rows {
            let one: Value = serde_json::from_str(one).unwrap();
            let other: Value = serde_json::from_str(other).unwrap();
            assert_eq!(PayloadFingerprint::of(&one), PayloadFingerprint::of(&other));
            assert_eq!(one, other);
        }
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

/// The stored format, pinned: a receipt written today must fingerprint the
/// same after any upgrade, or every retry of it would look like a reused key
/// (422). Each vector gives the body's `data`, the canonical text, and its
/// SHA-256 (computed independently of this code, from the canonical text).
#[cfg(test)]
mod golden {
    use super::*;

    fn canonical(text: &str) -> String {
        let mut out = String::new();
        write_canonical(&serde_json::from_str(text).unwrap(), &mut out);
        out
    }

    #[test]
    fn golden_vectors() {
        let vectors = [
            (
                "integers",
                r#"{"b": 2, "a": -1, "c": 0}"#,
                r#"{"a":-1,"b":2,"c":0}"#,
            ),
            (
                "floats",
                r#"{"x": 1.0, "y": 0.25, "z": -3.5}"#,
                r#"{"x":1.0,"y":0.25,"z":-3.5}"#,
            ),
            (
                "exponents",
                r#"{"e": 1e3, "f": 2.5E-3}"#,
                r#"{"e":1000.0,"f":0.0025}"#,
            ),
            (
                "beyond u64",
                r#"{"big": 18446744073709551616, "max": 18446744073709551615}"#,
                r#"{"big":1.8446744073709552e+19,"max":18446744073709551615}"#,
            ),
            (
                "escaped keys",
                r#"{"tab\tkey": 1, "quote\"key": 2, "slash\/key": 3}"#,
                r#"{"quote\"key":2,"slash/key":3,"tab\tkey":1}"#,
            ),
            (
                "non-BMP keys and values",
                r#"{"\ud83d\ude00": "\ud83d\ude00", "é": "é"}"#,
                "{\"é\":\"é\",\"😀\":\"😀\"}",
            ),
            (
                "duplicate keys keep the last",
                r#"{"a": 1, "a": 2}"#,
                r#"{"a":2}"#,
            ),
            (
                "nesting and arrays",
                r#"{"o": {"z": [3, {"b": null, "a": true}]}}"#,
                r#"{"o":{"z":[3,{"a":true,"b":null}]}}"#,
            ),
        ];
        for (name, data, expected) in vectors {
            assert_eq!(canonical(data), expected, "{name}");
        }
        // SHA-256 of each canonical text, from Python's hashlib.
        let digests = [
            (
                "integers",
                "5d48a74a487dad7d63ac4558f648936f4095e2c18df8b93d9ebad3a98adb2d96",
            ),
            (
                "floats",
                "7d19889f4ddddd4f0ec42fc8c808d0f932d489af2dd03204f657610ea335eaf7",
            ),
            (
                "exponents",
                "46689c146514359f422dcddff7a531d72f45d475c0fd26909daeed5d68fbaba4",
            ),
            (
                "beyond u64",
                "7349647fe732f22e910f2c6ce6e9319543d1f672db6486091614358f1aff9989",
            ),
            (
                "escaped keys",
                "78a60f5b29a9cb07f18b1710eb3cd51830a62b63e70622513e17a940cc728c52",
            ),
            (
                "non-BMP keys and values",
                "fd79d848df24a29652badfa2227c9338afbdbce6457edd343c313baae3ff5256",
            ),
            (
                "duplicate keys keep the last",
                "7e8059f495589fcd981232cc11d00b00da3802c01d688fa1cf1f6bed6e5bb33c",
            ),
            (
                "nesting and arrays",
                "04b4477b94f7bd15dfbc4ed059631d5de1ba7e78845469c55074aef0f33910fb",
            ),
        ];
        for ((name, data, _), (digest_name, digest)) in vectors.iter().zip(digests) {
            assert_eq!(*name, digest_name);
            let fingerprint = PayloadFingerprint::of(&serde_json::from_str(data).unwrap());
            assert_eq!(fingerprint.as_str(), digest, "{name}");
        }
    }
}
