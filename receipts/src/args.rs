//! The command line, parsed once into a typed command. Hand-written: four
//! subcommands and a few options do not need a parser dependency, and every
//! rule is a table test below.

use std::time::{Duration, SystemTime};

use shared::receipt::parse_timestamp;

pub const USAGE: &str = "\
receipts: look at and redrive the receipts of staticforms-to-crm.

Usage:
  receipts list [--status received|completed|failed|pending] [--since T] [--until T]
                [--limit N] [--json] [--show-lead]
  receipts show <submission-id> [--json] [--show-lead]
  receipts stats [--json]
  receipts redrive <submission-id>... [--dry-run]
  receipts redrive --status failed|received [--since T] [--until T] [--dry-run]

Every command takes --table NAME (default: $RECEIPTS_TABLE). Region,
credentials and endpoint come from the standard AWS environment
(AWS_REGION, AWS_PROFILE, AWS_ENDPOINT_URL...).

T is an RFC 3339 time (2026-11-30T08:00:00Z) or an age (90m, 2h, 3days).
Form data (names, emails, messages) is shown only with --show-lead.

redrive puts receipts back in the reconciler's queue: RECEIVED, attempts
reset, due now. A COMPLETED receipt is never redriven. The next
reconciliation pass delivers them; to start one at once:
  aws lambda invoke --function-name <WorkerFunction> \\
    --payload fileb://events/worker-reconcile.json /dev/stdout
";

/// The statuses a command can select.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusFilter {
    Received,
    Completed,
    Failed,
    /// RECEIVED and in the reconciler's queue (the pending index).
    Pending,
}

/// Received-time bounds, as RFC 3339 text (receipt timestamps sort as text).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Window {
    pub since: Option<String>,
    pub until: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Help,
    List {
        status: Option<StatusFilter>,
        window: Window,
        limit: Option<usize>,
        json: bool,
        show_lead: bool,
    },
    Show {
        submission_id: String,
        json: bool,
        show_lead: bool,
    },
    Stats {
        json: bool,
    },
    Redrive {
        target: RedriveTarget,
        dry_run: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedriveTarget {
    Ids(Vec<String>),
    /// FAILED or RECEIVED (the latter for receipts stored before the queue
    /// existed, which no pass finds).
    Status(StatusFilter, Window),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub command: Command,
    pub table: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}\n(receipts --help shows the usage)")]
pub struct UsageError(pub String);

fn usage(message: impl Into<String>) -> UsageError {
    UsageError(message.into())
}

/// Parses the arguments after the program name; `now` anchors ages.
pub fn parse(args: &[String], now: SystemTime) -> Result<Invocation, UsageError> {
    let mut words = args.iter();
    let Some(verb) = words.next() else {
        return Ok(Invocation {
            command: Command::Help,
            table: None,
        });
    };
    let mut table = None;
    let mut status = None;
    let mut window = Window::default();
    let mut limit = None;
    let (mut json, mut show_lead, mut dry_run) = (false, false, false);
    let mut positional = Vec::new();
    while let Some(word) = words.next() {
        let mut value = |name: &str| {
            words
                .next()
                .cloned()
                .ok_or_else(|| usage(format!("{name} needs a value")))
        };
        match word.as_str() {
            "--table" => table = Some(value("--table")?),
            "--status" => status = Some(status_filter(&value("--status")?)?),
            "--since" => window.since = Some(time(&value("--since")?, now)?),
            "--until" => window.until = Some(time(&value("--until")?, now)?),
            "--limit" => {
                let raw = value("--limit")?;
                limit = Some(
                    raw.parse::<usize>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| {
                            usage(format!("--limit takes a whole number above 0, not {raw:?}"))
                        })?,
                );
            }
            "--json" => json = true,
            "--show-lead" => show_lead = true,
            "--dry-run" => dry_run = true,
            "-h" | "--help" => {
                return Ok(Invocation {
                    command: Command::Help,
                    table,
                })
            }
            flag if flag.starts_with("--") => return Err(usage(format!("unknown option {flag}"))),
            id => positional.push(id.to_owned()),
        }
    }
    let no_positional = |verb: &str| match positional.first() {
        Some(extra) => Err(usage(format!("{verb} takes no argument {extra:?}"))),
        None => Ok(()),
    };
    let command = match verb.as_str() {
        "-h" | "--help" | "help" => Command::Help,
        "list" => {
            no_positional("list")?;
            Command::List {
                status,
                window,
                limit,
                json,
                show_lead,
            }
        }
        "show" => match positional.as_slice() {
            [id] => Command::Show {
                submission_id: id.clone(),
                json,
                show_lead,
            },
            [] => return Err(usage("show needs a submission id")),
            _ => return Err(usage("show takes one submission id")),
        },
        "stats" => {
            no_positional("stats")?;
            Command::Stats { json }
        }
        "redrive" => {
            let target = match (positional.is_empty(), status) {
                (false, None) if window == Window::default() => RedriveTarget::Ids(positional),
                (false, _) => {
                    return Err(usage(
                        "redrive takes submission ids or --status, not both",
                    ))
                }
                (true, Some(status @ (StatusFilter::Failed | StatusFilter::Received))) => {
                    RedriveTarget::Status(status, window)
                }
                (true, Some(_)) => {
                    return Err(usage(
                        "redrive --status takes failed or received: completed receipts are never redriven, pending ones are already queued",
                    ))
                }
                (true, None) => {
                    return Err(usage("redrive needs submission ids or --status failed"))
                }
            };
            Command::Redrive { target, dry_run }
        }
        other => return Err(usage(format!("unknown command {other:?}"))),
    };
    Ok(Invocation { command, table })
}

