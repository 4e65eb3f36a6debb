//! The decision table: every way a delivery can end, and the HTTP status that
//! tells the sender the truth about it. 2xx only when a durable receipt
//! exists; 4xx when retrying the same request cannot help; 5xx when it can.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A new receipt is stored: durable work now exists.
    Accepted,
    /// A new receipt is stored QUARANTINED by a spam rule: answered as
    /// `Accepted` is (a bot learns nothing), delivered only once released.
    Quarantined,
    /// The receipt already exists with the same content: safely acknowledged.
    Duplicate,
    /// A signed body older than the receipts are kept (`Sender::
    /// is_replay_past_retention`): its receipt, if it ever had one, has
    /// expired. Acknowledged so the sender stops; nothing is stored.
    ExpiredReplay,
    Unauthorized,
    /// Authenticated, but `data.apiKey` is not in `WEBHOOK_API_KEYS`.
    UnknownForm,
    PayloadTooLarge,
    UnsupportedMediaType,
    MalformedJson,
    InvalidEnvelope,
    InvalidIdempotencyKey,
    /// The key exists with different content; the original stays untouched.
    KeyReusedForDifferentPayload,
    /// The key exists in a receipt without a fingerprint, so the content
    /// cannot be shown to be the same: not acknowledged (fails closed).
    ReceiptWithoutFingerprint,
    /// Throttled or unreachable store: no durable acceptance, retry later.
    StoreUnavailable,
    /// Any other store error (a missing table, an access denial): still no
    /// durable receipt, so still "retry later" to the sender (503, which
    /// every sender retries; Typeform does not retry 500), while the log
    /// line and the alarm tell the operator the cause.
    StoreFailed,
    /// The webhook secrets were withdrawn at their source (deleted,
    /// malformed) or could not be read for too long: every delivery is
    /// refused, and the sender retries, until they can be read again.
    SecretsUnavailable,
    /// A browser's post from a page origin the stack does not allow
    /// (`ALLOWED_ORIGINS`): nothing is stored.
    OriginNotAllowed,
    /// A browser's post whose bot check token is missing, invalid, expired
    /// or already spent: nothing is stored.
    BotCheckFailed,
    /// The bot check could not be asked: no durable receipt, retry later.
    BotCheckUnavailable,
}

impl Outcome {
    /// Every outcome, for the metrics contract and the dashboard.
    pub const ALL: [Outcome; 19] = [
        Outcome::Accepted,
        Outcome::Quarantined,
        Outcome::Duplicate,
        Outcome::ExpiredReplay,
        Outcome::Unauthorized,
        Outcome::UnknownForm,
        Outcome::PayloadTooLarge,
        Outcome::UnsupportedMediaType,
        Outcome::MalformedJson,
        Outcome::InvalidEnvelope,
        Outcome::InvalidIdempotencyKey,
        Outcome::KeyReusedForDifferentPayload,
        Outcome::ReceiptWithoutFingerprint,
        Outcome::StoreUnavailable,
        Outcome::StoreFailed,
        Outcome::SecretsUnavailable,
        Outcome::OriginNotAllowed,
        Outcome::BotCheckFailed,
        Outcome::BotCheckUnavailable,
    ];

    pub fn status(self) -> u16 {
        match self {
            Outcome::Accepted | Outcome::Quarantined => 202,
            Outcome::Duplicate | Outcome::ExpiredReplay => 200,
            Outcome::Unauthorized => 401,
            Outcome::UnknownForm | Outcome::OriginNotAllowed | Outcome::BotCheckFailed => 403,
            Outcome::PayloadTooLarge => 413,
            Outcome::UnsupportedMediaType => 415,
            Outcome::MalformedJson | Outcome::InvalidEnvelope | Outcome::InvalidIdempotencyKey => {
                400
            }
            Outcome::KeyReusedForDifferentPayload | Outcome::ReceiptWithoutFingerprint => 422,
            Outcome::StoreUnavailable
            | Outcome::StoreFailed
            | Outcome::SecretsUnavailable
            | Outcome::BotCheckUnavailable => 503,
        }
    }

    /// A stable name for logs, metrics filters and error bodies.
    pub fn code(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Quarantined => "quarantined",
            Outcome::Duplicate => "duplicate",
            Outcome::ExpiredReplay => "expired_replay",
            Outcome::Unauthorized => "unauthorized",
            Outcome::UnknownForm => "unknown_form",
            Outcome::PayloadTooLarge => "payload_too_large",
            Outcome::UnsupportedMediaType => "unsupported_media_type",
            Outcome::MalformedJson => "malformed_json",
            Outcome::InvalidEnvelope => "invalid_envelope",
            Outcome::InvalidIdempotencyKey => "invalid_idempotency_key",
            Outcome::KeyReusedForDifferentPayload => "key_reused_for_different_payload",
            Outcome::ReceiptWithoutFingerprint => "receipt_without_fingerprint",
            Outcome::StoreUnavailable => "store_unavailable",
            Outcome::StoreFailed => "store_failed",
            Outcome::SecretsUnavailable => "secrets_unavailable",
            Outcome::OriginNotAllowed => "origin_not_allowed",
            Outcome::BotCheckFailed => "bot_check_failed",
            Outcome::BotCheckUnavailable => "bot_check_unavailable",
        }
    }

    /// Whether the sender may stop retrying: a receipt is durable (or, for
    /// an expired replay, was, and has been delivered and forgotten).
    pub fn is_accepted(self) -> bool {
        matches!(
            self,
            Outcome::Accepted | Outcome::Quarantined | Outcome::Duplicate | Outcome::ExpiredReplay
        )
    }
}

