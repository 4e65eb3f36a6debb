//! The form vendors' own webhook signatures, each an HMAC-SHA256 of the raw
//! body as received (never a re-serialisation), keyed by the secret the user
//! set in the vendor's settings, compared in constant time against every
//! accepted secret (several while one is rotated):
//!
//! - Tally: `Tally-Signature: base64(HMAC(secret, body))`
//!   (https://tally.so/help/webhooks, "Signing secret");
//! - Typeform: `Typeform-Signature: sha256=base64(HMAC(secret, body))`
//!   (https://www.typeform.com/developers/webhooks/secure-your-webhooks/);
//! - Webflow: `x-webflow-signature: hex(HMAC(secret, "<timestamp>:" + body))`
//!   with `x-webflow-timestamp` in milliseconds, refused when further than
//!   the tolerance (5 minutes) from now either way
//!   (https://developers.webflow.com/data/docs/working-with-webhooks,
//!   "Validating request signatures"). Webflow signs only webhooks created
//!   through its API or an OAuth app; dashboard webhooks need another mode.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use http::HeaderMap;
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// Webflow's documented window.
pub const WEBFLOW_TOLERANCE: Duration = Duration::from_secs(300);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    Tally,
    Typeform,
    Webflow { tolerance: Duration },
}

/// Why a delivery's signature is refused. Logged at debug; the sender gets
/// a 401.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum VendorSignatureError {
    #[error("the {0} header is missing or sent more than once")]
    MissingHeader(&'static str),
    #[error("the signature is not in the vendor's encoding")]
    Malformed,
    #[error("x-webflow-timestamp is not whole milliseconds")]
    InvalidTimestamp,
    #[error("x-webflow-timestamp is further from now than the tolerance")]
    OutsideTolerance,
    #[error("no signature matches an accepted secret")]
    NoMatch,
}

/// A vendor's scheme with the accepted secrets. Its `Debug` shows only how
/// many.
#[derive(Clone, PartialEq, Eq)]
pub struct VendorSignatures {
    vendor: Vendor,
    keys: Vec<Vec<u8>>,
}

impl std::fmt::Debug for VendorSignatures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "VendorSignatures({:?}, *** x{})",
            self.vendor,
            self.keys.len()
        )
    }
}

fn single<'h>(headers: &'h HeaderMap, name: &'static str) -> Result<&'h str, VendorSignatureError> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (Some(value), None) => value
            .to_str()
            .map(str::trim)
            .map_err(|_| VendorSignatureError::Malformed),
        _ => Err(VendorSignatureError::MissingHeader(name)),
    }
}

impl VendorSignatures {
    pub fn new<'a>(vendor: Vendor, secrets: impl IntoIterator<Item = &'a str>) -> Self {
        VendorSignatures {
            vendor,
            keys: secrets.into_iter().map(|s| s.as_bytes().to_vec()).collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), VendorSignatureError> {
        let (presented, timestamp) = match self.vendor {
            Vendor::Tally => (
                STANDARD
                    .decode(single(headers, "tally-signature")?)
                    .map_err(|_| VendorSignatureError::Malformed)?,
                None,
            ),
            Vendor::Typeform => {
                let value = single(headers, "typeform-signature")?;
                let encoded = value
                    .strip_prefix("sha256=")
                    .ok_or(VendorSignatureError::Malformed)?;
                (
                    STANDARD
                        .decode(encoded)
                        .map_err(|_| VendorSignatureError::Malformed)?,
                    None,
                )
            }
            Vendor::Webflow { tolerance } => {
                let timestamp = single(headers, "x-webflow-timestamp")?;
                check_millis(timestamp, now, tolerance)?;
                let signature = single(headers, "x-webflow-signature")?;
                (
                    decode_hex(signature).ok_or(VendorSignatureError::Malformed)?,
                    Some(timestamp),
                )
            }
        };
        let matches = self.keys.iter().any(|key| {
            let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
            if let Some(timestamp) = timestamp {
                mac.update(timestamp.as_bytes());
                mac.update(b":");
            }
            mac.update(body);
            let expected = mac.finalize().into_bytes();
            expected.as_slice().ct_eq(&presented).into()
        });
        if matches {
            Ok(())
        } else {
            Err(VendorSignatureError::NoMatch)
        }
    }
}

