"""The `make deploy` wizard (scripts/deploy.py) against moto's Secrets
Manager and CloudFormation, with a stand-in `sam` on PATH that records its
arguments and, for `deploy`, creates a stack with the outputs the wizard
reads. Answers in; the right secrets, parameter overrides and samconfig.toml
out; no secret value in samconfig.toml or in any output.

Run by make test with moto's URL in MOTO_URL, under the SAM virtualenv's
Python (boto3).
"""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import unittest
import uuid
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import boto3
import tomlkit

ROOT = Path(__file__).resolve().parent.parent
MOTO_URL = os.environ.get("MOTO_URL") or sys.exit(
    "MOTO_URL is not set: run this with `make test`, which installs moto's server and starts it")

STAND_IN_SAM = textwrap.dedent('''\
    #!{python}
    """A stand-in for the SAM CLI: records its arguments; `deploy` creates
    the stack on moto with the outputs a deployed stack has."""
    import json, os, sys
    import boto3
    with open(os.environ["SAM_RECORD"], "a") as record:
        record.write(json.dumps(sys.argv[1:]) + "\\n")
    if sys.argv[1] == "deploy":
        args = sys.argv[1:]
        stack = args[args.index("--stack-name") + 1]
        region = args[args.index("--region") + 1]
        template = {{
            "Resources": {{"Handle": {{"Type": "AWS::CloudFormation::WaitConditionHandle"}}}},
            "Outputs": {{
                "WebhookUrl": {{"Value": "https://abc123.execute-api." + region + ".amazonaws.com/webhooks/staticforms"}},
                "WebhookSecretArn": {{"Value": "arn:aws:secretsmanager:" + region + ":123456789012:secret:webhook"}},
            }},
        }}
        boto3.client("cloudformation", region_name=region).create_stack(
            StackName=stack, TemplateBody=json.dumps(template))
    ''')

STAND_IN = "#!/bin/sh\necho \"$(basename \"$0\") $*\" >> \"$SAM_RECORD.others\"\n"
# The receipts CLI's stand-in refuses a routes file when REFUSE_ROUTES is set,
# as `receipts routes check` does one with a problem.
STAND_IN_RECEIPTS = STAND_IN + textwrap.dedent('''\
    if [ "$1 $2" = "routes check" ] && [ -n "$REFUSE_ROUTES" ]; then
      echo "$3: [[route]] #1: form: is empty" >&2
      exit 1
    fi
    ''')


