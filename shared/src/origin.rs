//! Web origins, as a browser's `Origin` header and a page's address name
//! them (RFC 6454: scheme, host and port): the rules ingest applies to a
//! form posted from the user's own page. Pure and table-tested.

/// `text` as an origin an operator may allow: `https://host[:port]` (or
/// `http://` for `localhost` and the loopback addresses, a page served
/// locally), nothing after it but an optional `/`. Lower-cased, a default
/// port dropped: the form browsers send in `Origin`.
pub fn allowed_origin(text: &str) -> Option<String> {
    let url = url::Url::parse(text.trim()).ok()?;
    let plain = url.username().is_empty()
        && url.password().is_none()
        && url.query().is_none()
        && url.fragment().is_none()
        && url.path() == "/"
        && !text.trim().trim_end_matches('/').ends_with(':');
    (plain && scheme_fits(&url)).then(|| url.origin().ascii_serialization())
}

/// The origin of an absolute http(s) address (a thank-you page), if it has
/// one that `allowed_origin` could allow.
pub fn origin_of(address: &str) -> Option<String> {
    let url = url::Url::parse(address.trim()).ok()?;
    (url.username().is_empty() && url.password().is_none() && scheme_fits(&url))
        .then(|| url.origin().ascii_serialization())
}

/// https anywhere; http only on the loopback, where nothing travels.
fn scheme_fits(url: &url::Url) -> bool {
    match url.scheme() {
        "https" => url.host_str().is_some(),
        "http" => url.host_str().is_some_and(is_loopback_host),
        _ => false,
    }
}

/// `localhost`, `127.0.0.1` (any 127.x), or `[::1]`.
pub fn is_loopback_host(host: &str) -> bool {
    host == "localhost"
        || host == "[::1]"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_a_scheme_a_host_and_a_port() {
        let rows: &[(&str, Option<&str>)] = &[
            ("https://example.com", Some("https://example.com")),
            ("https://Example.COM/", Some("https://example.com")),
            ("https://example.com:443", Some("https://example.com")),
            (
                "https://shop.example.com:8443",
                Some("https://shop.example.com:8443"),
            ),
            ("http://localhost:8080", Some("http://localhost:8080")),
            ("http://127.0.0.1:9000", Some("http://127.0.0.1:9000")),
            ("http://example.com", None),
            ("https://example.com/contact", None),
            ("https://example.com/?a=1", None),
            ("https://user@example.com", None),
            ("ftp://example.com", None),
            ("example.com", None),
            ("null", None),
            ("https://", None),
            ("", None),
        ];
        for (text, expected) in rows {
            assert_eq!(allowed_origin(text).as_deref(), *expected, "{text:?}");
        }
    }

    #[test]
    fn an_address_has_the_origin_it_is_served_from() {
        let rows: &[(&str, Option<&str>)] = &[
            (
                "https://example.com/thanks?from=form",
                Some("https://example.com"),
            ),
            (
                "http://localhost:8080/thanks.html",
                Some("http://localhost:8080"),
            ),
            ("http://evil.example/thanks", None),
            ("https://user:pw@example.com/thanks", None),
            ("/thanks", None),
            ("javascript:alert(1)", None),
        ];
        for (text, expected) in rows {
            assert_eq!(origin_of(text).as_deref(), *expected, "{text:?}");
        }
    }
}
