//! The command line, through clap: which stack or table, which AWS region
//! and profile, and one subcommand. Times given as ages (`2h`) become
//! receipt timestamps in `Window::resolve`, against a `now` the tests fix.

use std::num::NonZeroUsize;
use std::time::{Duration, SystemTime};

use clap::{Args, Parser, Subcommand, ValueEnum};
use shared::receipt::{format_timestamp, parse_timestamp};

const AFTER_HELP: &str = "\
T is an RFC 3339 time (2026-11-30T08:00:00Z) or an age (90m, 2h, 3days).
Form data (names, emails, messages) is read only with --payload: without
it, list, show and stats ask DynamoDB for the other attributes alone.
A delivered receipt keeps no form data (unless KeepPayloadAfterDelivery).

forget erases one person: their receipts' form data (a receipt not yet
delivered becomes ERASED and is never delivered), their newest-wins gate
and their rows in the leads table. With --everywhere it also deletes them
at each destination of the stack and in the sender's copy where its API
can, step by step: run it again to resume, forget --status to see where
it stands, forget --record ID for the proof (docs/personal-data.md).

redrive puts receipts back in the reconciler's queue: RECEIVED, attempts
reset, due now. A COMPLETED receipt is never redriven. The next
reconciliation pass delivers them; to start one at once:
  aws lambda invoke --function-name <WorkerFunctionName> \\
    --cli-binary-format raw-in-base64-out \\
    --payload '{\"detail-type\":\"Scheduled Event\"}' /dev/stdout
(WorkerFunctionName is a stack output; docs/operations.md gives the same).";

#[derive(Debug, Parser)]
#[command(
    name = "receipts",
    version,
    arg_required_else_help = true,
    about = "The operator's CLI of a staticforms-to-crm stack: look at, redrive, release and erase its receipts, store its routes, audit and import the sender's submissions, and smoke-test it.",
    after_help = AFTER_HELP
)]
pub struct Cli {
    #[command(flatten)]
    pub target: Target,
    /// Errors with the AWS SDK's whole explanation, not one line.
    #[arg(long, global = true)]
    pub debug: bool,
    #[command(subcommand)]
    pub command: Command,
}

