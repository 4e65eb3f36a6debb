//! Where a request that carries a token may go: the one rule for every base
//! URL a setting can name (a CRM's, a sender API's), so a test server or a
//! region can be named without a token ever crossing a network in clear
//! text. The adapter that reads the setting parses the URL; this judges its
//! parts.

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

/// What the rule reads of a parsed URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UrlParts<'a> {
    pub scheme: &'a str,
    /// As a URL parser gives it (`[::1]` for an IPv6 address); `None` or
    /// empty when it has none.
    pub host: Option<&'a str>,
    pub has_credentials: bool,
    pub has_query_or_fragment: bool,
}

/// A base URL: no query, fragment or credentials, and a scheme
/// [`check_scheme`] allows.
pub fn check_base_url(url: &UrlParts, allow_http: bool) -> Result<(), BaseUrlProblem> {
    if url.has_query_or_fragment {
        return Err(BaseUrlProblem::QueryOrFragment);
    }
    if url.has_credentials {
        return Err(BaseUrlProblem::Credentials);
    }
    check_scheme(url, allow_http)
}

/// https, or http to a loopback host (`localhost`, 127.0.0.0/8, `[::1]`)
/// or, with `allow_http` (local runs), to any host.
pub fn check_scheme(url: &UrlParts, allow_http: bool) -> Result<(), BaseUrlProblem> {
    let Some(host) = url.host.filter(|host| !host.is_empty()) else {
        return Err(BaseUrlProblem::NotHttps);
    };
    match url.scheme {
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
}
