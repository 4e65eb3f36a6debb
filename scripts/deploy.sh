#!/usr/bin/env bash
# `make deploy`: checks what it cannot install, installs the pinned SAM CLI
# (and, to build from source, cargo-lambda and zig) into .tools/sam-venv,
# then asks what it must and deploys (scripts/deploy.py).
# From a release (make deploy RELEASE=<folder>): no Rust, no build.
# Flags for a non-interactive run: make deploy ARGS="--help".
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
# Help before anything is installed: the wizard reads its flags with the
# standard library alone.
for arg in ${ARGS:-} "$@"; do
  case "$arg" in -h | --help) exec python3 scripts/deploy.py --help ;; esac
done
release=()
if [[ -n "${RELEASE:-}" ]]; then
  release=(--release "$RELEASE")
  check_everyday_prerequisites no-rust
else
  check_everyday_prerequisites
fi
# What cannot be installed (credentials; to build: cargo, the arm64 target)
# is checked before anything is: standard library only, in a second or two.
# shellcheck disable=SC2086 # ARGS is split on purpose: several flags.
python3 scripts/deploy.py --preflight ${release[@]+"${release[@]}"} ${ARGS:-} "$@"
if [[ -n "${RELEASE:-}" ]]; then ensure_sam_tools; else ensure_deploy_tools; fi
export PATH="$SAM_VENV/bin:$PATH" SAM_CLI_TELEMETRY=0
# shellcheck disable=SC2086 # ARGS is split on purpose: several flags.
exec "$SAM_VENV/bin/python" scripts/deploy.py ${release[@]+"${release[@]}"} ${ARGS:-} "$@"
