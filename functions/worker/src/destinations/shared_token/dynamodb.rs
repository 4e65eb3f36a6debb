//! The shared token on the receipts table: one item, keyed
//! `token#<destination>`, with `accessToken` (S, sealed: `seal`),
//! `refreshAt` (N, epoch
//! ms), `generation` (N) and, while an instance refreshes it,
//! `refreshingUntil` (N, epoch ms). Read strongly consistent; claimed and
//! stored by conditional updates on the generation. No receipt is read or
//! written; the stream's filter passes only the senders' receipts, and the
//! operator's policy (`shared::receipt::OPERATOR_ATTRIBUTES`) never names
//! these attributes, so an operator without personal data cannot read the
//! token.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use shared::keys::TOKEN_KEY_PREFIX;
use shared::receipt::attr;

use super::seal::TokenSeal;
use super::{StoreError, StoredToken, TokenStore};

/// The token item's attributes.
pub mod token_attr {
    pub const ACCESS_TOKEN: &str = "accessToken";
    pub const REFRESH_AT: &str = "refreshAt";
    pub const GENERATION: &str = "generation";
    pub const REFRESHING_UNTIL: &str = "refreshingUntil";
}

use token_attr::{ACCESS_TOKEN, GENERATION, REFRESHING_UNTIL, REFRESH_AT};

#[derive(Debug, Clone)]
pub struct DynamoTokenStore {
    client: Client,
    table: String,
    key: String,
    seal: std::sync::Arc<TokenSeal>,
}

impl DynamoTokenStore {
    /// The token of `destination` (`zoho`) in `table`, sealed with `seal`.
    pub fn new(client: Client, table: &str, destination: &str, seal: TokenSeal) -> Self {
        DynamoTokenStore {
            client,
            table: table.to_owned(),
            key: format!("{TOKEN_KEY_PREFIX}{destination}"),
            seal: std::sync::Arc::new(seal),
        }
    }
}

impl TokenStore for DynamoTokenStore {
    async fn read(&self) -> Result<Option<StoredToken>, StoreError> {
        let item = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(attr::PK, AttributeValue::S(self.key.clone()))
            .consistent_read(true)
            .send()
            .await
            .map_err(|error| code(&error))?
            .item;
        let Some(item) = item else {
            return Ok(None);
        };
        let number = |name: &str| match item.get(name) {
            Some(AttributeValue::N(n)) => n.parse::<u64>().ok(),
            _ => None,
        };
        Ok(
            match (
                item.get(ACCESS_TOKEN),
                number(REFRESH_AT),
                number(GENERATION),
            ) {
                (Some(AttributeValue::S(sealed)), Some(refresh_at_ms), Some(generation)) => {
                    Some(match self.seal.open(sealed, &self.key) {
                        Some(token) => StoredToken {
                            token,
                            refresh_at_ms,
                            generation,
                        },
                        // Stored in clear by an earlier version, or under
                        // another key: due now, so the next use fetches a
                        // token and stores it sealed over this one.
                        None => StoredToken {
                            token: String::new(),
                            refresh_at_ms: 0,
                            generation,
                        },
                    })
                }
                // Only claimed so far: no token yet, generation 0.
                _ => None,
            },
        )
    }

    async fn claim_refresh(
        &self,
        seen: u64,
        now_ms: u64,
        until_ms: u64,
    ) -> Result<bool, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, AttributeValue::S(self.key.clone()))
            .update_expression("SET #until = :until")
            .condition_expression(
                "(attribute_not_exists(#gen) OR #gen = :seen) \
                 AND (attribute_not_exists(#until) OR #until <= :now)",
            )
            .expression_attribute_names("#gen", GENERATION)
            .expression_attribute_names("#until", REFRESHING_UNTIL)
            .expression_attribute_values(":seen", number(seen))
            .expression_attribute_values(":now", number(now_ms))
            .expression_attribute_values(":until", number(until_ms))
            .send()
            .await;
        settled(result)
    }

    async fn store(&self, token: &str, refresh_at_ms: u64, seen: u64) -> Result<bool, StoreError> {
        let sealed = self
            .seal
            .seal(token, &self.key)
            .map_err(|error| StoreError(error.to_string()))?;
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(attr::PK, AttributeValue::S(self.key.clone()))
            .update_expression("SET #token = :token, #at = :at, #gen = :next REMOVE #until")
            .condition_expression("attribute_not_exists(#gen) OR #gen = :seen")
            .expression_attribute_names("#token", ACCESS_TOKEN)
            .expression_attribute_names("#at", REFRESH_AT)
            .expression_attribute_names("#gen", GENERATION)
            .expression_attribute_names("#until", REFRESHING_UNTIL)
            .expression_attribute_values(":token", AttributeValue::S(sealed))
            .expression_attribute_values(":at", number(refresh_at_ms))
            .expression_attribute_values(":next", number(seen + 1))
            .expression_attribute_values(":seen", number(seen))
            .send()
            .await;
        settled(result)
    }
}

fn number(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// `true` when the update was made, `false` when its condition failed.
fn settled<T, R>(
    result: Result<T, SdkError<aws_sdk_dynamodb::operation::update_item::UpdateItemError, R>>,
) -> Result<bool, StoreError> {
    use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
    match result {
        Ok(_) => Ok(true),
        Err(SdkError::ServiceError(failure))
            if matches!(
                failure.err(),
                UpdateItemError::ConditionalCheckFailedException(_)
            ) =>
        {
            Ok(false)
        }
        Err(error) => Err(code(&error)),
    }
}

fn code<E: ProvideErrorMetadata, R>(error: &SdkError<E, R>) -> StoreError {
    StoreError(
        error
            .as_service_error()
            .and_then(|e| e.code())
            .unwrap_or("unreachable")
            .to_owned(),
    )
}
