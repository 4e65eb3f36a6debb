#!/usr/bin/env bash
# The run command: the whole pipeline on this machine, no cloud. Installs
# moto's server into .tools/, starts it, builds the functions, and runs the
# local pipeline (webhook endpoint, both functions, stream pump, CRM stub).
# Ctrl-C stops everything.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
trap stop_servers EXIT

check_everyday_prerequisites
need_free_port "${WEBHOOK_PORT:-9000}" WEBHOOK_PORT
need_free_port "${CRM_PORT:-9001}" CRM_PORT
ensure_python_tools

say "building the functions and the local pipeline"
cargo build --locked -p ingest -p worker -p receipts -p devtools

say "starting moto's DynamoDB server"
start_moto >"$TOOLS/run-moto.url"

# Not exec: the EXIT trap must stop moto when the pipeline ends.
DYNAMODB_ENDPOINT=$(cat "$TOOLS/run-moto.url") \
FUNCTION_BIN_DIR="$(debug_bin_dir)" \
  "$(debug_bin_dir)/local-pipeline"
