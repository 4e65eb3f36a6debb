//! A proxy in front of the local DynamoDB server that counts what each
//! write costs, as DynamoDB bills it: the write units of the table and of
//! every global secondary index entry written, moved or rewritten. It
//! forwards every request unchanged; around each write it reads the items
//! the write touches (before and after, consistently), so what it counts is
//! what the binaries really did, not what we believe they do.
//!
//! The rules, from DynamoDB's developer guide ("Capacity unit consumption
//! for writes", "Provisioned throughput considerations for global secondary
//! indexes", "Item sizes and formats"):
//! - a write unit is 1 KB of the item, rounded up; an update costs the
//!   larger of the item before and after; a delete costs the item deleted;
//!   a write whose condition fails still costs the item's size;
//! - an index entry is its index key, the table's key, its projected
//!   attributes and 100 bytes; an item that enters the index costs one
//!   entry written, one that leaves it one entry deleted, a changed index
//!   key a delete and a put, and a changed projected attribute one rewrite;
//!   an item outside the index before and after costs the index nothing;
//! - a transaction's writes (a condition check included) cost twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use axum::Router;
use serde_json::{json, Map, Value};

use crate::server::{lock, Listener, Server};

/// One write's cost, as DynamoDB would bill it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metered {
    /// `PutItem`, `UpdateItem`, `DeleteItem`, or `TransactWriteItems`
    /// (one record per item of the transaction).
    pub operation: String,
    pub table: String,
    /// The item's partition key value.
    pub key: String,
    pub table_units: u32,
    pub index_units: u32,
    /// Its condition held (a failed one still costs its table units).
    pub succeeded: bool,
}

impl Metered {
    pub fn units(&self) -> u32 {
        self.table_units + self.index_units
    }
}

/// A table's keys and indexes, as `DescribeTable` gives them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableShape {
    pub key: Vec<String>,
    pub indexes: Vec<IndexShape>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexShape {
    pub name: String,
    pub key: Vec<String>,
    pub projection: Projection,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Projection {
    KeysOnly,
    Include(Vec<String>),
    All,
}

impl TableShape {
    /// From a `DescribeTable` answer's `Table`.
    pub fn from_description(table: &Value) -> Self {
        let names = |schema: &Value| -> Vec<String> {
            schema
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|k| k["AttributeName"].as_str().map(str::to_owned))
                .collect()
        };
        let indexes = table["GlobalSecondaryIndexes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|index| IndexShape {
                name: index["IndexName"].as_str().unwrap_or_default().to_owned(),
                key: names(&index["KeySchema"]),
                projection: match index["Projection"]["ProjectionType"].as_str() {
                    Some("ALL") => Projection::All,
                    Some("INCLUDE") => Projection::Include(
                        index["Projection"]["NonKeyAttributes"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|a| a.as_str().map(str::to_owned))
                            .collect(),
                    ),
                    _ => Projection::KeysOnly,
                },
            })
            .collect();
        TableShape {
            key: names(&table["KeySchema"]),
            indexes,
        }
    }
}

/// An item in DynamoDB's JSON: attribute name to typed value.
pub type Item = Map<String, Value>;

/// The size DynamoDB gives a typed value (`{"S": ...}`, `{"N": ...}`...).
pub fn value_size(value: &Value) -> usize {
    let Some((kind, inner)) = value.as_object().and_then(|o| o.iter().next()) else {
        return 0;
    };
    match kind.as_str() {
        "S" => inner.as_str().map_or(0, str::len),
        "N" => number_size(inner.as_str().unwrap_or_default()),
        "B" => base64_len(inner.as_str().unwrap_or_default()),
        "BOOL" | "NULL" => 1,
        "SS" => strings(inner).map(str::len).sum(),
        "NS" => strings(inner).map(number_size).sum(),
        "BS" => strings(inner).map(base64_len).sum(),
        "L" => {
            let items = inner.as_array().map(Vec::as_slice).unwrap_or_default();
            3 + items.iter().map(|v| value_size(v) + 1).sum::<usize>()
        }
        "M" => {
            let map = inner.as_object();
            3 + map
                .into_iter()
                .flatten()
                .map(|(name, v)| name.len() + value_size(v) + 1)
                .sum::<usize>()
        }
        _ => 0,
    }
}

