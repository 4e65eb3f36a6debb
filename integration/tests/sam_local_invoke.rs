//! Every file in events/ through the real `sam local invoke` of its function,
//! in Docker, as a user runs it: the built template, the env file from
//! events/local-env.json, this host's architecture. Against moto on Docker's
//! bridge (started by `make test`) and the CRM stub on the same address.
//!
//! It needs Docker, a built template (`sam build`) and the SAM CLI, which
//! `make test` provides before it runs this stage; so the plain suite skips
//! it, by name, and `make test` runs it with `--ignored`. Without them it
//! fails and says what is missing.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use aws_sdk_dynamodb::types::AttributeValue;
use devtools::crm_stub::CrmStub;
use integration::*;
use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn required(variable: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| {
        panic!("{variable} is not set: run this stage with `make test`, which starts Docker, builds the template and sets it")
    })
}

/// events/local-env.json for this run: its addresses and table replaced.
fn env_file(dynamodb: &str, crm: &str, table: &str) -> PathBuf {
    let text = std::fs::read_to_string(workspace().join("events/local-env.json")).unwrap();
    let text = text
        .replace("http://172.17.0.1:9100", dynamodb)
        .replace("http://172.17.0.1:9101", crm)
        .replace("\"staticforms-receipts\"", &format!("\"{table}\""));
    let path = std::env::temp_dir().join(format!("{table}-env.json"));
    std::fs::write(&path, text).unwrap();
    path
}

/// The same with the ingest function taking `sender`'s deliveries, as a
/// stack with `Sender=<sender>` sets it: its own signature (WEBHOOK_AUTH
/// blank), the demo signing secret the samples are signed with, and no
/// Static Forms-only variable.
fn sender_env_file(env: &Path, sender: &str, turnstile: &str) -> PathBuf {
    let mut vars: Value = serde_json::from_str(&std::fs::read_to_string(env).unwrap()).unwrap();
    let ingest = &mut vars["IngestFunction"];
    ingest["SENDER"] = Value::from(sender);
    let of = shared::Sender::parse(sender).unwrap();
    // As the template gives it: the sender's own signature, or, for one
    // that signs nothing, the secret in the URL; a form a browser posts,
    // its page and its bot check (the Turnstile fake's passing test secret).
    let auth = match (of.signature(), of.profile().browser) {
        (Some(_), _) | (None, true) => "",
        (None, false) => "query:token",
    };
    ingest["WEBHOOK_AUTH"] = Value::from(auth);
    if of.profile().browser {
        ingest["ALLOWED_ORIGINS"] = Value::from("https://example.com");
        ingest["TURNSTILE_SECRET"] = Value::from(devtools::fakes::turnstile::ALWAYS_PASSES_SECRET);
        ingest["TURNSTILE_VERIFY_URL"] = Value::from(turnstile);
        ingest["TURNSTILE_ALLOW_HTTP"] = Value::from("true");
    }
    // A form a browser posts carries no webhook secret: none is given.
    ingest["WEBHOOK_SECRETS"] = Value::from(if of.profile().browser {
        ""
    } else {
        devtools::local::DEMO_SIGNING_SECRET
    });
    ingest["IDEMPOTENCY_KEY"] = Value::from("");
    ingest["WEBHOOK_API_KEYS"] = Value::from("");
    let path = env.with_extension(format!("{sender}.json"));
    std::fs::write(&path, vars.to_string()).unwrap();
    path
}

/// The receipt key ingest stores for `event` (an API Gateway event of
/// `sender`'s delivery): read by the sender's own parser, as ingest reads it.
fn key_of(sender: shared::Sender, event: &Value) -> String {
    let body = event["body"].as_str().unwrap().as_bytes();
    let header = |name: &'static str| {
        event["headers"]
            .as_object()?
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| v.as_str())
    };
    // A form post is read as ingest reads it: its fields as JSON first.
    let form_json;
    let body = match sender.profile().body {
        shared::form_body::BodyFormat::Json => body,
        shared::form_body::BodyFormat::Form => {
            form_json = shared::form_body::as_json(header("content-type").unwrap(), body).unwrap();
            form_json.as_slice()
        }
    };
    let submission = sender.parse_delivery(body, header).unwrap();
    shared::IdempotencyKey::for_submission(sender, &submission.submission_id)
        .as_str()
        .to_owned()
}

