//! Reading credentials kept in AWS Secrets Manager, for the destinations'
//! builders (each beside its adapter): a secret's text, a CRM token read at
//! init and again when the CRM refuses it (see `destinations::token`), and
//! the newest-wins gates' key (`GATE_KEY_SECRET_ARN`). A missing or
//! unreadable secret stops start-up with a message naming the variable,
//! never the value.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use aws_edge::SecretReadError;
use aws_sdk_secretsmanager::Client;

use shared::config::ConfigError;

use crate::destinations::token::{CrmToken, Source, TokenError, TokenSetting};

pub struct SecretsManagerToken {
    client: Client,
    arn: String,
}

impl SecretsManagerToken {
    pub fn new(client: Client, arn: impl Into<String>) -> Self {
        SecretsManagerToken {
            client,
            arn: arn.into(),
        }
    }
}

/// The text value of the secret `arn` (`aws_edge::secret_text`) as the
/// token sources report it: the service's error code, never the value.
pub(crate) async fn secret_text(client: &Client, arn: &str) -> Result<String, TokenError> {
    aws_edge::secret_text(client, arn)
        .await
        .map_err(|error| match error {
            SecretReadError::NoText => TokenError::malformed("the secret has no text value"),
            SecretReadError::Call(_) => TokenError::unreadable(error.code()),
        })
}

impl Source<CrmToken, TokenError> for SecretsManagerToken {
    fn fetch(&self) -> Pin<Box<dyn Future<Output = Result<CrmToken, TokenError>> + Send + '_>> {
        Box::pin(async move {
            let text = secret_text(&self.client, &self.arn).await?;
            CrmToken::new(&text)
                .ok_or_else(|| TokenError::malformed("the secret has no text value"))
        })
    }
}

/// The token the CRM gets at start-up, from the configuration or from
/// Secrets Manager (`arn_name`), and, for the secret form, where to read it
/// again. `client` is only used (and only needs to exist) for that form.
pub async fn token_and_source(
    setting: TokenSetting,
    arn_name: &'static str,
    client: impl FnOnce() -> Client,
) -> Result<
    (
        Option<CrmToken>,
        Option<Arc<dyn Source<CrmToken, TokenError>>>,
    ),
    ConfigError,
> {
    match setting {
        TokenSetting::None => Ok((None, None)),
        TokenSetting::Inline(token) => Ok((Some(token), None)),
        TokenSetting::SecretsManager(arn) => {
            let source = SecretsManagerToken::new(client(), arn);
            let token = source.fetch().await.map_err(|error| ConfigError::Invalid {
                name: arn_name,
                reason: format!("the secret could not be read ({})", error.reason),
            })?;
            Ok((Some(token), Some(Arc::new(source))))
        }
    }
}
