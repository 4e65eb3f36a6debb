"""A deploy without Rust: `make deploy RELEASE=<folder>` from what
`make package` wrote, with no `cargo` on PATH, against moto and a stand-in
`sam`. The stand-in's `deploy` takes the function zips the template names,
unzips them and runs those very binaries in the local pipeline (devtools'
local-pipeline, on moto), then creates the stack on moto with outputs that
point at it; the wizard's smoke test (the real receipts CLI) then follows a
marked submission through them to COMPLETED.

Run by make test, under the SAM virtualenv's Python, with MOTO_URL,
RELEASE_DIR (make package's folder, built for x86_64) and FUNCTION_BIN_DIR
(the debug build of local-pipeline and receipts).
"""

import functools
import hashlib
import http.server
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import threading
import unittest
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def required(name: str) -> str:
    return os.environ.get(name) or sys.exit(
        f"{name} is not set: run this with `make test`, which packages a release and starts moto first")


MOTO_URL = required("MOTO_URL")
RELEASE_DIR = Path(required("RELEASE_DIR"))
FUNCTION_BIN_DIR = Path(required("FUNCTION_BIN_DIR"))

STAND_IN_SAM = textwrap.dedent('''\
    #!{python}
    """A stand-in for `sam deploy --template-file` of a release: the
    functions are the zips the template names, run by the local pipeline."""
    import json, os, socket, subprocess, sys, time, zipfile
    from pathlib import Path
    import boto3
    from samcli.yamlhelper import yaml_parse

    args = sys.argv[1:]
    record = os.environ["SAM_RECORD"]
    with open(record, "a") as calls:
        calls.write(json.dumps(args) + "\\n")
    if args[0] != "deploy":
        sys.exit(f"the stand-in sam only deploys, asked: {{args}}")
    template_file = Path(args[args.index("--template-file") + 1])
    template = yaml_parse(template_file.read_text())
    functions = Path(record + ".functions")
    functions.mkdir(exist_ok=True)
    for resource, binary in (("IngestFunction", "ingest"), ("WorkerFunction", "worker")):
        code = template_file.parent / template["Resources"][resource]["Properties"]["CodeUri"]
        with zipfile.ZipFile(code) as archive:
            (functions / binary).write_bytes(archive.read("bootstrap"))
        (functions / binary).chmod(0o755)

    def free_port():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    webhook_port, crm_port = free_port(), free_port()
    table = "release-receipts-" + os.urandom(4).hex()
    log = open(record + ".pipeline.log", "w")
    pipeline = subprocess.Popen(
        [os.environ["LOCAL_PIPELINE"]], stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={{**os.environ, "FUNCTION_BIN_DIR": str(functions), "DYNAMODB_ENDPOINT": os.environ["AWS_ENDPOINT_URL"],
             "WEBHOOK_PORT": str(webhook_port), "CRM_PORT": str(crm_port), "DESTINATION": "http",
             "RECEIPTS_TABLE": table, "LEADS_TABLE": table + "-leads"}})
    Path(record + ".pid").write_text(str(pipeline.pid))
    deadline = time.time() + 90
    while "Local pipeline is up" not in Path(record + ".pipeline.log").read_text():
        if pipeline.poll() is not None or time.time() > deadline:
            sys.exit("the local pipeline did not start: " + Path(record + ".pipeline.log").read_text())
        time.sleep(0.2)

    stack = args[args.index("--stack-name") + 1]
    region = args[args.index("--region") + 1]
    secret = boto3.client("secretsmanager", region_name=region).create_secret(
        Name=stack + "-webhook", SecretString="local-demo-token-change-me")["ARN"]
    parameters = {{name: {{"Type": "String", "Default": ""}}
                  for name in ("Sender", "WebhookAuth", "AcceptedForms", "Destination")}}
    boto3.client("cloudformation", region_name=region).create_stack(
        StackName=stack,
        TemplateBody=json.dumps({{
            "Parameters": parameters,
            "Resources": {{"Handle": {{"Type": "AWS::CloudFormation::WaitConditionHandle"}}}},
            "Outputs": {{
                "WebhookUrl": {{"Value": f"http://127.0.0.1:{{webhook_port}}/webhooks/staticforms"}},
                "ReceiptsTableName": {{"Value": table}},
                "WebhookSecretArn": {{"Value": secret}},
            }},
        }}),
        Parameters=[{{"ParameterKey": "Sender", "ParameterValue": "staticforms"}},
                    {{"ParameterKey": "Destination", "ParameterValue": "http"}}])
    ''')


