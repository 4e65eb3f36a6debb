#!/usr/bin/env bash
# The test command: everything, from a fresh machine. Installs the pinned
# local servers into .tools/, starts them on free ports, runs every check
# and test, and stops them again.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
trap stop_servers EXIT

check_prerequisites
# Measured from a fresh clone: 5.9 GB of builds, 1.1 GB of pinned tools.
need_disk_space "$(dirname "$(debug_bin_dir)")" 6500 "make test's build" \
  "free some space, or set CARGO_TARGET_DIR to a folder on a larger disk"
need_disk_space "$TOOLS" 1300 "make test's pinned tools" "free some space"

# Every cargo test run is also written here, to count the tests at the end.
results="$TOOLS/test-results.log"
mkdir -p "$TOOLS"
: >"$results"

# make check: format, lints, and every test that needs no server.
TEST_RESULTS="$results" "$ROOT/scripts/check.sh"

say "integration tests against local DynamoDB-protocol servers"
# The local-pipeline test runs the real function binaries.
cargo build --locked -p ingest -p worker -p receipts -p devtools
ensure_python_tools
ensure_node_tools
ensure_deploy_tools
ensure_chromium
# Started in this shell (not in a $(...) subshell) so the trap can stop them.
start_moto >"$TOOLS/test-moto.url"
start_dynalite >"$TOOLS/dynalite.url"
export DYNAMODB_ENDPOINT DYNALITE_ENDPOINT FUNCTION_BIN_DIR STANDARDWEBHOOKS_PYTHON CHROMEDRIVER
CHROMEDRIVER=/usr/bin/chromedriver
DYNAMODB_ENDPOINT=$(cat "$TOOLS/test-moto.url")
DYNALITE_ENDPOINT=$(cat "$TOOLS/dynalite.url")
FUNCTION_BIN_DIR="$(debug_bin_dir)"
STANDARDWEBHOOKS_PYTHON="$VENV/bin/python"
# The short chaos run shares nothing with the other suites but moto (its
# own tables), and mostly waits on claims to lapse: it runs beside them,
# its test binary started directly (cargo holds the build directory).
chaos_test=$(cargo test -p integration --locked --test chaos --no-run 2>&1 |
  sed -n 's/.*Executable tests\/chaos.rs (\(.*\))/\1/p')