class Wizard(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        bin_dir = self.dir / "bin"
        bin_dir.mkdir()
        (bin_dir / "sam").write_text(STAND_IN_SAM.format(python=sys.executable))
        (bin_dir / "cargo-lambda").write_text(STAND_IN)
        (bin_dir / "receipts").write_text(STAND_IN_RECEIPTS)
        for tool in bin_dir.iterdir():
            tool.chmod(0o755)
        self.record = self.dir / "sam-calls.jsonl"
        self.samconfig = self.dir / "samconfig.toml"
        self.samconfig.write_text((ROOT / "samconfig.toml").read_text())
        self.env = {
            key: value for key, value in os.environ.items()
            if not key.startswith(("AWS_", "HUBSPOT_", "SALESFORCE_", "PIPEDRIVE_", "MAILCHIMP_", "ZOHO_", "CRM_"))
        }
        self.env.update({
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "AWS_ENDPOINT_URL": MOTO_URL,
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "eu-west-1",
            "AWS_CONFIG_FILE": str(self.dir / "no-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(self.dir / "no-credentials"),
            "SAM_RECORD": str(self.record),
            "RECEIPTS_BIN": str(bin_dir / "receipts"),
        })
        self.stack = "crm-" + uuid.uuid4().hex[:8]
        # HubSpot's and Salesforce's credential checks, on a local stand-in.
        crm = HTTPServer(("127.0.0.1", 0), CrmCheck)
        threading.Thread(target=crm.serve_forever, daemon=True).start()
        self.addCleanup(crm.server_close)
        self.addCleanup(crm.shutdown)
        self.env["DEPLOY_CREDENTIAL_CHECK_URL"] = f"http://127.0.0.1:{crm.server_address[1]}"

    def wizard(self, *flags, answers="", env=None):
        result = subprocess.run(
            [sys.executable, str(ROOT / "scripts/deploy.py"), "--config-file", str(self.samconfig),
             "--architecture", "x86_64", *flags],
            input=answers, capture_output=True, text=True, env={**self.env, **(env or {})}, timeout=120)
        return result

    def sam_calls(self):
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def others(self):
        path = Path(str(self.record) + ".others")
        return path.read_text().splitlines() if path.exists() else []

    def overrides(self, deploy_args):
        start = deploy_args.index("--parameter-overrides") + 1
        return dict(arg.split("=", 1) for arg in deploy_args[start:])

    def secret(self, name, region="eu-west-1"):
        client = boto3.client("secretsmanager", region_name=region, endpoint_url=MOTO_URL,
                              aws_access_key_id="test", aws_secret_access_key="test")
        value = client.get_secret_value(SecretId=name)
        return value["ARN"], value["SecretString"]

    def saved(self, stack=None):
        """The config environment make deploy wrote for `stack`."""
        return tomlkit.parse(self.samconfig.read_text()).unwrap()[stack or self.stack]

    def test_answers_at_the_prompts_deploy_hubspot_with_a_secret_and_no_secret_anywhere(self):
        token = "pat-eu1-" + uuid.uuid4().hex
        answers = "\n".join(["staticforms", self.stack, "eu-west-1", "url", "hubspot", token,
                             "ops@example.com"]) + "\n"
        result = self.wizard(answers=answers)
        output = result.stdout + result.stderr
        self.assertEqual(result.returncode, 0, output)
        prompts = [line for line in result.stdout.splitlines() if line.endswith(": ")]
        self.assertEqual(len(prompts), 7, prompts)
        self.assertTrue(prompts[0].startswith("Sender"), "the sender is the first question")
        self.assertLessEqual(len(prompts), 8)

        self.assertIn("HubSpot accepted the token.", result.stdout, "checked before it was stored")
        arn, value = self.secret(f"{self.stack}/hubspot-token")
        self.assertEqual(value, token)
        build, deploy = self.sam_calls()
        self.assertEqual(build[0], "build")
        self.assertIn("Architecture=x86_64", build)
        self.assertEqual(build[build.index("--config-env") + 1], self.stack)
        self.assertEqual(deploy[0], "deploy")
        self.assertEqual(deploy[deploy.index("--stack-name") + 1], self.stack)
        self.assertEqual(deploy[deploy.index("--config-env") + 1], self.stack)
        self.assertEqual(self.overrides(deploy), {
            "Architecture": "'x86_64'",
            # Recommended for a first, small stack: docs/cost.md.
            "Observability": "'lean'",
            "WebhookAuth": "'query:token'",
            "IdempotencyKeyHeader": "'derive'",
            "Destination": "'hubspot'",
            "AlarmEmail": "'ops@example.com'",
            "HubSpotTokenSecretArn": f"'{arn}'",
        })
        # The answers are kept for the next `sam deploy --config-env`, in
        # their own environment; the file's comments and defaults stay; the
        # secret is nowhere.
        saved = self.samconfig.read_text()
        config = self.saved()
        self.assertEqual(config["global"]["parameters"]["stack_name"], self.stack)
        self.assertEqual(config["global"]["parameters"]["region"], "eu-west-1")
        self.assertIn(f"HubSpotTokenSecretArn='{arn}'", config["deploy"]["parameters"]["parameter_overrides"])
        self.assertTrue(config["build"]["parameters"]["beta_features"])
        original = (ROOT / "samconfig.toml").read_text()
        for line in original.splitlines():
            self.assertIn(line, saved, "every line of the file is kept, comments included")
        self.assertEqual(tomlkit.parse(saved).unwrap()["default"], tomlkit.parse(original).unwrap()["default"])
        self.assertNotIn(token, saved)
        self.assertNotIn(token, output)
        # Where to paste the URL, and the smoke test of the stack.
        self.assertIn("https://abc123.execute-api.eu-west-1.amazonaws.com/webhooks/staticforms?token=<the secret>",
                      result.stdout)
        self.assertIn(f"receipts --stack {self.stack} --region eu-west-1 webhook-url --show-secret", result.stdout)
        self.assertIn(f"receipts --stack {self.stack} --region eu-west-1 smoke", self.others())

        # A second stack gets its own environment; the first one's answers stay.
        second = "crm-" + uuid.uuid4().hex[:8]
        again = self.wizard("--sender", "staticforms", "--stack-name", second, "--region", "eu-west-1",
                            "--auth", "url", "--destination", "dynamodb", "--alarm-email=")
        self.assertEqual(again.returncode, 0, again.stdout + again.stderr)
        self.assertEqual(self.saved(), config, "the first stack's answers are untouched")
        self.assertIn("Destination='dynamodb'", self.saved(second)["deploy"]["parameters"]["parameter_overrides"])

    def test_flags_and_environment_deploy_salesforce_without_a_prompt_and_again(self):
        client_secret = "sf-secret-" + uuid.uuid4().hex
        flags = ["--sender", "staticforms", "--stack-name", self.stack, "--region", "eu-west-1", "--auth", "header",
                 "--destination", "salesforce", "--salesforce-login-url", "https://acme.my.salesforce.com",
                 "--alarm-email", ""]
        env = {"SALESFORCE_CLIENT_ID": "3MVG9-client", "SALESFORCE_CLIENT_SECRET": client_secret}
        first = self.wizard(*flags, env=env)
        self.assertEqual(first.returncode, 0, first.stdout + first.stderr)
        self.assertNotIn(": \n", first.stdout + "\n", "no question asked")
        arn, value = self.secret(f"{self.stack}/salesforce-credentials")
        self.assertEqual(json.loads(value), {"client_id": "3MVG9-client", "client_secret": client_secret})
        overrides = self.overrides(self.sam_calls()[1])
        self.assertEqual(overrides["WebhookAuth"], "'bearer'")
        self.assertEqual(overrides["IdempotencyKeyHeader"], "'derive'")
        self.assertEqual(overrides["SalesforceLoginUrl"], "'https://acme.my.salesforce.com'")
        self.assertEqual(overrides["SalesforceCredentialsSecretArn"], f"'{arn}'")
        self.assertNotIn("AlarmEmail", overrides, "no empty value passed to SAM")
        self.assertIn("Header: Authorization: Bearer <the secret>", first.stdout)

        # A second run (a rotated secret) updates the same secret.
        self.record.unlink()
        boto3.client("cloudformation", region_name="eu-west-1", endpoint_url=MOTO_URL,
                     aws_access_key_id="test", aws_secret_access_key="test").delete_stack(StackName=self.stack)
        rotated = "sf-rotated-" + uuid.uuid4().hex
        second = self.wizard(*flags, env={**env, "SALESFORCE_CLIENT_SECRET": rotated})
        self.assertEqual(second.returncode, 0, second.stdout + second.stderr)
        same_arn, value = self.secret(f"{self.stack}/salesforce-credentials")
        self.assertEqual(same_arn, arn)
        self.assertEqual(json.loads(value)["client_secret"], rotated)
        for text in [first.stdout, first.stderr, second.stdout, second.stderr, self.samconfig.read_text()]:
            self.assertNotIn(client_secret, text)
            self.assertNotIn(rotated, text)

    def test_pipedrive_takes_its_token_checked_and_keeps_newest_wins_gates(self):
        token = "pd-" + uuid.uuid4().hex
        result = self.wizard("--sender", "staticforms", "--stack-name", self.stack, "--region", "eu-west-1",
                             "--auth", "url", "--destination", "pipedrive", "--alarm-email=",
                             env={"PIPEDRIVE_API_TOKEN": token})
        output = result.stdout + result.stderr
        self.assertEqual(result.returncode, 0, output)
        self.assertIn("Pipedrive accepted the token.", result.stdout)
        arn, value = self.secret(f"{self.stack}/pipedrive-api-token")
        self.assertEqual(value, token)
        overrides = self.overrides(self.sam_calls()[1])
        self.assertEqual(overrides["Destination"], "'pipedrive'")
        self.assertEqual(overrides["PipedriveApiTokenSecretArn"], f"'{arn}'")
        self.assertNotIn(token, output + self.samconfig.read_text())

    def test_mailchimp_stores_its_key_and_takes_only_an_audience_id(self):
        key = uuid.uuid4().hex + "-us21"
        flags = ["--sender", "staticforms", "--stack-name", self.stack, "--region", "eu-west-1",
                 "--auth", "url", "--destination", "mailchimp", "--alarm-email="]
        refused = self.wizard(*flags, "--mailchimp-list-id", "a1b2/../x", env={"MAILCHIMP_API_KEY": key})
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("an id of letters and digits", refused.stdout + refused.stderr)
        result = self.wizard(*flags, "--mailchimp-list-id", "a1b2c3d4e5", "--smoke-email", "ops@acme.example",
                             env={"MAILCHIMP_API_KEY": key})
        output = result.stdout + result.stderr
        self.assertEqual(result.returncode, 0, output)
        self.assertIn("Mailchimp accepted the API key.", result.stdout)
        arn, value = self.secret(f"{self.stack}/mailchimp-api-key")
        self.assertEqual(value, key)
        overrides = self.overrides(self.sam_calls()[1])
        self.assertEqual(overrides["Destination"], "'mailchimp'")
        self.assertEqual(overrides["MailchimpApiKeySecretArn"], f"'{arn}'")
        self.assertEqual(overrides["MailchimpListId"], "'a1b2c3d4e5'")
        self.assertEqual(self.others()[-1], f"receipts --stack {self.stack} --region eu-west-1 smoke --email ops@acme.example",
                         "Mailchimp refuses example.com: the smoke lead at the operator's domain")
        self.assertNotIn(key, output + self.samconfig.read_text())

    def test_zoho_stores_its_self_client_and_takes_the_us_data_centre_by_default(self):
        refresh = "1000." + uuid.uuid4().hex
        env = {"ZOHO_CLIENT_ID": "1000.CLIENT", "ZOHO_CLIENT_SECRET": "zs-" + uuid.uuid4().hex,
               "ZOHO_REFRESH_TOKEN": refresh}
        result = self.wizard("--sender", "staticforms", "--stack-name", self.stack, "--region", "eu-west-1",
                             "--auth", "url", "--destination", "zoho", "--alarm-email=",
                             "--zoho-api-url", "https://www.zohoapis.eu", env=env)
        output = result.stdout + result.stderr
        self.assertEqual(result.returncode, 0, output)
        self.assertIn("Zoho CRM accepted the Self Client's credentials.", result.stdout)
        arn, value = self.secret(f"{self.stack}/zoho-credentials")
        self.assertEqual(json.loads(value), {"client_id": "1000.CLIENT", "client_secret": env["ZOHO_CLIENT_SECRET"],
                                             "refresh_token": refresh})
        overrides = self.overrides(self.sam_calls()[1])
        self.assertEqual(overrides["Destination"], "'zoho'")
        self.assertEqual(overrides["ZohoCredentialsSecretArn"], f"'{arn}'")
        # The US accounts server is the template's default too.
        self.assertEqual(overrides.get("ZohoAccountsUrl", "'https://accounts.zoho.com'"), "'https://accounts.zoho.com'")
        self.assertEqual(overrides["ZohoApiUrl"], "'https://www.zohoapis.eu'")
        for secret in (refresh, env["ZOHO_CLIENT_SECRET"]):
            self.assertNotIn(secret, output + self.samconfig.read_text())

    def test_a_webflow_app_stack_asks_no_auth_and_stores_webflows_key(self):
        key = "wf-key-" + uuid.uuid4().hex
        flags = ["--stack-name", self.stack, "--region", "eu-west-1", "--sender", "webflow",
                 "--webflow-webhook", "app", "--destination", "dynamodb", "--alarm-email", ""]
        result = self.wizard(*flags, env={"WEBFLOW_WEBHOOK_SECRET": key})
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertNotIn(": \n", result.stdout + "\n", "no question asked")
        arn, value = self.secret(f"{self.stack}/webflow-signing-key")
        self.assertEqual(value, key)
        overrides = self.overrides(self.sam_calls()[1])
        self.assertEqual(overrides["Sender"], "'webflow'")
        self.assertEqual(overrides["WebhookSecretArn"], f"'{arn}'")
        for static_forms_only in ["WebhookAuth", "IdempotencyKeyHeader"]:
            self.assertNotIn(static_forms_only, overrides)
        self.assertIn("Apps & Integrations, Webhooks): the webhook URL", result.stdout)
        self.assertIn("its signing key is the one you stored", result.stdout)
        self.assertIn(f"receipts --stack {self.stack} --region eu-west-1 smoke", self.others(),
                      "smoke signs as the stack's sender does")
        for text in [result.stdout, result.stderr, self.samconfig.read_text()]:
            self.assertNotIn(key, text)
        refused = self.wizard(*flags, "--auth", "url", env={"WEBFLOW_WEBHOOK_SECRET": key})
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("--auth is Static Forms' choice", refused.stderr)

    def test_every_sender_of_the_catalog_deploys_and_says_where_to_paste_the_url(self):
        catalog = json.loads((ROOT / ".tools" / "catalog.json").read_text())
        # What a sender with a flow of its own needs to deploy without a
        # prompt; any other sender needs nothing more.
        extra_flags = {"staticforms": ["--auth", "url"], "webflow": ["--webflow-webhook", "app"],
                       "html": ["--allowed-origins", "https://example.com", "--thank-you-url=https://example.com/thanks"]}
        extra_env = {"webflow": {"WEBFLOW_WEBHOOK_SECRET": "wf-key"},
                     "formspree": {"FORMSPREE_SIGNING_SECRET": "fs-key"},
                     "html": {"TURNSTILE_SECRET": "0x4AAAAAAA-turnstile-secret"}}
        self.assertGreaterEqual(len(catalog["senders"]), 7)
        for sender in catalog["senders"]:
            name = sender["name"]
            with self.subTest(sender=name):
                stack = f"{name}-{uuid.uuid4().hex[:8]}"
                result = self.wizard("--sender", name, "--stack-name", stack, "--region", "eu-west-1",
                                     "--destination", "dynamodb", "--alarm-email=", "--no-audit", "--no-notice",
                                     *extra_flags.get(name, []), env=extra_env.get(name))
                self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
                self.assertIn("Deployed.", result.stdout)
                if name != "staticforms":  # the README's own section
                    self.assertIn(f"docs/senders/{name}.md", result.stdout)
                if sender.get("browser"):
                    self.assertIn(f"In {sender['webhook_settings']}: <form action=", result.stdout)
                    self.assertNotIn("?token=", result.stdout, "a page keeps no secret")
                elif name not in ("staticforms", "formspree"):
                    self.assertIn(f"In {sender['webhook_settings']}: the webhook URL", result.stdout)

    def test_a_plain_html_form_asks_its_pages_and_stores_its_turnstile_secret(self):
        flags = ["--sender", "html", "--stack-name", self.stack, "--region", "eu-west-1",
                 "--destination", "dynamodb", "--alarm-email=", "--allowed-origins", "https://example.com/"]
        refused = self.wizard(*flags, "--thank-you-url=https://evil.example/thanks",
                              env={"TURNSTILE_SECRET": "0x4AAAAAAA-turnstile-secret"})
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("never another site", refused.stdout + refused.stderr)
        result = self.wizard(*flags, "--thank-you-url=https://example.com/thanks",
                             env={"TURNSTILE_SECRET": "0x4AAAAAAA-turnstile-secret"})
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        arn, value = self.secret(f"{self.stack}/turnstile-secret")
        self.assertEqual(value, "0x4AAAAAAA-turnstile-secret")
        overrides = self.overrides(self.sam_calls()[1])
        self.assertEqual(overrides["Sender"], "'html'")
        self.assertEqual(overrides["AllowedOrigins"], "'https://example.com'")
        self.assertEqual(overrides["ThankYouUrl"], "'https://example.com/thanks'")
        self.assertEqual(overrides["TurnstileSecretArn"], f"'{arn}'")
        self.assertNotIn("0x4AAAAAAA", result.stdout, "the secret is never printed")

    def test_webflow_dashboard_webhooks_take_a_url_token(self):
        result = self.wizard("--sender", "webflow", "--webflow-webhook", "dashboard", "--stack-name", self.stack,
                             "--region", "eu-west-1", "--destination", "dynamodb", "--alarm-email=")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        overrides = self.overrides(self.sam_calls()[1])
        self.assertEqual(overrides["Sender"], "'webflow'")
        self.assertEqual(overrides["WebhookAuth"], "'query:token'", "unsigned: a token in the URL")
        self.assertNotIn("WebhookSecretArn", overrides, "the stack generates the secret")
        self.assertIn("?token=<the secret>", result.stdout)
        self.assertIn("Apps & Integrations > Webhooks", result.stdout)

    def test_webflow_site_token_webhooks_deploy_first_then_store_the_key(self):
        flags = ["--sender", "webflow", "--webflow-webhook", "api", "--stack-name", self.stack,
                 "--region", "eu-west-1", "--destination", "dynamodb", "--alarm-email="]
        first = self.wizard(*flags)
        self.assertEqual(first.returncode, 0, first.stdout + first.stderr)
        arn, placeholder = self.secret(f"{self.stack}/webflow-signing-key")
        overrides = self.overrides(self.sam_calls()[1])
        self.assertEqual(overrides["WebhookSecretArn"], f"'{arn}'", "the stack reads the secret from the start")
        self.assertNotIn("WebhookAuth", overrides, "Webflow's own signature")
        self.assertIn("POST /v2/sites/<site_id>/webhooks", first.stdout)
        self.assertIn("Then put its secretKey into the secret", first.stdout, "no key yet: said how")
        # The key Webflow returned, once the webhook exists: stored in the
        # same secret, the stack unchanged.
        key = "wf-site-key-" + uuid.uuid4().hex
        self.record.unlink()
        boto3.client("cloudformation", region_name="eu-west-1", endpoint_url=MOTO_URL,
                     aws_access_key_id="test", aws_secret_access_key="test").delete_stack(StackName=self.stack)
        second = self.wizard(*flags, env={"WEBFLOW_WEBHOOK_SECRET": key})
        self.assertEqual(second.returncode, 0, second.stdout + second.stderr)
        same_arn, value = self.secret(f"{self.stack}/webflow-signing-key")
        self.assertEqual((same_arn, value), (arn, key))
        self.assertNotEqual(placeholder, key)
        self.assertIn("stored Webflow's key", second.stdout)
        for text in [first.stdout, second.stdout, second.stderr, self.samconfig.read_text()]:
            self.assertNotIn(key, text)
            self.assertNotIn(placeholder, text)

    def test_formspree_deploys_first_then_stores_the_secret_it_shows(self):
        flags = ["--sender", "formspree", "--stack-name", self.stack, "--region", "eu-west-1",
                 "--destination", "dynamodb", "--alarm-email=", "--no-audit"]
        first = self.wizard(*flags)
        self.assertEqual(first.returncode, 0, first.stdout + first.stderr)
        arn, placeholder = self.secret(f"{self.stack}/formspree-signing-key")
        overrides = self.overrides(self.sam_calls()[1])
        self.assertEqual(overrides["WebhookSecretArn"], f"'{arn}'", "the stack reads the secret from the start")
        self.assertEqual(overrides["Sender"], "'formspree'")
        self.assertIn("Plugins > Webhook", first.stdout)
        self.assertIn("FORMSPREE_SIGNING_SECRET", first.stdout, "no secret yet: said how")
        key = "fs-signing-" + uuid.uuid4().hex
        self.record.unlink()
        boto3.client("cloudformation", region_name="eu-west-1", endpoint_url=MOTO_URL,
                     aws_access_key_id="test", aws_secret_access_key="test").delete_stack(StackName=self.stack)
        second = self.wizard(*flags, env={"FORMSPREE_SIGNING_SECRET": key})
        self.assertEqual(second.returncode, 0, second.stdout + second.stderr)
        self.assertEqual(self.secret(f"{self.stack}/formspree-signing-key"), (arn, key))
        self.assertIn("stored Formspree's key", second.stdout)
        for text in [first.stdout, second.stdout, second.stderr, self.samconfig.read_text()]:
            self.assertNotIn(key, text)
            self.assertNotIn(placeholder, text)

    def test_a_field_map_file_reaches_the_stack_quoted_so_sam_reads_it_whole(self):
        from samcli.cli.types import CfnParameterOverridesType
        from samcli.yamlhelper import yaml_parse
        import re
        field_map = {"email": "email", "firstname": "firstName", "hs_lead_status": "=NEW", "message": "*"}
        path = self.dir / "field-map.json"
        path.write_text(json.dumps(field_map, indent=2))
        result = self.wizard("--sender", "staticforms", "--stack-name", self.stack, "--region", "eu-west-1",
                             "--auth", "url", "--destination", "hubspot", "--field-map", str(path),
                             "--alarm-email=", env={"HUBSPOT_TOKEN": "pat-" + uuid.uuid4().hex})
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        deploy = self.sam_calls()[1]
        start = deploy.index("--parameter-overrides") + 1
        as_sam_reads = CfnParameterOverridesType().convert(tuple(deploy[start:]), None, None)
        self.assertEqual(json.loads(as_sam_reads["FieldMap"]), field_map, "the command line")
        saved = self.saved()["deploy"]["parameters"]["parameter_overrides"]
        self.assertEqual(json.loads(CfnParameterOverridesType().convert((saved,), None, None)["FieldMap"]),
                         field_map, "samconfig.toml")
        # The template refuses what SAM's parser leaves of an unquoted map.
        template = yaml_parse((ROOT / "template.yaml").read_text())
        pattern = template["Parameters"]["FieldMap"]["AllowedPattern"]
        self.assertTrue(re.fullmatch(pattern, as_sam_reads["FieldMap"]))
        self.assertTrue(re.fullmatch(pattern, ""))
        self.assertIsNone(re.fullmatch(pattern, "{"))
        bad = self.dir / "bad.json"
        bad.write_text('{"email": ')
        refused = self.wizard("--sender", "staticforms", "--stack-name", self.stack, "--region", "eu-west-1",
                              "--auth", "url", "--destination", "hubspot", "--field-map", str(bad))
        self.assertEqual(refused.returncode, 1)
        self.assertIn("is not JSON", refused.stderr)
        self.assertEqual(len(refused.stderr.strip().splitlines()), 1, refused.stderr)

    def test_a_python_without_tomllib_deploys(self):
        blocker = self.dir / "blocker"
        blocker.mkdir()
        (blocker / "tomllib.py").write_text("raise ImportError('no tomllib before Python 3.11')\n")
        result = self.wizard("--sender", "staticforms", "--stack-name", self.stack, "--region", "eu-west-1",
                             "--auth", "url", "--destination", "dynamodb", "--alarm-email=",
                             env={"PYTHONPATH": str(blocker)})
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("Destination", self.saved()["deploy"]["parameters"]["parameter_overrides"])
        helped = subprocess.run([sys.executable, "-S", str(ROOT / "scripts/deploy.py"), "--help"],
                                capture_output=True, text=True, env={"PYTHONPATH": str(blocker)}, timeout=60)
        self.assertEqual(helped.returncode, 0, helped.stderr)
        self.assertIn("WEBFLOW_WEBHOOK_SECRET", helped.stdout, "help names the secret variables")

    def test_failures_of_aws_are_one_line_each(self):
        flags = ["--sender", "staticforms", "--stack-name", self.stack, "--auth", "url",
                 "--destination", "hubspot", "--alarm-email="]
        token = {"HUBSPOT_TOKEN": "pat-" + uuid.uuid4().hex}
        closed = HTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
        closed_url = f"http://127.0.0.1:{closed.server_address[1]}"
        closed.server_close()
        denied = HTTPServer(("127.0.0.1", 0), Denying)
        threading.Thread(target=denied.serve_forever, daemon=True).start()
        self.addCleanup(denied.server_close)
        self.addCleanup(denied.shutdown)
        rows = [
            ("a malformed region", ["--region", "eu west 1"], {}, "a region name such as eu-west-1"),
            ("an unreachable endpoint", ["--region", "eu-west-1"], {"AWS_ENDPOINT_URL": closed_url},
             "AWS could not be reached"),
            ("a denied call", ["--region", "eu-west-1"],
             {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{denied.server_address[1]}"},
             "AWS refused CreateSecret (AccessDeniedException"),
        ]
        for what, more, env, said in rows:
            result = self.wizard(*flags, *more, env={**token, **env})
            self.assertEqual(result.returncode, 1, what)
            self.assertIn(said, result.stderr, what)
            self.assertEqual(len(result.stderr.strip().splitlines()), 1, f"{what}: {result.stderr}")
            self.assertNotIn("Traceback", result.stderr, what)
            self.assertEqual(self.sam_calls(), [], what)

    def test_observability_is_lean_unless_full_is_asked(self):
        flags = ["--sender", "tally", "--stack-name", self.stack, "--region", "eu-west-1",
                 "--destination", "dynamodb", "--alarm-email="]
        lean = self.wizard(*flags)
        self.assertEqual(lean.returncode, 0, lean.stdout + lean.stderr)
        self.assertIn("Observability: lean", lean.stdout)
        self.assertEqual(self.overrides(self.sam_calls()[1])["Observability"], "'lean'")
        other = self.stack + "-full"
        flags[flags.index(self.stack)] = other
        full = self.wizard(*flags, "--observability", "full")
        self.assertEqual(full.returncode, 0, full.stdout + full.stderr)
        self.assertNotIn("Observability: lean", full.stdout)
        self.assertEqual(self.overrides(self.sam_calls()[3])["Observability"], "'full'")
        self.assertIn("Observability='full'", self.saved(other)["deploy"]["parameters"]["parameter_overrides"])

    def test_the_audit_is_offered_for_a_sender_that_keeps_its_submissions(self):
        flags = ["--sender", "typeform", "--stack-name", self.stack, "--region", "eu-west-1",
                 "--destination", "dynamodb", "--alarm-email="]
        token = "tfp_audit_token_never_printed_0123456789"
        result = self.wizard(*flags, "--audit-forms", "lT4Z3j,abc", env={"SENDER_API_TOKEN": token})
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        overrides = self.overrides(self.sam_calls()[1])
        arn, value = self.secret(f"{self.stack}/sender-api-token")
        self.assertEqual(value, token)
        self.assertEqual(overrides["SenderApiTokenSecretArn"], f"'{arn}'")
        self.assertEqual(overrides["AuditForms"], "'lT4Z3j,abc'")
        self.assertNotIn(token, result.stdout + result.stderr + self.samconfig.read_text())

        # Without a terminal, a token and no forms or routes: the forms are named as missing.
        other = self.stack + "-noforms"
        flags[flags.index(self.stack)] = other
        missing = self.wizard(*flags, env={"SENDER_API_TOKEN": token})
        self.assertEqual(missing.returncode, 1)
        self.assertIn("Form ids", missing.stderr)
        # Static Forms keeps no list to audit.
        refused = self.wizard("--sender", "staticforms", "--auth", "url", "--stack-name", other,
                              "--region", "eu-west-1", "--destination", "dynamodb", "--alarm-email=",
                              "--audit-forms", "abc")
        self.assertEqual(refused.returncode, 1)
        self.assertIn("not staticforms's", refused.stderr)

    def test_a_new_lead_notice_url_is_stored_as_a_secret_and_never_shown(self):
        flags = ["--sender", "staticforms", "--stack-name", self.stack, "--region", "eu-west-1", "--auth", "url",
                 "--destination", "http", "--crm-url", "https://crm.example.com/leads/{externalId}",
                 "--no-crm-token", "--alarm-email="]
        url = "https://hooks.slack.com/services/T000/B000/" + uuid.uuid4().hex
        result = self.wizard(*flags, env={"NOTIFY_URL": url})
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        arn, value = self.secret(f"{self.stack}/notify-url")
        self.assertEqual(value, url)
        self.assertEqual(self.overrides(self.sam_calls()[1])["NotifyUrlSecretArn"], f"'{arn}'")
        self.assertNotIn(url, result.stdout + result.stderr + self.samconfig.read_text())
        clear = self.wizard(*flags, env={"NOTIFY_URL": "http://hooks.example.com/x"})
        self.assertEqual(clear.returncode, 1)
        self.assertIn("Notice URL: an https:// URL", clear.stderr)
        self.assertNotIn("hooks.example.com", clear.stdout + clear.stderr)
        both = self.wizard(*flags, "--no-notice", env={"NOTIFY_URL": url})
        self.assertEqual(both.returncode, 1)
        self.assertIn("--no-notice, and yet a notice URL is given", both.stderr)

    def test_an_http_crm_without_a_token_deploys_from_flags_alone(self):
        flags = ["--sender", "staticforms", "--stack-name", self.stack, "--region", "eu-west-1", "--auth", "url",
                 "--destination", "http", "--crm-url", "https://crm.example.com/leads/{externalId}",
                 "--no-crm-token", "--alarm-email="]
        result = self.wizard(*flags)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertNotIn(": \n", result.stdout + "\n", "no question asked")
        overrides = self.overrides(self.sam_calls()[1])
        self.assertNotIn("CrmTokenSecretArn", overrides)
        self.assertEqual(overrides["CrmUrl"], "'https://crm.example.com/leads/{externalId}'")
        both = self.wizard(*flags, env={"CRM_TOKEN": "t"})
        self.assertEqual(both.returncode, 1)
        self.assertIn("--no-crm-token, and yet a CRM token is given", both.stderr)

    def test_a_routes_file_is_checked_before_anything_and_stored_after_the_deploy(self):
        routes = self.dir / "routes.toml"
        routes.write_text('[[route]]\nform = "f"\nname = "Pricing"\n[route.set]\nlead_source = "Pricing page"\n')
        flags = ["--sender", "tally", "--stack-name", self.stack, "--region", "eu-west-1",
                 "--destination", "dynamodb", "--alarm-email=", "--routes", str(routes)]
        refused = self.wizard(*flags, env={"REFUSE_ROUTES": "1"})
        self.assertEqual(refused.returncode, 1)
        self.assertEqual(refused.stderr.strip().splitlines()[-1],
                         "make deploy: routes.toml has problems (each named above); fix them, or move the file away")
        self.assertEqual(self.sam_calls(), [], "nothing built or deployed")
        self.assertEqual(self.others(), [f"receipts routes check {routes} --destinations dynamodb"])
        secrets = boto3.client("secretsmanager", region_name="eu-west-1", endpoint_url=MOTO_URL,
                               aws_access_key_id="test", aws_secret_access_key="test")
        names = [s["Name"] for s in secrets.list_secrets()["SecretList"]]
        self.assertFalse([n for n in names if self.stack in n], "no secret created")

        result = self.wizard(*flags)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        stack = f"--stack {self.stack} --region eu-west-1"
        self.assertEqual(self.others()[1:], [
            f"receipts routes check {routes} --destinations dynamodb",
            f"receipts {stack} routes apply {routes}",
            f"receipts {stack} smoke",
        ], "checked first, stored once the stack exists, before the smoke test")
        self.assertEqual([call[0] for call in self.sam_calls()], ["build", "deploy"])

        missing = self.wizard(*flags[:-1], str(self.dir / "nowhere.toml"))
        self.assertEqual(missing.returncode, 1)
        self.assertEqual(missing.stderr.strip(), f"make deploy: --routes {self.dir / 'nowhere.toml'}: no such file")

    def test_several_destinations_each_get_their_questions_checks_and_secrets(self):
        token, key = "pat-" + uuid.uuid4().hex, uuid.uuid4().hex + "-us21"
        flags = ["--sender", "tally", "--stack-name", self.stack, "--region", "eu-west-1", "--no-audit",
                 "--alarm-email=", "--smoke-email", "ops@acme.example"]
        env = {"HUBSPOT_TOKEN": token, "MAILCHIMP_API_KEY": key}
        # Each name once, each known; a flag of a destination not chosen is refused.
        for destination, said in [("hubspot,hubspot", "hubspot is named twice"),
                                  ("hubspot,mailchip", "'mailchip' is not one of"),
                                  ("hubspot,", "'' is not one of")]:
            refused = self.wizard(*flags, "--destination", destination, env=env)
            self.assertEqual(refused.returncode, 1, destination)
            self.assertIn(said, refused.stderr, destination)
        refused = self.wizard(*flags, "--destination", "hubspot,mailchimp", "--mailchimp-list-id", "a1b2c3d4e5",
                              "--crm-url", "https://crm.example.com/{externalId}", env=env)
        self.assertIn("--crm-url applies to the http destination, not hubspot,mailchimp", refused.stderr)
        # One field map cannot be both HubSpot's and Mailchimp's.
        field_map = self.dir / "map.json"
        field_map.write_text('{"email": "email"}')
        refused = self.wizard(*flags, "--destination", "hubspot,mailchimp", "--mailchimp-list-id", "a1b2c3d4e5",
                              "--field-map", str(field_map), env=env)
        self.assertIn("--field-map is one map for hubspot and mailchimp", refused.stderr)
        self.assertEqual(self.sam_calls(), [], "nothing built or deployed")

        # The routes file is checked against the stack's destinations first.
        routes = self.dir / "routes.toml"
        routes.write_text('destinations = ["mailchimp"]\n')
        result = self.wizard(*flags, "--destination", "HubSpot, Mailchimp", "--mailchimp-list-id", "a1b2c3d4e5",
                             "--routes", str(routes), env=env)
        output = result.stdout + result.stderr
        self.assertEqual(result.returncode, 0, output)
        self.assertEqual(self.others()[0], f"receipts routes check {routes} --destinations hubspot,mailchimp")
        self.assertIn("HubSpot accepted the token.", result.stdout)
        self.assertIn("Mailchimp accepted the API key.", result.stdout)
        hubspot_arn, stored_token = self.secret(f"{self.stack}/hubspot-token")
        mailchimp_arn, stored_key = self.secret(f"{self.stack}/mailchimp-api-key")
        self.assertEqual((stored_token, stored_key), (token, key))
        overrides = self.overrides(self.sam_calls()[1])
        self.assertEqual(overrides["Destination"], "'hubspot,mailchimp'", "in the order given, as CloudFormation's list")
        self.assertEqual(overrides["HubSpotTokenSecretArn"], f"'{hubspot_arn}'")
        self.assertEqual(overrides["MailchimpApiKeySecretArn"], f"'{mailchimp_arn}'")
        self.assertEqual(overrides["MailchimpListId"], "'a1b2c3d4e5'")
        self.assertNotIn(token, output + self.samconfig.read_text())
        self.assertNotIn(key, output + self.samconfig.read_text())

    def test_a_wrong_crm_credential_is_refused_before_anything_is_stored(self):
        rows = [
            (["--destination", "hubspot"], {"HUBSPOT_TOKEN": "bad-pat-" + uuid.uuid4().hex},
             "hubspot-token", "HubSpot refused the token (HTTP 401, INVALID_AUTHENTICATION)"),
            (["--destination", "salesforce", "--salesforce-login-url", "https://acme.my.salesforce.com"],
             {"SALESFORCE_CLIENT_ID": "3MVG9", "SALESFORCE_CLIENT_SECRET": "bad-" + uuid.uuid4().hex},
             "salesforce-credentials", "Salesforce refused the client credentials (HTTP 400, invalid_client)"),
            (["--destination", "pipedrive"], {"PIPEDRIVE_API_TOKEN": "bad-" + uuid.uuid4().hex},
             "pipedrive-api-token", "Pipedrive refused the token (HTTP 401, unauthorized access)"),
            (["--destination", "mailchimp", "--mailchimp-list-id", "a1b2c3d4e5"],
             {"MAILCHIMP_API_KEY": "bad" + uuid.uuid4().hex + "-us21"},
             "mailchimp-api-key", "Mailchimp refused the API key (HTTP 401)"),
            (["--destination", "zoho"],
             {"ZOHO_CLIENT_ID": "1000.CLIENT", "ZOHO_CLIENT_SECRET": "zs-" + uuid.uuid4().hex,
              "ZOHO_REFRESH_TOKEN": "bad-" + uuid.uuid4().hex},
             "zoho-credentials", "Zoho CRM refused the Self Client's credentials (HTTP 200, invalid_code)"),
        ]
        for flags, env, secret_name, said in rows:
            result = self.wizard("--sender", "staticforms", "--stack-name", self.stack, "--region", "eu-west-1",
                                 "--auth", "url", "--alarm-email=", *flags, env=env)
            self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
            self.assertIn(said, result.stderr)
            self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
            for value in env.values():
                self.assertNotIn(value, result.stdout + result.stderr)
            with self.assertRaises(Exception, msg="nothing stored"):
                self.secret(f"{self.stack}/{secret_name}")
            self.assertEqual(self.sam_calls(), [])

    def test_a_missing_answer_without_a_terminal_is_named_and_nothing_is_deployed(self):
        result = self.wizard("--sender", "staticforms", "--stack-name", self.stack, "--region", "eu-west-1",
                             "--auth", "url", "--destination", "hubspot")
        self.assertEqual(result.returncode, 1)
        self.assertIn("HubSpot token", result.stderr)
        # A secret is never a flag: its variable, or an existing secret's ARN.
        self.assertIn("set HUBSPOT_TOKEN, or give an existing secret's ARN with --hubspot-token-secret-arn",
                      result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
        self.assertEqual(self.sam_calls(), [])

    def test_each_missing_or_wrong_answer_names_its_flag_or_echoes_the_value(self):
        # No --sender and nothing on standard input: the flag is named.
        result = self.wizard("--stack-name", self.stack, "--region", "eu-west-1")
        self.assertEqual(result.returncode, 1)
        self.assertIn("no answer to 'Sender [staticforms]' on standard input: give --sender", result.stderr)
        # A wrong answer is echoed with the accepted ones.
        result = self.wizard("--sender", "staticforms", "--stack-name", self.stack, "--region", "eu-west-1",
                             "--auth", "url", answers="hubspt\n")
        self.assertEqual(result.returncode, 1)
        self.assertIn("'hubspt' is not one of", result.stderr)
        self.assertIn("hubspot", result.stderr)
        # Names in any case: Tally and HubSpot are tally and hubspot.
        result = self.wizard("--sender", "Tally", "--stack-name", self.stack, "--region", "eu-west-1",
                             "--destination", "HubSpot", "--no-audit", "--alarm-email=", "--no-smoke",
                             env={"HUBSPOT_TOKEN": "pat-" + uuid.uuid4().hex})
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        deploy = [call for call in self.sam_calls() if call[0] == "deploy"][0]
        overrides = self.overrides(deploy)
        self.assertEqual(overrides["Sender"], "'tally'")
        self.assertEqual(overrides["Destination"], "'hubspot'")
        self.assertEqual(self.sam_calls()[0][0], "build")

    def test_hubspot_one_contact_per_submission_is_a_flag(self):
        token = {"HUBSPOT_TOKEN": "pat-" + uuid.uuid4().hex}
        flags = ["--sender", "tally", "--region", "eu-west-1", "--destination",
                 "hubspot", "--no-audit", "--alarm-email=", "--no-smoke"]
        refused = self.wizard(*flags, "--stack-name", self.stack, "--hubspot-id-property", "submission-id",
                              env=token)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("a property's internal name", refused.stderr)
        result = self.wizard(*flags, "--stack-name", self.stack, "--hubspot-id-property",
                             "staticforms_submission_id", env=token)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        deploy = [call for call in self.sam_calls() if call[0] == "deploy"][0]
        self.assertEqual(self.overrides(deploy)["HubSpotIdProperty"], "'staticforms_submission_id'")
        # Without the flag and without a terminal: the template's default, one
        # contact per person, needs no override.
        self.record.unlink()
        result = self.wizard(*flags, "--stack-name", self.stack + "-by-email", env=token)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        deploy = [call for call in self.sam_calls() if call[0] == "deploy"][0]
        self.assertNotIn("HubSpotIdProperty", self.overrides(deploy))

    def test_missing_credentials_stop_it_first_in_one_line(self):
        env = {key: value for key, value in self.env.items()
               if key not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
        result = subprocess.run(
            [sys.executable, str(ROOT / "scripts/deploy.py"), "--config-file", str(self.samconfig),
             "--architecture", "x86_64", "--stack-name", self.stack],
            capture_output=True, text=True, env={**env, "AWS_EC2_METADATA_DISABLED": "true"}, timeout=60)
        self.assertEqual(result.returncode, 1)
        self.assertIn("no AWS credentials: run `aws configure`", result.stderr)
        self.assertEqual(self.sam_calls(), [])


class Preflight(unittest.TestCase):
    """What make deploy cannot install is checked before it installs
    anything, by the standard library alone."""

    def run_deploy(self, *args, env):
        home = tempfile.mkdtemp()
        bare = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
        return subprocess.run([*args], capture_output=True, text=True, cwd=ROOT, timeout=60,
                              env={**bare, "HOME": home, "AWS_EC2_METADATA_DISABLED": "true", **env})

    def test_no_credentials_stop_make_deploy_before_any_install(self):
        result = self.run_deploy("bash", "scripts/deploy.sh", "--architecture", "x86_64", env={})
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn("no AWS credentials: run `aws configure`", result.stderr)
        self.assertNotIn("installing", result.stdout + result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)

    def test_credentials_in_the_environment_or_a_profile_pass(self):
        keys = {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret"}
        script = [sys.executable, "scripts/deploy.py", "--preflight", "--architecture", "x86_64"]
        self.assertEqual(self.run_deploy(*script, env=keys).returncode, 0)
        config = Path(tempfile.mkdtemp()) / "config"
        config.write_text("[profile work]\nsso_session = acme\n")
        found = self.run_deploy(*script, env={"AWS_PROFILE": "work", "AWS_CONFIG_FILE": str(config)})
        self.assertEqual(found.returncode, 0, found.stderr)
        missing = self.run_deploy(*script, env={"AWS_PROFILE": "other", "AWS_CONFIG_FILE": str(config)})
        self.assertEqual(missing.returncode, 1)
        self.assertIn("no AWS credentials", missing.stderr)


class CrmCheck(BaseHTTPRequestHandler):
    """HubSpot's property read, Pipedrive's person fields read, Mailchimp's
    ping, and Salesforce's and Zoho's token requests, as their
    documentation answers them: a credential starting with "bad" is refused
    (HubSpot 401 INVALID_AUTHENTICATION; Pipedrive 401 unauthorized access;
    Mailchimp 401 API Key Invalid; Salesforce 400 invalid_client; Zoho 200
    invalid_code)."""

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/3.0/ping":
            # Mailchimp: HTTP Basic, the key as the password; a wrong one is
            # a 401 problem (its errors page).
            import base64
            basic = self.headers.get("authorization", "").removeprefix("Basic ")
            key = base64.b64decode(basic).decode().partition(":")[2] if basic else ""
            if key and not key.startswith("bad"):
                self.answer(200, {"health_status": "Everything's Chimpy!"})
            else:
                self.answer(401, {"title": "API Key Invalid", "status": 401,
                                  "detail": "Your API key may be invalid, or you've attempted to access the wrong datacenter."})
            return
        if self.path.startswith("/api/v2/personFields"):
            # Pipedrive: the token in x-api-token; a wrong one is a 401
            # with success false and error (its status codes page).
            token = self.headers.get("x-api-token", "")
            if token and not token.startswith("bad"):
                self.answer(200, {"success": True, "data": [{"code": "name"}]})
            else:
                self.answer(401, {"success": False, "error": "unauthorized access", "errorCode": 401})
            return
        token = self.headers.get("authorization", "").removeprefix("Bearer ")
        if self.path == "/crm/v3/properties/contacts/email" and token and not token.startswith("bad"):
            self.answer(200, {"name": "email"})
        else:
            self.answer(401, {"status": "error", "category": "INVALID_AUTHENTICATION"})

    def do_POST(self):
        from urllib.parse import parse_qs
        form = parse_qs(self.rfile.read(int(self.headers.get("content-length", 0))).decode())
        secret = form.get("client_secret", [""])[0]
        if self.path == "/oauth/v2/token":
            # Zoho: a refused grant is a 200 with an error (its refresh page).
            refresh = form.get("refresh_token", [""])[0]
            if form.get("grant_type") == ["refresh_token"] and refresh and not refresh.startswith("bad"):
                self.answer(200, {"access_token": "1000.a", "expires_in": 3600, "api_domain": "https://www.zohoapis.com",
                                  "token_type": "Bearer"})
            else:
                self.answer(200, {"error": "invalid_code"})
            return
        if self.path == "/services/oauth2/token" and secret and not secret.startswith("bad"):
            self.answer(200, {"access_token": "00D-token", "instance_url": "https://acme.my.salesforce.com"})
        else:
            self.answer(400, {"error": "invalid_client", "error_description": "invalid client credentials"})

    def log_message(self, *args):
        pass


class Denying(BaseHTTPRequestHandler):
    """An AWS endpoint that refuses every call, as IAM does (JSON protocol)."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps({"__type": "AccessDeniedException",
                           "Message": "User is not authorized to perform this action"}).encode()
        self.send_response(400)
        self.send_header("content-type", "application/x-amz-json-1.1")
        self.send_header("x-amzn-errortype", "AccessDeniedException")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    unittest.main()