/// Runs `sam local invoke` and returns the function's answer (SAM prints it
/// as the last line of stdout; the function's logs go to stderr). Async, so
/// the in-process CRM stub keeps serving while SAM runs.
async fn invoke(function: &str, event: &str, env_file: &Path) -> Value {
    invoke_file(function, &workspace().join("events").join(event), env_file).await
}

async fn invoke_file(function: &str, event: &Path, env_file: &Path) -> Value {
    let architecture = match std::env::consts::ARCH {
        "aarch64" => "arm64",
        _ => "x86_64",
    };
    let output = tokio::process::Command::new("sam")
        .current_dir(workspace())
        .args([
            "local",
            "invoke",
            function,
            "--template",
            ".aws-sam/build/template.yaml",
        ])
        .arg("--event")
        .arg(event)
        .arg("--env-vars")
        .arg(env_file)
        .args([
            "--parameter-overrides",
            &format!("Architecture={architecture}"),
        ])
        // The image make test chose: AWS's, or a stand-in of our own name.
        .args(
            std::env::var("SAM_INVOKE_IMAGE")
                .ok()
                .map(|image| vec!["--invoke-image".to_owned(), image])
                .unwrap_or_default(),
        )
        .args(["--region", "us-east-1", "--skip-pull-image"])
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_PROFILE")
        .env("SAM_CLI_TELEMETRY", "0")
        .output()
        .await
        .unwrap_or_else(|e| {
            panic!("sam is not on PATH ({e}): `make test` installs it into .tools/sam-venv")
        });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let answer = stdout.lines().rev().find(|line| !line.trim().is_empty());
    match answer.and_then(|line| serde_json::from_str(line).ok()) {
        Some(answer) if output.status.success() => answer,
        _ => panic!(
            "sam local invoke {function} {} failed ({}):\n{stdout}\n{stderr}",
            event.display(),
            output.status
        ),
    }
}

