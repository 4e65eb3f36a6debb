//! The worker's decisions, as pure functions: what a stream record or a
//! stored receipt asks for (`decode_*`), and what the destination's answer
//! means for the receipt (`settle`). The stream handler and the
//! reconciliation pass both decide here and act in `deliver`.

use std::time::{Duration, SystemTime};

use aws_lambda_events::event::dynamodb::EventRecord;
use serde_dynamo::AttributeValue;
use shared::delivery::{bounded_reason, Redelivery};
use shared::lanes::{Lane, LaneState};
use shared::receipt::attr;
use shared::{Lead, LeadError, Receipt, ReceiptStatus, Retention};

use crate::destinations::port::{DestinationError, Upserted};

/// Why a record needs no work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    NotAnInsert,
    NoNewImage,
    NotReceived,
    /// The claim found the receipt settled, deferred, or taken by another
    /// delivery: no CRM call.
    SettledOrTaken,
    /// An item of the receipts table that is no receipt (a newest-wins
    /// gate): the stream's filter keeps them out; skipped if one comes.
    NotAReceipt,
}

impl SkipReason {
    pub fn code(self) -> &'static str {
        match self {
            SkipReason::NotAnInsert => "not-an-insert",
            SkipReason::NoNewImage => "no-new-image",
            SkipReason::NotReceived => "not-received",
            SkipReason::SettledOrTaken => "settled-or-taken",
            SkipReason::NotAReceipt => "not-a-receipt",
        }
    }
}

/// A receipt ready to deliver: its lead, and where its age limit counts
/// from (arrival, or the operator's last redrive).
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub receipt: Receipt,
    pub lead: Lead,
    pub started: SystemTime,
}

/// What a stream record or a stored receipt asks of the worker.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    Skip(SkipReason),
    /// Cannot ever be delivered: marked FAILED under `key` for an operator
    /// (or only logged, when even the key is missing).
    Unreadable {
        key: Option<String>,
        reason: &'static str,
    },
    Deliver(Box<Delivery>),
}

/// Only the INSERT of a RECEIVED receipt is work; the worker's own updates
/// and TTL deletions arrive on the stream too and are skipped.
pub fn skip_reason(
    event_name: &str,
    has_new_image: bool,
    status: Option<ReceiptStatus>,
) -> Option<SkipReason> {
    if event_name != "INSERT" {
        Some(SkipReason::NotAnInsert)
    } else if !has_new_image {
        Some(SkipReason::NoNewImage)
    } else if status != Some(ReceiptStatus::Received) {
        Some(SkipReason::NotReceived)
    } else {
        None
    }
}

/// A stream record: skip it, or decode its receipt.
pub fn decode_stream_record(record: &EventRecord) -> Decoded {
    let image = &record.change.new_image;
    let key = record
        .change
        .keys
        .get(attr::PK)
        .or_else(|| image.get(attr::PK));
    if let Some(AttributeValue::S(key)) = key {
        if !shared::receipt::is_receipt_key(key) {
            return Decoded::Skip(SkipReason::NotAReceipt);
        }
    }
    let status = match image.get(attr::STATUS) {
        Some(AttributeValue::S(status)) => {
            serde_json::from_value(serde_json::Value::String(status.clone())).ok()
        }
        _ => None,
    };
    if let Some(reason) = skip_reason(&record.event_name, !image.is_empty(), status) {
        return Decoded::Skip(reason);
    }
    match serde_dynamo::from_item::<_, Receipt>(image.clone()) {
        Ok(receipt) => decode_receipt(receipt),
        Err(_) => Decoded::Unreadable {
            key: match image.get(attr::PK) {
                Some(AttributeValue::S(key)) => Some(key.clone()),
                _ => None,
            },
            reason: "receipt unreadable",
        },
    }
}

/// A stored receipt (from the stream or the pending index): deliver it if
/// it is still RECEIVED and its lead can be built.
pub fn decode_receipt(receipt: Receipt) -> Decoded {
    if receipt.status != ReceiptStatus::Received {
        return Decoded::Skip(SkipReason::NotReceived);
    }
    let Some(started) = receipt.delivery_started() else {
        return Decoded::Unreadable {
            key: Some(receipt.pk),
            reason: "receipt has no readable receivedAt",
        };
    };
    match Lead::from_receipt(&receipt) {
        Ok(lead) => Decoded::Deliver(Box::new(Delivery {
            receipt,
            lead,
            started,
        })),
        Err(LeadError::NoPayload) => Decoded::Unreadable {
            key: Some(receipt.pk),
            reason: "receipt holds no payload",
        },
        Err(LeadError::UnreadablePayload) => Decoded::Unreadable {
            key: Some(receipt.pk),
            reason: "receipt payload unreadable",
        },
        Err(LeadError::UnknownSender) => Decoded::Unreadable {
            key: Some(receipt.pk),
            reason: "receipt key names no known sender",
        },
    }
}

