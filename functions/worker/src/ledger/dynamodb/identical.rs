//! A person's submissions to a form (`shared::duplicates`) in the
//! receipts table: a consistent read of the item, the judgement, and (for
//! one delivered) a write conditional on the version read, so two
//! deliveries of one double submit never both stand first.

use shared::duplicates::{First, FirstSubmission, Judgement};
use shared::receipt::attr;

use super::{conditional_failure, n, s, store_error, DynamoLedger};
use crate::ledger::LedgerError;

/// The item's submissions (JSON: `[{"receipt","at","answers"}]`) and its
/// version.
const FIRSTS: &str = "firsts";
const VERSION: &str = "version";

/// Writes lost to another delivery of the same item are judged again this
/// many times before the delivery is left to a later one.
const TRIES: u32 = 4;

impl DynamoLedger {
    pub(super) async fn first_identical(
        &self,
        item: &str,
        submission: &FirstSubmission,
    ) -> Result<Option<String>, LedgerError> {
        for _ in 0..TRIES {
            let (firsts, version) = self.firsts(item).await?;
            let kept = match submission.judge(&firsts) {
                Judgement::Repeats(first) => return Ok(Some(first)),
                Judgement::StandsFirst(None) => return Ok(None),
                Judgement::StandsFirst(Some(kept)) => kept,
            };
            let text = serde_json::to_string(&kept)
                .map_err(|_| LedgerError("firsts not written".to_owned()))?;
            let mut write = self
                .client
                .update_item()
                .table_name(&self.table)
                .key(attr::PK, s(item))
                .update_expression("SET #firsts = :firsts, #version = :next, #expires = :expires")
                .expression_attribute_names("#firsts", FIRSTS)
                .expression_attribute_names("#version", VERSION)
                .expression_attribute_names("#expires", attr::EXPIRES_AT)
                .expression_attribute_values(":firsts", s(&text))
                .expression_attribute_values(":next", n(version.unwrap_or(0) + 1))
                .expression_attribute_values(":expires", n(submission.expires_at));
            write = match version {
                None => write
                    .condition_expression("attribute_not_exists(#pk)")
                    .expression_attribute_names("#pk", attr::PK),
                Some(seen) => write
                    .condition_expression("#version = :seen")
                    .expression_attribute_values(":seen", n(seen)),
            };
            match write.send().await {
                Ok(_) => return Ok(None),
                // Another delivery wrote the item since: judge again.
                Err(error) => conditional_failure(error)?,
            }
        }
        Err(LedgerError(
            "the firsts of identical submissions kept changing".to_owned(),
        ))
    }

    /// An item's firsts and version, read consistently; none yet, `None`.
    async fn firsts(&self, item: &str) -> Result<(Vec<First>, Option<u64>), LedgerError> {
        let read = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, s(item))
            .consistent_read(true)
            .projection_expression("#firsts, #version")
            .expression_attribute_names("#firsts", FIRSTS)
            .expression_attribute_names("#version", VERSION)
            .send()
            .await
            .map_err(|error| store_error(&error))?;
        let Some(found) = read.item() else {
            return Ok((Vec::new(), None));
        };
        let version = found
            .get(VERSION)
            .and_then(|value| value.as_n().ok())
            .and_then(|number| number.parse().ok());
        let firsts = found
            .get(FIRSTS)
            .and_then(|value| value.as_s().ok())
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default();
        Ok((firsts, version.or(Some(0))))
    }
}