#[tokio::test]
#[ignore = "needs Docker and `sam build`: make test runs it with --ignored"]
async fn every_event_in_events_works_under_sam_local_invoke() {
    let dynamodb = required("SAM_DYNAMODB_ENDPOINT");
    let bridge: IpAddr = required("DOCKER_BRIDGE_ADDRESS")
        .parse()
        .expect("an IP address");
    let client = worker_client(&dynamodb).await;
    let table = create_table(&client, "ReceiptsTable").await;
    let crm = CrmStub::start_on(SocketAddr::new(bridge, 0), false)
        .await
        .expect("the CRM stub listens on Docker's bridge");
    let env = env_file(&dynamodb, &format!("http://{}", crm.address()), &table);
    let turnstile = devtools::fakes::turnstile::TurnstileFake::start_on(
        SocketAddr::new(bridge, 0),
        devtools::fakes::turnstile::ALWAYS_PASSES_SECRET,
    )
    .await
    .expect("the Turnstile fake listens on Docker's bridge");

    let status = |answer: &Value| answer["statusCode"].as_u64();
    let ingest_events = [
        ("ingest-valid.json", 202),
        ("ingest-duplicate.json", 200),
        ("ingest-wrong-key.json", 400),
        ("ingest-unauthorized.json", 401),
        ("ingest-rest-api-v1.json", 200),
        ("ingest-alb-base64.json", 200),
        ("ingest-function-url-base64.json", 200),
    ];
    for (event, expected) in ingest_events {
        let answer = invoke("IngestFunction", event, &env).await;
        assert_eq!(status(&answer), Some(expected), "{event}: {answer}");
    }
    // Each other sender's sample, under a stack of that sender, from the
    // catalog: a new sender brings its events/ingest-<name>.json. A sender
    // that signs its sending time (Webflow, Formspree) refuses the sample,
    // signed on its day, as a replay: the point of its window (the handler
    // test runs them at that time; signed now, they are taken below).
    let other_senders: Vec<(String, &str, u64)> = shared::Sender::ALL
        .into_iter()
        .filter(|sender| *sender != shared::Sender::StaticForms)
        .map(|sender| {
            let signs_time = sender
                .profile()
                .signature
                .is_some_and(|signature| signature.signs_time());
            let expected = if signs_time {
                401
            } else {
                u64::from(sender.accepted_status())
            };
            (
                format!("ingest-{}.json", sender.name()),
                sender.name(),
                expected,
            )
        })
        .collect();
    let mut stored_keys =
        vec!["staticforms:form.submitted:sub_01JDEMO00000000000000000001".to_owned()];
    for (event, sender, expected) in &other_senders {
        let answer = invoke(
            "IngestFunction",
            event,
            &sender_env_file(&env, sender, &turnstile.verify_url()),
        )
        .await;
        assert_eq!(status(&answer), Some(*expected), "{event}: {answer}");
        if *expected < 300 {
            let sample: Value = serde_json::from_str(
                &std::fs::read_to_string(workspace().join("events").join(event)).unwrap(),
            )
            .unwrap();
            stored_keys.push(key_of(shared::Sender::parse(sender).unwrap(), &sample));
        }
    }
    // Signed now, as `make sign-event SENDER=<sender>` signs them: taken.
    let time_signers = shared::Sender::ALL.into_iter().filter(|sender| {
        sender
            .profile()
            .signature
            .is_some_and(|signature| signature.signs_time())
    });
    for of in time_signers {
        let (sender, accepted) = (of.name(), u64::from(of.accepted_status()));
        let shipped = workspace().join(format!("events/ingest-{sender}.json"));
        let shipped: Value =
            serde_json::from_str(&std::fs::read_to_string(shipped).unwrap()).unwrap();
        let fresh = devtools::sign_event::signed(
            &shipped,
            devtools::local::DEMO_SIGNING_SECRET,
            std::time::SystemTime::now(),
        )
        .unwrap();
        let path = env.with_extension(format!("{sender}-signed-now.json"));
        std::fs::write(&path, fresh.to_string()).unwrap();
        let answer = invoke_file(
            "IngestFunction",
            &path,
            &sender_env_file(&env, sender, &turnstile.verify_url()),
        )
        .await;
        assert_eq!(
            status(&answer),
            Some(accepted),
            "{sender}, signed now: {answer}"
        );
        stored_keys.push(key_of(of, &fresh));
    }
    let mut receipts = scan(&client, &table).await;
    let mut keys: Vec<String> = receipts.iter().map(|r| text(r, "pk")).collect();
    keys.sort();
    stored_keys.sort();
    assert_eq!(keys, stored_keys, "one receipt for each valid submission");
    receipts.retain(|r| text(r, "pk").starts_with("staticforms:"));
    assert_eq!(text(&receipts[0], "status"), "RECEIVED");
    let key = text(&receipts[0], "pk");

    // events/worker-insert.json is the stream record of this receipt, but
    // stamped with the fixture's clock: the stream carries the stored times,
    // and the worker claims the receipt with the time it saw.
    let text_of = |name: &str| text(&receipts[0], name);
    let mut insert: Value = serde_json::from_str(
        &std::fs::read_to_string(workspace().join("events/worker-insert.json")).unwrap(),
    )
    .unwrap();
    for name in ["receivedAt", "nextAttemptAt"] {
        insert["Records"][0]["dynamodb"]["NewImage"][name]["S"] = Value::String(text_of(name));
    }
    let live_insert =
        std::env::temp_dir().join(format!("worker-insert-{}.json", std::process::id()));
    std::fs::write(&live_insert, insert.to_string()).unwrap();
    let answer = invoke_file("WorkerFunction", &live_insert, &env).await;
    let _ = std::fs::remove_file(&live_insert);
    assert_eq!(answer, serde_json::json!({"batchItemFailures": []}));
    let receipt = client
        .get_item()
        .table_name(&table)
        .key("pk", AttributeValue::S(key))
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    assert_eq!(text(&receipt, "status"), "COMPLETED");
    assert_eq!(crm.calls().len(), 1, "one CRM call");
    assert!(crm.lead("sub_01JDEMO00000000000000000001").is_some());

    let answer = invoke("WorkerFunction", "dynamodb-update-sample.json", &env).await;
    assert_eq!(answer, serde_json::json!({"batchItemFailures": []}));
    let answer = invoke("WorkerFunction", "worker-reconcile.json", &env).await;
    assert_eq!(answer["finished"], true, "{answer}");
    assert_eq!(answer["due"], 0, "nothing is due yet: {answer}");
    assert_eq!(crm.calls().len(), 1, "still one CRM call");

    let mut covered: Vec<&str> = ingest_events.iter().map(|(event, _)| *event).collect();
    covered.extend(other_senders.iter().map(|(event, ..)| event.as_str()));
    covered.extend([
        "worker-insert.json",
        "dynamodb-update-sample.json",
        "worker-reconcile.json",
        "local-env.json",
    ]);
    covered.sort_unstable();
    let mut on_disk: Vec<String> = std::fs::read_dir(workspace().join("events"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    assert_eq!(on_disk, covered, "every file in events/ is invoked here");
}