/// The rules that turn an answer into what becomes of the receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryRules {
    /// Past this age since the receipt was received, a failed attempt gives
    /// up: the receipt becomes FAILED with reason `gave-up`.
    pub max_age: Duration,
    pub redelivery: Redelivery,
    /// How long a delivered receipt is kept (for duplicates) before TTL
    /// removes it. Only delivery sets an expiry.
    pub retention: Retention,
    /// Keep the payload of a delivered receipt (`KEEP_PAYLOAD_AFTER_DELIVERY`).
    /// Off by default: the completion removes it in the same update, since
    /// duplicates and changed payloads are told by the key and fingerprint.
    pub keep_payload: bool,
}

impl Default for DeliveryRules {
    fn default() -> Self {
        DeliveryRules {
            max_age: Duration::from_secs(DEFAULT_MAX_AGE_SECONDS),
            redelivery: Redelivery::default(),
            retention: Retention::default(),
            keep_payload: false,
        }
    }
}

/// Three days: a long weekend's CRM outage.
pub const DEFAULT_MAX_AGE_SECONDS: u64 = 3 * 24 * 60 * 60;

/// Why the last attempt failed, as kept on the receipt: a short code and the
/// destination's HTTP status, never lead data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptError {
    pub code: String,
    pub status: Option<u16>,
}

/// What becomes of the receipt after this delivery's attempts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settlement {
    /// The lead is written, in the record the destination answered (or a
    /// newer submission already holds it: `Upserted::Stale`).
    Complete(Upserted),
    /// FAILED for good, with the reason an operator reads.
    Fail(AttemptError),
    /// REFUSED: the destination's answer for this person, for good (its
    /// code), never an alarm.
    Refuse(AttemptError),
    /// FAILED because the age limit ran out: the reason is `gave-up`, the
    /// status the last attempt's.
    GiveUp(AttemptError),
    /// DUPLICATE: a double submit of the receipt with this key, never
    /// delivered (`shared::duplicates`).
    Duplicate(String),
    /// ERASED: its person was erased after it was made (`shared::erasure`),
    /// never delivered.
    Erased,
    /// Still RECEIVED; the reconciler tries again at `at`.
    Later {
        at: SystemTime,
        error: AttemptError,
        /// Our credentials were refused: a configuration fault.
        auth: bool,
    },
}

/// The reason a receipt that ran out of time is FAILED with.
pub const GAVE_UP: &str = "gave-up";

/// Settles one delivery. `started` is where the age limit counts from;
/// `attempts` counts every attempt the receipt has had, this delivery's
/// included; `jitter` is uniform in [0, 1).
pub fn settle(
    answer: &Result<Upserted, DestinationError>,
    started: SystemTime,
    now: SystemTime,
    attempts: u32,
    rules: &DeliveryRules,
    jitter: f64,
) -> Settlement {
    let (error, retry_after, auth) = match answer {
        Ok(upserted) => return Settlement::Complete(upserted.clone()),
        Err(DestinationError::Permanent { status, reason }) => {
            return Settlement::Fail(AttemptError {
                code: bounded_reason(reason),
                status: *status,
            })
        }
        Err(DestinationError::Refused { status, code }) => {
            return Settlement::Refuse(AttemptError {
                code: bounded_reason(code),
                status: *status,
            })
        }
        Err(DestinationError::Retryable {
            status,
            retry_after,
            reason,
        }) => (
            AttemptError {
                code: bounded_reason(reason),
                status: *status,
            },
            *retry_after,
            false,
        ),
        Err(DestinationError::Unauthorized { status }) => (
            AttemptError {
                code: "destination-auth".to_owned(),
                status: Some(*status),
            },
            None,
            true,
        ),
        Err(DestinationError::Misconfigured { status, reason }) => (
            AttemptError {
                code: bounded_reason(reason),
                status: *status,
            },
            None,
            true,
        ),
        Err(DestinationError::NotSent) => (
            AttemptError {
                code: "no time left in this invocation".to_owned(),
                status: None,
            },
            None,
            false,
        ),
        Err(DestinationError::CredentialsUnavailable(_)) => (
            AttemptError {
                code: "credentials-unavailable".to_owned(),
                status: None,
            },
            None,
            true,
        ),
    };
    let give_up_at = started.checked_add(rules.max_age).unwrap_or(started);
    if now >= give_up_at {
        return Settlement::GiveUp(AttemptError {
            code: GAVE_UP.to_owned(),
            status: error.status,
        });
    }
    let wait = rules.redelivery.wait(attempts, retry_after, jitter);
    // The last try is due when the age limit is reached, not after it.
    let at = now
        .checked_add(wait)
        .map_or(give_up_at, |at| at.min(give_up_at));
    Settlement::Later { at, error, auth }
}

