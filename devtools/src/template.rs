//! The tables as template.yaml defines them, so local servers get exactly
//! the key, stream view and TTL attribute that AWS will.

use std::path::Path;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    StreamSpecification, StreamViewType, TableStatus, TimeToLiveSpecification,
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
    let partition_key = properties["KeySchema"]
        .as_sequence()
        .and_then(|keys| keys.iter().find(|k| k["KeyType"].as_str() == Some("HASH")))
        .and_then(|key| key["AttributeName"].as_str())
        .ok_or_else(|| format!("{logical_id} has no HASH key"))?
        .to_owned();
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
    })
}

/// Creates `name` with the spec's key, stream and TTL. The key is a string,
/// as every table in the template has.
pub async fn create_table(client: &Client, spec: &TableSpec, name: &str) -> Result<(), String> {
    let mut request = client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(&spec.partition_key)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(|e| e.to_string())?,
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name(&spec.partition_key)
                .key_type(KeyType::Hash)
                .build()
                .map_err(|e| e.to_string())?,
        );
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_defines_the_tables_the_code_uses() {
        let template = load(&workspace_template()).unwrap();
        let receipts = table_spec(&template, "ReceiptsTable").unwrap();
        assert_eq!(receipts.partition_key, shared::receipt::attr::PK);
        assert_eq!(receipts.stream_view.as_deref(), Some("NEW_IMAGE"));
        assert_eq!(
            receipts.ttl_attribute.as_deref(),
            Some(shared::receipt::attr::EXPIRES_AT)
        );
        let leads = table_spec(&template, "LeadsTable").unwrap();
        assert_eq!(leads.partition_key, "pk");
        assert_eq!(leads.stream_view, None);
        assert!(table_spec(&template, "IngestFunction").is_err());
    }
}
