//! What both functions' configurations share: one error type that names the
//! variable at fault (and never carries a secret's value), and the rule that
//! an empty variable counts as unset.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{0} is required but not set")]
    Missing(&'static str),
    #[error("{name} is invalid: {reason}")]
    Invalid { name: &'static str, reason: String },
}

pub fn invalid(name: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        name,
        reason: reason.into(),
    }
}

/// Wraps an environment lookup so that blank values count as unset.
pub fn non_empty(lookup: impl Fn(&str) -> Option<String>) -> impl Fn(&str) -> Option<String> {
    move |name| lookup(name).filter(|value| !value.trim().is_empty())
}

/// A whole number within `range`, or `None`.
pub fn number_in<T>(raw: &str, range: std::ops::RangeInclusive<T>) -> Option<T>
where
    T: std::str::FromStr + PartialOrd,
{
    raw.trim().parse().ok().filter(|n| range.contains(n))
}

/// `true` or `false` (unset is `false`): anything else is refused, so a
/// typo never turns a setting off unseen.
pub fn flag(
    get: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<bool, ConfigError> {
    match get(name).as_deref().map(str::trim) {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(_) => Err(invalid(name, "expected true or false")),
    }
}

/// The receipts table's name, in both functions.
pub const RECEIPTS_TABLE: &str = "RECEIPTS_TABLE";

/// `RECEIPTS_TABLE`, trimmed: required in both functions.
pub fn receipts_table(get: &impl Fn(&str) -> Option<String>) -> Result<String, ConfigError> {
    get(RECEIPTS_TABLE)
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .ok_or(ConfigError::Missing(RECEIPTS_TABLE))
}

/// A whole number of seconds within `range` from the variable `name`, or
/// `default` when it is unset: one rule and one message for every
/// `*_SECONDS` variable.
pub fn seconds_in(
    get: &impl Fn(&str) -> Option<String>,
    name: &'static str,
    default: std::time::Duration,
    range: std::ops::RangeInclusive<u64>,
) -> Result<std::time::Duration, ConfigError> {
    match get(name) {
        None => Ok(default),
        Some(raw) => number_in(&raw, range.clone())
            .map(std::time::Duration::from_secs)
            .ok_or_else(|| {
                invalid(
                    name,
                    format!(
                        "expected whole seconds from {} to {}",
                        range.start(),
                        range.end()
                    ),
                )
            }),
    }
}

/// How often both functions read the routes again, in seconds.
pub const ROUTES_REREAD_SECONDS: &str = "ROUTES_REREAD_SECONDS";

/// `ROUTES_REREAD_SECONDS`: five minutes when unset, and never longer, so
/// `receipts routes apply` takes effect within five minutes whatever is
/// set (a local run or a test sets less).
pub fn routes_reread(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<std::time::Duration, ConfigError> {
    seconds_in(
        get,
        ROUTES_REREAD_SECONDS,
        crate::routes::ROUTES_REREAD,
        1..=crate::routes::ROUTES_REREAD.as_secs(),
    )
}

/// `METRICS_NAMESPACE`, or the default namespace: one rule and one message
/// for both functions.
pub fn metrics_namespace(get: &impl Fn(&str) -> Option<String>) -> Result<String, ConfigError> {
    use crate::metrics::{namespace, METRICS_NAMESPACE};
    namespace(get(METRICS_NAMESPACE).as_deref())
        .map_err(|reason| invalid(METRICS_NAMESPACE, reason))
}

/// `METRICS_NAMESPACE` and `OBSERVABILITY` (`full`, the default, or
/// `lean`): where both functions' metrics go and how many they emit.
pub fn metrics(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<crate::metrics::Metrics, ConfigError> {
    use crate::metrics::{Metrics, Observability, OBSERVABILITY};
    let observability = match get(OBSERVABILITY) {
        None => Observability::default(),
        Some(raw) => Observability::parse(&raw)
            .ok_or_else(|| invalid(OBSERVABILITY, "expected full or lean"))?,
    };
    Ok(Metrics::new(metrics_namespace(get)?, observability))
}

/// Ten years: the upper bound of the worker's delays, long enough for any
/// honest setting and short enough that adding it to a date cannot overflow.
pub const TEN_YEARS_SECONDS: u64 = 3650 * 24 * 60 * 60;

/// Both functions' receipt retention: they must agree on it.
pub const RECEIPT_RETENTION_DAYS: &str = "RECEIPT_RETENTION_DAYS";

/// `RECEIPT_RETENTION_DAYS`, or the default: one rule and one message for
/// both functions.
pub fn retention_days(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<crate::Retention, ConfigError> {
    match get(RECEIPT_RETENTION_DAYS) {
        None => Ok(crate::Retention::default()),
        Some(raw) => number_in(&raw, 1..=crate::Retention::MAX_DAYS)
            .and_then(crate::Retention::days)
            .ok_or_else(|| {
                invalid(
                    RECEIPT_RETENTION_DAYS,
                    format!(
                        "expected a whole number of days from 1 to {}",
                        crate::Retention::MAX_DAYS
                    ),
                )
            }),
    }
}

/// A Secrets Manager secret's ARN, trimmed; `name` is the variable that
/// gave it. The one check of every `*_SECRET_ARN` / `*_SECRETS_ARN`.
pub fn secret_arn(name: &'static str, raw: &str) -> Result<String, ConfigError> {
    let arn = raw.trim();
    if arn.starts_with("arn:") {
        Ok(arn.to_owned())
    } else {
        Err(invalid(
            name,
            "must be a Secrets Manager secret ARN (arn:...)",
        ))
    }
}

/// The variable naming a DynamoDB endpoint other than AWS's, for local
/// servers. Declared blank in the template so `sam local invoke` can set it:
/// blank means AWS's own endpoint. (Not the SDK's `AWS_ENDPOINT_URL_DYNAMODB`:
/// the SDK takes that one, declared blank, as the endpoint itself, and every
/// call panics; see ingest's `blank_sdk_endpoint` test.)
pub const DYNAMODB_ENDPOINT: &str = "DYNAMODB_ENDPOINT";

/// `DYNAMODB_ENDPOINT`: unset or blank is `None`; otherwise an absolute
/// http(s) URL with a host.
pub fn dynamodb_endpoint(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Option<String>, ConfigError> {
    let Some(raw) = get(DYNAMODB_ENDPOINT) else {
        return Ok(None);
    };
    let url = raw.trim();
    let host = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .map(|rest| rest.split(['/', '?', '#']).next().unwrap_or(""))
        .unwrap_or("");
    if host.is_empty() || host.starts_with(':') || url.contains(char::is_whitespace) {
        return Err(invalid(
            DYNAMODB_ENDPOINT,
            "must be an http:// or https:// URL with a host, or blank for AWS",
        ));
    }
    Ok(Some(url.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_and_secret_arns() {
        let get = |value: &'static str| move |_: &str| Some(value.to_owned());
        assert_eq!(
            retention_days(&get("45")).unwrap().as_duration().as_secs(),
            45 * 86_400
        );
        assert_eq!(
            retention_days(&|_: &str| None).unwrap(),
            crate::Retention::default()
        );
        for bad in ["0", "3651", "a month"] {
            assert_eq!(
                retention_days(&get(bad)),
                Err(invalid(
                    RECEIPT_RETENTION_DAYS,
                    "expected a whole number of days from 1 to 3650"
                )),
                "{bad}"
            );
        }
        assert_eq!(
            secret_arn("X_ARN", " arn:aws:secretsmanager:x ").unwrap(),
            "arn:aws:secretsmanager:x"
        );
        assert_eq!(
            secret_arn("X_ARN", "my-secret"),
            Err(invalid(
                "X_ARN",
                "must be a Secrets Manager secret ARN (arn:...)"
            ))
        );
    }

    #[test]
    fn dynamodb_endpoints() {
        let read = |value: Option<&str>| {
            let value = value.map(str::to_owned);
            dynamodb_endpoint(&non_empty(move |_| value.clone()))
        };
        let bad = Err(invalid(
            DYNAMODB_ENDPOINT,
            "must be an http:// or https:// URL with a host, or blank for AWS",
        ));
        let rows = [
            (None, Ok(None)),
            (Some(""), Ok(None)),
            (Some("   "), Ok(None)),
            (
                Some("http://172.17.0.1:9100"),
                Ok(Some("http://172.17.0.1:9100".to_owned())),
            ),
            (
                Some(" https://dynamodb.local/ "),
                Ok(Some("https://dynamodb.local/".to_owned())),
            ),
            (Some("172.17.0.1:9100"), bad.clone()),
            (Some("http://"), bad.clone()),
            (Some("http://:9100"), bad.clone()),
            (Some("ftp://host"), bad.clone()),
            (Some("http://a b"), bad),
        ];
        for (value, expected) in rows {
            assert_eq!(read(value), expected, "{value:?}");
        }
    }

    #[test]
    fn tables_and_seconds() {
        let get = |value: &'static str| move |_: &str| Some(value.to_owned());
        assert_eq!(receipts_table(&get(" receipts ")).unwrap(), "receipts");
        assert_eq!(
            receipts_table(&get("  ")),
            Err(ConfigError::Missing(RECEIPTS_TABLE))
        );
        assert_eq!(
            receipts_table(&|_: &str| None),
            Err(ConfigError::Missing(RECEIPTS_TABLE))
        );
        let default = std::time::Duration::from_secs(7);
        let rows: [(Option<&'static str>, Result<u64, ConfigError>); 6] = [
            (None, Ok(7)),
            (Some("1"), Ok(1)),
            (Some(" 60 "), Ok(60)),
            (
                Some("61"),
                Err(invalid("X_SECONDS", "expected whole seconds from 1 to 60")),
            ),
            (
                Some("0"),
                Err(invalid("X_SECONDS", "expected whole seconds from 1 to 60")),
            ),
            (
                Some("soon"),
                Err(invalid("X_SECONDS", "expected whole seconds from 1 to 60")),
            ),
        ];
        for (raw, expected) in rows {
            let got = seconds_in(
                &move |_: &str| raw.map(str::to_owned),
                "X_SECONDS",
                default,
                1..=60,
            );
            assert_eq!(got.map(|d| d.as_secs()), expected, "{raw:?}");
        }
    }

    #[test]
    fn observability_is_full_unless_lean_is_asked() {
        use crate::metrics::{Observability, OBSERVABILITY};
        let read = |value: Option<&'static str>| {
            metrics(&move |name: &str| {
                (name == OBSERVABILITY)
                    .then_some(value)
                    .flatten()
                    .map(str::to_owned)
            })
        };
        assert_eq!(read(None).unwrap().observability(), Observability::Full);
        assert_eq!(
            read(Some("lean")).unwrap().observability(),
            Observability::Lean
        );
        assert_eq!(
            read(Some("quiet")),
            Err(invalid(OBSERVABILITY, "expected full or lean"))
        );
    }

    /// Five minutes unless set lower: never longer, so a routes change
    /// always takes effect within five minutes.
    #[test]
    fn routes_reread_is_five_minutes_at_most() {
        let read =
            |value: Option<&'static str>| routes_reread(&move |_: &str| value.map(str::to_owned));
        let refused = Err(invalid(
            ROUTES_REREAD_SECONDS,
            "expected whole seconds from 1 to 300",
        ));
        let rows = [
            (None, Ok(std::time::Duration::from_secs(300))),
            (Some("2"), Ok(std::time::Duration::from_secs(2))),
            (Some("300"), Ok(std::time::Duration::from_secs(300))),
            (Some("301"), refused.clone()),
            (Some("0"), refused.clone()),
            (Some("5m"), refused),
        ];
        for (value, expected) in rows {
            assert_eq!(read(value), expected, "{value:?}");
        }
    }

    #[test]
    fn blank_counts_as_unset() {
        let get = non_empty(|name| match name {
            "BLANK" => Some("  ".to_owned()),
            "SET" => Some("x".to_owned()),
            _ => None,
        });
        assert_eq!(get("BLANK"), None);
        assert_eq!(get("SET").as_deref(), Some("x"));
        assert_eq!(get("UNSET"), None);
    }

    #[test]
    fn flags() {
        let refused = Err(invalid("X", "expected true or false"));
        let rows = [
            (None, Ok(false)),
            (Some("false"), Ok(false)),
            (Some(" true "), Ok(true)),
            (Some("TRUE"), refused.clone()),
            (Some("yes"), refused.clone()),
            (Some("1"), refused),
        ];
        for (raw, expected) in rows {
            assert_eq!(
                flag(&move |_: &str| raw.map(str::to_owned), "X"),
                expected,
                "{raw:?}"
            );
        }
    }

    #[test]
    fn numbers_in_range() {
        assert_eq!(number_in(" 8 ", 1..=100), Some(8usize));
        assert_eq!(number_in("0", 1..=100usize), None);
        assert_eq!(number_in("101", 1..=100usize), None);
        assert_eq!(number_in("-1", 1..=100u32), None);
        assert_eq!(number_in("eight", 1..=100u32), None);
    }

    #[test]
    fn messages_name_the_variable() {
        assert_eq!(
            ConfigError::Missing("A").to_string(),
            "A is required but not set"
        );
        assert_eq!(
            invalid("B", "too long").to_string(),
            "B is invalid: too long"
        );
    }
}