def path_without_cargo(first: Path) -> str:
    """PATH with `first` before the rest, less every folder holding cargo."""
    kept = [d for d in os.environ["PATH"].split(os.pathsep)
            if d and not (Path(d) / "cargo").exists() and not (Path(d) / "rustup").exists()]
    return os.pathsep.join([str(first), *kept])


class QuietFiles(http.server.SimpleHTTPRequestHandler):
    """A folder served over HTTP, without a log line per request."""

    def log_message(self, format, *args):
        pass


class FromRelease(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        bin_dir = self.dir / "bin"
        bin_dir.mkdir()
        (bin_dir / "sam").write_text(STAND_IN_SAM.format(python=sys.executable))
        (bin_dir / "sam").chmod(0o755)
        self.record = self.dir / "sam-calls.jsonl"
        self.samconfig = self.dir / "samconfig.toml"
        self.samconfig.write_text((ROOT / "samconfig.toml").read_text())
        self.stack = "release-" + uuid.uuid4().hex[:8]
        self.env = {key: value for key, value in os.environ.items()
                    if not key.startswith(("AWS_", "HUBSPOT_", "SALESFORCE_", "CRM_", "CARGO", "RUSTUP"))}
        self.env.update({
            "PATH": path_without_cargo(bin_dir),
            "AWS_ENDPOINT_URL": MOTO_URL,
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": str(self.dir / "no-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(self.dir / "no-credentials"),
            "SAM_RECORD": str(self.record),
            "LOCAL_PIPELINE": str(FUNCTION_BIN_DIR / "local-pipeline"),
            # The CLI a user installs from the release; here the debug build.
            "RECEIPTS_BIN": str(FUNCTION_BIN_DIR / "receipts"),
        })
        self.assertIsNone(shutil.which("cargo", path=self.env["PATH"]), "cargo is still on PATH")
        self.addCleanup(self.stop_pipeline)

    def stop_pipeline(self):
        pid = Path(str(self.record) + ".pid")
        if pid.exists():
            try:
                os.killpg(int(pid.read_text()), signal.SIGTERM)
            except ProcessLookupError:
                pass

    def deploy(self, release: Path, *more):
        flags = ["--release", str(release), "--config-file", str(self.samconfig), "--architecture", "x86_64",
                 "--sender", "staticforms", "--stack-name", self.stack, "--region", "us-east-1", "--auth", "url",
                 "--destination", "http", "--crm-url", "https://crm.example.com/leads/{externalId}",
                 "--no-crm-token", "--alarm-email=", "--no-audit", *more]
        return subprocess.run([sys.executable, str(ROOT / "scripts/deploy.py"), *flags], cwd=self.dir,
                              capture_output=True, text=True, env=self.env, timeout=300)

    def sam_calls(self):
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def test_a_release_deploys_without_cargo_and_its_functions_pass_the_smoke_test(self):
        result = self.deploy(RELEASE_DIR)
        output = result.stdout + result.stderr
        pipeline_log = Path(str(self.record) + ".pipeline.log")
        self.assertEqual(result.returncode, 0,
                         output + (pipeline_log.read_text() if pipeline_log.exists() else ""))
        calls = self.sam_calls()
        self.assertEqual([call[0] for call in calls], ["deploy"], "no sam build: the release is built")
        template = Path(calls[0][calls[0].index("--template-file") + 1])
        self.assertEqual(template, (RELEASE_DIR / "template-x86_64.yaml").resolve())
        self.assertIn("COMPLETED after", output, "the smoke test followed it to COMPLETED")
        self.assertIn("--template-file <release folder>/template-x86_64.yaml", output, "later deploys")

    def test_a_changed_or_partial_release_is_refused_before_anything(self):
        altered = self.dir / "altered"
        shutil.copytree(RELEASE_DIR, altered)
        zipped = altered / "functions" / "x86_64" / "worker.zip"
        zipped.write_bytes(zipped.read_bytes() + b"\0")
        result = self.deploy(altered)
        self.assertEqual(result.returncode, 1)
        self.assertIn("functions/x86_64/worker.zip does not match its checksum", result.stderr)
        self.assertEqual(self.sam_calls(), [], "nothing deployed")

        zipped.unlink()
        result = self.deploy(altered)
        self.assertIn("functions/x86_64/worker.zip is missing", result.stderr)

        arm = self.deploy(RELEASE_DIR, "--architecture", "arm64")
        self.assertEqual(arm.returncode, 1)
        self.assertIn("holds no arm64 build: give --architecture x86_64", arm.stderr)
        self.assertEqual(self.sam_calls(), [])

    def test_a_release_of_another_commit_sends_the_checkout_to_its_tag_before_anything(self):
        """The wizard is this checkout's and the catalog the release's: a
        clone of another commit (main, while the release is last month's)
        is told which to check out, in one line, and nothing is deployed."""
        packaged = json.loads((RELEASE_DIR / "release.json").read_text())
        here = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
        self.assertEqual(packaged["commit"], here, "make package records the commit it built")
        older = self.dir / "older"
        shutil.copytree(RELEASE_DIR, older)
        (older / "release.json").write_text(json.dumps({**packaged, "version": "9.9.9", "commit": "0" * 40}))
        digest = hashlib.sha256((older / "release.json").read_bytes()).hexdigest()
        sums = (older / "SHA256SUMS").read_text().splitlines()
        (older / "SHA256SUMS").write_text("".join(
            (f"{digest}  release.json" if line.endswith("  release.json") else line) + "\n" for line in sums))
        result = self.deploy(older)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn("git fetch --tags && git checkout v9.9.9, then make deploy again", result.stderr)
        self.assertEqual(self.sam_calls(), [], "nothing deployed")

    def test_the_receipts_cli_is_looked_for_in_the_folder_before_anything_is_installed(self):
        del self.env["RECEIPTS_BIN"]
        packaged = subprocess.run([str(RELEASE_DIR / "receipts"), "--version"], capture_output=True, text=True)
        self.assertEqual(packaged.returncode, 0, "make package puts a working receipts CLI in the folder")
        folder = self.dir / "release"
        shutil.copytree(RELEASE_DIR, folder)
        aside = self.dir / "receipts-aside"
        (folder / "receipts").rename(aside)

        def preflight():
            return subprocess.run([sys.executable, str(ROOT / "scripts/deploy.py"), "--preflight", "--release",
                                   str(folder), "--architecture", "x86_64"],
                                  cwd=self.dir, capture_output=True, text=True, env=self.env, timeout=60)
        missing = preflight()
        self.assertEqual(missing.returncode, 1, missing.stderr)
        self.assertIn("RECEIPTS_BIN", missing.stderr, "what to do, in one line")
        self.assertEqual(len(missing.stderr.strip().splitlines()), 1, missing.stderr)
        aside.rename(folder / "receipts")
        found = preflight()
        self.assertEqual(found.returncode, 0, found.stderr)
        self.assertEqual(self.sam_calls(), [], "nothing deployed")

    def test_without_the_receipts_cli_it_says_so_before_deploying(self):
        del self.env["RECEIPTS_BIN"]
        self.assertIsNone(shutil.which("receipts", path=self.env["PATH"]))
        # A folder without the packaged CLI (one built for another machine,
        # which does not run here, is passed over the same way).
        without = self.dir / "without-cli"
        shutil.copytree(RELEASE_DIR, without)
        (without / "receipts").unlink()
        result = self.deploy(without)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn("the receipts CLI runs the smoke test", result.stderr)
        self.assertIn("Deploy without Rust", result.stderr)
        self.assertEqual(self.sam_calls(), [], "nothing deployed")
        self.assertEqual(self.deploy(without, "--no-smoke").returncode, 0, "--no-smoke needs none")

    def test_make_deploy_from_a_release_needs_no_rust_and_says_what_is_missing_first(self):
        env = {key: value for key, value in self.env.items() if not key.startswith("AWS_")}
        env.update({"HOME": str(self.dir), "AWS_EC2_METADATA_DISABLED": "true", "RELEASE": str(RELEASE_DIR)})
        result = subprocess.run(["bash", str(ROOT / "scripts/deploy.sh"), "--architecture", "x86_64"],
                                capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn("no AWS credentials", result.stderr)
        self.assertNotIn("cargo", result.stdout + result.stderr)
        self.assertNotIn("installing", result.stdout + result.stderr)

    def test_the_readmes_commands_run_as_written_fetch_a_release_that_deploys(self):
        """README's "Deploy without Rust" block, word for word but for the
        releases page (a server on the loopback holding the two archives as
        the release workflow attaches them), in a clone, for a user whose
        HOME has no ~/.local/bin yet; `make` a stand-in that records what
        it was asked, the release it names then deployed as above."""
        readme = (ROOT / "README.md").read_text()
        section = readme.split("\n## Deploy without Rust\n", 1)[1].split("\n## ", 1)[0]
        block = section.split("```sh\n", 1)[1].split("```", 1)[0]
        releases = "https://github.com/$REPO/releases/latest/download/"
        self.assertEqual(block.count(releases), 2, block)
        self.assertIsNotNone(shutil.which("curl"), "curl is missing: the README's commands use it "
                             "(apt-get install curl)")

        served = self.dir / "served"
        served.mkdir()
        machine = {"arm64": "aarch64"}.get(platform.machine(), platform.machine())
        system = {"Linux": "unknown-linux-gnu", "Darwin": "apple-darwin"}[platform.system()]
        # As taiki-e/upload-rust-binary-action archives it: the binary alone,
        # no leading folder; and make package's folder as release.yml tars it.
        with tarfile.open(served / f"receipts-{machine}-{system}.tar.gz", "w:gz") as archive:
            archive.add(FUNCTION_BIN_DIR / "receipts", arcname="receipts")
        with tarfile.open(served / "staticforms-to-crm-release.tar.gz", "w:gz") as archive:
            archive.add(RELEASE_DIR, arcname="staticforms-to-crm-release")
        handler = functools.partial(QuietFiles, directory=str(served))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        script = block.replace(releases, f"http://127.0.0.1:{server.server_port}/")

        clone = self.dir / "clone"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        home = self.dir / "home"
        home.mkdir()
        asked = self.dir / "make-asked"
        (self.dir / "bin" / "make").write_text(
            f"#!/bin/sh\nprintf '%s\\n' \"$PWD\" \"$@\" > {asked}\n")
        (self.dir / "bin" / "make").chmod(0o755)
        env = {**self.env, "HOME": str(home),
               "PATH": os.pathsep.join([str(home / ".local" / "bin"), self.env["PATH"]])}
        del env["RECEIPTS_BIN"]
        ran = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=clone, env=env,
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(ran.returncode, 0, ran.stdout + ran.stderr)
        installed = home / ".local" / "bin" / "receipts"
        self.assertTrue(os.access(installed, os.X_OK), "the receipts CLI, installed on PATH")
        self.assertEqual(asked.read_text().splitlines(),
                         [str(clone), "deploy", "RELEASE=staticforms-to-crm-release"])

        result = self.deploy(clone / "staticforms-to-crm-release")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("COMPLETED after", result.stdout + result.stderr)

    def test_the_package_holds_each_functions_zip_and_a_template_that_names_it(self):
        release = json.loads((RELEASE_DIR / "release.json").read_text())
        self.assertIn("x86_64", release["architectures"])
        template = (RELEASE_DIR / "template-x86_64.yaml").read_text()
        for binary in ("ingest", "worker"):
            self.assertIn(f"functions/x86_64/{binary}.zip", template)
        self.assertEqual(json.loads((RELEASE_DIR / "catalog.json").read_text()),
                         json.loads((ROOT / ".tools" / "catalog.json").read_text()),
                         "the catalog make deploy writes from this checkout")


if __name__ == "__main__":
    unittest.main(verbosity=2)