/// Webflow's timestamp: decimal milliseconds since the epoch (as Webflow's
/// own verifier parses it, so the signed text is exactly these digits),
/// within `tolerance` of `now` in either direction.
fn check_millis(
    timestamp: &str,
    now: SystemTime,
    tolerance: Duration,
) -> Result<(), VendorSignatureError> {
    if timestamp.is_empty() || !timestamp.bytes().all(|b| b.is_ascii_digit()) {
        return Err(VendorSignatureError::InvalidTimestamp);
    }
    let sent: u128 = timestamp
        .parse()
        .map_err(|_| VendorSignatureError::InvalidTimestamp)?;
    let now = now
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    if sent.abs_diff(now) > tolerance.as_millis() {
        return Err(VendorSignatureError::OutsideTolerance);
    }
    Ok(())
}

/// Hex digits in either case; `None` for anything else. Digits are checked
/// first: `from_str_radix` alone takes a sign (`+a`), so one signature would
/// have several spellings.
fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    /// The research notes' example deliveries, byte for byte, with the
    /// signatures the vendors' documented algorithms give (checked there
    /// with Node's crypto and Python's hmac).
    const TALLY_BODY: &str = r#"{"eventId":"a4cb511e-d513-4fa5-baee-b815d718dfd1","eventType":"FORM_RESPONSE","createdAt":"2023-06-28T15:00:21.889Z","data":{"responseId":"2wgx4n","submissionId":"2wgx4n","respondentId":"dwQKYm","formId":"VwbNEw","formName":"Contact form","createdAt":"2023-06-28T15:00:21.000Z","fields":[{"key":"question_3EKz4n","label":"Full name","type":"INPUT_TEXT","value":"Alice Smith"},{"key":"question_w4Q4Xn","label":"Email","type":"INPUT_EMAIL","value":"alice@example.com"},{"key":"question_3jZaa3","label":"Phone number","type":"INPUT_PHONE_NUMBER","value":"+32491223344"},{"key":"question_3Nrpl3","label":"Message","type":"TEXTAREA","value":"Hello world"},{"key":"question_3qL4Gm","label":"Plan","type":"MULTIPLE_CHOICE","value":["e7bfbbc6-c2e6-4821-8670-72ed1cb31cd5"],"options":[{"id":"ec321dc4-b50d-4270-8df0-0e38c898762a","text":"Starter"},{"id":"e7bfbbc6-c2e6-4821-8670-72ed1cb31cd5","text":"Business"}]}]}}"#;
    const TALLY_SIGNATURE: &str = "AJqjBx/khwAhdAp+0P76eDKBcYj4yxAWjNPGjyhNMd0=";
    const WEBFLOW_BODY: &str = r#"{"triggerType":"form_submission","payload":{"name":"Contact Us","siteId":"65427cf400e02b306eaa049c","data":{"First Name":"Zaphod","Last Name":"Beeblebrox","email":"zaphod@heartofgold.ai","Phone Number":15550000000},"schema":[{"fieldName":"First Name","fieldType":"FormTextInput","fieldElementId":"285042f7-d554-dc7f-102c-aa10d6a2d2c4"},{"fieldName":"Last Name","fieldType":"FormTextInput","fieldElementId":"285042f7-d554-dc7f-102c-aa10d6a2d2c5"},{"fieldName":"email","fieldType":"FormTextInput","fieldElementId":"285042f7-d554-dc7f-102c-aa10d6a2d2c6"},{"fieldName":"Phone Number","fieldType":"FormTextInput","fieldElementId":"285042f7-d554-dc7f-102c-aa10d6a2d2c7"}],"submittedAt":"2024-07-30T20:07:15.220Z","id":"66a947f35b9d7ba400e22733","formId":"65429eadebe8a9f3a30f62d0","formElementId":"4e038d2c-6a1e-4953-7be9-a59a2b453177"}}"#;
    const WEBFLOW_SIGNATURE: &str =
        "5aefed7bb1a0531811fa8bffe3c08e86cdc380ee331cea1b01bde2c2f25bb673";
    const WEBFLOW_TIMESTAMP: &str = "1722370035277";

    fn at_millis(millis: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(millis)
    }

    #[test]
    fn the_vendors_documented_examples_verify() {
        let tally =
            VendorSignatures::new(Vendor::Tally, ["another-secret-0001", "whsec_tally_demo"]);
        assert_eq!(
            tally.verify(
                &headers(&[("tally-signature", TALLY_SIGNATURE)]),
                TALLY_BODY.as_bytes(),
                SystemTime::now()
            ),
            Ok(())
        );
        let webflow = VendorSignatures::new(
            Vendor::Webflow {
                tolerance: WEBFLOW_TOLERANCE,
            },
            ["wf_demo_client_secret"],
        );
        let signed = headers(&[
            ("x-webflow-timestamp", WEBFLOW_TIMESTAMP),
            ("x-webflow-signature", WEBFLOW_SIGNATURE),
        ]);
        let sent = 1_722_370_035_277;
        assert_eq!(
            webflow.verify(&signed, WEBFLOW_BODY.as_bytes(), at_millis(sent + 1_000)),
            Ok(())
        );
        // Six minutes later, or a timestamp six minutes ahead: refused.
        for now in [sent + 360_000, sent - 360_000] {
            assert_eq!(
                webflow.verify(&signed, WEBFLOW_BODY.as_bytes(), at_millis(now)),
                Err(VendorSignatureError::OutsideTolerance)
            );
        }
    }

    #[test]
    fn typeform_signs_the_raw_body_with_a_prefix() {
        let body = br#"{"event_type":"form_response","form_response":{"token":"t"}}"#;
        let mut mac = Hmac::<Sha256>::new_from_slice(b"tf_demo_secret_0001").unwrap();
        mac.update(body);
        let good = format!("sha256={}", STANDARD.encode(mac.finalize().into_bytes()));
        let typeform = VendorSignatures::new(Vendor::Typeform, ["tf_demo_secret_0001"]);
        let now = SystemTime::now();
        assert_eq!(
            typeform.verify(&headers(&[("typeform-signature", &good)]), body, now),
            Ok(())
        );
        let rows: Vec<(HeaderMap, &[u8], VendorSignatureError)> = vec![
            (
                headers(&[]),
                body,
                VendorSignatureError::MissingHeader("typeform-signature"),
            ),
            (
                headers(&[("typeform-signature", &good), ("typeform-signature", &good)]),
                body,
                VendorSignatureError::MissingHeader("typeform-signature"),
            ),
            (
                headers(&[("typeform-signature", &good["sha256=".len()..])]),
                body,
                VendorSignatureError::Malformed,
            ),
            (
                headers(&[("typeform-signature", "sha256=!!")]),
                body,
                VendorSignatureError::Malformed,
            ),
            // The same content re-serialised (a space) is other bytes.
            (
                headers(&[("typeform-signature", &good)]),
                br#"{"event_type": "form_response","form_response":{"token":"t"}}"#,
                VendorSignatureError::NoMatch,
            ),
        ];
        for (presented, body, error) in rows {
            assert_eq!(
                typeform.verify(&presented, body, now),
                Err(error),
                "{presented:?}"
            );
        }
    }

    #[test]
    fn webflow_timestamps_are_whole_milliseconds_and_signed_as_sent() {
        let webflow = VendorSignatures::new(
            Vendor::Webflow {
                tolerance: WEBFLOW_TOLERANCE,
            },
            ["wf_demo_client_secret"],
        );
        let now = at_millis(1_722_370_035_277);
        for (timestamp, error) in [
            ("", VendorSignatureError::InvalidTimestamp),
            ("1722370035.277", VendorSignatureError::InvalidTimestamp),
            ("-1", VendorSignatureError::InvalidTimestamp),
            // Seconds, not milliseconds: 1970 to Webflow's verifier.
            ("1722370035", VendorSignatureError::OutsideTolerance),
            // The same instant written with a leading zero is other text.
            ("01722370035277", VendorSignatureError::NoMatch),
        ] {
            let presented = headers(&[
                ("x-webflow-timestamp", timestamp),
                ("x-webflow-signature", WEBFLOW_SIGNATURE),
            ]);
            assert_eq!(
                webflow.verify(&presented, WEBFLOW_BODY.as_bytes(), now),
                Err(error),
                "{timestamp:?}"
            );
        }
        let upper = headers(&[
            ("x-webflow-timestamp", WEBFLOW_TIMESTAMP),
            ("x-webflow-signature", &WEBFLOW_SIGNATURE.to_uppercase()),
        ]);
        assert_eq!(webflow.verify(&upper, WEBFLOW_BODY.as_bytes(), now), Ok(()));
        assert!(!format!("{webflow:?}").contains("wf_demo"));
    }

    #[test]
    fn hex() {
        assert_eq!(decode_hex("00ff"), Some(vec![0, 255]));
        assert_eq!(decode_hex("0"), None);
        assert_eq!(decode_hex("zz"), None);
        assert_eq!(decode_hex("é0"), None);
        assert_eq!(decode_hex("+a"), None, "a sign is not a hex digit");
        assert_eq!(decode_hex("-a"), None);
        assert_eq!(decode_hex("+a0f"), None);
        assert_eq!(decode_hex("0A0f"), Some(vec![10, 15]));
    }
}