fn strings(value: &Value) -> impl Iterator<Item = &str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// A number: a byte per two significant digits, and one more.
fn number_size(text: &str) -> usize {
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    let significant = digits.trim_start_matches('0').trim_end_matches('0').len();
    significant.div_ceil(2) + 1
}

fn base64_len(text: &str) -> usize {
    text.trim_end_matches('=').len() * 3 / 4
}

/// The item's size: each attribute's name and value.
pub fn item_size(item: &Item) -> usize {
    item.iter()
        .map(|(name, value)| name.len() + value_size(value))
        .sum()
}

/// Write units for `bytes`: 1 KB each, rounded up, at least one.
pub fn units_for(bytes: usize) -> u32 {
    (bytes.max(1).div_ceil(1024)) as u32
}

/// The index entry `item` has in `index`, or `None` when it lacks one of
/// the index's key attributes (a sparse index leaves it out).
fn entry(shape: &TableShape, index: &IndexShape, item: Option<&Item>) -> Option<Item> {
    let item = item?;
    if !index.key.iter().all(|k| item.contains_key(k)) {
        return None;
    }
    Some(
        item.iter()
            .filter(|(name, _)| {
                shape.key.contains(name)
                    || index.key.contains(name)
                    || match &index.projection {
                        Projection::All => true,
                        Projection::Include(names) => names.contains(name),
                        Projection::KeysOnly => false,
                    }
            })
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect(),
    )
}

/// Index entry overhead DynamoDB adds to each entry's size.
const INDEX_ENTRY_OVERHEAD: usize = 100;

/// What one write of a table item from `before` to `after` costs: the
/// table's units and every index's (a failed condition leaves the item as
/// it was: `after == before`).
pub fn write_units(shape: &TableShape, before: Option<&Item>, after: Option<&Item>) -> (u32, u32) {
    let size = |item: Option<&Item>| item.map_or(0, item_size);
    let table = units_for(size(before).max(size(after)));
    let mut index = 0;
    for shape_index in &shape.indexes {
        let old = entry(shape, shape_index, before);
        let new = entry(shape, shape_index, after);
        let cost = |e: &Item| units_for(item_size(e) + INDEX_ENTRY_OVERHEAD);
        index += match (&old, &new) {
            (None, None) => 0,
            (Some(old), None) => cost(old),
            (None, Some(new)) => cost(new),
            (Some(old), Some(new)) => {
                let key_of = |e: &Item| {
                    shape_index
                        .key
                        .iter()
                        .map(|k| e.get(k).cloned())
                        .collect::<Vec<_>>()
                };
                if key_of(old) != key_of(new) {
                    cost(old) + cost(new)
                } else if old != new {
                    cost(new)
                } else {
                    0
                }
            }
        };
    }
    (table, index)
}

struct MeterState {
    upstream: String,
    client: reqwest::Client,
    shapes: Mutex<HashMap<String, TableShape>>,
    metered: Mutex<Vec<Metered>>,
    /// One metered write at a time, so the items read around it are its
    /// own before and after.
    writing: tokio::sync::Mutex<()>,
}

/// The metering proxy: point the binaries' DynamoDB endpoint at `url()`.
pub struct WriteMeter {
    state: Arc<MeterState>,
    server: Server,
}

impl WriteMeter {
    /// Starts on a free loopback port, forwarding to `upstream`.
    pub async fn start(upstream: &str) -> std::io::Result<WriteMeter> {
        let listener = Listener::loopback().await?;
        let state = Arc::new(MeterState {
            upstream: upstream.trim_end_matches('/').to_owned(),
            client: reqwest::Client::new(),
            shapes: Mutex::new(HashMap::new()),
            metered: Mutex::new(Vec::new()),
            writing: tokio::sync::Mutex::new(()),
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&state));
        let server = listener.serve(app);
        Ok(WriteMeter { state, server })
    }

    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Every write counted so far, in order.
    pub fn metered(&self) -> Vec<Metered> {
        lock(&self.state.metered).clone()
    }

    /// Forgets what was counted.
    pub fn reset(&self) {
        lock(&self.state.metered).clear();
    }
}

