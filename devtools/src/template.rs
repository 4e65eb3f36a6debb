//! The tables as template.yaml defines them, so local servers get exactly
//! the key, indexes, stream view and TTL attribute that AWS will.

use std::path::Path;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType, TableStatus,
    TimeToLiveSpecification,
};
use aws_sdk_dynamodb::Client;
use serde_norway::Value;

/// One `AWS::DynamoDB::Table` of the template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSpec {
    pub logical_id: String,
    pub partition_key: String,
    pub stream_view: Option<String>,
    pub ttl_attribute: Option<String>,
    pub indexes: Vec<IndexSpec>,
}

/// One global secondary index: string keys, as every key in the template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexSpec {
    pub name: String,
    pub partition_key: String,
    pub sort_key: Option<String>,
    pub projection: String,
    /// The attributes an `INCLUDE` projection adds to the keys.
    pub non_key_attributes: Vec<String>,
}

fn key_named(keys: &Value, key_type: &str) -> Option<String> {
    keys.as_sequence()?
        .iter()
        .find(|k| k["KeyType"].as_str() == Some(key_type))?["AttributeName"]
        .as_str()
        .map(str::to_owned)
}

/// Reads template.yaml. CloudFormation's short tags (`!Ref`, `!If`...) are
/// kept as tagged values; only plain table properties are read here.
pub fn load(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_norway::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The workspace's template.yaml.
pub fn workspace_template() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../template.yaml")
}

pub fn table_spec(template: &Value, logical_id: &str) -> Result<TableSpec, String> {
    let resource = &template["Resources"][logical_id];
    if resource["Type"].as_str() != Some("AWS::DynamoDB::Table") {
        return Err(format!(
            "{logical_id} is not an AWS::DynamoDB::Table in template.yaml"
        ));
    }
    let properties = &resource["Properties"];
    let partition_key = key_named(&properties["KeySchema"], "HASH")
        .ok_or_else(|| format!("{logical_id} has no HASH key"))?;
    let indexes = properties["GlobalSecondaryIndexes"]
        .as_sequence()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        // An index under a condition (`!If [Condition, index, NoValue]`)
        // exists only for a stack upgrade; a new table never has it.
        .filter(|index| !matches!(index, Value::Tagged(_)))
        .map(|index| {
            let name = index["IndexName"]
                .as_str()
                .ok_or_else(|| format!("{logical_id} has an index without IndexName"))?;
            Ok(IndexSpec {
                name: name.to_owned(),
                partition_key: key_named(&index["KeySchema"], "HASH")
                    .ok_or_else(|| format!("index {name} has no HASH key"))?,
                sort_key: key_named(&index["KeySchema"], "RANGE"),
                projection: index["Projection"]["ProjectionType"]
                    .as_str()
                    .unwrap_or("ALL")
                    .to_owned(),
                non_key_attributes: index["Projection"]["NonKeyAttributes"]
                    .as_sequence()
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|name| name.as_str().map(str::to_owned))
                    .collect(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let ttl = &properties["TimeToLiveSpecification"];
    Ok(TableSpec {
        logical_id: logical_id.to_owned(),
        partition_key,
        stream_view: properties["StreamSpecification"]["StreamViewType"]
            .as_str()
            .map(str::to_owned),
        ttl_attribute: (ttl["Enabled"].as_bool() == Some(true))
            .then(|| ttl["AttributeName"].as_str().map(str::to_owned))
            .flatten(),
        indexes,
    })
}

fn string_key(name: &str, key_type: KeyType) -> Result<KeySchemaElement, String> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(key_type)
        .build()
        .map_err(|e| e.to_string())
}

/// Creates `name` with the spec's key, stream and TTL. The key is a string,
/// as every table in the template has.
pub async fn create_table(client: &Client, spec: &TableSpec, name: &str) -> Result<(), String> {
    let mut request = client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(string_key(&spec.partition_key, KeyType::Hash)?);
    let mut key_attributes = vec![spec.partition_key.as_str()];
    for index in &spec.indexes {
        let mut keys = vec![string_key(&index.partition_key, KeyType::Hash)?];
        key_attributes.push(&index.partition_key);
        if let Some(sort_key) = &index.sort_key {
            keys.push(string_key(sort_key, KeyType::Range)?);
            key_attributes.push(sort_key);
        }
        request = request.global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name(&index.name)
                .set_key_schema(Some(keys))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::from(index.projection.as_str()))
                        .set_non_key_attributes(
                            (!index.non_key_attributes.is_empty())
                                .then(|| index.non_key_attributes.clone()),
                        )
                        .build(),
                )
                .build()
                .map_err(|e| e.to_string())?,
        );
    }
    key_attributes.sort_unstable();
    key_attributes.dedup();
    for attribute in key_attributes {
        request = request.attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(attribute)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(|e| e.to_string())?,
        );
    }
    if let Some(view) = &spec.stream_view {
        request = request.stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::from(view.as_str()))
                .build()
                .map_err(|e| e.to_string())?,
        );
    }
    request.send().await.map_err(|e| {
        format!(
            "create table {name}: {}",
            aws_sdk_dynamodb::error::DisplayErrorContext(e)
        )
    })?;
    wait_until_active(client, name).await?;
    if let Some(attribute) = &spec.ttl_attribute {
        client
            .update_time_to_live()
            .table_name(name)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .attribute_name(attribute)
                    .enabled(true)
                    .build()
                    .map_err(|e| e.to_string())?,
            )
            .send()
            .await
            .map_err(|e| {
                format!(
                    "enable TTL on {name}: {}",
                    aws_sdk_dynamodb::error::DisplayErrorContext(e)
                )
            })?;
    }
    Ok(())
}

