//! An item's size as DynamoDB counts it: against its 400 KB item limit (a
//! put over it is refused with a `ValidationException` that no retry
//! changes) and in read and write units. One rule for every caller: ingest
//! answers 413 before its put, the audit's import counts such a
//! submission unimportable, the worker's queue census sums what it read.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

/// DynamoDB's item size limit: 400 KB.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;

/// An item's size: each attribute's name and value in UTF-8 bytes; a
/// number about one byte per two digits plus one (at most 21); containers
/// 3 bytes plus their contents and one byte per element.
/// <https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html>
pub fn item_size(item: &HashMap<String, AttributeValue>) -> usize {
    item.iter()
        .map(|(name, value)| name.len() + value_size(value))
        .sum()
}

fn value_size(value: &AttributeValue) -> usize {
    match value {
        AttributeValue::S(text) => text.len(),
        AttributeValue::N(number) => (number.len().div_ceil(2) + 1).min(21),
        AttributeValue::B(bytes) => bytes.as_ref().len(),
        AttributeValue::Ss(texts) => texts.iter().map(String::len).sum(),
        AttributeValue::Ns(numbers) => numbers.iter().map(|n| n.len().div_ceil(2) + 1).sum(),
        AttributeValue::Bs(blobs) => blobs.iter().map(|b| b.as_ref().len()).sum(),
        AttributeValue::M(map) => 3 + item_size(map) + map.len(),
        AttributeValue::L(list) => 3 + list.iter().map(value_size).sum::<usize>() + list.len(),
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_as_dynamodb_counts_them() {
        let s = |text: &str| AttributeValue::S(text.to_owned());
        let item = |pairs: Vec<(&str, AttributeValue)>| -> HashMap<String, AttributeValue> {
            pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
        };
        let rows: [(&str, HashMap<String, AttributeValue>, usize); 5] = [
            ("text", item(vec![("pk", s("abc"))]), 5),
            (
                "number",
                item(vec![("n", AttributeValue::N("12345".into()))]),
                5,
            ),
            ("boolean", item(vec![("b", AttributeValue::Bool(true))]), 2),
            (
                "list",
                item(vec![("l", AttributeValue::L(vec![s("ab"), s("c")]))]),
                1 + 3 + 3 + 2,
            ),
            (
                "map",
                item(vec![("m", AttributeValue::M(item(vec![("k", s("vv"))])))]),
                1 + 3 + 3 + 1,
            ),
        ];
        for (what, item, size) in rows {
            assert_eq!(item_size(&item), size, "{what}");
        }
    }
}
