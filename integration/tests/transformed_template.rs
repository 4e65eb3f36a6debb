//! Each function's IAM as CloudFormation receives it, after the SAM
//! transform: the statements we write and what SAM attaches (managed
//! policies, the stream's on-failure policy), compared for equality. The
//! contract test on template.yaml sees only our `Policies`; this one sees
//! the roles that are deployed.
//!
//! `make test` writes the transformed template (scripts/transform_template.py,
//! with SAM's own translator from .tools/sam-venv), once with the defaults
//! and once with `Tracing=Active`, and runs this with `--ignored`; without
//! them, the test fails and says so.

use serde_json::{json, Value};

fn transformed() -> Value {
    transformed_from("TRANSFORMED_TEMPLATE")
}

fn transformed_from(variable: &str) -> Value {
    let path = std::env::var(variable).unwrap_or_else(|_| {
        panic!("{variable} is not set: make test writes it with scripts/transform_template.py")
    });
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).expect("the transformed template is JSON")
}

fn role(template: &Value, name: &str) -> (Value, Vec<Value>) {
    role_of(template, name)
}

fn role_of(template: &Value, name: &str) -> (Value, Vec<Value>) {
    let properties = &template["Resources"][name]["Properties"];
    let statements = properties["Policies"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|policy| {
            policy["PolicyDocument"]["Statement"]
                .as_array()
                .unwrap()
                .clone()
        })
        .collect();
    (properties["ManagedPolicyArns"].clone(), statements)
}

/// The destinations' secret parameters, as the catalog names them.
fn catalog_secret_parameters() -> Vec<String> {
    let mut parameters: Vec<String> = shared::destination::DestinationKind::ALL
        .into_iter()
        .flat_map(|kind| kind.secrets())
        .map(|secret| secret.parameter.to_owned())
        .collect();
    parameters.sort();
    parameters
}

/// Splits off the statements that read one destination's secret: each a
/// `GetSecretValue` on that one parameter, under a condition (a stack reads
/// only the secret of the destinations it delivers to). Returns the
/// parameters read, sorted, and every other statement, in order. The
/// contract test (contract/grants.rs) proves each condition holds exactly
/// when its destination is chosen; this one that SAM kept them as written.
fn destination_secret_grants(statements: Vec<Value>) -> (Vec<String>, Vec<Value>) {
    let secrets = catalog_secret_parameters();
    let mut granted = Vec::new();
    let mut rest = Vec::new();
    for statement in statements {
        let conditional = &statement["Fn::If"];
        let grant = &conditional[1];
        let parameter = grant["Resource"]["Ref"].as_str().unwrap_or_default();
        let is_grant = conditional[0].is_string()
            && conditional[2] == json!({"Ref": "AWS::NoValue"})
            && grant["Action"] == "secretsmanager:GetSecretValue"
            && grant["Effect"] == "Allow"
            && grant.as_object().is_some_and(|g| g.len() == 3)
            && secrets.iter().any(|secret| secret == parameter);
        if is_grant {
            granted.push(parameter.to_owned());
        } else {
            rest.push(statement);
        }
    }
    granted.sort();
    (granted, rest)
}

/// The worker's receipt keys, one `<sender>:*` per sender of the catalog,
/// and the gates'.
fn receipt_and_gate_keys() -> Vec<String> {
    shared::Sender::ALL
        .iter()
        .map(|sender| format!("{}:*", sender.name()))
        .chain(["gate#*".to_owned()])
        .collect()
}

fn receipts_arn() -> Value {
    json!({"Fn::GetAtt": ["ReceiptsTable", "Arn"]})
}