/// What the store says of the receipt already under a delivery's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Existing<'a> {
    pub fingerprint: Option<&'a str>,
    /// Stored by `receipts import` (`receipt::IMPORTED`).
    pub imported: bool,
}

/// What an existing receipt means for this delivery. Every receipt this
/// code writes has a fingerprint; one without (written by hand, or by
/// another tool) cannot show that the content is the same, so it is not
/// acknowledged as a duplicate: answering 2xx for content that may not be
/// stored would fail open. The receipt stays untouched.
/// Expiry does not matter: TTL is storage cleanup, not a correctness boundary.
/// An imported receipt holds what the sender's API listed, not its
/// webhook's bytes, so its webhook is a duplicate whatever it carries.
pub fn existing_receipt_outcome(existing: Existing<'_>, incoming_fingerprint: &str) -> Outcome {
    match existing.fingerprint {
        _ if existing.imported => Outcome::Duplicate,
        Some(stored) if stored == incoming_fingerprint => Outcome::Duplicate,
        Some(_) => Outcome::KeyReusedForDifferentPayload,
        None => Outcome::ReceiptWithoutFingerprint,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::PayloadFingerprint;
    use serde_json::json;

    #[test]
    fn decision_table() {
        let rows = [
            (Outcome::Unauthorized, 401, false),
            (Outcome::UnknownForm, 403, false),
            (Outcome::ReceiptWithoutFingerprint, 422, false),
            (Outcome::PayloadTooLarge, 413, false),
            (Outcome::UnsupportedMediaType, 415, false),
            (Outcome::MalformedJson, 400, false),
            (Outcome::InvalidEnvelope, 400, false),
            (Outcome::InvalidIdempotencyKey, 400, false),
            (Outcome::Accepted, 202, true),
            (Outcome::Quarantined, 202, true),
            (Outcome::Duplicate, 200, true),
            (Outcome::ExpiredReplay, 200, true),
            (Outcome::KeyReusedForDifferentPayload, 422, false),
            (Outcome::StoreUnavailable, 503, false),
            (Outcome::StoreFailed, 503, false),
            (Outcome::SecretsUnavailable, 503, false),
            (Outcome::OriginNotAllowed, 403, false),
            (Outcome::BotCheckFailed, 403, false),
            (Outcome::BotCheckUnavailable, 503, false),
        ];
        assert_eq!(rows.len(), Outcome::ALL.len(), "every outcome has a row");
        for (outcome, status, accepted) in rows {
            assert_eq!(outcome.status(), status, "{outcome:?}");
            assert_eq!(outcome.is_accepted(), accepted, "{outcome:?}");
            // Only a durable receipt may be answered with 2xx.
            assert_eq!(
                (200..300).contains(&outcome.status()),
                accepted,
                "{outcome:?}"
            );
            // Typeform disables a webhook answered 404 or 410.
            assert!(![404, 410].contains(&outcome.status()), "{outcome:?}");
            // No receipt stored and nothing the sender could fix: 503, the
            // one 5xx every sender retries (Typeform: 408/423/429/503).
            if outcome.status() >= 500 {
                assert_eq!(outcome.status(), 503, "{outcome:?}");
            }
        }
        // Each sender's answer to a new receipt is a success it counts as
        // one (its profile says which: 202, or exactly 200).
        for sender in crate::Sender::ALL {
            assert!([200, 202].contains(&sender.accepted_status()));
        }
    }

    #[test]
    fn existing_receipt_rules() {
        let incoming = PayloadFingerprint::of(&json!({"submissionId": "s1"}));
        let other = PayloadFingerprint::of(&json!({"submissionId": "s2"}));
        let rows = [
            (
                "same content",
                Some(incoming.as_str()),
                false,
                Outcome::Duplicate,
            ),
            (
                "different content",
                Some(other.as_str()),
                false,
                Outcome::KeyReusedForDifferentPayload,
            ),
            (
                "receipt without fingerprint: fails closed",
                None,
                false,
                Outcome::ReceiptWithoutFingerprint,
            ),
            (
                "imported, the same content",
                Some(incoming.as_str()),
                true,
                Outcome::Duplicate,
            ),
            (
                "imported, other bytes: the listed submission is this one",
                Some(other.as_str()),
                true,
                Outcome::Duplicate,
            ),
        ];
        for (name, fingerprint, imported, expected) in rows {
            let existing = Existing {
                fingerprint,
                imported,
            };
            assert_eq!(
                existing_receipt_outcome(existing, incoming.as_str()),
                expected,
                "{name}"
            );
        }
    }
}
