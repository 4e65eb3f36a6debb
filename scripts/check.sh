#!/usr/bin/env bash
# The fast check, before every commit (`make check`): format, lints, and
# every test that needs no server, including the template-against-code
# contract. Under 2 minutes on a warm tree. `make test` runs it first, so
# it cannot rot. With TEST_RESULTS set, test output is appended there too.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
check_everyday_prerequisites

say "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The release workflow (.github/workflows/): GitHub's schema and zizmor's
# offline audits (template injection, unpinned actions, credentials kept).
ensure_python_tools
"$VENV/bin/check-jsonschema" --builtin-schema vendor.github-workflows .github/workflows/*.yml
"$VENV/bin/zizmor" --offline --quiet .github/workflows

say "unit, handler, adapter and CRM tests, and the template contract (no server needed)"
results=${TEST_RESULTS:-/dev/null}
cargo test --workspace --exclude integration --locked 2>&1 | tee -a "$results"
# Counted by make test in its integration stage, which runs it again.
cargo test -p integration --locked --test contract --test docs_links --test architecture
