//! Lists in messages.

/// `a, b, c or d`; `a` alone; empty for none.
pub fn or_list<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.into_iter().collect();
    match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_as_one_list() {
        let rows: [(&[&str], &str); 4] = [
            (&[], ""),
            (&["a"], "a"),
            (&["a", "b"], "a or b"),
            (&["a", "b", "c"], "a, b or c"),
        ];
        for (names, expected) in rows {
            assert_eq!(or_list(names.iter().copied()), expected);
        }
    }
}
