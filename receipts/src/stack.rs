//! A deployed stack, as CloudFormation describes it: its outputs (tables,
//! webhook URL, secret ARN) and the parameters it was deployed with. The
//! CLI finds everything else from here, so an operator names the stack
//! and nothing more.

use std::collections::BTreeMap;

use aws_sdk_cloudformation::error::DisplayErrorContext;
use aws_sdk_cloudformation::Client;

/// The outputs the commands read, by the template's names.
pub mod output {
    pub const RECEIPTS_TABLE: &str = "ReceiptsTableName";
    /// Only with `Destination=dynamodb`.
    pub const LEADS_TABLE: &str = "LeadsTableName";
    pub const WEBHOOK_URL: &str = "WebhookUrl";
    pub const WEBHOOK_SECRET_ARN: &str = "WebhookSecretArn";
    /// Only where newest-wins gates are kept (HubSpot contacts by email)
    /// or the stack audits its sender (it keys erasure markers too).
    pub const GATE_KEY_SECRET_ARN: &str = "GateKeySecretArn";
    /// Only where the stack audits its sender (`SenderApiTokenSecretArn`).
    pub const SENDER_API_TOKEN_SECRET_ARN: &str = "SenderApiTokenSecretArn";
}

/// The parameters the commands read.
pub mod parameter {
    pub const WEBHOOK_AUTH: &str = "WebhookAuth";
    pub const SENDER: &str = "Sender";
    pub const RECEIPT_RETENTION_DAYS: &str = "ReceiptRetentionDays";
    pub const ACCEPTED_FORMS: &str = "AcceptedForms";
    pub const DESTINATION: &str = "Destination";
    pub const LEAD_KEY: &str = "LeadKey";
}

#[derive(Debug, thiserror::Error)]
pub enum StackError {
    #[error("{0}")]
    Describe(String),
    #[error("no stack {0:?} in this region and account (--region, --profile)")]
    NotFound(String),
    #[error("stack {stack:?} has no output {output} (is it a staticforms-to-crm stack, deployed completely?)")]
    MissingOutput { stack: String, output: &'static str },
}

/// One stack's outputs and parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stack {
    pub name: String,
    pub outputs: BTreeMap<String, String>,
    pub parameters: BTreeMap<String, String>,
}

impl Stack {
    pub async fn describe(client: &Client, name: &str) -> Result<Stack, StackError> {
        let described = client.describe_stacks().stack_name(name).send().await;
        let described = match described {
            Ok(described) => described,
            // CloudFormation answers a missing stack with a ValidationError
            // whose message says it does not exist.
            Err(error)
                if DisplayErrorContext(&error)
                    .to_string()
                    .contains("does not exist") =>
            {
                return Err(StackError::NotFound(name.to_owned()))
            }
            Err(error) => {
                return Err(StackError::Describe(crate::aws_error::one_line(
                    "CloudFormation",
                    &error,
                )))
            }
        };
        let Some(stack) = described.stacks.unwrap_or_default().into_iter().next() else {
            return Err(StackError::NotFound(name.to_owned()));
        };
        Ok(Stack {
            name: name.to_owned(),
            outputs: stack
                .outputs
                .unwrap_or_default()
                .into_iter()
                .filter_map(|o| Some((o.output_key?, o.output_value?)))
                .collect(),
            parameters: stack
                .parameters
                .unwrap_or_default()
                .into_iter()
                .filter_map(|p| Some((p.parameter_key?, p.parameter_value?)))
                .collect(),
        })
    }

    pub fn output(&self, output: &'static str) -> Result<&str, StackError> {
        self.outputs
            .get(output)
            .map(String::as_str)
            .filter(|value| !value.is_empty())
            .ok_or_else(|| StackError::MissingOutput {
                stack: self.name.clone(),
                output,
            })
    }

    /// A parameter's value; empty when not given.
    pub fn parameter(&self, name: &str) -> &str {
        self.parameters.get(name).map_or("", String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_empty_output_is_named() {
        let stack = Stack {
            name: "crm".into(),
            outputs: BTreeMap::from([
                (output::RECEIPTS_TABLE.into(), "crm-ReceiptsTable-1".into()),
                (output::WEBHOOK_URL.into(), String::new()),
            ]),
            parameters: BTreeMap::from([(parameter::WEBHOOK_AUTH.into(), "bearer".into())]),
        };
        assert_eq!(
            stack.output(output::RECEIPTS_TABLE).unwrap(),
            "crm-ReceiptsTable-1"
        );
        for missing in [output::WEBHOOK_URL, output::WEBHOOK_SECRET_ARN] {
            let error = stack.output(missing).unwrap_err().to_string();
            assert!(
                error.contains(missing) && error.contains("\"crm\""),
                "{error}"
            );
        }
        assert_eq!(stack.parameter(parameter::WEBHOOK_AUTH), "bearer");
        assert_eq!(stack.parameter(parameter::ACCEPTED_FORMS), "");
    }
}
