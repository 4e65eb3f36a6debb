//! Sender authentication, in one direction: `secret_text` turns secret text
//! into a `verifier` (pure), and `refresh` keeps the verifier in force
//! renewed from a `Source`. Nothing here reads configuration or talks
//! to AWS: `config` names the variables, `secrets_manager` is the adapter,
//! and `startup::authenticator_for` wires them.
//!
//! The pieces, by name: a `Scheme` is how the sender proves itself; a
//! `Verifier` is a scheme with its accepted secrets; the `Authenticator` is
//! the verifier in force and how it is renewed.

pub mod refresh;
pub mod secret_text;
pub mod verifier;

pub use refresh::{AuthError, Authenticator, SecretError, SecretLoadError, Source, Unavailable};
pub use secret_text::{Scheme, SecretTextError, MIN_SECRET_CHARS};
pub use verifier::{Presented, SecretSet, Unauthenticated, Verifier};