/// A new table takes writes only once it is ACTIVE, as in AWS.
async fn wait_until_active(client: &Client, name: &str) -> Result<(), String> {
    for _ in 0..300 {
        let described = client
            .describe_table()
            .table_name(name)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "describe table {name}: {}",
                    aws_sdk_dynamodb::error::DisplayErrorContext(e)
                )
            })?;
        if described.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Err(format!("table {name} did not become ACTIVE within 30 s"))
}

/// Evaluates a template value the way CloudFormation would for the given
/// parameter values: `!Ref` of a parameter gives its value (of a
/// `CommaDelimitedList`, its items), `!Ref` of a secret gives an ARN ending
/// in its logical id, of another resource `<LogicalId>-name`, `!GetAtt`
/// gives `<LogicalId>.<Attr>`, `!If` picks a branch, `!Join`, `!Split` and
/// `!Select` work on texts and lists, a `!Sub` string has its parameters
/// and the pseudo parameters `AWS::StackName` (`test-stack` unless
/// overridden) and `AWS::Region` (`us-east-1`) replaced, other references
/// kept as text, and `AWS::NoValue` removes the entry. Enough for the
/// checks in the test suite, no more.
pub struct Evaluator<'t> {
    template: &'t Value,
    parameters: std::collections::HashMap<String, String>,
}

impl<'t> Evaluator<'t> {
    /// Parameters take their defaults unless `overrides` gives a value.
    pub fn new(template: &'t Value, overrides: &[(&str, &str)]) -> Self {
        let mut parameters = std::collections::HashMap::from([
            ("AWS::StackName".to_owned(), "test-stack".to_owned()),
            ("AWS::Region".to_owned(), "us-east-1".to_owned()),
        ]);
        if let Some(declared) = template["Parameters"].as_mapping() {
            for (name, declaration) in declared {
                if let (Some(name), Some(default)) =
                    (name.as_str(), scalar_text(&declaration["Default"]))
                {
                    parameters.insert(name.to_owned(), default);
                }
            }
        }
        for (name, value) in overrides {
            parameters.insert((*name).to_owned(), (*value).to_owned());
        }
        Evaluator {
            template,
            parameters,
        }
    }

    pub fn condition(&self, name: &str) -> bool {
        self.truth(&self.template["Conditions"][name])
    }

    fn truth(&self, value: &Value) -> bool {
        let Value::Tagged(tagged) = value else {
            return false;
        };
        let args = tagged.value.as_sequence().cloned().unwrap_or_default();
        match tagged.tag.to_string().as_str() {
            "!Equals" => args.len() == 2 && self.text(&args[0]) == self.text(&args[1]),
            "!Not" => !args.first().is_some_and(|a| self.truth(a)),
            "!And" => args.iter().all(|a| self.truth(a)),
            "!Or" => args.iter().any(|a| self.truth(a)),
            "!Condition" => tagged.value.as_str().is_some_and(|c| self.condition(c)),
            _ => false,
        }
    }

    fn text(&self, value: &Value) -> Option<String> {
        match self.evaluate(value)? {
            Value::String(text) => Some(text),
            other => scalar_text(&other),
        }
    }