/// A write request's items: (operation, table, key, transactional).
fn touched(
    target: &str,
    body: &Value,
    shapes: &HashMap<String, TableShape>,
) -> Vec<(String, String, Item, bool)> {
    let key_of = |table: &str, item: &Value| -> Item {
        let shape = shapes.get(table).cloned().unwrap_or_default();
        item.as_object()
            .into_iter()
            .flatten()
            .filter(|(name, _)| shape.key.contains(name))
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect()
    };
    let table = |b: &Value| b["TableName"].as_str().unwrap_or_default().to_owned();
    match target {
        "PutItem" => vec![(
            target.to_owned(),
            table(body),
            key_of(&table(body), &body["Item"]),
            false,
        )],
        "UpdateItem" | "DeleteItem" => {
            let key = body["Key"].as_object().cloned().unwrap_or_default();
            vec![(target.to_owned(), table(body), key, false)]
        }
        "TransactWriteItems" => body["TransactItems"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|entry| {
                let (kind, inner) = entry.as_object()?.iter().next()?;
                let name = table(inner);
                let key = match kind.as_str() {
                    "Put" => key_of(&name, &inner["Item"]),
                    _ => inner["Key"].as_object().cloned().unwrap_or_default(),
                };
                Some((format!("TransactWriteItems:{kind}"), name, key, true))
            })
            .collect(),
        _ => Vec::new(),
    }
}

async fn handle(
    State(state): State<Arc<MeterState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let target = headers
        .get("x-amz-target")
        .and_then(|t| t.to_str().ok())
        .and_then(|t| t.strip_prefix("DynamoDB_20120810."))
        .unwrap_or_default()
        .to_owned();
    let metered = matches!(
        target.as_str(),
        "PutItem" | "UpdateItem" | "DeleteItem" | "TransactWriteItems"
    );
    if !metered {
        return forward(&state, method, &uri, &headers, body).await;
    }
    let _one_at_a_time = state.writing.lock().await;
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let tables: Vec<String> = touched(&target, &request, &HashMap::new())
        .into_iter()
        .map(|(_, table, _, _)| table)
        .collect();
    for table in tables {
        shape_of(&state, &headers, &table).await;
    }
    let shapes = lock(&state.shapes).clone();
    let items = touched(&target, &request, &shapes);
    let mut before = Vec::new();
    for (_, table, key, _) in &items {
        before.push(read(&state, &headers, table, key).await);
    }
    let response = forward(&state, method, &uri, &headers, body).await;
    let succeeded = response.status().is_success();
    for ((operation, table, key, transactional), before) in items.into_iter().zip(before) {
        let after = read(&state, &headers, &table, &key).await;
        let shape = shapes.get(&table).cloned().unwrap_or_default();
        let (mut table_units, mut index_units) = if operation.ends_with(":ConditionCheck") {
            (units_for(before.as_ref().map_or(0, item_size)), 0)
        } else {
            write_units(&shape, before.as_ref(), after.as_ref())
        };
        if transactional {
            table_units *= 2;
            index_units *= 2;
        }
        let key = key
            .values()
            .next()
            .and_then(|v| v.as_object())
            .and_then(|v| v.values().next())
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        lock(&state.metered).push(Metered {
            operation,
            table,
            key,
            table_units,
            index_units,
            succeeded,
        });
    }
    response
}

/// The table's keys and indexes, read once.
async fn shape_of(state: &MeterState, headers: &HeaderMap, table: &str) {
    if lock(&state.shapes).contains_key(table) {
        return;
    }
    let described = call(state, headers, "DescribeTable", json!({"TableName": table})).await;
    if let Some(description) = described.get("Table") {
        lock(&state.shapes).insert(table.to_owned(), TableShape::from_description(description));
    }
}

async fn read(state: &MeterState, headers: &HeaderMap, table: &str, key: &Item) -> Option<Item> {
    let answer = call(
        state,
        headers,
        "GetItem",
        json!({"TableName": table, "Key": key, "ConsistentRead": true}),
    )
    .await;
    answer.get("Item").and_then(Value::as_object).cloned()
}

/// One DynamoDB call of the meter's own, signed as the request it meters
/// was (a local server reads the region from it and checks nothing else).
async fn call(state: &MeterState, headers: &HeaderMap, target: &str, body: Value) -> Value {
    let mut request = state
        .client
        .post(format!("{}/", state.upstream))
        .header("x-amz-target", format!("DynamoDB_20120810.{target}"))
        .header("content-type", "application/x-amz-json-1.0")
        .body(body.to_string());
    if let Some(authorization) = headers.get("authorization") {
        request = request.header("authorization", authorization);
    }
    match request.send().await {
        Ok(answer) => answer.json().await.unwrap_or(Value::Null),
        Err(_) => Value::Null,
    }
}

