//! From secret text to a verifier, purely: the text is comma-separated
//! entries, as in `WEBHOOK_SECRETS` or a Secrets Manager secret's value.
//! Errors give an entry's position and never its value, nor a variable's
//! name: the caller knows where the text came from and says so.

use std::time::Duration;

use http::header::HeaderName;

use super::verifier::{SecretSet, Verifier};
use crate::sender_signatures::{self, SenderSignatures};
use crate::standard_webhooks::{SigningKeys, StandardWebhooks};

/// Shortest secret accepted: a guessable secret is no authentication.
pub const MIN_SECRET_CHARS: usize = 16;

/// How the sender proves itself (`WEBHOOK_AUTH`), before any secret is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scheme {
    None,
    Bearer,
    Basic,
    Header(HeaderName),
    /// The query parameter's name.
    Query(String),
    StandardWebhooks {
        tolerance: Duration,
    },
    /// The sender's own signature (`Sender::signature`).
    SenderSignature(sender_signatures::Scheme),
}

/// Why secret text is not usable; `entry` counts from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("entry {entry} {problem}")]
pub struct SecretTextError {
    pub entry: usize,
    pub problem: String,
}

fn at(index: usize, problem: impl Into<String>) -> SecretTextError {
    SecretTextError {
        entry: index + 1,
        problem: problem.into(),
    }
}

impl Scheme {
    /// The verifier for this scheme accepting every entry of `text`.
    pub fn verifier(&self, text: &str) -> Result<Verifier, SecretTextError> {
        let entries: Vec<&str> = text.split(',').map(str::trim).collect();
        for (index, entry) in entries.iter().enumerate() {
            if entry.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(at(index, "contains whitespace"));
            }
        }
        if let Scheme::StandardWebhooks { tolerance } = self {
            let keys = SigningKeys::parse(entries)
                .map_err(|(index, error)| at(index, error.to_string()))?;
            return Ok(Verifier::StandardWebhooks(StandardWebhooks::new(
                keys, *tolerance,
            )));
        }
        for (index, entry) in entries.iter().enumerate() {
            let secret_part = match (self, entry.split_once(':')) {
                (Scheme::Basic, Some((user, password))) if !user.is_empty() => password,
                (Scheme::Basic, _) => {
                    return Err(at(index, "must be user:password for basic authentication"))
                }
                _ => entry,
            };
            if secret_part.chars().count() < MIN_SECRET_CHARS {
                return Err(at(
                    index,
                    format!("is shorter than {MIN_SECRET_CHARS} characters"),
                ));
            }
        }
        if let Scheme::SenderSignature(scheme) = self {
            return Ok(Verifier::SenderSignature(SenderSignatures::new(
                *scheme, entries,
            )));
        }
        let secrets = SecretSet::new(entries);
        Ok(match self {
            Scheme::None => Verifier::None,
            Scheme::Bearer => Verifier::Bearer(secrets),
            Scheme::Basic => Verifier::Basic(secrets),
            Scheme::Header(name) => Verifier::Header {
                name: name.clone(),
                secrets,
            },
            Scheme::Query(param) => Verifier::Query {
                param: param.clone(),
                secrets,
            },
            Scheme::StandardWebhooks { .. } | Scheme::SenderSignature(_) => {
                unreachable!("handled above")
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    #[test]
    fn each_scheme_builds_its_verifier() {
        let rows: [(Scheme, &str, usize); 6] = [
            (
                Scheme::SenderSignature(sender_signatures::Scheme::of(
                    &shared::sender::tally::SIGNATURE,
                )),
                "tally-signing-secret-1,tally-signing-secret-2",
                2,
            ),
            (Scheme::Query("token".into()), "0123456789abcdef", 1),
            (Scheme::Bearer, "0123456789abcdef,fedcba9876543210", 2),
            (Scheme::Basic, "sf:0123456789abcdef", 1),
            (
                Scheme::Header(HeaderName::from_static("x-webhook-token")),
                " 0123456789abcdef ",
                1,
            ),
            (
                Scheme::StandardWebhooks {
                    tolerance: Duration::from_secs(300),
                },
                WHSEC,
                1,
            ),
        ];
        for (scheme, text, count) in rows {
            let verifier = scheme.verifier(text).unwrap();
            let secrets = match &verifier {
                Verifier::Bearer(s)
                | Verifier::Basic(s)
                | Verifier::Header { secrets: s, .. }
                | Verifier::Query { secrets: s, .. } => s.len(),
                Verifier::StandardWebhooks(_) => 1,
                Verifier::SenderSignature(v) => v.len(),
                Verifier::None => 0,
            };
            assert_eq!(secrets, count, "{scheme:?}");
        }
    }

    #[test]
    fn errors_give_the_entry_and_never_the_value() {
        let signed = Scheme::StandardWebhooks {
            tolerance: Duration::from_secs(300),
        };
        let rows: [(Scheme, &str, &str); 6] = [
            (
                Scheme::Bearer,
                "short",
                "entry 1 is shorter than 16 characters",
            ),
            (
                Scheme::Bearer,
                "0123456789abcdef,",
                "entry 2 is shorter than 16 characters",
            ),
            (
                Scheme::Bearer,
                "0123456789 abcdef",
                "entry 1 contains whitespace",
            ),
            (
                Scheme::Basic,
                "0123456789abcdef",
                "entry 1 must be user:password for basic authentication",
            ),
            (
                signed.clone(),
                "0123456789abcdef0123456789",
                "entry 1 must be whsec_ followed by base64",
            ),
            (
                signed,
                "whsec_c2hvcnQ=",
                "entry 1 must decode to at least 24 bytes",
            ),
        ];
        for (scheme, text, message) in rows {
            let error = scheme.verifier(text).unwrap_err().to_string();
            assert_eq!(error, message, "{scheme:?} {text:?}");
        }
        let leaked = Scheme::Bearer
            .verifier("0123456789abcdef,tiny-secret")
            .unwrap_err();
        assert!(!leaked.to_string().contains("tiny-secret"));
    }
}
