//! A stream pump that does locally what Lambda's event source mapping does
//! for the receipts stream: read every shard, keep only INSERTs (the
//! template's filter), deliver batches in Lambda's event shape, and honour
//! `batchItemFailures` by re-delivering from the lowest failed sequence
//! number, giving up on a record after a bounded number of attempts (where
//! AWS would send it to the on-failure queue).

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;

use aws_sdk_dynamodbstreams::types::{Record, ShardIteratorType};
use serde_json::{json, Value};

pub const DEFAULT_BATCH_SIZE: usize = 100;
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;
/// How long one drain may take before it fails, saying what it waited for:
/// a test that hangs costs a whole CI run.
pub const DEFAULT_DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(180);

#[derive(Debug, Clone)]
struct Pending {
    record: Value,
    sequence_number: String,
    attempts: u32,
}

#[derive(Debug, Default)]
struct Shard {
    iterator: Option<String>,
    pending: VecDeque<Pending>,
    /// The records read so far, by `eventID`. moto numbers a shard's
    /// records with `len(items)` and no lock (moto/dynamodb/models/table.py,
    /// `StreamShard.add`): two writes at once can get the same sequence
    /// number, and then every `GetRecords` from the next iterator (after
    /// the highest number) returns the shard's last record again. Counted
    /// as new, such a re-read keeps `drain` polling forever: the likely
    /// cause of a 22-minute fresh-clone run at ~220 requests a second (not
    /// reproduced: 960 puts from 16 threads gave no duplicate). A record
    /// read before is no progress, and is never delivered twice by the pump.
    seen: HashSet<String>,
}

/// What one `drain` did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PumpReport {
    pub invocations: usize,
    /// Records handed over, counting every re-delivery.
    pub deliveries: usize,
    /// Records given up on after the last attempt (the on-failure queue).
    pub given_up: Vec<String>,
}

pub struct StreamPump {
    streams: aws_sdk_dynamodbstreams::Client,
    stream_arn: String,
    shards: HashMap<String, Shard>,
    pub batch_size: usize,
    pub max_attempts: u32,
    /// A drain that takes longer fails (see `DEFAULT_DRAIN_LIMIT`).
    pub drain_limit: std::time::Duration,
}

