"""`make deploy`: a first deployment that asks only what it cannot default.

Asks for (or takes as flags) the stack name and region, how Static Forms
will authenticate, the destination and its credentials, and an e-mail
address for alarms. Creates the Secrets Manager secrets from values typed
at a hidden prompt (or read from the environment), builds and deploys with
SAM, saves the answers in samconfig.toml (ARNs, never a secret value),
prints the webhook URL and where to paste it, and runs the smoke test.

Run with the SAM virtualenv's Python (boto3 comes with aws-sam-cli):
scripts/deploy.sh does. `python3 scripts/deploy.py --help` lists the flags.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Environment variables that may carry secret values in a non-interactive
# run (flags would show in `ps` and shell history).
SECRET_VARIABLES = {
    "hubspot": ["HUBSPOT_TOKEN"],
    "salesforce": ["SALESFORCE_CLIENT_ID", "SALESFORCE_CLIENT_SECRET"],
    "http": ["CRM_TOKEN"],
}

# How Static Forms can prove itself. Its documentation gives a URL only (a
# token in it); a header works where the plan's webhook settings offer
# headers. Both deploy IDEMPOTENCY_KEY=derive: the header is checked when
# present and the key derived from the body when not.
AUTH_MODES = {"url": "query:token", "header": "bearer"}
# Who sends the submissions (the template's Sender). Static Forms is asked
# how it authenticates; the others sign with their own scheme, so the
# stack's default needs no question (docs/senders/).
SENDERS = ["staticforms", "tally", "typeform", "webflow"]
SENDER_SETUP = {
    "tally": "In Tally: the form > Integrations > Webhooks: Endpoint URL {url}, Signing secret: the secret",
    "typeform": "In Typeform: the form > Connect > Webhooks: add {url}, then Edit > Secret: the secret",
    "webflow": "In Webflow: create a form_submission webhook to {url} (the key you stored signs it)",
}
DESTINATIONS = ["dynamodb", "hubspot", "salesforce", "http"]
STACK_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,127}$")
EMAIL = re.compile(r"^[^\s@]+@[^\s@]+$")


class Refused(Exception):
    """A problem the user fixes; printed as one line."""


def say(text: str = "") -> None:
    print(text, flush=True)


class Asker:
    """Questions on a terminal; from standard input when it is not one (CI,
    tests), where a missing answer is an error naming what to give."""

    def __init__(self, stdin=sys.stdin):
        self.stdin = stdin
        self.interactive = stdin.isatty()
        self.asked = 0

    def _line(self, prompt: str, hidden: bool) -> str:
        self.asked += 1
        if self.interactive:
            return getpass.getpass(prompt) if hidden else input(prompt)
        print(prompt, flush=True)
        line = self.stdin.readline()
        if not line:
            raise Refused(f"no answer to {prompt.strip()!r} on standard input: give it as a flag")
        return line.rstrip("\n")

    def ask(self, why: str, prompt: str, default: str = "", check=None, hidden=False) -> str:
        say(f"  {why}")
        suffix = f" [{default}]" if default else ""
        while True:
            answer = self._line(f"{prompt}{suffix}: ", hidden).strip() or default
            problem = check(answer) if check else None
            if not problem:
                return answer
            if not self.interactive:
                raise Refused(f"{prompt}: {problem}")
            say(f"  {problem}")


@dataclass
class Answers:
    stack_name: str = ""
    region: str = ""
    sender: str = "staticforms"
    auth: str = ""
    destination: str = ""
    alarm_email: str = ""
    crm_url: str = ""
    salesforce_login_url: str = ""
    architecture: str = "arm64"
    # Secret ARNs (existing, or created from the values below).
    secret_arns: dict[str, str] = field(default_factory=dict)
    # Secret values: sent to Secrets Manager, never written or printed.
    secret_values: dict[str, str] = field(default_factory=dict)


def one_of(options):
    return lambda answer: None if answer in options else f"answer one of {', '.join(options)}"


def check_stack(name):
    return None if STACK_NAME.match(name) else "a letter, then letters, digits or -, at most 128"


def check_email(address):
    return None if not address or EMAIL.match(address) else "an e-mail address, or nothing"


def check_https(url):
    return None if url.startswith("https://") else "an https:// URL"


def check_crm_url(url):
    if not url.startswith("https://"):
        return "an https:// URL"
    return None if url.count("{externalId}") == 1 else "put {externalId} exactly once where the submission id goes"


def gather(args, asker: Asker) -> Answers:
    """The answers: each flag given is taken, each one missing is asked."""
    a = Answers(architecture=args.architecture)
    a.stack_name = args.stack_name or asker.ask(
        "The CloudFormation stack's name (several stacks can live in one account).",
        "Stack name", "staticforms-crm", check_stack)
    a.region = args.region or asker.ask(
        "The AWS region to deploy into.", "Region", default_region())
    a.sender = args.sender
    if a.sender == "staticforms":
        a.auth = args.auth or asker.ask(
            "How Static Forms proves itself: url (a secret token in the webhook URL, as Static "
            "Forms documents) or header (Authorization: Bearer, where your plan offers headers).",
            "Authentication (url/header)", "url", one_of(AUTH_MODES))
    elif args.auth:
        raise Refused(f"--auth is Static Forms' choice; {a.sender} signs its deliveries itself")
    a.destination = args.destination or asker.ask(
        "Where leads go: dynamodb (a table in the stack), hubspot, salesforce, or http (your CRM's upsert URL).",
        "Destination", "dynamodb", one_of(DESTINATIONS))
    auth_problem = one_of(AUTH_MODES)(a.auth) if a.sender == "staticforms" else None
    for problem in (check_stack(a.stack_name), auth_problem, one_of(DESTINATIONS)(a.destination)):
        if problem:
            raise Refused(problem)
    if a.sender == "webflow":
        # Webflow chooses the signing key, so the stack cannot generate it.
        secret(a, asker, "WebhookSecretArn", args.webhook_secret_arn, [
            ("WEBFLOW_WEBHOOK_SECRET", "Webflow's signing key: the webhook's secretKey (site token) or your "
             "OAuth app's client secret; stored in Secrets Manager.", "Webflow signing key"),
        ])
    if a.destination == "hubspot":
        secret(a, asker, "HubSpotTokenSecretArn", args.hubspot_token_secret_arn, [
            ("HUBSPOT_TOKEN", "A HubSpot service key (Settings > Integrations > Service Keys) or private app "
             "token with crm.objects.contacts.write; stored in Secrets Manager.", "HubSpot token"),
        ])
    elif a.destination == "salesforce":
        a.salesforce_login_url = args.salesforce_login_url or asker.ask(
            "Your org's My Domain URL.", "Salesforce login URL", "", check_https)
        secret(a, asker, "SalesforceCredentialsSecretArn", args.salesforce_credentials_secret_arn, [
            ("SALESFORCE_CLIENT_ID", "The External Client App's consumer key (client credentials flow).", "Client id"),
            ("SALESFORCE_CLIENT_SECRET", "Its consumer secret; both are stored in Secrets Manager.", "Client secret"),
        ])
    elif a.destination == "http":
        a.crm_url = args.crm_url or asker.ask(
            "Your CRM's upsert URL, with {externalId} where the submission id goes.", "CRM URL", "", check_crm_url)
        if check_crm_url(a.crm_url):
            raise Refused(f"--crm-url: {check_crm_url(a.crm_url)}")
        secret(a, asker, "CrmTokenSecretArn", args.crm_token_secret_arn, [
            ("CRM_TOKEN", "The CRM's bearer token, stored in Secrets Manager (empty: none).", "CRM token"),
        ], optional=True)
    if args.alarm_email is not None:
        a.alarm_email = args.alarm_email
    else:
        a.alarm_email = asker.ask(
            "An e-mail address told when an alarm fires (empty: none; you confirm a mail from AWS first).",
            "Alarm e-mail", "", check_email)
    if check_email(a.alarm_email):
        raise Refused(f"--alarm-email: {check_email(a.alarm_email)}")
    return a


def secret(a: Answers, asker: Asker, parameter: str, existing_arn, parts, optional=False):
    """An existing secret's ARN, or the values of a new one: from the
    environment, else a hidden prompt."""
    if existing_arn:
        a.secret_arns[parameter] = existing_arn
        return
    values = {}
    for variable, why, prompt in parts:
        value = os.environ.get(variable) or asker.ask(why, prompt, "", hidden=True)
        if not value and not optional:
            raise Refused(f"{prompt} is required: type it, set {variable}, or give the secret's ARN as a flag")
        values[variable] = value
    if any(values.values()):
        a.secret_values[parameter] = json.dumps(
            {"client_id": values["SALESFORCE_CLIENT_ID"], "client_secret": values["SALESFORCE_CLIENT_SECRET"]}
        ) if parameter == "SalesforceCredentialsSecretArn" else next(iter(values.values()))


def default_region() -> str:
    try:
        import boto3
        return boto3.session.Session().region_name or "us-east-1"
    except Exception:
        return "us-east-1"


def check_prerequisites(architecture: str) -> None:
    """Everything the deploy needs, each missing thing in one line."""
    import boto3
    problems = []
    if boto3.session.Session().get_credentials() is None:
        problems.append("no AWS credentials: run `aws configure` (or set AWS_PROFILE / AWS_ACCESS_KEY_ID)")
    for tool, how in [("sam", "make deploy installs it into .tools/sam-venv: is that on PATH?"),
                      ("cargo", "install the Rust toolchain (rustup)"),
                      ("cargo-lambda", "make deploy installs it into .tools/sam-venv: is that on PATH?")]:
        if shutil.which(tool) is None:
            problems.append(f"{tool} is missing: {how}")
    if architecture == "arm64" and shutil.which("rustup"):
        installed = subprocess.run(["rustup", "target", "list", "--installed"],
                                   capture_output=True, text=True).stdout.split()
        if "aarch64-unknown-linux-gnu" not in installed:
            problems.append("the arm64 Rust target is missing: rustup target add aarch64-unknown-linux-gnu "
                            "(or deploy with --architecture x86_64)")
    if problems:
        raise Refused("; ".join(problems))


def create_secrets(a: Answers, secrets_client) -> None:
    """One secret per credential, named after the stack; a second run puts
    the new value into the same secret."""
    names = {"WebhookSecretArn": "webflow-signing-key",
             "HubSpotTokenSecretArn": "hubspot-token",
             "SalesforceCredentialsSecretArn": "salesforce-credentials",
             "CrmTokenSecretArn": "crm-token"}
    for parameter, value in a.secret_values.items():
        name = f"{a.stack_name}/{names[parameter]}"
        try:
            created = secrets_client.create_secret(
                Name=name, SecretString=value,
                Description=f"{parameter} of the {a.stack_name} stack (staticforms-to-crm)")
            arn = created["ARN"]
            say(f"created secret {name}")
        except secrets_client.exceptions.ResourceExistsException:
            arn = secrets_client.put_secret_value(SecretId=name, SecretString=value)["ARN"]
            say(f"put a new value into secret {name}")
        a.secret_arns[parameter] = arn


def parameter_overrides(a: Answers) -> dict[str, str]:
    overrides = {"Architecture": a.architecture}
    if a.sender == "staticforms":
        overrides["WebhookAuth"] = AUTH_MODES[a.auth]
        overrides["IdempotencyKeyHeader"] = "derive"
    else:
        overrides["Sender"] = a.sender
    overrides["Destination"] = a.destination
    if a.alarm_email:
        overrides["AlarmEmail"] = a.alarm_email
    if a.crm_url:
        overrides["CrmUrl"] = a.crm_url
    if a.salesforce_login_url:
        overrides["SalesforceLoginUrl"] = a.salesforce_login_url
    overrides.update(a.secret_arns)
    return overrides


def overrides_text(overrides: dict[str, str]) -> str:
    """SAM's parameter_overrides form: Key="value" pairs, space-separated."""
    return " ".join(f'{key}="{value}"' for key, value in overrides.items())


