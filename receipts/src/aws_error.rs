//! One line for every AWS failure an operator meets: what is wrong and what
//! to do, never the SDK's whole dump (`--debug` shows it). Missing region
//! and credentials are found before any call ([`check_setup`]); a call that
//! fails is said by its service, its error code and AWS's own message.

use std::sync::atomic::{AtomicBool, Ordering};

use aws_config::SdkConfig;
use aws_credential_types::provider::ProvideCredentials;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

static DEBUG: AtomicBool = AtomicBool::new(false);

/// `--debug`: errors carry the SDK's whole explanation.
pub fn show_whole_errors(on: bool) {
    DEBUG.store(on, Ordering::Relaxed);
}

/// What is wrong with the AWS set-up before any call: no region, or no
/// credentials (an unknown profile gives none). `profile` is `--profile`.
pub async fn check_setup(config: &SdkConfig, profile: Option<&str>) -> Result<(), String> {
    if config.region().is_none() {
        return Err(
            "no AWS region: give --region, set AWS_REGION, or set a region in your AWS profile"
                .to_owned(),
        );
    }
    let Some(provider) = config.credentials_provider() else {
        return Err(no_credentials(profile));
    };
    match provider.provide_credentials().await {
        Ok(_) => Ok(()),
        Err(error) => Err(with_debug(
            no_credentials(profile),
            &DisplayErrorContext(&error).to_string(),
        )),
    }
}

fn no_credentials(profile: Option<&str>) -> String {
    match profile {
        Some(name) => format!(
            "AWS profile {name:?} gives no credentials: is it in ~/.aws/config? \
             (aws configure --profile {name})"
        ),
        None => "no AWS credentials: run `aws configure`, set AWS_PROFILE or give --profile \
                 (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY work too)"
            .to_owned(),
    }
}

fn with_debug(said: String, whole: &str) -> String {
    if DEBUG.load(Ordering::Relaxed) {
        format!("{said}\n{whole}")
    } else {
        said
    }
}

/// A failed call to `service` in one line: AWS's error code and message
/// for a refusal (with a hint for the common ones), else what kind of
/// failure it was.
pub fn one_line<E, R>(service: &str, error: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let said = match error {
        SdkError::ServiceError(failure) => {
            let code = failure.err().code().unwrap_or("an unnamed error");
            let message = failure.err().message().unwrap_or("");
            let hint = match code {
                "ResourceNotFoundException" => {
                    " (check --table or --stack, and --region: it is not in this region and account)"
                }
                "AccessDeniedException" | "AccessDenied" | "UnrecognizedClientException"
                | "InvalidSignatureException" | "ExpiredTokenException" => {
                    " (check the credentials: --profile or AWS_PROFILE, and their permissions)"
                }
                _ => "",
            };
            let message = if message.is_empty() {
                String::new()
            } else {
                format!(": {message}")
            };
            format!("{service} refused the call: {code}{message}{hint}")
        }
        SdkError::TimeoutError(_) => format!("{service} did not answer in time"),
        SdkError::DispatchFailure(_) => format!(
            "{service} could not be reached (the network, or AWS_ENDPOINT_URL if you set one)"
        ),
        SdkError::ResponseError(_) => format!("{service} sent an answer that could not be read"),
        SdkError::ConstructionFailure(_) => format!("the {service} request could not be built"),
        _ => format!("{service} call failed"),
    };
    with_debug(said, &DisplayErrorContext(error).to_string())
}
