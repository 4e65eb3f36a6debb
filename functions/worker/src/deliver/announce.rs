//! New-lead notices (`shared::notice`): a lead written to the CRM leaves
//! its receipt with a notice waiting (in the queue index's NOTICE
//! partition). The delivery that wrote it sends the notice right after its
//! batch, and every pass sends those still waiting; each send holds the
//! notice under a claim, so two never send one notice at once. A refused
//! send is due again after the redelivery backoff; one that got no answer
//! (or whose claim ended unrecorded) may have been shown, and is settled
//! UNCONFIRMED rather than risk announcing a lead twice. The CRM write is
//! never touched: it was recorded before any of this.

use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};
use shared::receipt::{format_timestamp, Timestamp};
use shared::IdempotencyKey;

use super::Worker;
use crate::decide::Delivery;
use crate::destinations::port::Destination;
use crate::ledger::{NoticeClaim, NoticeSent, ReceiptLedger, WaitingNotice};
use crate::notice::Sent;
use shared::notice::{Placed, WaitingAnswers};

/// What became of one receipt's notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Announced {
    Sent,
    /// Refused or not reached: due again.
    Again,
    /// No answer, or an earlier send ended unrecorded: never sent again.
    Unconfirmed,
    /// Nothing waited (sent, held by another send, or muted).
    NotWaiting,
    /// The ledger could not be asked or written: a later pass sees it.
    Unavailable,
}

impl<D: Destination, L: ReceiptLedger> Worker<D, L> {
    /// Whether this worker sends new-lead notices at all.
    pub(crate) fn sends_notices(&self) -> bool {
        self.notifier.is_some()
    }

    /// The notice a delivery's lead gets once written, with the answers
    /// its route names: where the stack has a notice URL and the form's
    /// route does not say `notify = false`.
    pub(super) fn notice_for(&self, delivery: &Delivery) -> Option<WaitingNotice> {
        let route = delivery.lead.route.as_deref();
        if self.notifier.is_none() || route.is_some_and(|route| route.notify == Some(false)) {
            return None;
        }
        let names = route.map_or(&[][..], |route| route.notify_fields.as_slice());
        let person = self.stack_key.as_ref().and_then(|key| {
            let email = delivery.lead.normalised_email()?;
            Some(shared::erasure::marker_key(key, &email))
        });
        let fields = shared::notice::named_answers(&delivery.lead, names)
            .map(|answers| WaitingAnswers { answers, person }.to_stored());
        Some(WaitingNotice { fields })
    }

    /// Sends the waiting notices of these receipts, while the invocation
    /// has time; each at most once.
    pub(crate) async fn announce_all(
        &self,
        keys: Vec<IdempotencyKey>,
        deadline: Instant,
    ) -> Vec<Announced> {
        if self.notifier.is_none() || keys.is_empty() {
            return Vec::new();
        }
        let sends: Vec<_> = keys
            .iter()
            .map(|key| self.announce(key, deadline))
            .collect();
        stream::iter(sends)
            .buffer_unordered(self.concurrency())
            .collect()
            .await
    }

