//! `make sign-event SENDER=<name>`: a sample of events/ signed now. A
//! sender whose signature carries its sending time (Webflow, Formspree)
//! refuses a replay after its window, so the shipped sample, signed on the
//! day it was written, answers 401: this signs its body again with the
//! local signing secret (`local::DEMO_SIGNING_SECRET`, which `make run`
//! and the `sam local invoke` env file use) at the time given, with the
//! sender's own signer (`shared::Signature::sign`).

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;
use shared::Sender;

/// The API Gateway event `event` with its body signed at `now` with
/// `secret`, as its sender signs: the sender from the event's path
/// (`/webhooks/<sender>`).
pub fn signed(event: &Value, secret: &str, now: SystemTime) -> Result<Value, String> {
    let path = event["rawPath"].as_str().unwrap_or_default();
    let name = path
        .strip_prefix("/webhooks/")
        .ok_or_else(|| format!("the event's path {path:?} names no sender (/webhooks/<sender>)"))?;
    let sender = Sender::parse(name).ok_or_else(|| format!("{name:?} is no sender"))?;
    let signature = sender
        .profile()
        .signature
        .ok_or_else(|| format!("{name} does not sign its deliveries"))?;
    let body = event["body"]
        .as_str()
        .ok_or("the event has no text body")?
        .as_bytes();
    let mut out = event.clone();
    let headers = out["headers"]
        .as_object_mut()
        .ok_or("the event has no headers")?;
    let sent: Vec<(String, String)> = headers
        .iter()
        .filter_map(|(name, value)| Some((name.clone(), value.as_str()?.to_owned())))
        .collect();
    let sent: Vec<(&str, &str)> = sent.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    for (header, value) in signature.sign(secret.as_bytes(), body, now, &sent) {
        headers.insert(header.to_owned(), Value::String(value));
    }
    let millis = now
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    out["requestContext"]["timeEpoch"] = Value::from(u64::try_from(millis).unwrap_or(u64::MAX));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sample(name: &str) -> Value {
        let path = format!(
            "{}/../events/ingest-{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// Signed now, each time-signing sample verifies now with the local
    /// secret; as shipped, it does not (a replay).
    #[test]
    fn a_time_signed_sample_verifies_once_signed_now() {
        let now = SystemTime::now();
        let secret = crate::local::DEMO_SIGNING_SECRET;
        for (name, sender) in [
            ("formspree", Sender::Formspree),
            ("webflow", Sender::Webflow),
        ] {
            let signature = sender.profile().signature.unwrap();
            let verify = |event: &Value| {
                let headers: Vec<(String, String)> = event["headers"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(n, v)| (n.clone(), v.as_str().unwrap().to_owned()))
                    .collect();
                let header = |wanted: &'static str| {
                    headers
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case(wanted))
                        .map(|(_, v)| v.as_str())
                        .ok_or(shared::sender::SignatureError::MissingHeader(wanted))
                };
                signature.verify(
                    header,
                    event["body"].as_str().unwrap().as_bytes(),
                    &[secret.as_bytes().to_vec()],
                    signature.tolerance().unwrap(),
                    now,
                )
            };
            let shipped = sample(name);
            assert!(
                verify(&shipped).is_err(),
                "{name}: the shipped sample is stale"
            );
            let fresh = signed(&shipped, secret, now).unwrap();
            assert_eq!(verify(&fresh), Ok(()), "{name}");
            assert_eq!(
                fresh["body"], shipped["body"],
                "{name}: the body as shipped"
            );
            let later = now + Duration::from_secs(3600);
            assert!(signed(&shipped, secret, later).is_ok());
        }
        assert!(signed(&sample("tally"), secret, now).is_ok());
        let unsigned = signed(&sample("valid"), secret, now).unwrap_err();
        assert!(unsigned.contains("does not sign"), "{unsigned}");
    }
}
