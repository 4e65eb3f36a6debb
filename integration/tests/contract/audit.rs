//! The scheduled audit is a choice, with its schedule, alarm and rights.

use super::*;
use crate::alarms::resource_condition;
use crate::iam::statements;

/// The scheduled audit is off by default (its schedule disabled, no alarm,
/// no variable, no right); with `SenderApiTokenSecretArn` the worker gets
/// its settings (which its configuration accepts), its schedule sends what
/// the worker reads as an audit, `MissingSubmissionsAlarm` exists, and the
/// worker may read the token, the listed receipts' keys and status, write
/// only this sender's keys and the audit's own item.
#[test]
fn the_audit_is_a_choice_with_its_schedule_alarm_and_rights() {
    let template = load();
    let event = &resource(&template, "WorkerFunction")["Properties"]["Events"]["Audit"];
    let arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:tally-api-AbCdEf";
    let on: [(&str, &str); 3] = [
        ("Sender", "tally"),
        ("SenderApiTokenSecretArn", arn),
        ("AuditEveryHours", "6"),
    ];
    let off = Evaluator::new(&template, &[("Sender", "tally")]);
    let audits = Evaluator::new(&template, &on);
    let state =
        |evaluator: &Evaluator| scalar(&evaluator.evaluate(&event["Properties"]["State"]).unwrap());
    assert_eq!(state(&off), "DISABLED");
    assert_eq!(state(&audits), "ENABLED");
    assert_eq!(
        scalar(&audits.evaluate(&event["Properties"]["Schedule"]).unwrap()),
        "rate(6 hours)"
    );
    let hourly = Evaluator::new(
        &template,
        &[("SenderApiTokenSecretArn", arn), ("AuditEveryHours", "1")],
    );
    assert_eq!(
        scalar(&hourly.evaluate(&event["Properties"]["Schedule"]).unwrap()),
        "rate(1 hour)"
    );
    let input: serde_json::Value =
        serde_json::from_str(event["Properties"]["Input"].as_str().unwrap()).unwrap();
    assert!(matches!(
        worker::invocation::Invocation::try_from(input),
        Ok(worker::invocation::Invocation::Audit)
    ));

    let condition = resource_condition(&template, "MissingSubmissionsAlarm").unwrap();
    assert!(!off.condition(condition));
    assert!(audits.condition(condition));
    assert!(!off
        .environment("WorkerFunction")
        .contains_key("SENDER_API_TOKEN_SECRET_ARN"));
    let env = audits.environment("WorkerFunction");
    assert_eq!(env["SENDER_API_TOKEN_SECRET_ARN"], arn);
    let settings = worker::audit::AuditSettings::from_lookup(&|name: &str| env.get(name).cloned())
        .unwrap()
        .expect("the audit is on");
    assert_eq!(settings.sender, shared::Sender::Tally);
    assert_eq!(settings.every, std::time::Duration::from_secs(6 * 3600));

    // The markers `receipts forget` leaves are found by the stack's gate
    // key, which every stack keeps (it keys double submits too), so the
    // worker may read it whether it audits or not.
    assert_eq!(
        env["ERASURE_KEY_SECRET_ARN"],
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:GateKeySecret"
    );
    assert!(settings.erasure_key_secret_arn.is_some());
    assert!(
        resource_condition(&template, "GateKeySecret").is_none(),
        "every stack has the gate key"
    );

    let without = statements(&template, "WorkerFunction", &[("Sender", "tally")]);
    let with = statements(&template, "WorkerFunction", &on);
    let added: Vec<&serde_json::Value> = with.iter().filter(|s| !without.contains(s)).collect();
    assert_eq!(added.len(), 4, "{added:#?}");
    assert_eq!(added[0]["Action"], "secretsmanager:GetSecretValue");
    assert_eq!(added[0]["Resource"], arn);
    assert_eq!(added[1]["Action"], "dynamodb:BatchGetItem");
    assert_eq!(
        added[1]["Condition"]["ForAllValues:StringEquals"]["dynamodb:Attributes"],
        serde_json::json!([
            shared::receipt::attr::PK,
            shared::receipt::attr::STATUS,
            shared::receipt::attr::ERASED_AT
        ])
    );
    assert_eq!(added[2]["Action"], "dynamodb:PutItem");
    assert_eq!(
        added[2]["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"],
        serde_json::json!(["tally:*"])
    );
    assert_eq!(
        added[3]["Condition"]["ForAllValues:StringEquals"]["dynamodb:LeadingKeys"],
        serde_json::json!([shared::audit::AUDIT_STATE_KEY])
    );
}
