//! What the CLI knows of the stack's newest-wins gates and their key (the
//! stack's gate key): where `forget` finds a person's gates and marker,
//! and whether `import` can recognise an erased person.

use aws_config::SdkConfig;
use shared::newest::{unkeyed_gate_key, GateSecret};

use super::{secret_text, Failed};
use crate::stack::{output, Stack};

/// What forget knows of the stack's newest-wins gates.
pub(in crate::commands) enum Gates {
    /// The stack keeps them, under this key.
    Keyed(GateSecret),
    /// The stack keeps none (no `GateKeySecretArn` output).
    NotKept,
    /// A table without its stack, and no key given.
    KeyUnknown,
}

impl Gates {
    /// The keys a gate of `email` may have: the unkeyed one of an earlier
    /// version always; when the key is known, the stack's keyed one, and
    /// the one each destination of several keeps its own gate under
    /// (`GateSecret::for_destination`): every kind's, whichever the stack
    /// has (a deletion of a gate that is not there changes nothing).
    pub(in crate::commands) fn keys_of(&self, email: &str) -> Vec<String> {
        let mut keys = vec![unkeyed_gate_key(email)];
        if let Gates::Keyed(secret) = self {
            keys.push(secret.gate_key(email));
            keys.extend(
                shared::destination::DestinationKind::ALL
                    .iter()
                    .map(|kind| secret.for_destination(kind.name()).gate_key(email)),
            );
        }
        keys
    }

    /// The key of `email`'s erasure marker, when the stack's key is known.
    pub(in crate::commands) fn marker_of(&self, email: &str) -> Option<String> {
        match self {
            Gates::Keyed(secret) => Some(shared::erasure::marker_key(secret, email)),
            Gates::NotKept | Gates::KeyUnknown => None,
        }
    }
}

/// Where `forget` finds the key of the stack's newest-wins gates: the
/// stack's `GateKeySecretArn` output (a stack without one keeps no gates),
/// else `$GATE_KEY_SECRET_ARN` or `$GATE_KEY`.
pub(super) async fn gate_lookup(
    config: &SdkConfig,
    stack: Option<&Stack>,
) -> Result<Gates, Failed> {
    use shared::newest::{GateSecret, GATE_KEY, GATE_KEY_SECRET_ARN};
    let env = |name| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let text = match stack {
        Some(stack) => match stack.output(output::GATE_KEY_SECRET_ARN) {
            Ok(arn) => secret_text(config, arn, "the gate key secret").await?,
            Err(_) => return Ok(Gates::NotKept),
        },
        None => match (env(GATE_KEY_SECRET_ARN), env(GATE_KEY)) {
            (Some(arn), _) => secret_text(config, &arn, "the gate key secret").await?,
            (None, Some(key)) => key,
            (None, None) => return Ok(Gates::KeyUnknown),
        },
    };
    GateSecret::new(&text).map(Gates::Keyed).ok_or_else(|| {
        Failed::Usage(format!(
            "the gate key is shorter than {} characters: is it the stack's own?",
            GateSecret::MIN_LEN
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_persons_gates_are_found_under_every_destinations_key() {
        let secret = GateSecret::new(&"k".repeat(32)).unwrap();
        let email = "ada@example.com";
        let keys = Gates::Keyed(secret.clone()).keys_of(email);
        assert!(keys.contains(&secret.gate_key(email)), "the stack's");
        for kind in shared::destination::DestinationKind::ALL {
            let own = secret.for_destination(kind.name()).gate_key(email);
            assert!(keys.contains(&own), "{}'s", kind.name());
        }
        assert_eq!(Gates::KeyUnknown.keys_of(email), [unkeyed_gate_key(email)]);
    }
}
