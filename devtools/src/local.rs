//! What the local commands (`make run`, `make watch`) share: table names,
//! the demo secret, the SDK configuration for the local server, and the
//! tables created from template.yaml.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use aws_sdk_dynamodb::config::{Credentials, Region};
use tokio::process::Child;

use crate::lambda_emulator::LambdaEmulator;

use crate::template;

pub const RECEIPTS_TABLE: &str = "staticforms-receipts";
pub const LEADS_TABLE: &str = "staticforms-leads";
/// The bearer secret in events/ and the README's curl examples. Local only.
pub const DEMO_TOKEN: &str = "local-demo-token-change-me";
/// The signing secret of `make run SENDER=<a sender that signs>`: the
/// samples in events/ingest-<sender>.json are signed with it.
pub const DEMO_SIGNING_SECRET: &str = "local-demo-signing-secret";
/// The key of the newest-wins gates of the local pipeline and the tests
/// (`GATE_KEY`; a deployed stack generates its own).
pub const DEMO_GATE_KEY: &str = "local-demo-gate-key-of-at-least-32-characters";

/// SDK configuration for a local DynamoDB-protocol server.
pub async fn sdk_config(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::from_env()
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "local"))
        .load()
        .await
}

/// Creates the receipts and leads tables, with the default names, as
/// template.yaml defines them.
pub async fn create_tables(client: &aws_sdk_dynamodb::Client) -> Result<(), String> {
    create_tables_named(client, RECEIPTS_TABLE, LEADS_TABLE).await
}

/// The same, with the given names (two local pipelines on one server).
pub async fn create_tables_named(
    client: &aws_sdk_dynamodb::Client,
    receipts_table: &str,
    leads_table: &str,
) -> Result<(), String> {
    let template = template::load(&template::workspace_template())?;
    for (logical_id, name) in [
        ("ReceiptsTable", receipts_table),
        ("LeadsTable", leads_table),
    ] {
        let spec = template::table_spec(&template, logical_id)?;
        template::create_table(client, &spec, name).await?;
    }
    Ok(())
}

/// What every local function gets: AWS settings for the local server, the
/// Lambda variables, and the receipts table.
pub fn function_env(dynamodb_endpoint: &str, receipts_table: &str) -> Vec<(&'static str, String)> {
    vec![
        ("AWS_REGION", "us-east-1".to_owned()),
        ("AWS_ACCESS_KEY_ID", "local".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "local".to_owned()),
        ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
        ("AWS_ENDPOINT_URL_DYNAMODB", dynamodb_endpoint.to_owned()),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128".to_owned()),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".to_owned()),
        ("RECEIPTS_TABLE", receipts_table.to_owned()),
    ]
}

/// Where a started function's log lines go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FunctionOutput {
    /// To this process's output, as written (JSON, as Lambda gets them).
    AsWritten,
    /// One human line per event (`human_log`), metric lines left out.
    Human,
    /// Nowhere (the chaos run starts hundreds).
    Discarded,
}

/// Starts one function binary (`name`, from `bin_dir`) against a local
/// Runtime API, with only its own configuration: the shell's variables
/// (DESTINATION, LEADS_TABLE, a stray CRM_URL) never reach it, as in Lambda.
/// Its log lines go where `output` says.
pub fn spawn_function(
    bin_dir: &std::path::Path,
    name: &str,
    runtime: &LambdaEmulator,
    common_env: &[(&str, String)],
    env: &[(&str, String)],
    output: FunctionOutput,
) -> Result<tokio::process::Child, String> {
    let binary = bin_dir.join(name);
    let mut command = tokio::process::Command::new(&binary);
    // As in Lambda, a function sees only its own configuration: the shell's
    // variables (DESTINATION, LEADS_TABLE for the pipeline itself, a stray
    // CRM_URL) would otherwise reach it and contradict what it is given.
    command.env_clear();
    for inherited in ["PATH", "RUST_LOG", "AWS_LAMBDA_LOG_LEVEL", "RUST_BACKTRACE"] {
        if let Some(value) = std::env::var_os(inherited) {
            command.env(inherited, value);
        }
    }
    command
        .env("AWS_LAMBDA_RUNTIME_API", runtime.runtime_api())
        .env("AWS_LAMBDA_FUNCTION_NAME", name)
        .stdin(std::process::Stdio::null())
        .stdout(stdio(output))
        .stderr(stdio(output))
        .kill_on_drop(true);
    for (key, value) in common_env.iter().chain(env) {
        command.env(key, value);
    }
    let mut child = command.spawn().map_err(|e| {
        format!(
            "cannot start {}: {e} (build it with `cargo build -p {name}`)",
            binary.display()
        )
    })?;
    if output == FunctionOutput::Human {
        let name = name.to_owned();
        if let Some(stdout) = child.stdout.take() {
            tokio::spawn(print_human(stdout, name.clone()));
        }
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(print_human(stderr, name));
        }
    }
    Ok(child)
}

