#!/usr/bin/env bash
# `make sam ARGS="..."`: the pinned SAM CLI in .tools/sam-venv (installed by
# make deploy, or here when missing), with cargo-lambda and zig on PATH:
# make sam ARGS="deploy --config-env <stack>", "logs --stack-name <stack>",
# "delete --stack-name <stack>".
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
check_everyday_prerequisites
ensure_deploy_tools
export PATH="$SAM_VENV/bin:$PATH" SAM_CLI_TELEMETRY=0
# shellcheck disable=SC2086 # ARGS is split on purpose: SAM's arguments.
exec sam ${ARGS:-} "$@"