fn status_filter(raw: &str) -> Result<StatusFilter, UsageError> {
    match raw.to_ascii_lowercase().as_str() {
        "received" => Ok(StatusFilter::Received),
        "completed" => Ok(StatusFilter::Completed),
        "failed" => Ok(StatusFilter::Failed),
        "pending" => Ok(StatusFilter::Pending),
        _ => Err(usage(format!(
            "--status takes received, completed, failed or pending, not {raw:?}"
        ))),
    }
}

/// An RFC 3339 time, or an age before `now`, as receipt timestamp text.
fn time(raw: &str, now: SystemTime) -> Result<String, UsageError> {
    let at = parse_timestamp(raw)
        .or_else(|| {
            humantime::parse_duration(raw)
                .ok()
                .and_then(|age: Duration| now.checked_sub(age))
        })
        .ok_or_else(|| {
            usage(format!(
                "{raw:?} is neither an RFC 3339 time nor an age such as 2h"
            ))
        })?;
    Ok(shared::receipt::format_timestamp(at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_800_000_000) // 2027-01-15T08:00:00Z
    }

    fn run(line: &str) -> Result<Invocation, UsageError> {
        let args: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        parse(&args, now())
    }

    fn command(line: &str) -> Command {
        run(line).unwrap_or_else(|e| panic!("{line}: {e}")).command
    }

    #[test]
    fn commands() {
        let two_hours_ago = Some("2027-01-15T06:00:00.000Z".to_owned());
        let rows = [
            ("", Command::Help),
            ("--help", Command::Help),
            ("list --help", Command::Help),
            (
                "list",
                Command::List {
                    status: None,
                    window: Window::default(),
                    limit: None,
                    json: false,
                    show_lead: false,
                },
            ),
            (
                "list --status FAILED --since 2h --limit 5 --json --show-lead",
                Command::List {
                    status: Some(StatusFilter::Failed),
                    window: Window {
                        since: two_hours_ago.clone(),
                        until: None,
                    },
                    limit: Some(5),
                    json: true,
                    show_lead: true,
                },
            ),
            (
                "list --status pending --until 2027-01-01T00:00:00Z",
                Command::List {
                    status: Some(StatusFilter::Pending),
                    window: Window {
                        since: None,
                        until: Some("2027-01-01T00:00:00.000Z".into()),
                    },
                    limit: None,
                    json: false,
                    show_lead: false,
                },
            ),
            (
                "show sub_1 --json",
                Command::Show {
                    submission_id: "sub_1".into(),
                    json: true,
                    show_lead: false,
                },
            ),
            ("stats", Command::Stats { json: false }),
            (
                "redrive sub_1 sub_2 --dry-run",
                Command::Redrive {
                    target: RedriveTarget::Ids(vec!["sub_1".into(), "sub_2".into()]),
                    dry_run: true,
                },
            ),
            (
                "redrive --status failed --since 2h",
                Command::Redrive {
                    target: RedriveTarget::Status(
                        StatusFilter::Failed,
                        Window {
                            since: two_hours_ago,
                            until: None,
                        },
                    ),
                    dry_run: false,
                },
            ),
        ];
        for (line, expected) in rows {
            assert_eq!(command(line), expected, "{line:?}");
        }
        assert_eq!(
            run("stats --table my-receipts").unwrap().table.as_deref(),
            Some("my-receipts")
        );
    }

    #[test]
    fn mistakes_are_named() {
        let rows = [
            ("frobnicate", "unknown command \"frobnicate\""),
            ("list --colour", "unknown option --colour"),
            ("list --status done", "--status takes received, completed, failed or pending, not \"done\""),
            ("list --limit 0", "--limit takes a whole number above 0, not \"0\""),
            ("list --since", "--since needs a value"),
            ("list --since yesterday", "\"yesterday\" is neither an RFC 3339 time nor an age such as 2h"),
            ("list sub_1", "list takes no argument \"sub_1\""),
            ("show", "show needs a submission id"),
            ("show a b", "show takes one submission id"),
            ("redrive", "redrive needs submission ids or --status failed"),
            ("redrive sub_1 --status failed", "redrive takes submission ids or --status, not both"),
            (
                "redrive --status completed",
                "redrive --status takes failed or received: completed receipts are never redriven, pending ones are already queued",
            ),
        ];
        for (line, message) in rows {
            assert_eq!(run(line), Err(UsageError(message.into())), "{line:?}");
        }
    }
}
