#!/usr/bin/env bash
# Local iteration with cargo-lambda: starts moto's DynamoDB server, creates
# the tables from template.yaml, and runs `cargo lambda watch`, which
# rebuilds and restarts the functions on every change. Invoke them with
# `cargo lambda invoke` and the files in events/ (see README).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
trap stop_servers EXIT

check_everyday_prerequisites
need_free_port "${WATCH_PORT:-9000}" WATCH_PORT
ensure_python_tools
ensure_deploy_tools
export PATH="$SAM_VENV/bin:$PATH"

say "starting moto's DynamoDB server"
start_moto >"$TOOLS/watch-moto.url"
cargo build --locked -p devtools --bin create-tables
DYNAMODB_ENDPOINT=$(cat "$TOOLS/watch-moto.url") "$(debug_bin_dir)/create-tables"

# One environment for both functions: each reads only its own variables.
cat >"$TOOLS/watch.env" <<ENV
AWS_REGION=us-east-1
AWS_ACCESS_KEY_ID=local
AWS_SECRET_ACCESS_KEY=local
AWS_EC2_METADATA_DISABLED=true
AWS_ENDPOINT_URL_DYNAMODB=$(cat "$TOOLS/watch-moto.url")
RECEIPTS_TABLE=staticforms-receipts
WEBHOOK_AUTH=bearer
WEBHOOK_SECRETS=local-demo-token-change-me
DESTINATION=dynamodb
LEADS_TABLE=staticforms-leads
ENV

say "cargo lambda watch on 127.0.0.1:${WATCH_PORT:-9000} (Ctrl-C stops it)"
cargo lambda watch --invoke-address 127.0.0.1 --invoke-port "${WATCH_PORT:-9000}" --env-file "$TOOLS/watch.env"