async fn forward(
    state: &MeterState,
    method: Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> Response {
    crate::server::forward(&state.client, &state.upstream, method, uri, headers, body).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> TableShape {
        TableShape::from_description(&json!({
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "GlobalSecondaryIndexes": [{
                "IndexName": "queue-by-due",
                "KeySchema": [{"AttributeName": "pending", "KeyType": "HASH"},
                              {"AttributeName": "nextAttemptAt", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["receivedAt"]}
            }]
        }))
    }

    fn item(value: Value) -> Item {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn sizes_follow_dynamodbs_rules() {
        assert_eq!(value_size(&json!({"S": "abc"})), 3);
        assert_eq!(value_size(&json!({"S": "é"})), 2, "UTF-8 bytes");
        assert_eq!(value_size(&json!({"N": "0"})), 1);
        assert_eq!(value_size(&json!({"N": "12345"})), 4);
        assert_eq!(
            value_size(&json!({"N": "1200"})),
            2,
            "trailing zeroes trimmed"
        );
        assert_eq!(value_size(&json!({"BOOL": true})), 1);
        assert_eq!(
            value_size(&json!({"L": [{"S": "a"}, {"S": "bc"}]})),
            3 + 2 + 3
        );
        assert_eq!(value_size(&json!({"M": {"a": {"S": "b"}}})), 3 + 1 + 1 + 1);
        assert_eq!(
            item_size(&item(json!({"pk": {"S": "k1"}, "n": {"N": "5"}}))),
            2 + 2 + 1 + 2
        );
        assert_eq!(units_for(0), 1);
        assert_eq!(units_for(1024), 1);
        assert_eq!(units_for(1025), 2);
    }

    /// (case, before, after, table units, index units)
    type Case = (&'static str, Option<Value>, Option<Value>, u32, u32);

    #[test]
    fn each_index_entry_written_moved_or_rewritten_is_counted() {
        let waiting = json!({"pk": {"S": "k"}, "pending": {"S": "PENDING"}, "nextAttemptAt": {"S": "t1"}, "receivedAt": {"S": "t0"}, "payload": {"S": "x"}});
        let mut moved = waiting.clone();
        moved["nextAttemptAt"] = json!({"S": "t2"});
        let mut unprojected = waiting.clone();
        unprojected["claimedUntil"] = json!({"S": "t9"});
        let mut reprojected = waiting.clone();
        reprojected["receivedAt"] = json!({"S": "t5"});
        let done = json!({"pk": {"S": "k"}, "status": {"S": "COMPLETED"}});
        let big = json!({"pk": {"S": "k"}, "payload": {"S": "x".repeat(1500)}});
        let rows: Vec<Case> = vec![
            (
                "a new waiting item enters the index",
                None,
                Some(waiting.clone()),
                1,
                1,
            ),
            (
                "its due time moves: a delete and a put",
                Some(waiting.clone()),
                Some(moved),
                1,
                2,
            ),
            (
                "an attribute the index does not hold",
                Some(waiting.clone()),
                Some(unprojected),
                1,
                0,
            ),
            (
                "a projected attribute: one rewrite",
                Some(waiting.clone()),
                Some(reprojected),
                1,
                1,
            ),
            (
                "it leaves the index",
                Some(waiting.clone()),
                Some(done.clone()),
                1,
                1,
            ),
            (
                "never in the index",
                Some(done.clone()),
                Some(done.clone()),
                1,
                0,
            ),
            ("a larger item costs more", None, Some(big.clone()), 2, 0),
            (
                "an update costs the larger side",
                Some(big),
                Some(done),
                2,
                0,
            ),
            (
                "a failed condition: the item as it was",
                Some(waiting.clone()),
                Some(waiting),
                1,
                0,
            ),
        ];
        for (case, before, after, table, index) in rows {
            let before = before.map(item);
            let after = after.map(item);
            assert_eq!(
                write_units(&shape(), before.as_ref(), after.as_ref()),
                (table, index),
                "{case}"
            );
        }
    }
}
