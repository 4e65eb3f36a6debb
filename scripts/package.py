"""`make package`: the artifacts a deployment needs without Rust.

For each architecture asked (ARCHITECTURES, default both), builds both
functions with the pinned `sam build` (cargo-lambda and zig, as make deploy
builds them), zips each `bootstrap`, and writes a template whose functions'
CodeUri is that zip: `sam deploy --template-file` uploads it as it is, with
no build. Beside them: the `receipts` CLI for the machine that packages
(make deploy runs the smoke test with it; RECEIPTS_BIN names one already
built, else it is built with `cargo build --release`), the catalog make
deploy's wizard reads, and SHA256SUMS, which make deploy checks before it
deploys anything.

    dist/staticforms-to-crm-<version>/
      template-arm64.yaml  template-x86_64.yaml
      functions/arm64/ingest.zip  functions/arm64/worker.zip  (and x86_64)
      receipts  catalog.json  release.json  SHA256SUMS

The release workflow (.github/workflows/release.yml) runs this same step and
attaches the folder's files to the GitHub release. Run under the SAM
virtualenv's Python (scripts/package.sh): it reads and writes the template
with SAM's own YAML helpers, which keep CloudFormation's short tags.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from samcli.yamlhelper import yaml_dump, yaml_parse

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURES = ("arm64", "x86_64")
# The template's function resources and the binary each runs.
FUNCTIONS = {"IngestFunction": "ingest", "WorkerFunction": "worker"}
# A fixed time for every zip entry: the same binary gives the same zip.
ZIP_TIME = (2020, 1, 1, 0, 0, 0)
VERSION = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._-]{0,63}$")


def say(text: str) -> None:
    print(f"package: {text}", flush=True)


# What `sam build` prints that does not apply here: its beta-feature
# banners, and its advice after the build (`sam deploy --guided`), since
# make deploy RELEASE= deploys the folder.
SAM_NOISE = re.compile(r"beta|experimental|terms of use", re.IGNORECASE)
SAM_ADVICE = "Commands you can use next"


def build(architecture: str, build_dir: Path) -> None:
    """`sam build` for one architecture: the bootstraps in build_dir. Its
    progress (each function, cargo's crates) is shown as it comes, less
    SAM_NOISE and its advice."""
    # --no-cached: a cached build first hashes everything under CodeUri (the
    # workspace, target/ included: minutes); cargo caches the build itself.
    command = ["sam", "build", "--beta-features", "--no-cached", "--build-dir", str(build_dir),
               "--parameter-overrides", f"Architecture={architecture}"]
    say(f"building both functions for {architecture} (a first build takes minutes): " + " ".join(command))
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    advice = False
    assert process.stdout is not None
    for line in process.stdout:
        advice = advice or SAM_ADVICE in line
        if not advice and not SAM_NOISE.search(line):
            print(f"  {line.rstrip()}", flush=True)
    if process.wait() != 0:
        sys.exit(f"make package: sam build for {architecture} failed (see above)")


def receipts_cli(out: Path) -> None:
    """The receipts CLI for this machine, into the folder."""
    given = os.environ.get("RECEIPTS_BIN")
    if given:
        built = Path(given)
    else:
        say("building the receipts CLI for this machine: cargo build --release -p receipts")
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "receipts"], cwd=ROOT, check=True)
        built = ROOT / "target" / "release" / "receipts"
    if not built.is_file():
        sys.exit(f"make package: no receipts CLI at {built}")
    shutil.copy2(built, out / "receipts")
    (out / "receipts").chmod(0o755)
    say("receipts CLI: " + subprocess.run([str(out / "receipts"), "--version"], capture_output=True,
                                          text=True, check=True).stdout.strip())


def zip_bootstrap(bootstrap: Path, target: Path) -> None:
    """`bootstrap` alone, executable, at a fixed time: Lambda's custom
    runtime runs the file of that name."""
    target.parent.mkdir(parents=True, exist_ok=True)
    entry = zipfile.ZipInfo("bootstrap", date_time=ZIP_TIME)
    entry.external_attr = 0o100755 << 16
    entry.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(target, "w") as archive:
        archive.writestr(entry, bootstrap.read_bytes())


def packaged_template(built: Path, architecture: str) -> str:
    """The template sam build wrote, with each function's CodeUri its zip
    (relative to the template) and the one architecture it was built for."""
    template = yaml_parse(built.read_text())
    for resource, binary in FUNCTIONS.items():
        function = template["Resources"][resource]
        function["Properties"]["CodeUri"] = f"functions/{architecture}/{binary}.zip"
        # Built: nothing is left for `sam build` to do.
        for built in ("BuildMethod", "BuildProperties"):
            function.get("Metadata", {}).pop(built, None)
    parameter = template["Parameters"]["Architecture"]
    parameter["Default"] = architecture
    parameter["AllowedValues"] = [architecture]
    return yaml_dump(template)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> int:
    version = os.environ.get("VERSION") or "dev"
    if not VERSION.match(version):
        sys.exit(f"make package: VERSION={version!r}: letters, digits, '.', '_' and '-' only")
    asked = (os.environ.get("ARCHITECTURES") or " ".join(ARCHITECTURES)).split()
    unknown = [a for a in asked if a not in ARCHITECTURES]
    if unknown or not asked:
        sys.exit(f"make package: ARCHITECTURES={' '.join(asked)!r}: give arm64, x86_64 or both")
    out = Path(os.environ.get("PACKAGE_DIR") or ROOT / "dist" / f"staticforms-to-crm-{version}")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for architecture in asked:
        build_dir = ROOT / ".aws-sam" / f"build-{architecture}"
        build(architecture, build_dir)
        for resource, binary in FUNCTIONS.items():
            bootstrap = build_dir / resource / "bootstrap"
            if not bootstrap.is_file():
                sys.exit(f"make package: sam build produced no {bootstrap}")
            zip_bootstrap(bootstrap, out / "functions" / architecture / f"{binary}.zip")
            say(f"{architecture} {binary}: functions/{architecture}/{binary}.zip")
        (out / f"template-{architecture}.yaml").write_text(
            packaged_template(build_dir / "template.yaml", architecture))
    receipts_cli(out)
    # The wizard's questions for this build, written from its code.
    catalog = subprocess.run(["cargo", "run", "--quiet", "--locked", "-p", "shared", "--bin", "catalog"],
                             cwd=ROOT, check=True, capture_output=True, text=True).stdout
    (out / "catalog.json").write_text(catalog)
    # The commit it was built from: make deploy runs this checkout's wizard
    # on the release, and refuses a checkout of another commit.
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, check=True, capture_output=True,
                            text=True).stdout.strip()
    (out / "release.json").write_text(json.dumps(
        {"name": "staticforms-to-crm", "version": version, "commit": commit, "architectures": asked},
        indent=2) + "\n")
    files = sorted(p for p in out.rglob("*") if p.is_file() and p.name != "SHA256SUMS")
    (out / "SHA256SUMS").write_text(
        "".join(f"{sha256(p)}  {p.relative_to(out).as_posix()}\n" for p in files))
    say(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}: "
        + ", ".join(p.relative_to(out).as_posix() for p in files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
