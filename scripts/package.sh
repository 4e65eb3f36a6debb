#!/usr/bin/env bash
# `make package [VERSION=<v>] [ARCHITECTURES="arm64 x86_64"]`: the function
# zips, a template for each architecture and checksums, in
# dist/staticforms-to-crm-<version>/, for a deploy without Rust
# (make deploy RELEASE=<that folder>). scripts/package.py says what it writes.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
check_everyday_prerequisites
ensure_deploy_tools
export PATH="$SAM_VENV/bin:$PATH" SAM_CLI_TELEMETRY=0
exec "$SAM_VENV/bin/python" scripts/package.py
