#!/usr/bin/env bash
# The platform switch of scripts/lib.sh, tested on this machine: each
# platform picks its own commands, macOS passes the everyday check and is
# refused by make test's, and a missing tool is named in one line.
# Run by make test; prints "N passed, N failed".
set -uo pipefail
source "$(dirname "$0")/lib.sh"
passed=0 failed=0
expect() {
  local what=$1 expected=$2 actual=$3
  if [[ "$actual" == "$expected" ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAILED %s: expected %q, got %q\n' "$what" "$expected" "$actual" >&2
  fi
}

# Stand-ins that say which command ran, on a PATH of their own.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
for tool in sha256sum shasum setsid stat; do
  printf '#!/bin/sh\necho "%s $*"\n' "$tool" >"$bin/$tool"
  chmod +x "$bin/$tool"
done
with_stand_ins() { PATH="$bin:$PATH" "$@"; }

expect "Linux sha256" "sha256sum" "$(PLATFORM=Linux with_stand_ins sha256_of f)"
expect "macOS sha256" "shasum" "$(PLATFORM=Darwin with_stand_ins sha256_of f)"
expect "Linux size" "stat -c %s f" "$(PLATFORM=Linux with_stand_ins size_of f)"
expect "macOS size" "stat -f %z f" "$(PLATFORM=Darwin with_stand_ins size_of f)"
expect "macOS tools" "shasum stat" "$(PLATFORM=Darwin platform_tools)"

# macOS passes the everyday check (run, watch, check, deploy)...
out=$( (PLATFORM=Darwin with_stand_ins check_everyday_prerequisites) 2>&1); code=$?
expect "macOS everyday check passes" "0" "$code"
# ...and make test's check refuses it in one line that says what works.
out=$( (PLATFORM=Darwin check_prerequisites) 2>&1); code=$?
expect "macOS refused by make test" "1" "$code"
expect "macOS refusal is one line" "1" "$(printf '%s\n' "$out" | wc -l | tr -d ' ')"
[[ "$out" == *"make run, make watch and make check work on macOS"* ]]
expect "macOS refusal says what works" "0" "$?"
# Windows (or anything else) is named.
out=$( (PLATFORM=MINGW64_NT check_everyday_prerequisites) 2>&1); code=$?
expect "other platform refused" "1" "$code"

# A missing platform tool is named in one line.
empty=$(mktemp -d)
ln -s "$(command -v python3)" "$empty/python3"
ln -s "$(command -v cargo)" "$empty/cargo"
ln -s "$bin/stat" "$empty/stat"
out=$( (PLATFORM=Darwin PATH="$empty" check_everyday_prerequisites) 2>&1); code=$?
rm -rf "$empty"
expect "missing shasum fails" "1" "$code"
[[ "$out" == "error: shasum is required: "* ]]
expect "missing shasum is named" "0" "$?"

echo "platform: $passed passed, $failed failed"
((failed == 0))