    /// `None` when the value is `AWS::NoValue`.
    pub fn evaluate(&self, value: &Value) -> Option<Value> {
        match value {
            Value::Tagged(tagged) => {
                let tag = tagged.tag.to_string();
                match tag.as_str() {
                    "!Ref" => {
                        let name = tagged.value.as_str().unwrap_or_default();
                        if name == "AWS::NoValue" {
                            None
                        } else if let Some(parameter) = self.parameters.get(name) {
                            Some(self.parameter_value(name, parameter))
                        } else if self.template["Resources"][name]["Type"].as_str()
                            == Some("AWS::SecretsManager::Secret")
                        {
                            // A secret's Ref is its ARN.
                            Some(Value::String(format!(
                                "arn:aws:secretsmanager:us-east-1:123456789012:secret:{name}"
                            )))
                        } else {
                            Some(Value::String(format!("{name}-name")))
                        }
                    }
                    "!GetAtt" => Some(Value::String(match &tagged.value {
                        Value::String(path) => path.clone(),
                        Value::Sequence(parts) => parts
                            .iter()
                            .filter_map(|p| p.as_str())
                            .collect::<Vec<_>>()
                            .join("."),
                        _ => String::new(),
                    })),
                    "!If" => {
                        let args = tagged.value.as_sequence()?;
                        let branch = if args
                            .first()
                            .and_then(Value::as_str)
                            .is_some_and(|c| self.condition(c))
                        {
                            1
                        } else {
                            2
                        };
                        self.evaluate(args.get(branch)?)
                    }
                    "!FindInMap" => {
                        let args = tagged.value.as_sequence()?;
                        let key = |n: usize| {
                            args.get(n)
                                .and_then(|a| self.evaluate(a))
                                .and_then(|a| a.as_str().map(str::to_owned))
                        };
                        let found = &self.template["Mappings"][key(0)?.as_str()][key(1)?.as_str()]
                            [key(2)?.as_str()];
                        Some(found.clone())
                    }
                    "!Join" => {
                        let args = tagged.value.as_sequence()?;
                        let delimiter = self.text(args.first()?)?;
                        let items = self.list(args.get(1)?)?;
                        Some(Value::String(items.join(&delimiter)))
                    }
                    "!Split" => {
                        let args = tagged.value.as_sequence()?;
                        let delimiter = self.text(args.first()?)?;
                        let text = self.text(args.get(1)?)?;
                        Some(Value::Sequence(
                            text.split(delimiter.as_str())
                                .map(|part| Value::String(part.to_owned()))
                                .collect(),
                        ))
                    }
                    "!Select" => {
                        let args = tagged.value.as_sequence()?;
                        let index: usize = self.text(args.first()?)?.parse().ok()?;
                        let items = self.list(args.get(1)?)?;
                        Some(Value::String(items.get(index)?.clone()))
                    }
                    "!Sub" => Some(match &tagged.value {
                        Value::String(text) => Value::String(self.substitute(text)),
                        other => other.clone(),
                    }),
                    _ => Some(value.clone()),
                }
            }
            Value::Mapping(mapping) => {
                let mut out = serde_norway::Mapping::new();
                for (key, item) in mapping {
                    if let Some(item) = self.evaluate(item) {
                        out.insert(key.clone(), item);
                    }
                }
                Some(Value::Mapping(out))
            }
            Value::Sequence(items) => Some(Value::Sequence(
                items.iter().filter_map(|i| self.evaluate(i)).collect(),
            )),
            other => Some(other.clone()),
        }
    }

    /// A parameter as `!Ref` gives it: a `CommaDelimitedList` as its
    /// items (trimmed, as SAM CLI reads them), any other as its text.
    fn parameter_value(&self, name: &str, text: &str) -> Value {
        if self.template["Parameters"][name]["Type"].as_str() == Some("CommaDelimitedList") {
            Value::Sequence(
                text.split(',')
                    .map(|item| Value::String(item.trim().to_owned()))
                    .collect(),
            )
        } else {
            Value::String(text.to_owned())
        }
    }

    /// A list argument (`!Join`'s, `!Select`'s) as texts.
    fn list(&self, value: &Value) -> Option<Vec<String>> {
        match self.evaluate(value)? {
            Value::Sequence(items) => items.iter().map(|item| self.text(item)).collect(),
            _ => None,
        }
    }

    /// `${Name}` replaced by the parameter (or pseudo parameter) `Name`;
    /// other references (`${Resource.Attr}`) kept as they are.
    fn substitute(&self, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            match after.find('}') {
                Some(end) => {
                    let name = &after[..end];
                    match self.parameters.get(name) {
                        Some(value) => out.push_str(value),
                        None => out.push_str(&rest[start..start + 3 + end]),
                    }
                    rest = &after[end + 1..];
                }
                None => {
                    out.push_str(&rest[start..]);
                    rest = "";
                }
            }
        }
        out.push_str(rest);
        out
    }

    /// A function's environment variables after evaluation.
    /// A function's environment as deployed: the `Globals` variables, then
    /// the function's own (which win), as SAM merges them.
    pub fn environment(&self, function: &str) -> std::collections::HashMap<String, String> {
        let mut environment = std::collections::HashMap::new();
        for variables in [
            &self.template["Globals"]["Function"]["Environment"]["Variables"],
            &self.template["Resources"][function]["Properties"]["Environment"]["Variables"],
        ] {
            if let Some(Value::Mapping(evaluated)) = self.evaluate(variables) {
                for (name, value) in evaluated {
                    if let (Some(name), Some(value)) = (name.as_str(), scalar_text(&value)) {
                        environment.insert(name.to_owned(), value);
                    }
                }
            }
        }
        environment
    }
}

fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

/// Whether a Lambda filter pattern (exact values only, as the template
/// uses) matches an event record.
pub fn filter_matches(pattern: &serde_json::Value, record: &serde_json::Value) -> bool {
    let Some(fields) = pattern.as_object() else {
        return false;
    };
    fields.iter().all(|(name, wanted)| match wanted {
        // Values, or `{"prefix": "..."}` for a string that starts with it.
        serde_json::Value::Array(allowed) => {
            allowed
                .iter()
                .any(|allowed| match allowed["prefix"].as_str() {
                    Some(prefix) => record[name]
                        .as_str()
                        .is_some_and(|value| value.starts_with(prefix)),
                    None => *allowed == record[name],
                })
        }
        serde_json::Value::Object(_) => filter_matches(wanted, &record[name]),
        _ => false,
    })
}
