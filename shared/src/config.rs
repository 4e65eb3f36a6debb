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

#[cfg(test)]
mod tests {
    use super::*;

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
