//! `make bench`'s short form: the load test runs through the local
//! pipeline, prints every figure it promises, and finds every accepted
//! submission a lead, written once, at eight write units each (the
//! receipt's seven, with its queue and day index entries, and its
//! double-submit item's one).

use integration::*;

#[test]
fn the_bench_prints_its_figures_and_finds_every_lead_once() {
    let bin_dir = std::env::var("FUNCTION_BIN_DIR").unwrap_or_else(|_| {
        panic!("FUNCTION_BIN_DIR is not set: run the suite with `make test`, which builds the bench first")
    });
    let output = std::process::Command::new(format!("{bin_dir}/bench"))
        .env("DYNAMODB_ENDPOINT", endpoint(DYNAMODB_ENDPOINT))
        .env("FUNCTION_BIN_DIR", &bin_dir)
        .env("N", "20")
        .env("RATE", "20")
        .env("CRM_DELAY_MS", "20")
        .output()
        .expect("the bench runs");
    let out = String::from_utf8_lossy(&output.stdout);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{out}\n{err}");
    for figure in [
        "accepted            20 of 20 in ",
        "webhook answer      p50 ",
        "submission to CRM   p50 ",
        "CRM calls per lead  1.00",
        "write units / lead  8.00 (table 4.00, index 4.00)",
    ] {
        assert!(out.contains(figure), "missing {figure:?} in:\n{out}");
    }
    assert!(err.contains("in the CRM"), "a progress line: {err}");
}
