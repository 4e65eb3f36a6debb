//! `make sign-event SENDER=<name>`: prints events/ingest-<name>.json signed
//! now with the local signing secret (`devtools::sign_event`), for `sam
//! local invoke` or the local pipeline.

use std::time::SystemTime;

use devtools::{local, sign_event};

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("sign-event: give an event file (events/ingest-formspree.json)");
        std::process::exit(2);
    };
    let event = std::fs::read_to_string(&path)
        .map_err(|error| format!("{path}: {error}"))
        .and_then(|text| serde_json::from_str(&text).map_err(|error| format!("{path}: {error}")))
        .and_then(|event| {
            sign_event::signed(&event, local::DEMO_SIGNING_SECRET, SystemTime::now())
        });
    match event {
        Ok(event) => println!("{event:#}"),
        Err(error) => {
            eprintln!("sign-event: {error}");
            std::process::exit(1);
        }
    }
}