def save_samconfig(path: Path, a: Answers, overrides: dict[str, str]) -> None:
    """The answers as samconfig.toml's deploy defaults, other sections kept,
    so the next `sam deploy` repeats them. Only ARNs: never a secret value."""
    config = tomllib.loads(path.read_text()) if path.exists() else {"version": 0.1}
    default = config.setdefault("default", {})
    default.setdefault("global", {}).setdefault("parameters", {})["stack_name"] = a.stack_name
    deploy = default.setdefault("deploy", {}).setdefault("parameters", {})
    deploy.update({
        "stack_name": a.stack_name,
        "region": a.region,
        "capabilities": "CAPABILITY_IAM",
        "resolve_s3": True,
        "confirm_changeset": True,
        "fail_on_empty_changeset": False,
        "parameter_overrides": overrides_text(overrides),
    })
    default.setdefault("build", {}).setdefault("parameters", {})["parameter_overrides"] = \
        f'Architecture="{a.architecture}"'
    path.write_text(HEADER + to_toml(config))


HEADER = """\
# sam build / sam validate / sam deploy defaults. `make deploy` writes the
# deploy section from its answers (secret ARNs, never secret values), so a
# later `sam build && sam deploy` repeats the same deployment.
"""


def to_toml(config: dict) -> str:
    """Enough TOML for samconfig: a version, then [a.b.c] tables of strings,
    numbers and booleans."""
    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return str(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(v)

    lines = [f"{k} = {value(v)}" for k, v in config.items() if not isinstance(v, dict)]

    def tables(prefix, node):
        scalars = {k: v for k, v in node.items() if not isinstance(v, dict)}
        if scalars and prefix:
            lines.append("")
            lines.append(f"[{prefix}]")
            lines.extend(f"{k} = {value(v)}" for k, v in scalars.items())
        for k, v in node.items():
            if isinstance(v, dict):
                tables(f"{prefix}.{k}" if prefix else k, v)

    tables("", {k: v for k, v in config.items() if isinstance(v, dict)})
    return "\n".join(lines) + "\n"


def run(command: list[str], cwd: Path) -> None:
    say("$ " + " ".join(command))
    if subprocess.run(command, cwd=cwd).returncode != 0:
        raise Refused(f"{command[0]} {command[1]} failed (see above)")


def main(argv=None, stdin=sys.stdin) -> int:
    parser = argparse.ArgumentParser(prog="make deploy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack-name")
    parser.add_argument("--region")
    parser.add_argument("--sender", choices=SENDERS, default="staticforms",
                        help="who sends the submissions (docs/senders/); default staticforms")
    parser.add_argument("--auth", choices=sorted(AUTH_MODES), help="Static Forms only. url: a token in the webhook URL; header: Authorization: Bearer")
    parser.add_argument("--webhook-secret-arn", help="webflow: an existing secret holding Webflow's key, instead of WEBFLOW_WEBHOOK_SECRET")
    parser.add_argument("--destination", choices=DESTINATIONS)
    parser.add_argument("--alarm-email", help="empty for none")
    parser.add_argument("--crm-url")
    parser.add_argument("--salesforce-login-url")
    parser.add_argument("--hubspot-token-secret-arn", help="an existing secret instead of HUBSPOT_TOKEN")
    parser.add_argument("--salesforce-credentials-secret-arn", help="an existing secret instead of SALESFORCE_CLIENT_ID/SECRET")
    parser.add_argument("--crm-token-secret-arn", help="an existing secret instead of CRM_TOKEN")
    parser.add_argument("--architecture", choices=["arm64", "x86_64"], default="arm64")
    parser.add_argument("--config-file", type=Path, default=ROOT / "samconfig.toml")
    parser.add_argument("--no-smoke", action="store_true", help="skip the smoke test after the deploy")
    args = parser.parse_args(argv)
    try:
        check_prerequisites(args.architecture)
        say("A first deployment of staticforms-to-crm. Enter takes the [default].")
        answers = gather(args, Asker(stdin))
        import boto3
        session = boto3.session.Session(region_name=answers.region)
        create_secrets(answers, session.client("secretsmanager"))
        overrides = parameter_overrides(answers)
        save_samconfig(args.config_file, answers, overrides)
        say(f"saved the answers in {args.config_file.name} (no secret values)")
        config = ["--config-file", str(args.config_file.resolve())]
        run(["sam", "build", *config, "--parameter-overrides", f"Architecture={answers.architecture}"], ROOT)
        run(["sam", "deploy", *config, "--stack-name", answers.stack_name, "--region", answers.region,
             "--no-confirm-changeset", "--parameter-overrides", *[f"{k}={v}" for k, v in overrides.items()]], ROOT)
        outputs = {o["OutputKey"]: o["OutputValue"] for o in session.client("cloudformation").describe_stacks(
            StackName=answers.stack_name)["Stacks"][0].get("Outputs", [])}
        url = outputs.get("WebhookUrl", "<WebhookUrl>")
        secret_arn = outputs.get("WebhookSecretArn", "<WebhookSecretArn>")
        say("")
        if answers.sender == "staticforms":
            say("Deployed. In Static Forms: Settings > Webhooks > Add Webhook, format: the current one.")
            if answers.auth == "url":
                say(f"  URL: {url}?token=<the secret>")
            else:
                say(f"  URL: {url}")
                say("  Header: Authorization: Bearer <the secret>")
        else:
            say(f"Deployed. {SENDER_SETUP[answers.sender].format(url=url)}")
            say(f"  Step by step: docs/senders/{answers.sender}.md")
        if answers.sender != "webflow":
            say("  The secret (read it yourself; it is never printed here):")
            say(f"    aws secretsmanager get-secret-value --region {answers.region} --secret-id {secret_arn} "
                "--query SecretString --output text")
        if answers.alarm_email:
            say(f"  Confirm the subscription mail AWS sent to {answers.alarm_email}, or alarms will not reach you.")
        if not args.no_smoke:
            say("")
            say("Smoke test: one marked submission through the deployed pipeline.")
            receipts = os.environ.get("RECEIPTS_BIN", "").split() or \
                ["cargo", "run", "--release", "--locked", "--quiet", "-p", "receipts", "--"]
            run([*receipts, "--stack", answers.stack_name, "--region", answers.region, "smoke"], ROOT)
        return 0
    except Refused as problem:
        print(f"make deploy: {problem}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
