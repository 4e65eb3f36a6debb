#!/usr/bin/env bash
# `make sam ARGS="..."`: the pinned SAM CLI in .tools/sam-venv (installed by
# make deploy, or here when missing):
# make sam ARGS="deploy --config-env <stack>", "logs --stack-name <stack>",
# "delete --stack-name <stack>". Only `build` needs Rust: then cargo-lambda
# and zig are installed beside SAM and put on PATH.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
# shellcheck disable=SC2086 # ARGS is split on purpose: SAM's arguments.
set -- ${ARGS:-} "$@"
if [[ " $* " == *" build "* ]]; then
  check_everyday_prerequisites
  ensure_deploy_tools
else
  check_everyday_prerequisites no-rust
  ensure_sam_tools
fi
export PATH="$SAM_VENV/bin:$PATH" SAM_CLI_TELEMETRY=0
exec sam "$@"