#[test]
#[ignore = "needs the transformed template: make test runs it with --ignored"]
fn each_deployed_role_has_exactly_the_access_it_needs() {
    let template = transformed();
    let roles: Vec<&String> = template["Resources"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, resource)| {
            resource["Type"]
                .as_str()
                .is_some_and(|t| t.starts_with("AWS::IAM::"))
        })
        .map(|(name, _)| name)
        .collect();
    assert_eq!(
        roles,
        ["IngestFunctionRole", "WorkerFunctionRole"],
        "no other IAM resource"
    );

    let basic = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole";
    let (managed, statements) = role(&template, "IngestFunctionRole");
    assert_eq!(
        managed,
        json!([basic]),
        "logs only: tracing is off by default"
    );
    assert_eq!(
        statements,
        [
            json!({"Action": "dynamodb:DescribeTable", "Effect": "Allow", "Resource": receipts_arn()}),
            // Receipts under its sender's keys only: never the routes, the
            // audit's progress or a gate.
            json!({"Action": "dynamodb:PutItem", "Effect": "Allow", "Resource": receipts_arn(),
                   "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [{"Fn::Sub": "${Sender}:*"}]}}}),
            json!({"Action": "dynamodb:GetItem", "Effect": "Allow", "Resource": receipts_arn(),
                   "Condition": {"ForAllValues:StringEquals": {"dynamodb:Attributes": ["pk", "payloadFingerprint"]},
                                 "StringEqualsIfExists": {"dynamodb:Select": "SPECIFIC_ATTRIBUTES"}}}),
            // The webhook secret, for every sender but a form a browser
            // posts, which carries none; that one's Turnstile secret.
            json!({"Fn::If": ["UsesWebhookSecret",
                   {"Action": "secretsmanager:GetSecretValue", "Effect": "Allow",
                    "Resource": {"Fn::If": ["CreateWebhookSecret", {"Ref": "WebhookSecret"}, {"Ref": "WebhookSecretArn"}]}},
                   {"Ref": "AWS::NoValue"}]}),
            json!({"Fn::If": ["IsHtml",
                   {"Action": "secretsmanager:GetSecretValue", "Effect": "Allow", "Resource": {"Ref": "TurnstileSecretArn"}},
                   {"Ref": "AWS::NoValue"}]}),
            // The stored routes: that one item's routes attribute only.
            json!({"Action": "dynamodb:GetItem", "Effect": "Allow", "Resource": receipts_arn(),
                   "Condition": {"ForAllValues:StringEquals": {"dynamodb:Attributes": ["routes"],
                                                                "dynamodb:LeadingKeys": ["config#routes"]},
                                 "StringEqualsIfExists": {"dynamodb:Select": "SPECIFIC_ATTRIBUTES"}}}),
        ]
    );

    let (managed, statements) = role(&template, "WorkerFunctionRole");
    // The stream is a plain event source mapping: no
    // AWSLambdaDynamoDBExecutionRole (stream reads on every stream,
    // Resource *); our statement names the receipts stream alone.
    assert_eq!(
        managed,
        json!([basic]),
        "logs only: tracing is off by default"
    );
    let dead_letter = json!({"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}});
    let (destination_grants, statements) = destination_secret_grants(statements);
    assert_eq!(
        destination_grants,
        catalog_secret_parameters(),
        "each destination's secrets are read under its own condition, and no other"
    );
    assert_eq!(
        statements,
        [
            json!({"Action": ["dynamodb:ConditionCheckItem", "dynamodb:DescribeTable"], "Effect": "Allow", "Resource": receipts_arn()}),
            // Receipts of every sender and gates only: never the routes or
            // the audit's progress (contract/catalog.rs holds the list to Sender::ALL).
            json!({"Action": "dynamodb:UpdateItem", "Effect": "Allow", "Resource": receipts_arn(),
                   "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": receipt_and_gate_keys()}}}),
            json!({"Action": "dynamodb:Query", "Effect": "Allow",
                   "Resource": {"Fn::Sub": "${ReceiptsTable.Arn}/index/queue-by-due"}}),
            // The stored routes: that one item's routes attribute only.
            json!({"Action": "dynamodb:GetItem", "Effect": "Allow", "Resource": receipts_arn(),
                   "Condition": {"ForAllValues:StringEquals": {"dynamodb:Attributes": ["routes"],
                                                                "dynamodb:LeadingKeys": ["config#routes"]},
                                 "StringEqualsIfExists": {"dynamodb:Select": "SPECIFIC_ATTRIBUTES"}}}),
            json!({"Action": ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"],
                   "Effect": "Allow", "Resource": {"Fn::GetAtt": ["ReceiptsTable", "StreamArn"]}}),
            dead_letter,
            json!({"Fn::If": ["UseLeadsTable",
                   {"Action": "dynamodb:PutItem", "Effect": "Allow", "Resource": {"Fn::GetAtt": ["LeadsTable", "Arn"]}},
                   {"Ref": "AWS::NoValue"}]}),
            // The gate key, which every stack has (double submits).
            json!({"Action": "secretsmanager:GetSecretValue", "Effect": "Allow", "Resource": {"Ref": "GateKeySecret"}}),
            // The notice URL, when the stack announces new leads.
            json!({"Fn::If": ["SendsNotices",
                   {"Action": "secretsmanager:GetSecretValue", "Effect": "Allow", "Resource": {"Ref": "NotifyUrlSecretArn"}},
                   {"Ref": "AWS::NoValue"}]}),
            // Mailchimp's call slots, shared by every instance: slot items only.
            json!({"Fn::If": ["UseMailchimp",
                   {"Action": "dynamodb:UpdateItem", "Effect": "Allow", "Resource": {"Fn::GetAtt": ["ReceiptsTable", "Arn"]},
                    "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["slot#mailchimp#*"]}}},
                   {"Ref": "AWS::NoValue"}]}),
            // Zoho's shared access token's one item.
            json!({"Fn::If": ["UseZoho",
                   {"Action": ["dynamodb:GetItem", "dynamodb:UpdateItem"], "Effect": "Allow", "Resource": {"Fn::GetAtt": ["ReceiptsTable", "Arn"]},
                    "Condition": {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["token#zoho"]}}},
                   {"Ref": "AWS::NoValue"}]}),
            // What the worker recorded on a gate item (the first of
            // identical submissions; the CRM's id, a create in flight,
            // each submission's note or lead): gate items only, never a
            // receipt.
            json!({"Action": "dynamodb:GetItem", "Effect": "Allow", "Resource": receipts_arn(),
                   "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["gate#*", "erased#*"]}}}),
            // The audit, when on: the token; the listed receipts' key and
            // status; imports under this sender's keys; its own item.
            json!({"Fn::If": ["AuditsSender",
                   {"Action": "secretsmanager:GetSecretValue", "Effect": "Allow", "Resource": {"Ref": "SenderApiTokenSecretArn"}},
                   {"Ref": "AWS::NoValue"}]}),
            json!({"Fn::If": ["AuditsSender",
                   {"Action": "dynamodb:BatchGetItem", "Effect": "Allow", "Resource": receipts_arn(),
                    "Condition": {"ForAllValues:StringEquals": {"dynamodb:Attributes": ["pk", "status", "erasedAt"]},
                                  "StringEqualsIfExists": {"dynamodb:Select": "SPECIFIC_ATTRIBUTES"}}},
                   {"Ref": "AWS::NoValue"}]}),
            json!({"Fn::If": ["AuditsSender",
                   {"Action": "dynamodb:PutItem", "Effect": "Allow", "Resource": receipts_arn(),
                    "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [{"Fn::Sub": "${Sender}:*"}]}}},
                   {"Ref": "AWS::NoValue"}]}),
            json!({"Fn::If": ["AuditsSender",
                   {"Action": ["dynamodb:GetItem", "dynamodb:PutItem"], "Effect": "Allow", "Resource": receipts_arn(),
                    "Condition": {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["config#audit"]}}},
                   {"Ref": "AWS::NoValue"}]}),
        ]
    );
    let mapping = &template["Resources"]["ReceiptStreamMapping"];
    assert_eq!(mapping["Type"], "AWS::Lambda::EventSourceMapping");
    assert_eq!(mapping["DependsOn"], "WorkerFunctionRole");
    assert_eq!(
        mapping["Properties"]["EventSourceArn"],
        json!({"Fn::GetAtt": ["ReceiptsTable", "StreamArn"]})
    );
    for statement in &statements {
        assert_ne!(
            statement["Resource"], "*",
            "no statement of ours grants everything"
        );
    }
}

#[test]
#[ignore = "needs the transformed template: make test runs it with --ignored"]
fn the_webhook_route_is_throttled_and_its_query_string_never_logged() {
    let template = transformed();
    let stages: Vec<&Value> = template["Resources"]
        .as_object()
        .unwrap()
        .values()
        .filter(|resource| resource["Type"] == "AWS::ApiGatewayV2::Stage")
        .collect();
    assert_eq!(stages.len(), 1, "the one HTTP API stage");
    let stage = &stages[0]["Properties"];
    assert_eq!(
        stage["DefaultRouteSettings"],
        json!({
            "ThrottlingRateLimit": {"Ref": "IngestRateLimit"},
            "ThrottlingBurstLimit": {"Ref": "IngestBurstLimit"}
        })
    );
    // The access log says who called (the runbook of refused deliveries
    // needs the source address) and never the path or query string: with
    // WebhookAuth=query:<param> the query string is the secret.
    let access_log = &stage["AccessLogSettings"];
    assert_eq!(
        access_log["DestinationArn"],
        json!({"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]})
    );
    let format = access_log["Format"].as_str().expect("a format");
    let fields: serde_json::Map<String, Value> =
        serde_json::from_str(format).expect("each line is JSON");
    assert_eq!(fields["sourceIp"], "$context.identity.sourceIp");
    assert_eq!(fields["route"], "$context.routeKey");
    for variable in fields.values() {
        let variable = variable.as_str().unwrap();
        for query_variable in [
            "querystring",
            "requestOverride",
            "$request.",
            "$context.path",
        ] {
            assert!(
                !variable.contains(query_variable),
                "the access log writes {query_variable}: {format}"
            );
        }
    }
}

/// `Tracing=Active` traces both functions and lets them write traces, and
/// nothing else changes in their roles; by default neither is traced.
#[test]
#[ignore = "needs the transformed templates: make test runs it with --ignored"]
fn tracing_is_a_choice_that_adds_only_its_own_policy() {
    let off = transformed();
    let on = transformed_from("TRANSFORMED_TEMPLATE_TRACED");
    let basic = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole";
    let xray = "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess";
    for function in ["IngestFunction", "WorkerFunction"] {
        let role = format!("{function}Role");
        assert_eq!(
            off["Resources"][function]["Properties"]["TracingConfig"],
            Value::Null
        );
        // CloudFormation resolves the parameter to Active.
        assert_eq!(
            on["Resources"][function]["Properties"]["TracingConfig"],
            json!({"Mode": {"Ref": "Tracing"}})
        );
        let (managed_off, statements_off) = role_of(&off, &role);
        let (managed_on, statements_on) = role_of(&on, &role);
        assert_eq!(managed_off, json!([basic]));
        assert_eq!(managed_on, json!([basic, xray]));
        assert_eq!(
            statements_off, statements_on,
            "{role}: only the managed policy differs"
        );
    }
}
