#!/usr/bin/env bash
# `make deploy`: checks what it cannot install, installs the pinned SAM,
# cargo-lambda and zig into .tools/sam-venv, then asks what it must and
# deploys (scripts/deploy.py).
# Flags for a non-interactive run: make deploy ARGS="--help".
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
# Help before anything is installed: the wizard reads its flags with the
# standard library alone.
for arg in ${ARGS:-} "$@"; do
  case "$arg" in -h | --help) exec python3 scripts/deploy.py --help ;; esac
done
check_everyday_prerequisites
# What cannot be installed (credentials, cargo, the arm64 target) is checked
# before anything is: standard library only, in a second or two.
# shellcheck disable=SC2086 # ARGS is split on purpose: several flags.
python3 scripts/deploy.py --preflight ${ARGS:-} "$@"
ensure_deploy_tools
export PATH="$SAM_VENV/bin:$PATH" SAM_CLI_TELEMETRY=0
# shellcheck disable=SC2086 # ARGS is split on purpose: several flags.
exec "$SAM_VENV/bin/python" scripts/deploy.py ${ARGS:-} "$@"
