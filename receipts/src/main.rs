//! Start-up and wiring only: arguments, the AWS configuration (region and
//! profile as the SDK resolves them), the table, then the command. Exit
//! code 2 for a usage error, 1 for a failure, 3 for work to run again
//! later, 4 for submissions `audit` found missing.

use std::process::ExitCode;

use clap::Parser;
use receipts::cli::{Cli, Target};
use receipts::commands::{self, Failed};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    receipts::aws_error::show_whole_errors(cli.debug);
    let result = if cli.command.is_offline() && cli.target.stack.is_none() {
        commands::run_offline(cli.command)
    } else {
        let config = aws_config_for(&cli.target).await;
        if let Err(message) =
            receipts::aws_error::check_setup(&config, cli.target.profile.as_deref()).await
        {
            eprintln!("receipts: {message}");
            return ExitCode::from(2);
        }
        commands::run(&config, &cli.target, cli.command).await
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failed::Usage(message)) => {
            eprintln!("receipts: {message}");
            ExitCode::from(2)
        }
        Err(Failed::Run(message)) => {
            eprintln!("receipts: {message}");
            ExitCode::FAILURE
        }
        Err(Failed::RunAgainLater(message)) => {
            eprintln!("receipts: {message}");
            ExitCode::from(3)
        }
        Err(Failed::Missing(message)) => {
            eprintln!("receipts: {message}");
            ExitCode::from(4)
        }
    }
}

/// The standard AWS environment, with `--region` and `--profile` given to
/// the SDK's own loader (so a profile's region, SSO-less credentials and
/// endpoint settings apply as the AWS CLI applies them).
async fn aws_config_for(target: &Target) -> aws_config::SdkConfig {
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
    if let Some(profile) = &target.profile {
        loader = loader.profile_name(profile);
    }
    if let Some(region) = &target.region {
        loader = loader.region(aws_config::Region::new(region.clone()));
    }
    loader.load().await
}
