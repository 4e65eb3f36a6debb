//! Where a request that carries a token may go: the one rule for every base
//! URL a setting can name (a CRM's, a sender API's), so a test server or a
//! region can be named without a token ever crossing a network in clear
//! text. It parses the URL (the parser the HTTP client uses) and judges its
//! parts; each caller maps a refusal to its own message.

pub use url::Url;

/// Why a base URL is refused. Messages never quote the URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BaseUrlProblem {
    #[error("is not an absolute URL")]
    NotAbsolute,
    #[error("must have no query or fragment")]
    QueryOrFragment,
    /// A user name or password in the URL: messages name the URL, and a
    /// token goes in its header.
    #[error("must carry no user name or password (the token goes in a header)")]
    Credentials,
    #[error("must be an https:// URL with a host")]
    NotHttps,
    /// `http://` to another machine.
    #[error("must be https:// (http:// sends the token in clear text; it is allowed for loopback addresses)")]
    ClearText,
}

/// `url` parsed, when it is a base URL: no query, fragment or credentials,
/// and a scheme [`check_scheme`] allows (`allow_http`: http to any host,
/// for local runs).
pub fn check_base_url(url: &str, allow_http: bool) -> Result<Url, BaseUrlProblem> {
    let parsed = Url::parse(url).map_err(|_| BaseUrlProblem::NotAbsolute)?;
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(BaseUrlProblem::QueryOrFragment);
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(BaseUrlProblem::Credentials);
    }
    check_scheme(&parsed, allow_http)?;
    Ok(parsed)
}

/// The scheme rule alone, for a URL with more in it (a CRM's upsert URL):
/// https, or http to a loopback host (`localhost`, 127.0.0.0/8, `[::1]`)
/// or, with `allow_http` (local runs), to any host. The host is the
/// parsed one, so user-info cannot pose as loopback.
pub fn check_scheme(url: &Url, allow_http: bool) -> Result<(), BaseUrlProblem> {
    let Some(host) = url.host_str().filter(|host| !host.is_empty()) else {
        return Err(BaseUrlProblem::NotHttps);
    };
    match url.scheme() {
        "https" => Ok(()),
        "http" if allow_http || is_loopback_host(host) => Ok(()),
        "http" => Err(BaseUrlProblem::ClearText),
        _ => Err(BaseUrlProblem::NotHttps),
    }
}

/// `localhost`, or a loopback address (IPv6 in brackets or not).
pub fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        let rows = [
            ("localhost", true),
            ("LocalHost", true),
            ("127.0.0.1", true),
            ("127.1.2.3", true),
            ("[::1]", true),
            ("::1", true),
            ("localhost.example.com", false),
            ("10.0.0.1", false),
            ("[::2]", false),
            ("api.example.com", false),
            ("", false),
        ];
        for (host, loopback) in rows {
            assert_eq!(is_loopback_host(host), loopback, "{host}");
        }
    }

    #[test]
    fn base_url_rules() {
        use BaseUrlProblem::*;
        let cases: [(&str, bool, Result<(), BaseUrlProblem>); 18] = [
            ("https://api.tally.so", false, Ok(())),
            ("https://api.eu.typeform.com/", false, Ok(())),
            ("http://127.0.0.1:9001", false, Ok(())),
            ("http://127.1.2.3:9001/base", false, Ok(())),
            ("http://localhost:9001", false, Ok(())),
            ("http://LOCALHOST", false, Ok(())),
            ("http://[::1]:9001", false, Ok(())),
            ("http://api.example.com", false, Err(ClearText)),
            ("http://api.example.com", true, Ok(())),
            // The user-info is not the host.
            ("http://127.0.0.1@api.example.com", true, Err(Credentials)),
            (
                "https://user:secret@api.example.com",
                false,
                Err(Credentials),
            ),
            ("https://:secret@api.example.com", false, Err(Credentials)),
            ("http://localhost.example.com", false, Err(ClearText)),
            ("http://10.0.0.1", false, Err(ClearText)),
            ("ftp://api.example.com", true, Err(NotHttps)),
            ("api.example.com", false, Err(NotAbsolute)),
            (
                "https://api.example.com/?token=x",
                false,
                Err(QueryOrFragment),
            ),
            ("https://api.example.com/#x", false, Err(QueryOrFragment)),
        ];
        for (url, allow_http, expected) in cases {
            assert_eq!(
                check_base_url(url, allow_http).map(|_| ()),
                expected,
                "{url} (allow_http {allow_http})"
            );
        }
        // The user-info is not the host (the scheme rule alone, as a CRM
        // URL with credentials in it is checked).
        let posing = Url::parse("http://127.0.0.1@api.example.com").unwrap();
        assert_eq!(check_scheme(&posing, false), Err(ClearText));
    }
}
