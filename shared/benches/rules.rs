//! How much CPU the per-delivery rules cost: parse the envelope, build the
//! key, fingerprint `data`, build the receipt. A 128 MB Lambda gets a small
//! fraction of a vCPU, so this bounds what a webhook costs before any I/O.
//! Run with `cargo bench -p shared`; it reports, it asserts nothing.

use std::hint::black_box;
use std::time::{Duration, Instant, SystemTime};

use shared::{FormSubmission, IdempotencyKey, Receipt};

fn body_of(size: usize) -> Vec<u8> {
    let filler = "x".repeat(size.saturating_sub(300));
    serde_json::json!({
        "event": "form.submitted",
        "timestamp": 1_795_941_528,
        "data": {
            "submissionId": "sub_01JDEMO00000000000000000001",
            "apiKey": "sf_live_key",
            "formData": {"name": "Ada Lovelace", "email": "ada@example.com", "message": filler}
        }
    })
    .to_string()
    .into_bytes()
}

fn per_delivery(body: &[u8]) {
    let submission = FormSubmission::parse(body).expect("valid body");
    let key = IdempotencyKey::for_submission(submission.sender, &submission.submission_id);
    let receipt = Receipt::new(&submission, SystemTime::now());
    black_box((key, receipt));
}

fn main() {
    for size in [1_024, 16 * 1024, 256 * 1024] {
        let body = body_of(size);
        let mut iterations = 0u32;
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(2) {
            per_delivery(black_box(&body));
            iterations += 1;
        }
        let each = started.elapsed() / iterations;
        println!("parse + key + fingerprint + receipt, {:>6} byte body: {:>10.1} µs per delivery ({iterations} runs)", body.len(), each.as_secs_f64() * 1e6);
    }
}
