//! The shared access token sealed at rest: AES-256-GCM under a key derived
//! from the stack's gate key (a secret only the worker reads) for this use
//! and destination, a random nonce per seal, and the token item's key as
//! associated data (a sealed token copied to another item does not open).
//! Stored as `v1:` and the base64 of nonce, ciphertext and tag. The table,
//! its stream and its backups, and whoever may read them, see no token.

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use shared::newest::GateSecret;

/// Before every sealed value: the format's version.
const SEALED_PREFIX: &str = "v1:";

/// The sealing key of one destination's shared token.
pub struct TokenSeal {
    key: LessSafeKey,
}

impl std::fmt::Debug for TokenSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenSeal(<redacted>)")
    }
}

/// The token could not be sealed (no randomness, or the cipher refused).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the access token could not be sealed")]
pub struct SealError;

impl TokenSeal {
    /// The seal of `destination`'s token (`zoho`), from the stack's key.
    pub fn new(secret: &GateSecret, destination: &str) -> TokenSeal {
        let bytes = secret.derive_key(&format!("shared-token\0{destination}"));
        let key = UnboundKey::new(&AES_256_GCM, &bytes).expect("a 32-byte key is AES-256's");
        TokenSeal {
            key: LessSafeKey::new(key),
        }
    }

    /// `token`, sealed for the item `item`.
    pub fn seal(&self, token: &str, item: &str) -> Result<String, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        aws_lc_rs::rand::fill(&mut nonce).map_err(|_| SealError)?;
        let mut sealed = token.as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(item.as_bytes()),
                &mut sealed,
            )
            .map_err(|_| SealError)?;
        let mut stored = nonce.to_vec();
        stored.extend_from_slice(&sealed);
        Ok(format!("{SEALED_PREFIX}{}", STANDARD.encode(stored)))
    }

    /// The token `stored` holds for `item`; `None` when it is not one this
    /// key sealed for that item (a token stored in clear by an earlier
    /// version, another key, a change): it is then fetched anew.
    pub fn open(&self, stored: &str, item: &str) -> Option<String> {
        let bytes = STANDARD.decode(stored.strip_prefix(SEALED_PREFIX)?).ok()?;
        if bytes.len() < NONCE_LEN {
            return None;
        }
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut sealed = sealed.to_vec();
        let opened = self
            .key
            .open_in_place(nonce, Aad::from(item.as_bytes()), &mut sealed)
            .ok()?;
        String::from_utf8(opened.to_vec()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seal(key: &str, destination: &str) -> TokenSeal {
        TokenSeal::new(&GateSecret::new(key).unwrap(), destination)
    }

    #[test]
    fn a_sealed_token_opens_only_with_its_key_for_its_item() {
        let key = "a-test-gate-key-of-at-least-32-characters!";
        let zoho = seal(key, "zoho");
        let token = "1000.abcdef0123456789.fedcba9876543210";
        let sealed = zoho.seal(token, "token#zoho").unwrap();
        assert!(sealed.starts_with("v1:"), "{sealed}");
        assert!(!sealed.contains("abcdef"), "no trace of the token");
        assert_ne!(
            zoho.seal(token, "token#zoho").unwrap(),
            sealed,
            "a new nonce each time"
        );
        assert_eq!(zoho.open(&sealed, "token#zoho").as_deref(), Some(token));
        let refused = [
            (
                seal(key, "other").open(&sealed, "token#zoho"),
                "another destination's key",
            ),
            (
                seal("another-gate-key-of-at-least-32-characters", "zoho")
                    .open(&sealed, "token#zoho"),
                "another stack's key",
            ),
            (zoho.open(&sealed, "token#other"), "another item"),
            (zoho.open(token, "token#zoho"), "a token stored in clear"),
            (zoho.open("v1:not base64!", "token#zoho"), "not base64"),
            (zoho.open("v1:AAAA", "token#zoho"), "too short"),
        ];
        for (opened, what) in refused {
            assert_eq!(opened, None, "{what}");
        }
        let mut tampered = sealed.clone();
        tampered.pop();
        tampered.push(if sealed.ends_with('A') { 'B' } else { 'A' });
        assert_eq!(zoho.open(&tampered, "token#zoho"), None, "changed");
    }
}