    async fn announce(&self, key: &IdempotencyKey, deadline: Instant) -> Announced {
        let Some(notifier) = &self.notifier else {
            return Announced::NotWaiting;
        };
        if deadline.saturating_duration_since(Instant::now()) <= self.safety_margin() {
            return Announced::Unavailable;
        }
        let now = Timestamp::at(self.now());
        let until = self.claim_until(deadline);
        let receipt = match self.ledger().claim_notice(key, &until, &now).await {
            Ok(NoticeClaim::Taken(receipt)) => receipt,
            Ok(NoticeClaim::Unconfirmed) => {
                tracing::warn!(
                    receipt = key.as_str(),
                    notice = shared::notice::UNCONFIRMED,
                    "a new-lead notice's send ended unrecorded; it may have been shown and is not sent again"
                );
                return Announced::Unconfirmed;
            }
            Ok(NoticeClaim::Lost) => return Announced::NotWaiting,
            Err(error) => {
                tracing::warn!(receipt = key.as_str(), error = %error, "a new-lead notice could not be claimed");
                return Announced::Unavailable;
            }
        };
        let routes = self.routes.now().await.ok();
        let form = receipt
            .form_ref
            .as_deref()
            .and_then(|reference| routes.as_deref()?.route_by_ref(reference))
            .and_then(|route| route.name.clone());
        let fields = match receipt
            .notice_fields
            .as_deref()
            .and_then(WaitingAnswers::from_stored)
        {
            // Its person erased since it arrived: none of their answers.
            Some(waiting)
                if self
                    .erased_since(waiting.person.as_deref(), &receipt.received_at)
                    .await =>
            {
                None
            }
            Some(waiting) => Some(waiting.answers),
            None => None,
        };
        // Sent once every destination of the receipt settled: each that
        // has the lead, with its record there.
        let destinations: Vec<Placed<'_>> = match receipt.destinations.is_empty() {
            true => vec![Placed {
                destination: receipt.delivered_to.as_deref().unwrap_or(self.name),
                record_id: receipt.record_id.as_deref(),
                record_url: receipt.record_url.as_deref(),
            }],
            false => receipt
                .destinations
                .iter()
                .filter(|(_, lane)| lane.state.has_lead())
                .map(|(name, lane)| Placed {
                    destination: name,
                    record_id: lane.record_id.as_deref(),
                    record_url: lane.record_url.as_deref(),
                })
                .collect(),
        };
        let body = shared::notice::body(&shared::notice::Facts {
            fields: fields.as_ref(),
            form: form.as_deref(),
            received_at: &receipt.received_at,
            destinations: &destinations,
            receipt: &receipt.pk,
        });
        let sent = notifier.send(&body).await;
        let (settled, announced) = match sent {
            Sent::Accepted => (NoticeSent::Accepted { at: now }, Announced::Sent),
            Sent::Refused(_) => {
                let wait = notice_backoff(self.rules.redelivery, receipt.notice_attempts);
                let at = Timestamp::from_stored(format_timestamp(self.now() + wait));
                (NoticeSent::Again { at }, Announced::Again)
            }
            Sent::NoAnswer => (NoticeSent::Unconfirmed, Announced::Unconfirmed),
        };
        let status = match sent {
            Sent::Refused(status) => status,
            _ => None,
        };
        match self.ledger().settle_notice(key, &until, &settled).await {
            Ok(_) => {
                let outcome = match announced {
                    Announced::Sent => "sent",
                    Announced::Again => "due again",
                    _ => shared::notice::UNCONFIRMED,
                };
                match announced {
                    Announced::Sent => tracing::info!(
                        submission_id = %receipt.submission_id,
                        notice = outcome,
                        "new-lead notice handled"
                    ),
                    _ => tracing::warn!(
                        submission_id = %receipt.submission_id,
                        notice = outcome,
                        http_status = status,
                        attempts = receipt.notice_attempts + 1,
                        "new-lead notice handled"
                    ),
                }
                announced
            }
            Err(error) => {
                // Its claim ends unrecorded: the next pass settles it
                // UNCONFIRMED (it may have been shown), never sends it again.
                tracing::warn!(submission_id = %receipt.submission_id, error = %error, "a new-lead notice's send could not be recorded");
                Announced::Unavailable
            }
        }
    }
}

/// The wait before a refused notice is sent again: the redelivery backoff,
/// doubled for each earlier refusal, at most its cap.
fn notice_backoff(redelivery: shared::delivery::Redelivery, attempts: u32) -> Duration {
    redelivery
        .base
        .saturating_mul(2u32.saturating_pow(attempts.min(16)))
        .min(redelivery.cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_notice_waits_twice_as_long_each_time_up_to_the_cap() {
        let redelivery = shared::delivery::Redelivery {
            base: Duration::from_secs(60),
            cap: Duration::from_secs(600),
        };
        let waits: Vec<u64> = (0..6)
            .map(|attempts| notice_backoff(redelivery, attempts).as_secs())
            .collect();
        assert_eq!(waits, [60, 120, 240, 480, 600, 600]);
        assert_eq!(notice_backoff(redelivery, u32::MAX).as_secs(), 600);
    }
}
