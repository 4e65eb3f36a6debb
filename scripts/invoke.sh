#!/usr/bin/env bash
# `make invoke FUNCTION=IngestFunction EVENT=events/ingest-valid.json`: the
# real `sam local invoke` of one function with one event, in Docker, against
# local stand-ins. It installs and starts what it needs: Docker (Debian's
# docker.io, as root), a stand-in for the Lambda base image, `sam build`,
# and on Docker's bridge address, where the function's container reaches
# them, moto's DynamoDB with the tables from template.yaml (port 9100) and
# the CRM stub (port 9101). Those two keep running between invokes, so the
# second delivery of a submission is a duplicate; `make invoke-stop` stops
# them.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

STATE="$TOOLS/invoke"
DYNAMODB_PORT=${INVOKE_DYNAMODB_PORT:-9100}
CRM_PORT=${INVOKE_CRM_PORT:-9101}

stop() {
  local pidfile
  for pidfile in "$STATE"/*.pid; do
    [[ -f "$pidfile" ]] || continue
    kill "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
  done
  say "stopped the local DynamoDB and CRM stub of make invoke"
}

running() { [[ -f "$STATE/$1.pid" ]] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

# Waits for an HTTP server at $1 to answer anything.
wait_for_http() {
  python3 - "$1" <<'PY'
import sys, time, urllib.request, urllib.error
deadline = time.time() + 30
while time.time() < deadline:
    try:
        urllib.request.urlopen(sys.argv[1], timeout=1)
        sys.exit(0)
    except urllib.error.HTTPError:
        sys.exit(0)
    except Exception:
        time.sleep(0.2)
sys.exit(f"nothing answers at {sys.argv[1]}")
PY
}

if [[ "${1:-}" == "stop" ]]; then
  stop
  exit 0
fi

FUNCTION=${FUNCTION:-}
EVENT=${EVENT:-}
[[ -n "$FUNCTION" && -n "$EVENT" ]] ||
  die "usage: make invoke FUNCTION=IngestFunction|WorkerFunction EVENT=events/<file>.json"
[[ -f "$EVENT" ]] || die "no event file $EVENT"

check_prerequisites
ensure_python_tools
ensure_deploy_tools
export PATH="$SAM_VENV/bin:$PATH"
ensure_docker
ensure_invoke_image
mkdir -p "$STATE"
bridge=$(docker_bridge_address)

if [[ ! -f .aws-sam/build/template.yaml || -n "$(find functions shared template.yaml Cargo.lock -newer .aws-sam/build/template.yaml -print -quit)" ]]; then
  say "sam build for $(host_architecture)"
  sam build --parameter-overrides "Architecture=$(host_architecture)" --beta-features --no-cached >"$STATE/build.log" 2>&1 ||
    { tail -20 "$STATE/build.log" >&2; die "sam build failed: see .tools/invoke/build.log"; }
fi

if ! running dynamodb; then
  say "starting moto's DynamoDB on $bridge:$DYNAMODB_PORT"
  setsid "$VENV/bin/moto_server" -H "$bridge" -p "$DYNAMODB_PORT" >"$STATE/moto.log" 2>&1 </dev/null &
  echo $! >"$STATE/dynamodb.pid"
  wait_for_dynamodb "http://$bridge:$DYNAMODB_PORT" "moto" || { cat "$STATE/moto.log" >&2; exit 1; }
  cargo build --locked -q -p devtools --bin create-tables --bin crm-stub
  DYNAMODB_ENDPOINT="http://$bridge:$DYNAMODB_PORT" "$(debug_bin_dir)/create-tables" >/dev/null
fi
if ! running crm; then
  cargo build --locked -q -p devtools --bin crm-stub
  say "starting the CRM stub on $bridge:$CRM_PORT"
  CRM_ADDRESS="$bridge:$CRM_PORT" setsid "$(debug_bin_dir)/crm-stub" >"$STATE/crm.log" 2>&1 </dev/null &
  echo $! >"$STATE/crm.pid"
  wait_for_http "http://$bridge:$CRM_PORT/leads"
fi

local_env_for "http://$bridge:$DYNAMODB_PORT" "http://$bridge:$CRM_PORT" >"$STATE/local-env.json"
# SENDER=<name>: ingest as a stack of that sender, checking its own
# signature with the local signing secret (the samples' and make
# sign-event's).
if [[ -n "${SENDER:-}" ]]; then
  python3 - "$STATE/local-env.json" "$SENDER" <<'PY'
import json, sys
path, sender = sys.argv[1], sys.argv[2]
env = json.load(open(path))
env["IngestFunction"].update({"SENDER": sender, "WEBHOOK_AUTH": "", "IDEMPOTENCY_KEY": "",
                              "WEBHOOK_API_KEYS": "", "WEBHOOK_SECRETS": "local-demo-signing-secret"})
json.dump(env, open(path, "w"))
PY
fi
say "sam local invoke $FUNCTION --event $EVENT (env: .tools/invoke/local-env.json)"
sam_local_invoke "$FUNCTION" "$EVENT" "$STATE/local-env.json"
echo
say "CRM stub: curl http://$bridge:$CRM_PORT/leads   stop both: make invoke-stop"
