//! The `http` destination's erasure setting (`receipts forget
//! --everywhere`; the call is `HttpCrm::erase_person`), off unless
//! `CRM_ERASE_URL` is set: `DELETE CRM_ERASE_URL` with the body
//! `{"email": "<normalised address>"}` and the same bearer token as the
//! upserts. 200, 202 or 204: deleted; 404: nothing of that person; 401 or
//! 403: the token is refused (renewed and tried once more first); 408, 429
//! and 5xx: try again later; any other answer: refused. The contract is
//! docs/destinations/http.md's.

use shared::config::{invalid, ConfigError};

use super::client::check_scheme;

pub use shared::destination::http::CRM_ERASE_URL;

/// What the operator does when `CRM_ERASE_URL` is not set.
pub const ERASE_BY_HAND: &str = "in the service at CRM_URL (or set CRM_ERASE_URL, the template's \
                                 CrmEraseUrl, to a URL that deletes a person on DELETE)";

/// `CRM_ERASE_URL`, when set: an absolute https URL (plain http only as
/// `CRM_URL` may be). Never quoted back: it may carry a credential.
pub fn erase_url(
    get: &impl Fn(&str) -> Option<String>,
    allow_http: bool,
) -> Result<Option<String>, ConfigError> {
    let Some(url) = get(CRM_ERASE_URL).map(|url| url.trim().to_owned()) else {
        return Ok(None);
    };
    let parsed =
        reqwest::Url::parse(&url).map_err(|_| invalid(CRM_ERASE_URL, "is not an absolute URL"))?;
    check_scheme(CRM_ERASE_URL, &parsed, allow_http)?;
    Ok(Some(url))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_erase_url_is_optional_and_https() {
        let rows = [
            (None, false, Ok(None)),
            (
                Some("https://crm.example.com/people"),
                false,
                Ok(Some("https://crm.example.com/people")),
            ),
            (
                Some("http://127.0.0.1:9/people"),
                false,
                Ok(Some("http://127.0.0.1:9/people")),
            ),
            (Some("http://crm.example.com/people"), false, Err(())),
            (
                Some("http://crm.example.com/people"),
                true,
                Ok(Some("http://crm.example.com/people")),
            ),
            (Some("people"), false, Err(())),
        ];
        for (given, allow_http, expected) in rows {
            let get = |name: &str| {
                (name == CRM_ERASE_URL)
                    .then(|| given.unwrap_or("").to_owned())
                    .filter(|v| !v.is_empty())
            };
            let got = erase_url(&get, allow_http);
            match expected {
                Ok(url) => assert_eq!(got.unwrap().as_deref(), url, "{given:?}"),
                Err(()) => assert!(got.is_err(), "{given:?}"),
            }
        }
    }
}
