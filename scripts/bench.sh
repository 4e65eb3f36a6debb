#!/usr/bin/env bash
# make bench: a load test of the local pipeline (the real functions, the
# stream pump, the CRM stub), with every DynamoDB write counted. Prints
# accepted/s, the webhook's answer and the submission-to-CRM time (p50,
# p99), CRM calls and write units per lead.
#   make bench [N=200] [RATE=50] [CRM_DELAY_MS=50]   (RATE=0: as fast as accepted)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
trap stop_servers EXIT

check_everyday_prerequisites
ensure_python_tools

say "building the functions and the bench"
cargo build --locked -p ingest -p worker -p devtools

say "starting moto's DynamoDB server"
start_moto >"$TOOLS/bench-moto.url"

DYNAMODB_ENDPOINT=$(cat "$TOOLS/bench-moto.url") \
FUNCTION_BIN_DIR="$(debug_bin_dir)" \
  "$(debug_bin_dir)/bench"