impl StreamPump {
    /// A pump for the stream of `table`, starting at the oldest record.
    pub async fn for_table(
        dynamodb: &aws_sdk_dynamodb::Client,
        streams: aws_sdk_dynamodbstreams::Client,
        table: &str,
    ) -> Result<Self, String> {
        let described = dynamodb
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "describe {table}: {}",
                    aws_sdk_dynamodb::error::DisplayErrorContext(e)
                )
            })?;
        let stream_arn = described
            .table()
            .and_then(|t| t.latest_stream_arn())
            .ok_or_else(|| format!("{table} has no stream"))?
            .to_owned();
        Ok(StreamPump {
            streams,
            stream_arn,
            shards: HashMap::new(),
            batch_size: DEFAULT_BATCH_SIZE,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            drain_limit: DEFAULT_DRAIN_LIMIT,
        })
    }

    /// Reads what the stream holds and delivers it until nothing is pending.
    /// `invoke` gets a Lambda DynamoDB event and returns the function's
    /// response, or an error when the invocation itself failed.
    pub async fn drain<F, Fut>(&mut self, mut invoke: F) -> Result<PumpReport, String>
    where
        F: FnMut(Value) -> Fut,
        Fut: Future<Output = Result<Value, String>>,
    {
        let mut report = PumpReport::default();
        let started = std::time::Instant::now();
        let mut records_read = 0;
        let mut polls = 0;
        loop {
            if started.elapsed() > self.drain_limit {
                let pending: usize = self.shards.values().map(|s| s.pending.len()).sum();
                return Err(format!(
                    "the stream did not drain within {:?}: {polls} polls read {records_read} records \
                     (the receipts' INSERTs and the worker's own updates), {} invocations delivered {} \
                     records, {pending} records still pending, {} given up",
                    self.drain_limit,
                    report.invocations,
                    report.deliveries,
                    report.given_up.len()
                ));
            }
            polls += 1;
            let read = self.read_new_records().await?;
            records_read += read;
            let mut delivered_any = false;
            let shard_ids: Vec<String> = self.shards.keys().cloned().collect();
            for shard_id in shard_ids {
                while self
                    .deliver_one_batch(&shard_id, &mut invoke, &mut report)
                    .await
                {
                    delivered_any = true;
                }
            }
            if read == 0 && !delivered_any {
                return Ok(report);
            }
        }
    }

    /// Polls every shard once; returns how many records were read.
    async fn read_new_records(&mut self) -> Result<usize, String> {
        let described = self
            .streams
            .describe_stream()
            .stream_arn(&self.stream_arn)
            .send()
            .await
            .map_err(|e| {
                format!(
                    "describe stream: {}",
                    aws_sdk_dynamodbstreams::error::DisplayErrorContext(e)
                )
            })?;
        let shard_ids: Vec<String> = described
            .stream_description()
            .map(|d| {
                d.shards()
                    .iter()
                    .filter_map(|s| s.shard_id().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let mut read = 0;
        for shard_id in shard_ids {
            if !self.shards.contains_key(&shard_id) {
                let iterator = self
                    .streams
                    .get_shard_iterator()
                    .stream_arn(&self.stream_arn)
                    .shard_id(&shard_id)
                    .shard_iterator_type(ShardIteratorType::TrimHorizon)
                    .send()
                    .await
                    .map_err(|e| {
                        format!(
                            "shard iterator: {}",
                            aws_sdk_dynamodbstreams::error::DisplayErrorContext(e)
                        )
                    })?
                    .shard_iterator
                    .ok_or("no shard iterator")?;
                self.shards.insert(
                    shard_id.clone(),
                    Shard {
                        iterator: Some(iterator),
                        ..Shard::default()
                    },
                );
            }
            let shard = self.shards.get_mut(&shard_id).ok_or("shard vanished")?;
            let Some(iterator) = shard.iterator.clone() else {
                continue;
            };
            let output = self
                .streams
                .get_records()
                .shard_iterator(iterator)
                .limit(1000)
                .send()
                .await
                .map_err(|e| {
                    format!(
                        "get records: {}",
                        aws_sdk_dynamodbstreams::error::DisplayErrorContext(e)
                    )
                })?;
            shard.iterator = output.next_shard_iterator().map(str::to_owned);
            for record in output.records() {
                let event_id = record.event_id().unwrap_or_default().to_owned();
                if !event_id.is_empty() && !shard.seen.insert(event_id) {
                    continue;
                }
                read += 1;
                // The template's FilterCriteria: only INSERTs reach the worker.
                if record.event_name().map(|n| n.as_str()) != Some("INSERT") {
                    continue;
                }
                let sequence_number = record
                    .dynamodb()
                    .and_then(|d| d.sequence_number())
                    .unwrap_or_default()
                    .to_owned();
                shard.pending.push_back(Pending {
                    record: lambda_record(record, &self.stream_arn),
                    sequence_number,
                    attempts: 0,
                });
            }
        }
        Ok(read)
    }

    /// Delivers the next batch of one shard; false when it had none.
    async fn deliver_one_batch<F, Fut>(
        &mut self,
        shard_id: &str,
        invoke: &mut F,
        report: &mut PumpReport,
    ) -> bool
    where
        F: FnMut(Value) -> Fut,
        Fut: Future<Output = Result<Value, String>>,
    {
        let max_attempts = self.max_attempts;
        let batch_size = self.batch_size;
        let Some(shard) = self.shards.get_mut(shard_id) else {
            return false;
        };
        if shard.pending.is_empty() {
            return false;
        }
        let batch: Vec<Pending> = shard.pending.iter().take(batch_size).cloned().collect();
        let event =
            json!({ "Records": batch.iter().map(|p| p.record.clone()).collect::<Vec<_>>() });
        report.invocations += 1;
        report.deliveries += batch.len();

        // Where to resume: None when the whole batch succeeded.
        let retry_from = match invoke(event).await {
            Err(_) => Some(0),
            Ok(response) => lowest_failure(&response, &batch),
        };
        match retry_from {
            None => {
                shard.pending.drain(..batch.len());
            }
            Some(index) => {
                shard.pending.drain(..index);
                if let Some(first) = shard.pending.front_mut() {
                    first.attempts += 1;
                    if first.attempts >= max_attempts {
                        report.given_up.push(first.sequence_number.clone());
                        shard.pending.pop_front();
                    }
                }
            }
        }
        true
    }
}

/// The batch position of the lowest failed sequence number, or 0 when a
/// failure names no record of the batch (Lambda then retries the batch).
fn lowest_failure(response: &Value, batch: &[Pending]) -> Option<usize> {
    let failures = response["batchItemFailures"]
        .as_array()
        .filter(|f| !f.is_empty())?;
    let positions: Option<Vec<usize>> = failures
        .iter()
        .map(|failure| {
            let id = failure["itemIdentifier"].as_str()?;
            batch.iter().position(|p| p.sequence_number == id)
        })
        .collect();
    Some(positions.and_then(|p| p.into_iter().min()).unwrap_or(0))
}

/// A Streams API record in the shape Lambda delivers it.
fn lambda_record(record: &Record, stream_arn: &str) -> Value {
    let change = record.dynamodb();
    let image =
        |item: Option<&HashMap<String, aws_sdk_dynamodbstreams::types::AttributeValue>>| match item
        {
            Some(item) => {
                serde_json::to_value(serde_dynamo::Item::from(item.clone())).unwrap_or(Value::Null)
            }
            None => Value::Null,
        };
    json!({
        "eventID": record.event_id(),
        "eventName": record.event_name().map(|n| n.as_str()),
        "eventVersion": record.event_version().unwrap_or("1.1"),
        "eventSource": "aws:dynamodb",
        "awsRegion": record.aws_region().unwrap_or("us-east-1"),
        "dynamodb": {
            "ApproximateCreationDateTime": change.and_then(|c| c.approximate_creation_date_time()).map_or(0, |t| t.secs()),
            "Keys": image(change.and_then(|c| c.keys.as_ref())),
            "NewImage": image(change.and_then(|c| c.new_image.as_ref())),
            "SequenceNumber": change.and_then(|c| c.sequence_number()),
            "SizeBytes": change.and_then(|c| c.size_bytes()).unwrap_or(0),
            "StreamViewType": change.and_then(|c| c.stream_view_type()).map(|v| v.as_str()),
        },
        "eventSourceARN": stream_arn,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(seq: &str) -> Pending {
        Pending {
            record: Value::Null,
            sequence_number: seq.to_owned(),
            attempts: 0,
        }
    }

    #[test]
    fn redelivery_starts_at_the_lowest_failed_record() {
        let batch = [pending("10"), pending("11"), pending("12")];
        let rows = [
            (json!({"batchItemFailures": []}), None),
            (json!({}), None),
            (
                json!({"batchItemFailures": [{"itemIdentifier": "12"}, {"itemIdentifier": "11"}]}),
                Some(1),
            ),
            (
                json!({"batchItemFailures": [{"itemIdentifier": "10"}]}),
                Some(0),
            ),
            (
                json!({"batchItemFailures": [{"itemIdentifier": null}]}),
                Some(0),
            ),
            (
                json!({"batchItemFailures": [{"itemIdentifier": "99"}]}),
                Some(0),
            ),
        ];
        for (response, expected) in rows {
            assert_eq!(lowest_failure(&response, &batch), expected, "{response}");
        }
    }
}
