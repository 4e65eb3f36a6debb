//! What the local commands (`make run`, `make watch`) share: table names,
//! the demo secret, the SDK configuration for the local server, and the
//! tables created from template.yaml.

use aws_sdk_dynamodb::config::{Credentials, Region};

use crate::template;

pub const RECEIPTS_TABLE: &str = "staticforms-receipts";
pub const LEADS_TABLE: &str = "staticforms-leads";
/// The bearer secret in events/ and the README's curl examples. Local only.
pub const DEMO_TOKEN: &str = "local-demo-token-change-me";
/// The token the local HubSpot fake accepts (`DESTINATION=hubspot make run`).
pub const DEMO_HUBSPOT_TOKEN: &str = "pat-local-demo-hubspot-token";
/// The client credentials the local Salesforce fake accepts.
pub const DEMO_SALESFORCE_CLIENT_ID: &str = "3MVG9local.demo.client";
pub const DEMO_SALESFORCE_CLIENT_SECRET: &str = "local-demo-salesforce-secret";

/// SDK configuration for a local DynamoDB-protocol server.
pub async fn sdk_config(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::from_env()
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "local"))
        .load()
        .await
}

/// Creates the receipts and leads tables, with the default names, as
/// template.yaml defines them.
pub async fn create_tables(client: &aws_sdk_dynamodb::Client) -> Result<(), String> {
    create_tables_named(client, RECEIPTS_TABLE, LEADS_TABLE).await
}

/// The same, with the given names (two local pipelines on one server).
pub async fn create_tables_named(
    client: &aws_sdk_dynamodb::Client,
    receipts_table: &str,
    leads_table: &str,
) -> Result<(), String> {
    let template = template::load(&template::workspace_template())?;
    for (logical_id, name) in [
        ("ReceiptsTable", receipts_table),
        ("LeadsTable", leads_table),
    ] {
        let spec = template::table_spec(&template, logical_id)?;
        template::create_table(client, &spec, name).await?;
    }
    Ok(())
}
