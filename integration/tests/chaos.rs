//! `make chaos`, short: 100 submissions through the real binaries while
//! ingest, the stream's worker and the passes' worker are killed at random
//! (half of the passes mid-pass) and the CRM fails at random, with a fixed
//! seed. The
//! run itself counts and fails when a submission is lost or written twice
//! as two leads; this test holds it to its report.

use std::time::Duration;

use integration::*;

#[tokio::test]
async fn a_short_chaos_run_loses_nothing_and_makes_one_lead_per_submission() {
    let bin_dir = std::env::var("FUNCTION_BIN_DIR").unwrap_or_else(|_| {
        panic!("FUNCTION_BIN_DIR is not set: run the suite with `make test`, which builds the binaries first")
    });
    let chaos = std::path::Path::new(&bin_dir).join("chaos");
    let run = tokio::process::Command::new(&chaos)
        .args(["--submissions", "100", "--seed", "20261201"])
        .env("DYNAMODB_ENDPOINT", endpoint(DYNAMODB_ENDPOINT))
        .env("FUNCTION_BIN_DIR", &bin_dir)
        .kill_on_drop(true)
        .output();
    // The run bounds itself; this bounds the test if it ever does not.
    let output = tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .expect("the chaos run ended within ten minutes")
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", chaos.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("chaos: receipts 100, by status {\"COMPLETED\": 100}"),
        "{stdout}"
    );
    assert!(
        stdout.contains("distinct leads 100;"),
        "one lead per submission: {stdout}"
    );
    // What make chaos prints along the way: how to repeat the run (by
    // make chaos's own variable), and each phase.
    for said in [
        "(make chaos SEED=20261201 repeats this run)",
        "chaos: all 100 accepted after",
        "chaos: kills stopped; passes until nothing waits",
    ] {
        assert!(stdout.contains(said), "{said}: {stdout}");
    }
    // "kills: ingest N, stream N, pass N of M passes (...)": each kind was
    // killed, passes (mid-pass) among them.
    let kills = stdout
        .lines()
        .find_map(|line| line.split("kills: ").nth(1))
        .expect("a kills line");
    let count = |kind: &str| -> usize {
        kills
            .split(", ")
            .find_map(|part| part.strip_prefix(kind))
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {kind}count in {kills}"))
    };
    for kind in ["ingest ", "stream ", "pass "] {
        assert!(count(kind) > 0, "no {kind}kill: {stdout}");
    }
}
