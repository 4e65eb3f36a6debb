#!/usr/bin/env bash
# The test command: everything, from a fresh machine. Installs the pinned
# local servers into .tools/, starts them on free ports, runs every check
# and test, and stops them again.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
trap stop_servers EXIT

need cargo "install the Rust toolchain (rustup)"

say "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

say "unit, handler, adapter and CRM tests (no server needed)"
cargo test --workspace --exclude integration --locked

say "integration tests against local DynamoDB-protocol servers"
# The local-pipeline test runs the real function binaries.
cargo build --locked -p ingest -p worker -p devtools
ensure_python_tools
ensure_node_tools
# Started in this shell (not in a $(...) subshell) so the trap can stop them.
start_moto >"$TOOLS/moto.url"
start_dynalite >"$TOOLS/dynalite.url"
DYNAMODB_ENDPOINT=$(cat "$TOOLS/moto.url") \
DYNALITE_ENDPOINT=$(cat "$TOOLS/dynalite.url") \
FUNCTION_BIN_DIR="$ROOT/target/debug" \
STANDARDWEBHOOKS_PYTHON="$VENV/bin/python" \
  cargo test -p integration --locked

say "template: cfn-lint, sam validate --lint, sam build"
ensure_deploy_tools
export PATH="$SAM_VENV/bin:$PATH" SAM_CLI_TELEMETRY=0
cfn-lint template.yaml
sam validate --lint --region us-east-1
# This machine has only the x86_64 standard library; users build arm64 (README).
sam build --parameter-overrides Architecture=x86_64 --beta-features
for function in IngestFunction WorkerFunction; do
  bootstrap=".aws-sam/build/$function/bootstrap"
  [[ -x "$bootstrap" ]] || die "sam build produced no $bootstrap"
  say "$function bootstrap: $(stat -c %s "$bootstrap") bytes"
done

say "all checks passed"
