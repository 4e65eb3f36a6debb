//! DynamoDB stream records in the shape Lambda's event source mapping
//! delivers them, built from receipts.

use serde_json::{json, Value};
use shared::Receipt;

pub const STREAM_ARN: &str =
    "arn:aws:dynamodb:us-east-1:123456789012:table/receipts/stream/2026-11-29T00:00:00.000";

/// The DynamoDB JSON form of a receipt (`{"pk": {"S": "..."}, ...}`).
pub fn receipt_image(receipt: &Receipt) -> Value {
    let item: serde_dynamo::Item =
        serde_dynamo::to_item(receipt).expect("a receipt always converts to an item");
    serde_json::to_value(item).expect("an item always converts to JSON")
}

/// One stream record: `event_name` is INSERT, MODIFY or REMOVE.
pub fn record(event_name: &str, receipt: &Receipt, sequence_number: &str) -> Value {
    let image = receipt_image(receipt);
    let new_image = if event_name == "REMOVE" {
        Value::Null
    } else {
        image
    };
    json!({
        "eventID": format!("event-{sequence_number}"),
        "eventName": event_name,
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": {
            "ApproximateCreationDateTime": 1_795_941_528,
            "Keys": {"pk": {"S": receipt.pk}},
            "NewImage": new_image,
            "SequenceNumber": sequence_number,
            "SizeBytes": 512,
            "StreamViewType": "NEW_IMAGE"
        },
        "eventSourceARN": STREAM_ARN
    })
}

/// A whole event (`{"Records": [...]}`).
pub fn event(records: Vec<Value>) -> Value {
    json!({ "Records": records })
}
