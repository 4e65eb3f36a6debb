#!/usr/bin/env bash
# `make deploy`: checks what it cannot install, installs the pinned SAM CLI
# (and, to build from source, cargo-lambda and zig) into .tools/sam-venv,
# then asks what it must and deploys (scripts/deploy.py).
# From a release (make deploy RELEASE=<folder>): no Rust, no build.
# Flags for a non-interactive run: make deploy ARGS="--help".
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
release=()
[[ -z "${RELEASE:-}" ]] || release=(--release "$RELEASE")

# The wizard's questions and flags come from the catalog: a release's own
# catalog.json, or, from source, the one shared's `catalog` binary writes
# (it builds the shared crate alone).
write_catalog() {
  [[ -z "${RELEASE:-}" ]] || return 0
  need cargo "install the Rust toolchain (rustup), or deploy a release without Rust: make deploy RELEASE=<folder> (README)"
  mkdir -p "$TOOLS"
  cargo run --quiet --locked -p shared --bin catalog >"$TOOLS/catalog.json.new"
  mv "$TOOLS/catalog.json.new" "$TOOLS/catalog.json"
}

# Help before anything is installed: the wizard reads its flags with the
# standard library alone.
for arg in ${ARGS:-} "$@"; do
  case "$arg" in
    -h | --help)
      write_catalog
      exec python3 scripts/deploy.py ${release[@]+"${release[@]}"} --help
      ;;
  esac
done
if [[ -n "${RELEASE:-}" ]]; then
  check_everyday_prerequisites no-rust
else
  check_everyday_prerequisites
fi
# What cannot be installed (credentials; to build: cargo, the arm64 target)
# is checked before anything is: standard library only, in a second or two.
# shellcheck disable=SC2086 # ARGS is split on purpose: several flags.
python3 scripts/deploy.py --preflight ${release[@]+"${release[@]}"} ${ARGS:-} "$@"
write_catalog
if [[ -n "${RELEASE:-}" ]]; then ensure_sam_tools; else ensure_deploy_tools; fi
export PATH="$SAM_VENV/bin:$PATH" SAM_CLI_TELEMETRY=0
# shellcheck disable=SC2086 # ARGS is split on purpose: several flags.
exec "$SAM_VENV/bin/python" scripts/deploy.py ${release[@]+"${release[@]}"} ${ARGS:-} "$@"
