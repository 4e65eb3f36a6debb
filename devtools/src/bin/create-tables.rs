//! Creates the receipts and leads tables, as template.yaml defines them, on
//! the local DynamoDB-protocol server at DYNAMODB_ENDPOINT (`make watch`).

use devtools::local;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let Ok(endpoint) = std::env::var("DYNAMODB_ENDPOINT") else {
        eprintln!("create-tables: DYNAMODB_ENDPOINT is not set");
        std::process::exit(1);
    };
    let client = aws_sdk_dynamodb::Client::new(&local::sdk_config(&endpoint).await);
    if let Err(error) = local::create_tables(&client).await {
        eprintln!("create-tables: {error}");
        std::process::exit(1);
    }
    println!(
        "created {} and {} on {endpoint}",
        local::RECEIPTS_TABLE,
        local::LEADS_TABLE
    );
}
