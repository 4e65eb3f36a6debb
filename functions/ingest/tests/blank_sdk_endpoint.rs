//! Why the DynamoDB endpoint for local runs is our own `DYNAMODB_ENDPOINT`
//! and not the SDK's `AWS_ENDPOINT_URL_DYNAMODB`: the template must declare
//! the variable (blank) for `sam local invoke` to pass it, and the SDK takes
//! a blank `AWS_ENDPOINT_URL_DYNAMODB` as the endpoint itself: every call
//! panics ("URL was unset", aws-sdk-dynamodb 1.136). Its own process: it
//! sets the environment.

#[tokio::test]
async fn a_blank_sdk_endpoint_variable_breaks_every_call_but_a_blank_dynamodb_endpoint_does_not() {
    std::env::set_var("AWS_REGION", "us-east-1");
    std::env::set_var("AWS_ACCESS_KEY_ID", "test");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "test");
    std::env::set_var("AWS_ENDPOINT_URL_DYNAMODB", "");
    let client = ingest::dynamo::client_from_env(None).await;
    let call = tokio::spawn(async move { client.list_tables().send().await.map(|_| ()) });
    let outcome = call.await;
    assert!(
        matches!(&outcome, Err(join) if join.is_panic()),
        "the SDK did not panic on a blank AWS_ENDPOINT_URL_DYNAMODB: if it now treats blank as unset, the template could declare that variable instead ({outcome:?})"
    );

    // Blank DYNAMODB_ENDPOINT is no endpoint: the configuration gives None.
    let config = ingest::Config::from_lookup(|name| match name {
        "RECEIPTS_TABLE" => Some("receipts".into()),
        "WEBHOOK_AUTH" => Some("bearer".into()),
        "WEBHOOK_SECRETS" => Some("a-secret-of-16-chars".into()),
        "DYNAMODB_ENDPOINT" => Some("".into()),
        _ => None,
    })
    .unwrap();
    assert_eq!(config.dynamodb_endpoint, None);
}