/// A function process that can be killed and started again (`make chaos`).
pub struct KillableFunction {
    pub name: &'static str,
    /// What it is in the summary: `ingest`, `stream`, `pass`.
    pub label: &'static str,
    pub runtime: Arc<LambdaEmulator>,
    child: tokio::sync::Mutex<Child>,
    bin_dir: PathBuf,
    common_env: Vec<(&'static str, String)>,
    env: Vec<(&'static str, String)>,
    kills: AtomicUsize,
}

impl KillableFunction {
    pub async fn start(
        name: &'static str,
        label: &'static str,
        bin_dir: &std::path::Path,
        common_env: &[(&'static str, String)],
        env: Vec<(&'static str, String)>,
    ) -> Result<KillableFunction, String> {
        let runtime = Arc::new(
            LambdaEmulator::start(name)
                .await
                .map_err(|e| e.to_string())?,
        );
        let child = spawn_function(
            bin_dir,
            name,
            &runtime,
            common_env,
            &env,
            FunctionOutput::Discarded,
        )?;
        Ok(KillableFunction {
            name,
            label,
            runtime,
            child: tokio::sync::Mutex::new(child),
            bin_dir: bin_dir.to_owned(),
            common_env: common_env.to_vec(),
            env,
            kills: AtomicUsize::new(0),
        })
    }

    /// SIGKILL, as Lambda ends a container, then a new one.
    pub async fn kill_and_restart(&self) -> Result<(), String> {
        let mut child = self.child.lock().await;
        let _ = child.start_kill();
        let _ = child.wait().await;
        self.runtime
            .fail_in_flight("the function's process was killed");
        self.kills.fetch_add(1, Ordering::SeqCst);
        *child = spawn_function(
            &self.bin_dir,
            self.name,
            &self.runtime,
            &self.common_env,
            &self.env,
            FunctionOutput::Discarded,
        )?;
        Ok(())
    }

    /// How often it was killed.
    pub fn kills(&self) -> usize {
        self.kills.load(Ordering::SeqCst)
    }

    pub async fn stop(&self) {
        let mut child = self.child.lock().await;
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
}

fn stdio(output: FunctionOutput) -> std::process::Stdio {
    match output {
        FunctionOutput::AsWritten => std::process::Stdio::inherit(),
        FunctionOutput::Human => std::process::Stdio::piped(),
        FunctionOutput::Discarded => std::process::Stdio::null(),
    }
}

/// Submissions ingest held back under a spam rule, as its log lines said
/// (functions started with [`FunctionOutput::Human`]): `make run`'s summary
/// counts them apart from the accepted ones.
pub static HELD_BACK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Each line of a function's output as `human_log` puts it.
async fn print_human(from: impl tokio::io::AsyncRead + Unpin, name: String) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(from).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if crate::human_log::held_back(&line) {
            HELD_BACK.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        if let Some(said) = crate::human_log::human(&line) {
            println!("{name:<7}{said}");
        }
    }
}

/// How the local ingest takes `sender`'s deliveries, and a line saying so:
/// a form a browser posts, from the demo page (`page`); a sender that signs
/// nothing (Static Forms, Jotform), the secret in the URL as a deployed
/// stack's default (`webhook_auth` chooses another mode); the others, their
/// own signature with the demo signing secret.
pub fn sender_env(
    sender: shared::Sender,
    page: Option<&crate::demo_page::DemoPage>,
    webhook_auth: Option<String>,
) -> (Vec<(&'static str, String)>, String) {
    if let Some(page) = page {
        return (
            page.ingest_env(),
            format!("open {} and send its form", page.url()),
        );
    }
    if sender.signature().is_none() {
        let mode = webhook_auth.unwrap_or_else(|| "query:token".to_owned());
        let how = match mode.strip_prefix("query:") {
            Some(param) => format!("the secret in the URL: ?{param}={DEMO_TOKEN}"),
            None => format!("WEBHOOK_AUTH={mode}, secret {DEMO_TOKEN}"),
        };
        return (
            vec![
                ("SENDER", sender.name().to_owned()),
                ("WEBHOOK_AUTH", mode),
                ("WEBHOOK_SECRETS", DEMO_TOKEN.to_owned()),
            ],
            how,
        );
    }
    (
        vec![
            ("SENDER", sender.name().to_owned()),
            ("WEBHOOK_SECRETS", DEMO_SIGNING_SECRET.to_owned()),
        ],
        format!(
            "signed as {} signs, with secret {DEMO_SIGNING_SECRET} (events/ingest-{}.json)",
            sender.name(),
            sender.name()
        ),
    )
}