/// One destination's lane after this delivery's `made` calls ended in
/// `settlement` at `now` (a receipt timestamp): what a receipt with
/// several destinations keeps of each (`shared::lanes`).
pub fn lane_after(lane: &Lane, settlement: &Settlement, made: u32, now: &str) -> Lane {
    let mut next = Lane {
        attempts: lane.attempts.saturating_add(made),
        next_attempt_at: None,
        settled_at: Some(now.to_owned()),
        ..lane.clone()
    };
    let error = |next: &mut Lane, error: &AttemptError| {
        next.last_error = Some(error.code.clone());
        next.last_http_status = error.status;
    };
    match settlement {
        Settlement::Complete(Upserted::Written(record)) => {
            next.state = LaneState::Written;
            next.record_id = record.id().map(str::to_owned);
            next.record_url = record.url().map(str::to_owned);
            next.last_error = None;
            next.last_http_status = None;
        }
        Settlement::Complete(Upserted::Stale) => {
            next.state = LaneState::Stale;
            next.last_error = None;
            next.last_http_status = None;
        }
        Settlement::Refuse(refusal) => {
            next.state = LaneState::Refused;
            error(&mut next, refusal);
        }
        Settlement::Duplicate(_) => next.state = LaneState::Duplicate,
        // A receipt's erasure is settled for all its destinations at once,
        // before any lane: never one lane's answer.
        Settlement::Erased => {
            next.state = LaneState::Failed;
            next.last_error = Some("erased".to_owned());
        }
        Settlement::Fail(failure) | Settlement::GiveUp(failure) => {
            next.state = LaneState::Failed;
            error(&mut next, failure);
        }
        Settlement::Later {
            at, error: cause, ..
        } => {
            next.state = LaneState::Pending;
            next.settled_at = None;
            next.next_attempt_at = Some(shared::receipt::format_timestamp(*at));
            error(&mut next, cause);
        }
    }
    next
}

#[cfg(test)]
mod lane_tests {
    use super::*;
    use shared::record::DeliveredRecord;
    use std::time::UNIX_EPOCH;

