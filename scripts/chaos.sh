#!/usr/bin/env bash
# make chaos: the promise, demonstrated. Submissions through the local
# pipeline while both functions are killed with SIGKILL at random and the
# CRM stub fails and answers late at random; then it counts that every
# accepted submission is one lead and every receipt COMPLETED.
#   make chaos [SUBMISSIONS=1000] [SEED=<number>]   (the seed repeats a run)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
trap stop_servers EXIT

check_everyday_prerequisites
ensure_python_tools

say "building the functions and the chaos run"
cargo build --locked -p ingest -p worker -p devtools

say "starting moto's DynamoDB server"
start_moto >"$TOOLS/chaos-moto.url"

args=(--submissions "${SUBMISSIONS:-1000}")
[[ -z "${SEED:-}" ]] || args+=(--seed "$SEED")
DYNAMODB_ENDPOINT=$(cat "$TOOLS/chaos-moto.url") \
FUNCTION_BIN_DIR="$(debug_bin_dir)" \
  "$(debug_bin_dir)/chaos" "${args[@]}"
