//! A base URL a setting names, parsed and judged by the one rule for where
//! a token may go (`shared::endpoint`: https, or http to this machine; no
//! query, fragment or credentials).

pub use shared::endpoint::BaseUrlProblem;
use shared::endpoint::UrlParts;

/// `url` parsed, when the rule allows it (`allow_http`: http to any host,
/// for local runs).
pub fn check_base_url(url: &str, allow_http: bool) -> Result<reqwest::Url, BaseUrlProblem> {
    let parsed = reqwest::Url::parse(url).map_err(|_| BaseUrlProblem::NotAbsolute)?;
    shared::endpoint::check_base_url(&parts(&parsed), allow_http)?;
    Ok(parsed)
}

/// The scheme rule alone, for a URL with more in it (a CRM's upsert URL).
pub fn check_scheme(parsed: &reqwest::Url, allow_http: bool) -> Result<(), BaseUrlProblem> {
    shared::endpoint::check_scheme(&parts(parsed), allow_http)
}

fn parts(parsed: &reqwest::Url) -> UrlParts<'_> {
    UrlParts {
        scheme: parsed.scheme(),
        host: parsed.host_str(),
        has_credentials: !parsed.username().is_empty() || parsed.password().is_some(),
        has_query_or_fragment: parsed.query().is_some() || parsed.fragment().is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let posing = reqwest::Url::parse("http://127.0.0.1@api.example.com").unwrap();
        assert_eq!(check_scheme(&posing, false), Err(ClearText));
    }
}