    #[test]
    fn each_settlement_leaves_its_lane_in_one_state() {
        let now = "2026-12-05T10:00:00.000Z";
        let at = UNIX_EPOCH + Duration::from_secs(1_764_932_400);
        let error = AttemptError {
            code: "http-503".into(),
            status: Some(503),
        };
        let tried = Lane {
            attempts: 2,
            next_attempt_at: Some("2026-12-05T09:00:00.000Z".into()),
            last_error: Some("http-503".into()),
            last_http_status: Some(503),
            ..Lane::pending()
        };
        let written = lane_after(
            &tried,
            &Settlement::Complete(Upserted::Written(
                DeliveredRecord::with_id("101").linked("https://crm.example/101"),
            )),
            1,
            now,
        );
        assert_eq!(
            written,
            Lane {
                state: LaneState::Written,
                attempts: 3,
                record_id: Some("101".into()),
                record_url: Some("https://crm.example/101".into()),
                settled_at: Some(now.into()),
                ..Lane::pending()
            }
        );
        let later = lane_after(
            &tried,
            &Settlement::Later {
                at,
                error: error.clone(),
                auth: false,
            },
            1,
            now,
        );
        assert_eq!(later.state, LaneState::Pending);
        assert_eq!(later.attempts, 3);
        assert_eq!(
            later.next_attempt_at.as_deref(),
            Some(shared::receipt::format_timestamp(at).as_str())
        );
        assert_eq!(later.settled_at, None);
        #[rustfmt::skip]
        let rows = [
            (Settlement::Complete(Upserted::Stale), LaneState::Stale, None),
            (Settlement::Refuse(error.clone()), LaneState::Refused, Some("http-503")),
            (Settlement::Fail(error.clone()), LaneState::Failed, Some("http-503")),
            (Settlement::GiveUp(error.clone()), LaneState::Failed, Some("http-503")),
            (Settlement::Duplicate("k".into()), LaneState::Duplicate, Some("http-503")),
        ];
        for (settlement, state, last_error) in rows {
            let lane = lane_after(&tried, &settlement, 0, now);
            assert_eq!(lane.state, state, "{settlement:?}");
            assert_eq!(lane.last_error.as_deref(), last_error, "{settlement:?}");
            assert_eq!(lane.next_attempt_at, None, "settled: not due");
            assert_eq!(lane.attempts, 2, "no call made");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::record::DeliveredRecord;
    use shared::FormSubmission;
    use std::time::UNIX_EPOCH;

    fn receipt() -> Receipt {
        let body = serde_json::json!({
            "event": "form.submitted",
            "data": {"submissionId": "sub_1", "formData": {"email": "ada@example.com"}}
        });
        let submission = FormSubmission::parse(body.to_string().as_bytes()).unwrap();
        Receipt::new(&submission, UNIX_EPOCH + Duration::from_secs(1_800_000_000))
    }

    fn record(event_name: &str, receipt: &Receipt) -> EventRecord {
        let value = devtools::stream_event::record(event_name, receipt, "1");
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn skip_rules() {
        let received = Some(ReceiptStatus::Received);
        let rows = [
            ("INSERT", true, received, None),
            ("MODIFY", true, received, Some(SkipReason::NotAnInsert)),
            ("REMOVE", false, None, Some(SkipReason::NotAnInsert)),
            ("INSERT", false, None, Some(SkipReason::NoNewImage)),
            (
                "INSERT",
                true,
                Some(ReceiptStatus::Completed),
                Some(SkipReason::NotReceived),
            ),
            (
                "INSERT",
                true,
                Some(ReceiptStatus::Failed),
                Some(SkipReason::NotReceived),
            ),
            ("INSERT", true, None, Some(SkipReason::NotReceived)),
        ];
        for (event_name, has_image, status, expected) in rows {
            assert_eq!(
                skip_reason(event_name, has_image, status),
                expected,
                "{event_name} {has_image} {status:?}"
            );
        }
    }

    #[test]
    fn decoding() {
        let good = receipt();
        let mut completed = receipt();
        completed.status = ReceiptStatus::Completed;
        let mut not_json = receipt();
        not_json.payload = Some("{not json".into());
        let mut no_time = receipt();
        no_time.received_at = "yesterday".into();

        let deliver = |r: &Receipt| match decode_receipt(r.clone()) {
            Decoded::Deliver(delivery) => Some(delivery.lead.external_id),
            _ => None,
        };
        assert_eq!(deliver(&good).as_deref(), Some("sub_1"));
        assert_eq!(
            decode_receipt(completed.clone()),
            Decoded::Skip(SkipReason::NotReceived)
        );
        let rows = [
            (not_json, "receipt payload unreadable"),
            (no_time, "receipt has no readable receivedAt"),
        ];
        for (receipt, reason) in rows {
            assert_eq!(
                decode_receipt(receipt.clone()),
                Decoded::Unreadable {
                    key: Some(receipt.pk.clone()),
                    reason
                }
            );
        }

        assert!(matches!(
            decode_stream_record(&record("INSERT", &good)),
            Decoded::Deliver(_)
        ));
        assert_eq!(
            decode_stream_record(&record("MODIFY", &good)),
            Decoded::Skip(SkipReason::NotAnInsert)
        );
        assert_eq!(
            decode_stream_record(&record("INSERT", &completed)),
            Decoded::Skip(SkipReason::NotReceived)
        );
        let mut no_payload = record("INSERT", &good);
        no_payload.change.new_image.remove(attr::PAYLOAD);
        assert_eq!(
            decode_stream_record(&no_payload),
            Decoded::Unreadable {
                key: Some(good.pk.clone()),
                reason: "receipt holds no payload"
            }
        );
        let mut broken = record("INSERT", &good);
        broken.change.new_image.remove(attr::EVENT);
        assert_eq!(
            decode_stream_record(&broken),
            Decoded::Unreadable {
                key: Some(good.pk.clone()),
                reason: "receipt unreadable"
            }
        );
        broken.change.new_image.remove(attr::PK);
        assert_eq!(
            decode_stream_record(&broken),
            Decoded::Unreadable {
                key: None,
                reason: "receipt unreadable"
            }
        );
    }

    /// A case name, the answer, the time, the attempts so far, and the settlement.
    type SettleCase = (
        &'static str,
        Result<Upserted, DestinationError>,
        SystemTime,
        u32,
        Settlement,
    );

    #[test]
    fn settling() {
        let received = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let rules = DeliveryRules::default();
        let min = |m: u64| Duration::from_secs(m * 60);
        let retryable = |status: u16, retry_after: Option<Duration>| {
            Err(DestinationError::Retryable {
                status: Some(status),
                retry_after,
                reason: format!("HTTP {status}"),
            })
        };
        let error = |code: &str, status: Option<u16>| AttemptError {
            code: code.into(),
            status,
        };
        let later = |at: SystemTime, code: &str, status: u16, auth: bool| Settlement::Later {
            at,
            error: error(code, Some(status)),
            auth,
        };
        let soon = received + min(1);
        let max_age = received + rules.max_age;
        let rows: Vec<SettleCase> = vec![
            (
                "written",
                Ok(Upserted::Written(DeliveredRecord::with_id("42"))),
                soon,
                1,
                Settlement::Complete(Upserted::Written(DeliveredRecord::with_id("42"))),
            ),
            (
                "stale",
                Ok(Upserted::Stale),
                soon,
                1,
                Settlement::Complete(Upserted::Stale),
            ),
            (
                "refused",
                Err(DestinationError::Permanent {
                    status: Some(400),
                    reason: "HTTP 400".into(),
                }),
                soon,
                1,
                Settlement::Fail(error("HTTP 400", Some(400))),
            ),
            // Even past the age limit: a refusal is the answer, not a give-up.
            (
                "the person refused for good",
                Err(DestinationError::Refused {
                    status: Some(400),
                    code: "Forgotten Email Not Subscribed".into(),
                }),
                soon + min(10_000),
                1,
                Settlement::Refuse(error("Forgotten Email Not Subscribed", Some(400))),
            ),
            // Backoff from the attempt count: 1 attempt -> 1-2 min (jitter 0 -> 1 min).
            (
                "503 first",
                retryable(503, None),
                soon,
                1,
                later(soon + min(1), "HTTP 503", 503, false),
            ),
            (
                "503 fourth",
                retryable(503, None),
                soon,
                4,
                later(soon + min(8), "HTTP 503", 503, false),
            ),
            // A Retry-After longer than any invocation is honoured.
            (
                "429 in an hour",
                retryable(429, Some(min(60))),
                soon,
                1,
                later(soon + min(60), "HTTP 429", 429, false),
            ),
            // 401/403 wait with backoff and are flagged, never FAILED.
            (
                "401",
                Err(DestinationError::Unauthorized { status: 401 }),
                soon,
                2,
                later(soon + min(2), "destination-auth", 401, true),
            ),
            // The wait never runs past the age limit: the last try is at it.
            (
                "near the limit",
                retryable(503, Some(min(600))),
                max_age - min(5),
                30,
                later(max_age, "HTTP 503", 503, false),
            ),
            (
                "at the limit",
                retryable(503, None),
                max_age,
                31,
                Settlement::GiveUp(error(GAVE_UP, Some(503))),
            ),
            (
                "auth at the limit",
                Err(DestinationError::Unauthorized { status: 403 }),
                max_age + min(1),
                31,
                Settlement::GiveUp(error(GAVE_UP, Some(403))),
            ),
            (
                "huge Retry-After",
                retryable(503, Some(Duration::MAX)),
                soon,
                1,
                later(max_age, "HTTP 503", 503, false),
            ),
        ];
        for (name, answer, now, attempts, expected) in rows {
            assert_eq!(
                settle(&answer, received, now, attempts, &rules, 0.0),
                expected,
                "{name}"
            );
        }
    }

    #[test]
    fn a_later_settlement_is_always_due_by_the_age_limit() {
        // The invariant behind "no receipt is left RECEIVED without a next
        // attempt": whatever the answer, the time and the attempt count,
        // Later is due no later than the limit, where the next failure gives up.
        let received = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let rules = DeliveryRules::default();
        let limit = received + rules.max_age;
        for attempts in [1, 2, 10, 100, u32::MAX] {
            for offset in [0, 60, 3_600, 86_400, 259_199] {
                for retry_after in [None, Some(Duration::from_secs(10)), Some(Duration::MAX)] {
                    let answer = Err(DestinationError::Retryable {
                        status: None,
                        retry_after,
                        reason: "timeout".into(),
                    });
                    let now = received + Duration::from_secs(offset);
                    match settle(&answer, received, now, attempts, &rules, 0.99) {
                        Settlement::Later { at, .. } => assert!(at > now && at <= limit),
                        other => panic!("{other:?} at {offset}"),
                    }
                }
            }
        }
    }
}