[[ $chaos_test == /* ]] || chaos_test="$ROOT/$chaos_test"
[[ -x "$chaos_test" ]] || die "cargo test --no-run named no chaos test binary"
(cd integration && exec "$chaos_test") >"$TOOLS/chaos-test.log" 2>&1 &
chaos_pid=$!
trap 'kill "$chaos_pid" 2>/dev/null || true; stop_servers' EXIT
cargo test -p integration --locked -- --skip a_short_chaos_run 2>&1 | tee -a "$results"
chaos_status=0
wait "$chaos_pid" || chaos_status=$?
cat "$TOOLS/chaos-test.log" | tee -a "$results"
[[ $chaos_status -eq 0 ]] || die "the short chaos run failed (above)"
trap stop_servers EXIT
unset DYNAMODB_ENDPOINT DYNALITE_ENDPOINT FUNCTION_BIN_DIR STANDARDWEBHOOKS_PYTHON CHROMEDRIVER

say "make deploy's wizard against moto's Secrets Manager and CloudFormation, a stand-in sam on PATH"
# The catalog the wizard reads, as make deploy writes it.
cargo run --quiet --locked -p shared --bin catalog >"$TOOLS/catalog.json"
MOTO_URL=$(cat "$TOOLS/test-moto.url") "$SAM_VENV/bin/python" scripts/test_deploy.py
say "the platform switch (Linux and macOS)"
scripts/test_platform.sh
say "make run's port check: a port just released is free, a held one names its holder"
python3 scripts/test_lib.py

export PATH="$SAM_VENV/bin:$PATH" SAM_CLI_TELEMETRY=0

say "cargo lambda watch: each function invoked with events/"
stop_servers
watch_port=$(free_port)
WATCH_PORT=$watch_port setsid scripts/watch.sh >"$TOOLS/watch.log" 2>&1 &
watch_group=$!
stop_watch() { kill -TERM -- "-$watch_group" 2>/dev/null || true; wait "$watch_group" 2>/dev/null || true; }
trap 'stop_watch; stop_servers' EXIT
for _ in $(seq 1 240); do
  grep -q "starting Runtime server" "$TOOLS/watch.log" && break
  sleep 0.5
done
grep -q "starting Runtime server" "$TOOLS/watch.log" || { cat "$TOOLS/watch.log" >&2; die "cargo lambda watch did not start"; }
invoke() { cargo lambda invoke -A 127.0.0.1 -P "$watch_port" "$1" --data-file "events/$2"; }
invoke ingest ingest-valid.json | grep '"statusCode":202' >/dev/null || die "ingest-valid.json did not answer 202 under cargo lambda watch"
invoke ingest ingest-duplicate.json | grep '"statusCode":200' >/dev/null || die "ingest-duplicate.json did not answer 200"
invoke ingest ingest-wrong-key.json | grep '"statusCode":400' >/dev/null || die "ingest-wrong-key.json did not answer 400"
invoke worker worker-insert.json | grep '"batchItemFailures":\[\]' >/dev/null || die "worker-insert.json left batch item failures"
stop_watch
trap stop_servers EXIT

say "template: cfn-lint, sam validate --lint, sam build"
cfn-lint template.yaml
sam validate --lint --region us-east-1
# The roles as deployed, after the SAM transform (what SAM attaches included).
"$SAM_VENV/bin/python" scripts/transform_template.py >"$TOOLS/transformed-template.json"
"$SAM_VENV/bin/python" scripts/transform_template.py Tracing=Active >"$TOOLS/transformed-template-traced.json"
TRANSFORMED_TEMPLATE="$TOOLS/transformed-template.json" \
TRANSFORMED_TEMPLATE_TRACED="$TOOLS/transformed-template-traced.json" \
  cargo test -p integration --locked --test transformed_template -- --ignored 2>&1 | tee -a "$results"
# Both release binaries in one cargo run first: their link-time
# optimisations (one codegen unit each) run side by side on two cores, and
# sam build's one run per function then finds them built.
cargo lambda build --release --bin ingest --bin worker
# This machine has only the x86_64 standard library; users build arm64 (README).
# --no-cached: a cached build first hashes the whole workspace, target/
# included (minutes); cargo already builds only what changed.
sam build --parameter-overrides Architecture=x86_64 --beta-features --no-cached
for function in IngestFunction WorkerFunction; do
  bootstrap=".aws-sam/build/$function/bootstrap"
  [[ -x "$bootstrap" ]] || die "sam build produced no $bootstrap"
  say "$function bootstrap: $(size_of "$bootstrap") bytes"
done

say "make package (x86_64), then make deploy from it with no cargo on PATH: moto, a stand-in sam, the package's own functions"
# The same step as the release workflow's, for the architecture this
# machine builds; it reuses the build above.
ARCHITECTURES=x86_64 VERSION=test PACKAGE_DIR="$TOOLS/release-test" RECEIPTS_BIN="$(debug_bin_dir)/receipts" \
  scripts/package.sh
start_moto >"$TOOLS/test-moto.url"
MOTO_URL=$(cat "$TOOLS/test-moto.url") RELEASE_DIR="$TOOLS/release-test" FUNCTION_BIN_DIR="$(debug_bin_dir)" \
  "$SAM_VENV/bin/python" scripts/test_release.py
stop_servers

say "sam local invoke: every file in events/, in Docker"
ensure_docker
stop_dockerd() { [[ -z "$STARTED_DOCKERD" ]] || { kill "$STARTED_DOCKERD" 2>/dev/null; wait "$STARTED_DOCKERD" 2>/dev/null || true; }; }
trap 'stop_servers; stop_dockerd' EXIT
ensure_invoke_image
bridge=$(docker_bridge_address)
# moto on Docker's bridge address, where the functions' containers reach it.
start_moto "$bridge" >"$TOOLS/moto-bridge.url"
SAM_INVOKE_IMAGE="$INVOKE_IMAGE" \
SAM_DYNAMODB_ENDPOINT=$(cat "$TOOLS/moto-bridge.url") \
DOCKER_BRIDGE_ADDRESS="$bridge" \
  cargo test -p integration --locked --test sam_local_invoke -- --ignored 2>&1 | tee -a "$results"

say "all checks passed"
awk '/^test result:/ { passed += $4; failed += $6 } END { printf "tests: %d passed, %d failed\n", passed, failed }' "$results"
