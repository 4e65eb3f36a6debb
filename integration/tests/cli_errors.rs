//! `receipts` says what is wrong in one line, and what to do: a missing
//! stack, a missing table, no region, no credentials, an unknown profile,
//! an unreachable endpoint. Never the SDK's dump of the error (`--debug`
//! shows it). The real binary, on moto.

use std::process::Command;

use integration::{endpoint, DYNAMODB_ENDPOINT};

/// `receipts ARGS` with only the variables given (and an empty HOME, so no
/// profile of this machine's user is read): exit code and stderr.
fn receipts(env: &[(&str, &str)], args: &[&str]) -> (Option<i32>, String) {
    let bin_dir = std::env::var("FUNCTION_BIN_DIR").unwrap_or_else(|_| {
        panic!("FUNCTION_BIN_DIR is not set: run the suite with `make test`, which builds the receipts CLI first")
    });
    let home = std::env::temp_dir().join("receipts-cli-errors-home");
    std::fs::create_dir_all(&home).unwrap();
    let output = Command::new(format!("{bin_dir}/receipts"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .envs(env.iter().copied())
        .output()
        .expect("the receipts binary runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A case: what it is, the variables, the arguments, what stderr says.
type Row<'a> = (&'a str, Vec<(&'a str, &'a str)>, Vec<&'a str>, &'a str);

#[test]
fn every_setup_and_lookup_failure_is_one_line_saying_what_to_do() {
    let moto = endpoint(DYNAMODB_ENDPOINT);
    let reachable = [
        ("AWS_ENDPOINT_URL", moto.as_str()),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
    ];
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let rows: Vec<Row> = vec![
        (
            "a missing stack",
            reachable.to_vec(),
            vec!["--stack", "no-such-stack", "list"],
            "no stack \"no-such-stack\" in this region and account",
        ),
        (
            "a missing table",
            reachable.to_vec(),
            vec!["--table", "no-such-table", "list"],
            "ResourceNotFoundException",
        ),
        (
            "no region",
            reachable
                .iter()
                .copied()
                .filter(|(name, _)| *name != "AWS_REGION")
                .collect(),
            vec!["--table", "t", "list"],
            "no AWS region: give --region",
        ),
        (
            "no credentials",
            vec![
                ("AWS_ENDPOINT_URL", moto.as_str()),
                ("AWS_REGION", "us-east-1"),
            ],
            vec!["--table", "t", "list"],
            "no AWS credentials: run `aws configure`",
        ),
        (
            "an unknown profile",
            vec![
                ("AWS_ENDPOINT_URL", moto.as_str()),
                ("AWS_REGION", "us-east-1"),
            ],
            vec!["--profile", "nope", "--table", "t", "list"],
            "AWS profile \"nope\" gives no credentials",
        ),
        (
            "an unreachable endpoint",
            vec![
                ("AWS_ENDPOINT_URL", closed.as_str()),
                ("AWS_REGION", "us-east-1"),
                ("AWS_ACCESS_KEY_ID", "test"),
                ("AWS_SECRET_ACCESS_KEY", "test"),
            ],
            vec!["--table", "t", "list"],
            "DynamoDB could not be reached",
        ),
    ];
    for (what, env, args, said) in rows {
        let (code, stderr) = receipts(&env, &args);
        assert!(
            matches!(code, Some(1 | 2)),
            "{what}: exit {code:?}: {stderr}"
        );
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "{what}: one line: {stderr}"
        );
        assert!(stderr.starts_with("receipts: "), "{what}: {stderr}");
        assert!(stderr.contains(said), "{what}: {stderr}");
        for dump in [
            "ServiceError",
            "DispatchFailure",
            "ErrorMetadata",
            "ProviderChain",
        ] {
            assert!(!stderr.contains(dump), "{what}: no SDK dump: {stderr}");
        }
    }
    // --debug shows the whole error.
    let (_, stderr) = receipts(&reachable, &["--debug", "--table", "no-such-table", "list"]);
    assert!(stderr.lines().count() > 1, "{stderr}");
}

/// `routes check` needs no AWS at all (no region, no credentials): it reads
/// the file, exits 0 for a good one and 1 with a line per problem for a bad
/// one.
#[test]
fn routes_check_runs_offline_and_names_each_problem() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let example = root.join("routes.example.toml");
    let (code, stderr) = receipts(&[], &["routes", "check", example.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");

    let bad = std::env::temp_dir().join(format!("routes-bad-{}.toml", std::process::id()));
    std::fs::write(
        &bad,
        "[[route]]\nname = \"Pricing page\"\nform = \"\"\n[route.spam]\nmax_links = -1\n",
    )
    .unwrap();
    let (code, stderr) = receipts(&[], &["routes", "check", bad.to_str().unwrap()]);
    std::fs::remove_file(&bad).unwrap();
    assert_eq!(code, Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    assert!(
        lines[0].ends_with(r#": [[route]] #1 "Pricing page": form: is empty"#),
        "{stderr}"
    );
    assert!(
        lines[1].ends_with(
            r#": [[route]] #1 "Pricing page" spam: max_links: must be a whole number, 0 or more"#
        ),
        "{stderr}"
    );
    assert!(lines[2].starts_with("receipts: "), "{stderr}");
    assert!(
        !stderr.contains("region") && !stderr.contains("credentials"),
        "{stderr}"
    );
}
