//! Who may talk to the console: only a page the console itself served, on
//! the loopback, holding this run's token. Pure rules, table-tested; the
//! server asks them of every request before anything else.
//!
//! - The console listens on 127.0.0.1 only; another address is refused as
//!   the command line is read (`cli::loopback_only`).
//! - `Host` must name the console (127.0.0.1 or localhost, its port): a
//!   page of another site whose name resolves to 127.0.0.1 (DNS
//!   rebinding) sends its own name, and is refused.
//! - `Origin`, when a browser sends one, must be the console's; a write
//!   (POST) must carry it. `Sec-Fetch-Site`, when sent, must be
//!   `same-origin` or `none` (a typed URL).
//! - Every request carries the token printed with the URL: in the query
//!   (`?token=`) for the page and its assets, in `X-Console-Token` for the
//!   API. Compared in constant time.

/// Why a request is refused (the status and one line, never the token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 403: not the console's host, origin or site.
    Foreign(&'static str),
    /// 401: no token, or another run's.
    NoToken,
}

impl Refusal {
    pub fn status(self) -> u16 {
        match self {
            Refusal::Foreign(_) => 403,
            Refusal::NoToken => 401,
        }
    }

    pub fn reason(self) -> &'static str {
        match self {
            Refusal::Foreign(why) => why,
            Refusal::NoToken => "this console's token is missing or wrong: open the URL it printed",
        }
    }
}

/// What the guard reads of a request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Asked<'a> {
    pub write: bool,
    pub host: Option<&'a str>,
    pub origin: Option<&'a str>,
    pub fetch_site: Option<&'a str>,
    /// The token presented (query or header).
    pub token: Option<&'a str>,
}

/// This run's rules.
#[derive(Debug, Clone)]
pub struct Guard {
    token: String,
    port: u16,
}

impl Guard {
    pub fn new(token: String, port: u16) -> Self {
        Guard { token, port }
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// The request's answer: `Ok` to go on.
    pub fn check(&self, asked: &Asked<'_>) -> Result<(), Refusal> {
        let own_host = |host: &str| {
            [
                format!("127.0.0.1:{}", self.port),
                format!("localhost:{}", self.port),
            ]
            .iter()
            .any(|own| own.eq_ignore_ascii_case(host))
        };
        if !asked.host.is_some_and(own_host) {
            return Err(Refusal::Foreign("not this console's host"));
        }
        match asked.origin {
            Some(origin) => {
                let host = origin.strip_prefix("http://").unwrap_or("");
                if !own_host(host) {
                    return Err(Refusal::Foreign(
                        "another site's page may not use the console",
                    ));
                }
            }
            None if asked.write => {
                return Err(Refusal::Foreign(
                    "a change must come from the console's own page",
                ))
            }
            None => {}
        }
        if asked
            .fetch_site
            .is_some_and(|site| !matches!(site, "same-origin" | "none"))
        {
            return Err(Refusal::Foreign(
                "another site's page may not use the console",
            ));
        }
        match asked.token {
            Some(token) if constant_time_eq(token.as_bytes(), self.token.as_bytes()) => Ok(()),
            _ => Err(Refusal::NoToken),
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn guard() -> Guard {
        Guard::new(TOKEN.to_owned(), 4321)
    }

    #[test]
    fn requests() {
        let own = Asked {
            write: false,
            host: Some("127.0.0.1:4321"),
            origin: None,
            fetch_site: None,
            token: Some(TOKEN),
        };
        let post = Asked {
            write: true,
            origin: Some("http://127.0.0.1:4321"),
            fetch_site: Some("same-origin"),
            ..own
        };
        let rows: [(&str, Asked, Result<(), Refusal>); 13] = [
            ("the page, typed", own, Ok(())),
            (
                "localhost",
                Asked {
                    host: Some("localhost:4321"),
                    ..own
                },
                Ok(()),
            ),
            ("a write from the page", post, Ok(())),
            (
                "no token",
                Asked { token: None, ..own },
                Err(Refusal::NoToken),
            ),
            (
                "another token",
                Asked {
                    token: Some("0123"),
                    ..own
                },
                Err(Refusal::NoToken),
            ),
            (
                "a token one character off",
                Asked {
                    token: Some("0123456789abcdef0123456789abcdee"),
                    ..own
                },
                Err(Refusal::NoToken),
            ),
            (
                "a rebound name",
                Asked {
                    host: Some("evil.example:4321"),
                    ..own
                },
                Err(Refusal::Foreign("not this console's host")),
            ),
            (
                "another port",
                Asked {
                    host: Some("127.0.0.1:80"),
                    ..own
                },
                Err(Refusal::Foreign("not this console's host")),
            ),
            (
                "no host",
                Asked { host: None, ..own },
                Err(Refusal::Foreign("not this console's host")),
            ),
            (
                "another site's page",
                Asked {
                    origin: Some("https://evil.example"),
                    ..post
                },
                Err(Refusal::Foreign(
                    "another site's page may not use the console",
                )),
            ),
            (
                "a write without an origin",
                Asked {
                    origin: None,
                    ..post
                },
                Err(Refusal::Foreign(
                    "a change must come from the console's own page",
                )),
            ),
            (
                "a cross-site fetch",
                Asked {
                    fetch_site: Some("cross-site"),
                    ..own
                },
                Err(Refusal::Foreign(
                    "another site's page may not use the console",
                )),
            ),
            (
                "the null origin of a sandbox",
                Asked {
                    origin: Some("null"),
                    ..own
                },
                Err(Refusal::Foreign(
                    "another site's page may not use the console",
                )),
            ),
        ];
        for (what, asked, expected) in rows {
            assert_eq!(guard().check(&asked), expected, "{what}");
        }
        assert_eq!(Refusal::NoToken.status(), 401);
        assert_eq!(Refusal::Foreign("x").status(), 403);
    }
}