/// Where the receipts are, and how to reach AWS. Without `--stack` or
/// `--table`, the table is `$RECEIPTS_TABLE`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Args)]
pub struct Target {
    /// The stack's name: its tables, webhook URL and secret come from its
    /// outputs (CloudFormation DescribeStacks).
    #[arg(long, global = true, value_name = "NAME", conflicts_with = "table")]
    pub stack: Option<String>,
    /// The receipts table (the stack's ReceiptsTableName output).
    #[arg(long, global = true, value_name = "NAME")]
    pub table: Option<String>,
    /// The AWS region (default: the SDK's: AWS_REGION, then the profile).
    #[arg(long, global = true, value_name = "REGION")]
    pub region: Option<String>,
    /// A profile from ~/.aws/config and ~/.aws/credentials (default:
    /// AWS_PROFILE, then "default").
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum Command {
    /// Receipts, newest first: submission id, status, received, attempts,
    /// next attempt, and why (its last error, spam rule, refusal, or the
    /// receipt a duplicate repeats).
    List {
        /// Only receipts in this status (with --destination: whose lane
        /// there stands so).
        #[arg(long, value_enum, ignore_case = true)]
        status: Option<StatusFilter>,
        #[command(flatten)]
        window: TimeArgs,
        /// At most this many, the newest.
        #[arg(long, value_name = "N")]
        limit: Option<NonZeroUsize>,
        /// One JSON array, a receipt per element, instead of the table.
        #[arg(long)]
        json: bool,
        /// Also the form data (personal data).
        #[arg(long, alias = "show-lead")]
        payload: bool,
        /// Only the receipts that still hold this person's form data (an
        /// access request: list --email ADDRESS --payload --json). Reads
        /// the form data, so it needs --payload.
        #[arg(long, value_name = "ADDRESS", requires = "payload")]
        email: Option<String>,
        /// Only the receipts that go to this destination (`mailchimp`);
        /// with --status, those whose delivery there stands so.
        #[arg(long, value_name = "NAME")]
        destination: Option<String>,
    },
    /// One receipt as a card.
    Show {
        /// A submission id of the stack's sender (its Sender, else SENDER,
        /// else staticforms), or a whole key (tally:FORM_RESPONSE:<id>).
        submission_id: String,
        /// The receipt as one JSON object, instead of the card.
        #[arg(long)]
        json: bool,
        /// Also the form data (personal data).
        #[arg(long, alias = "show-lead")]
        payload: bool,
    },
    /// Counts by status and the oldest pending receipt's age.
    Stats {
        /// The counts as one JSON object (`byStatus`, `byDestination`,
        /// `oldestPendingAgeSeconds`, `noticesWaiting`).
        #[arg(long)]
        json: bool,
    },
    /// Back into the reconciler's queue, by submission id or by status.
    /// Warns first about each receipt older than the stack's newest-wins
    /// gates (kept by a destination with one record per person), which
    /// could overwrite newer data.
    Redrive {
        /// Submission ids of the stack's sender (or whole keys).
        #[arg(
            value_name = "SUBMISSION_ID",
            required_unless_present = "status",
            conflicts_with = "status"
        )]
        ids: Vec<String>,
        /// Every receipt in this status (within --since/--until) instead
        /// of ids.
        #[arg(long, value_enum, ignore_case = true)]
        status: Option<RedriveStatus>,
        #[command(flatten)]
        window: TimeArgs,
        /// Say what would be redriven; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Put back only this destination of each receipt (`mailchimp`),
        /// never one already written; with --status failed, the receipts
        /// that failed there.
        #[arg(long, value_name = "NAME")]
        destination: Option<String>,
    },
    /// Erase one person: the form data of every receipt that holds it (a
    /// receipt not yet delivered becomes ERASED, never delivered), their
    /// newest-wins gate, and their rows in the leads table. Finds them by
    /// scanning (bounded by --max-scan-mb); prints what it found and did.
    Forget {
        /// Their e-mail address, compared trimmed and lower-cased.
        #[arg(long, value_name = "ADDRESS", required_unless_present_any = ["record", "id"])]
        email: Option<String>,
        #[command(flatten)]
        erasure: ErasureArgs,
        /// Say what would be erased; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Erase without asking (it never asks when stdin is no terminal).
        #[arg(long, short = 'y')]
        yes: bool,
        /// The leads table (Destination=dynamodb). Default: the stack's
        /// LeadsTableName output with --stack, else $LEADS_TABLE; none: no
        /// leads table is searched.
        #[arg(long, value_name = "NAME")]
        leads_table: Option<String>,
        /// Refuse to scan a table larger than this many MB (as DynamoDB
        /// reports its size), and stop a scan that reads more: finding a
        /// person reads the whole table, about 131,000 read units a GB.
        #[arg(long, value_name = "MB", default_value_t = 1024)]
        max_scan_mb: usize,
    },
    /// A local web page of the receipts: the inbox (live), a receipt's card,
    /// counts and a chart, the quarantine; release and redrive. Served on
    /// 127.0.0.1 only, with a token in the printed URL; Ctrl-C stops it.
    Console {
        /// The port (default: a free one).
        #[arg(long, value_name = "N", default_value_t = 0)]
        port: u16,
        /// Print the URL; do not open a browser.
        #[arg(long)]
        no_open: bool,
        /// Only 127.0.0.1 (or localhost) is accepted: the console never
        /// listens on another address.
        #[arg(long, value_name = "ADDRESS", value_parser = loopback_only)]
        bind: Option<String>,
    },
    /// Give the receipts stored before the console's day index their day,
    /// so the console shows them: once, after upgrading a stack from before
    /// it (a scan of the table's keys). Safe to repeat.
    Reindex {
        /// Count them; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Send one marked test submission to the stack's webhook URL with the
    /// stack's own secret, and follow its receipt until it is COMPLETED.
    /// Needs --stack.
    Smoke {
        /// How long to follow the receipt before giving up (e.g. 2m).
        #[arg(long, value_name = "AGE", default_value = "3m", value_parser = age)]
        timeout: Duration,
        /// Keep the smoke lead in the stack's leads table (by default it is
        /// deleted once COMPLETED; a CRM's is named for you to delete).
        #[arg(long)]
        keep: bool,
        /// The smoke lead's address instead of smoke-test@example.com: one
        /// at a domain of yours, for a destination that refuses example.com
        /// (Mailchimp).
        #[arg(long, value_name = "ADDRESS")]
        email: Option<String>,
    },
    /// What to paste into the sender's webhook settings: the stack's
    /// webhook URL, with its secret where the stack's mode wants it (in the
    /// URL for Static Forms' default). Needs --stack.
    WebhookUrl {
        /// Print the secret itself (only to a terminal); else `<secret>`.
        #[arg(long)]
        show_secret: bool,
    },
    /// Out of quarantine: each receipt a spam rule held back becomes
    /// RECEIVED and due now, and the next reconciliation pass delivers it,
    /// once: a second release, or one racing another, changes nothing and
    /// says so.
    Release {
        /// Submission ids of the stack's sender (or whole keys).
        #[arg(value_name = "SUBMISSION_ID", required = true)]
        ids: Vec<String>,
    },
    /// The routes file: each form's place in the CRM and the spam rules
    /// (routes.example.toml shows its shape).
    Routes {
        #[command(subcommand)]
        action: RoutesAction,
    },
    /// The sender's own list of completed submissions beside the receipts:
    /// per day and form, how many are at the sender, received here,
    /// delivered and missing, then the missing ids (ids only). Exit 4 when
    /// any is missing.
    Audit {
        #[command(flatten)]
        scope: AuditArgs,
    },
    /// Store each submission the sender lists and this stack never
    /// received, under the key its webhook would have had (a webhook that
    /// arrives later is a duplicate); the worker delivers them as it
    /// delivers a webhook's.
    Import {
        #[command(flatten)]
        scope: AuditArgs,
        /// Say what would be imported; store nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// `forget --everywhere`, `--status` and `--record`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Args)]
pub struct ErasureArgs {
    /// Also at every destination of the stack, by its vendor's own
    /// deletion, and in the sender's copy where its API deletes: steps
    /// saved as they finish, resumed by running it again. Exit 0 only
    /// when every step is done; prints the erasure's id and record.
    #[arg(long)]
    pub everywhere: bool,
    /// With --everywhere: the sender's submissions made since T (an
    /// RFC 3339 time or an age). Default: the stack's retention.
    #[arg(long, value_name = "T", requires = "everywhere")]
    pub since: Option<String>,
    /// With --everywhere: a form's id at the sender; repeat for more.
    /// Default: every form in the stored routes.
    #[arg(long = "form", value_name = "ID", requires = "everywhere")]
    pub forms: Vec<String>,
    /// Where an erasure stands (by --email or --id); changes nothing.
    #[arg(long, conflicts_with_all = ["everywhere", "dry_run", "record"])]
    pub status: bool,
    /// With --status: the erasure's id, as forget printed it.
    #[arg(long, value_name = "ID", requires = "status", conflicts_with = "email")]
    pub id: Option<String>,
    /// Print the record of a finished erasure (its id, when it was
    /// asked and finished, what each place answered); no personal data.
    #[arg(long, value_name = "ID", conflicts_with_all = ["email", "everywhere", "dry_run"])]
    pub record: Option<String>,
    /// With --record: as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Which of the sender's submissions `audit` and `import` read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Args)]
pub struct AuditArgs {
    /// Submitted at or after T (an RFC 3339 time or an age: 7d).
    #[arg(long, value_name = "T")]
    pub since: String,
    /// Submitted before T (default: now).
    #[arg(long, value_name = "T")]
    pub until: Option<String>,
    /// A form's id at the sender; repeat for more. Default: every form in
    /// the stored routes.
    #[arg(long = "form", value_name = "ID")]
    pub forms: Vec<String>,
    /// The sender (default: the stack's Sender, else $SENDER).
    #[arg(long, value_name = "NAME")]
    pub sender: Option<String>,
    /// The Secrets Manager secret that holds the sender's API token
    /// (default: the stack's SenderApiTokenSecretArn output, else the
    /// token in $SENDER_API_TOKEN). Never the token itself.
    #[arg(long, value_name = "ARN")]
    pub api_token_secret_arn: Option<String>,
    /// How many days the stack keeps receipts (its ReceiptRetentionDays),
    /// for a table without its stack (else $RECEIPT_RETENTION_DAYS). A
    /// submission older than that is never imported: its receipt may be
    /// gone on purpose.
    #[arg(long, value_name = "N")]
    pub retention_days: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum RoutesAction {
    /// Say everything wrong with FILE, one line per problem naming its
    /// route and key (exit 1), or what it holds. Offline: needs no AWS.
    Check {
        #[arg(value_name = "FILE")]
        file: std::path::PathBuf,
        /// The stack's destinations (`hubspot,mailchimp`): a route naming
        /// another is a problem. With --stack, the stack's own are read.
        #[arg(long, value_name = "LIST")]
        destinations: Option<String>,
    },
    /// Check FILE, say what changes (routes by name, never by form id),
    /// and store it in the stack's receipts table, where ingest reads its
    /// spam rules within five minutes. Nothing is stored when the file has
    /// a problem or nothing changes.
    Apply {
        #[arg(value_name = "FILE")]
        file: std::path::PathBuf,
        /// Say what would change; store nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// The stored routes: their version, when they were applied, and each
    /// route by name (form ids are never printed).
    Show,
}

impl Command {
    /// Whether the command runs without AWS (no region, credentials or
    /// table needed) when no stack is named.
    pub fn is_offline(&self) -> bool {
        matches!(
            self,
            Command::Routes {
                action: RoutesAction::Check { .. }
            }
        )
    }
}

/// `--since` and `--until`, as given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Args)]
pub struct TimeArgs {
    /// Received at or after T.
    #[arg(long, value_name = "T")]
    pub since: Option<String>,
    /// Received at or before T.
    #[arg(long, value_name = "T")]
    pub until: Option<String>,
}

/// The statuses a command can select.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusFilter {
    Received,
    Completed,
    Failed,
    /// RECEIVED and in the reconciler's queue (the pending index).
    Pending,
    /// Held back by a spam rule; `release` delivers one.
    Quarantined,
    /// Refused for good by the destination (its code in the last column).
    Refused,
    /// A double submit of another receipt (named in the last column).
    Duplicate,
}

/// What redrive may select: completed receipts are never redriven, and
/// pending ones are already queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RedriveStatus {
    Failed,
    /// RECEIVED receipts stored before the queue existed, which no pass finds.
    Received,
}

impl From<RedriveStatus> for StatusFilter {
    fn from(status: RedriveStatus) -> Self {
        match status {
            RedriveStatus::Failed => StatusFilter::Failed,
            RedriveStatus::Received => StatusFilter::Received,
        }
    }
}

/// Received-time bounds, as receipt timestamp text (which sorts as time).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Window {
    pub since: Option<String>,
    pub until: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is neither an RFC 3339 time nor an age such as 2h")]
pub struct BadTime(pub String);

impl TimeArgs {
    /// The bounds as timestamps; an age counts back from `now`.
    pub fn resolve(&self, now: SystemTime) -> Result<Window, BadTime> {
        let at = |raw: &Option<String>| raw.as_deref().map(|raw| time(raw, now)).transpose();
        Ok(Window {
            since: at(&self.since)?,
            until: at(&self.until)?,
        })
    }
}

/// An RFC 3339 time, or an age before `now`, as receipt timestamp text.
fn time(raw: &str, now: SystemTime) -> Result<String, BadTime> {
    instant(raw, now).map(format_timestamp)
}

/// An RFC 3339 time, or an age before `now`.
pub fn instant(raw: &str, now: SystemTime) -> Result<SystemTime, BadTime> {
    parse_timestamp(raw)
        .or_else(|| age(raw).ok().and_then(|age| now.checked_sub(age)))
        .ok_or_else(|| BadTime(raw.to_owned()))
}

/// `console --bind`: the loopback, or refused. The console shows leads and
/// acts on them with the operator's AWS credentials: nobody else reaches it.
fn loopback_only(raw: &str) -> Result<String, String> {
    match raw.trim() {
        "127.0.0.1" | "localhost" => Ok(raw.trim().to_owned()),
        _ => Err(
            "the console listens on 127.0.0.1 only (it shows leads and acts on them with your \
                  AWS credentials; reach it from elsewhere through an SSH tunnel)"
                .to_owned(),
        ),
    }
}

fn age(raw: &str) -> Result<Duration, String> {
    humantime::parse_duration(raw).map_err(|_| format!("{raw:?} is not an age such as 90s or 2m"))
}

#[cfg(test)]
mod tests {
    use super::AFTER_HELP;

    /// The tagline names what every command does, and each command's
    /// summary reads whole (clap takes a doc comment's first paragraph).
    #[test]
    fn help_names_every_command_group_and_reads_whole() {
        use clap::CommandFactory;
        let cli = super::Cli::command();
        let about = cli.get_about().unwrap().to_string();
        for does in [
            "look at",
            "redrive",
            "release",
            "erase",
            "routes",
            "audit",
            "import",
            "smoke-test",
        ] {
            assert!(about.contains(does), "{does}: {about}");
        }
        let import = cli.find_subcommand("import").unwrap();
        let summary = import.get_about().unwrap().to_string();
        assert!(summary.ends_with("as it delivers a webhook's"), "{summary}");
    }

    /// Every flag says what it does in `--help`: `--json` as much as any.
    #[test]
    fn every_flag_has_help_text() {
        use clap::CommandFactory;
        fn unexplained(command: &clap::Command, path: &str, out: &mut Vec<String>) {
            for arg in command.get_arguments() {
                if arg.get_long().is_some() && arg.get_help().is_none() && arg.get_id() != "help" {
                    out.push(format!("{path} --{}", arg.get_id()));
                }
            }
            for sub in command.get_subcommands() {
                unexplained(sub, &format!("{path} {}", sub.get_name()), out);
            }
        }
        let mut missing = Vec::new();
        unexplained(&super::Cli::command(), "receipts", &mut missing);
        assert_eq!(missing, Vec::<String>::new());
    }

    /// `--help` and docs/operations.md give one command to start a pass.
    #[test]
    fn help_starts_a_pass_with_the_command_the_operations_page_gives() {
        let docs = include_str!("../../docs/operations.md");
        let command = AFTER_HELP
            .split("to start one at once:\n")
            .nth(1)
            .unwrap()
            .lines()
            .take(3)
            .map(|line| line.trim().trim_end_matches('\\').trim())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(command.starts_with("aws lambda invoke"), "{command}");
        assert!(docs.contains(&command), "{command}");
    }
    use super::*;
    use clap::error::ErrorKind;
    use std::time::UNIX_EPOCH;

    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_800_000_000) // 2027-01-15T08:00:00Z
    }

    fn parse(line: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("receipts").chain(line.split_whitespace()))
    }

    fn command(line: &str) -> Command {
        parse(line)
            .unwrap_or_else(|e| panic!("{line}: {e}"))
            .command
    }

    fn window(since: Option<&str>, until: Option<&str>) -> TimeArgs {
        TimeArgs {
            since: since.map(str::to_owned),
            until: until.map(str::to_owned),
        }
    }

    #[test]
    fn commands() {
        let rows = [
            (
                "list",
                Command::List {
                    status: None,
                    window: TimeArgs::default(),
                    limit: None,
                    json: false,
                    payload: false,
                    email: None,
                    destination: None,
                },
            ),
            (
                "list --status FAILED --since 2h --limit 5 --json --payload",
                Command::List {
                    status: Some(StatusFilter::Failed),
                    window: window(Some("2h"), None),
                    limit: NonZeroUsize::new(5),
                    json: true,
                    payload: true,
                    email: None,
                    destination: None,
                },
            ),
            (
                "list --status pending --show-lead --destination mailchimp",
                Command::List {
                    status: Some(StatusFilter::Pending),
                    window: TimeArgs::default(),
                    limit: None,
                    json: false,
                    payload: true,
                    email: None,
                    destination: Some("mailchimp".into()),
                },
            ),
            (
                "show sub_1 --json",
                Command::Show {
                    submission_id: "sub_1".into(),
                    json: true,
                    payload: false,
                },
            ),
            (
                "list --email Ada@Example.com --payload --json",
                Command::List {
                    status: None,
                    window: TimeArgs::default(),
                    limit: None,
                    json: true,
                    payload: true,
                    email: Some("Ada@Example.com".into()),
                    destination: None,
                },
            ),
            ("stats", Command::Stats { json: false }),
            (
                "audit --since 7d --form a --form b --sender tally --retention-days 14",
                Command::Audit {
                    scope: AuditArgs {
                        since: "7d".into(),
                        until: None,
                        forms: vec!["a".into(), "b".into()],
                        sender: Some("tally".into()),
                        api_token_secret_arn: None,
                        retention_days: Some(14),
                    },
                },
            ),
            (
                "import --since 2026-11-01T00:00:00Z --until 1d --dry-run --api-token-secret-arn arn:x",
                Command::Import {
                    scope: AuditArgs {
                        since: "2026-11-01T00:00:00Z".into(),
                        until: Some("1d".into()),
                        api_token_secret_arn: Some("arn:x".into()),
                        ..AuditArgs::default()
                    },
                    dry_run: true,
                },
            ),
            (
                "forget --email ada@example.com --dry-run",
                Command::Forget {
                    email: Some("ada@example.com".into()),
                    dry_run: true,
                    yes: false,
                    leads_table: None,
                    max_scan_mb: 1024,
                    erasure: ErasureArgs::default(),
                },
            ),
            (
                "forget --email ada@example.com --everywhere --since 30d --form f1 -y",
                Command::Forget {
                    email: Some("ada@example.com".into()),
                    dry_run: false,
                    yes: true,
                    leads_table: None,
                    max_scan_mb: 1024,
                    erasure: ErasureArgs {
                        everywhere: true,
                        since: Some("30d".into()),
                        forms: vec!["f1".into()],
                        ..ErasureArgs::default()
                    },
                },
            ),
            (
                "forget --status --id 0123456789abcdef0123",
                Command::Forget {
                    email: None,
                    dry_run: false,
                    yes: false,
                    leads_table: None,
                    max_scan_mb: 1024,
                    erasure: ErasureArgs {
                        status: true,
                        id: Some("0123456789abcdef0123".into()),
                        ..ErasureArgs::default()
                    },
                },
            ),
            (
                "forget --record 0123456789abcdef0123-1 --json",
                Command::Forget {
                    email: None,
                    dry_run: false,
                    yes: false,
                    leads_table: None,
                    max_scan_mb: 1024,
                    erasure: ErasureArgs {
                        record: Some("0123456789abcdef0123-1".into()),
                        json: true,
                        ..ErasureArgs::default()
                    },
                },
            ),
            (
                "forget --email ada@example.com -y --leads-table leads --max-scan-mb 50",
                Command::Forget {
                    email: Some("ada@example.com".into()),
                    dry_run: false,
                    yes: true,
                    leads_table: Some("leads".into()),
                    max_scan_mb: 50,
                    erasure: ErasureArgs::default(),
                },
            ),
            (
                "redrive sub_1 sub_2 --dry-run",
                Command::Redrive {
                    ids: vec!["sub_1".into(), "sub_2".into()],
                    status: None,
                    window: TimeArgs::default(),
                    dry_run: true,
                    destination: None,
                },
            ),
            (
                "redrive --status failed --since 2h --destination mailchimp",
                Command::Redrive {
                    ids: vec![],
                    status: Some(RedriveStatus::Failed),
                    window: window(Some("2h"), None),
                    dry_run: false,
                    destination: Some("mailchimp".into()),
                },
            ),
            (
                "smoke --timeout 90s",
                Command::Smoke {
                    timeout: Duration::from_secs(90),
                    keep: false,
                    email: None,
                },
            ),
            (
                "smoke --keep",
                Command::Smoke {
                    timeout: Duration::from_secs(180),
                    keep: true,
                    email: None,
                },
            ),
            (
                "smoke --email me@acme.example",
                Command::Smoke {
                    timeout: Duration::from_secs(180),
                    keep: false,
                    email: Some("me@acme.example".into()),
                },
            ),
        ];
        for (line, expected) in rows {
            assert_eq!(command(line), expected, "{line:?}");
        }
    }

    #[test]
    fn the_target_is_global() {
        let cli = parse("list --stack crm-prod --region eu-west-1 --profile ops").unwrap();
        assert_eq!(
            cli.target,
            Target {
                stack: Some("crm-prod".into()),
                table: None,
                region: Some("eu-west-1".into()),
                profile: Some("ops".into()),
            }
        );
        assert_eq!(
            parse("--table t stats").unwrap().target.table.as_deref(),
            Some("t")
        );
    }

    #[test]
    fn mistakes_are_refused() {
        let rows = [
            ("frobnicate", ErrorKind::InvalidSubcommand),
            ("list --colour", ErrorKind::UnknownArgument),
            ("list --status done", ErrorKind::InvalidValue),
            ("list --limit 0", ErrorKind::ValueValidation),
            ("list --since", ErrorKind::InvalidValue),
            ("list sub_1", ErrorKind::UnknownArgument),
            ("show", ErrorKind::MissingRequiredArgument),
            (
                "list --email a@example.com",
                ErrorKind::MissingRequiredArgument,
            ),
            ("forget", ErrorKind::MissingRequiredArgument),
            (
                "forget --email a@example.com --max-scan-mb lots",
                ErrorKind::ValueValidation,
            ),
            ("show a b", ErrorKind::UnknownArgument),
            ("console --bind 0.0.0.0", ErrorKind::ValueValidation),
            ("console --bind ::", ErrorKind::ValueValidation),
            ("console --bind 192.168.1.10", ErrorKind::ValueValidation),
            (
                "forget --email a@example.com --since 7d",
                ErrorKind::MissingRequiredArgument,
            ),
            (
                "forget --email a@example.com --status --everywhere",
                ErrorKind::ArgumentConflict,
            ),
            (
                "forget --record 0123456789abcdef0123 --email a@example.com",
                ErrorKind::ArgumentConflict,
            ),
            (
                "forget --status --id x --email a@b",
                ErrorKind::ArgumentConflict,
            ),
            ("redrive", ErrorKind::MissingRequiredArgument),
            ("redrive sub_1 --status failed", ErrorKind::ArgumentConflict),
            ("redrive --status completed", ErrorKind::InvalidValue),
            ("redrive --status pending", ErrorKind::InvalidValue),
            ("stats --stack a --table b", ErrorKind::ArgumentConflict),
            ("smoke --timeout soon", ErrorKind::ValueValidation),
            ("", ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand),
        ];
        for (line, kind) in rows {
            match parse(line) {
                Err(error) => assert_eq!(error.kind(), kind, "{line:?}: {error}"),
                Ok(cli) => panic!("{line:?} was accepted: {cli:?}"),
            }
        }
    }

    #[test]
    fn version_and_help() {
        let version = parse("--version").unwrap_err();
        assert_eq!(version.kind(), ErrorKind::DisplayVersion);
        assert!(version.to_string().contains(env!("CARGO_PKG_VERSION")));
        let help = parse("--help").unwrap_err().to_string();
        for word in [
            "list",
            "show",
            "stats",
            "redrive",
            "smoke",
            "forget",
            "--stack",
            "--region",
            "--profile",
        ] {
            assert!(help.contains(word), "{word} in {help}");
        }
    }

    #[test]
    fn times_and_ages() {
        let rows = [
            ("2h", Ok("2027-01-15T06:00:00.000Z")),
            ("2027-01-01T00:00:00Z", Ok("2027-01-01T00:00:00.000Z")),
            ("yesterday", Err(BadTime("yesterday".into()))),
        ];
        for (raw, expected) in rows {
            let resolved = window(Some(raw), None).resolve(now());
            assert_eq!(
                resolved.map(|w| w.since.unwrap()),
                expected.map(str::to_owned),
                "{raw}"
            );
        }
    }
}
