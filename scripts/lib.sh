# Shared by scripts/test.sh and scripts/run.sh: installs the pinned local
# tools into .tools/ (git-ignored) and starts local servers on free ports.
# Sourced, not run.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS="$ROOT/.tools"
VENV="$TOOLS/venv"
SAM_VENV="$TOOLS/sam-venv"
NODE_PREFIX="$TOOLS/node"
DYNALITE_VERSION=4.0.0
SERVER_PIDS=()

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

need() {
  command -v "$1" >/dev/null 2>&1 || die "$1 is required: $2"
}

# Installs a pinned requirements file into a project-local virtualenv,
# again only when the file changes.
ensure_venv() {
  local venv=$1 requirements=$2 what=$3
  need python3 "install Python 3.11 with pip"
  local stamp="$venv/.installed" wanted
  wanted=$(sha256sum "$requirements" | cut -d' ' -f1)
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]]; then return; fi
  say "installing pinned $what into ${venv#"$ROOT"/}"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  echo "$wanted" > "$stamp"
}

# moto's server and the standardwebhooks reference package.
ensure_python_tools() {
  ensure_venv "$VENV" "$ROOT/scripts/requirements-local.txt" "local servers"
}

# aws-sam-cli, cfn-lint, cargo-lambda and zig, apart from moto's pins.
ensure_deploy_tools() {
  ensure_venv "$SAM_VENV" "$ROOT/scripts/requirements-deploy.txt" "SAM, cfn-lint, cargo-lambda and zig"
}

# dynalite into .tools/node.
ensure_node_tools() {
  need npm "install Node.js 20 with npm"
  if [[ -x "$NODE_PREFIX/node_modules/.bin/dynalite" ]] &&
     grep -q "\"version\": \"$DYNALITE_VERSION\"" "$NODE_PREFIX/node_modules/dynalite/package.json" 2>/dev/null; then
    return
  fi
  say "installing dynalite $DYNALITE_VERSION into .tools/node"
  mkdir -p "$NODE_PREFIX"
  npm install --prefix "$NODE_PREFIX" --no-audit --no-fund --loglevel=error "dynalite@$DYNALITE_VERSION" >/dev/null
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits until a DynamoDB-protocol server on $1 answers ListTables.
wait_for_dynamodb() {
  local url=$1 name=$2
  python3 - "$url" "$name" <<'PY'
import sys, time, urllib.request
url, name = sys.argv[1], sys.argv[2]
headers = {
    "X-Amz-Target": "DynamoDB_20120810.ListTables",
    "Content-Type": "application/x-amz-json-1.0",
    "Authorization": "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0",
    "X-Amz-Date": "20260101T000000Z",
}
deadline = time.time() + 30
while time.time() < deadline:
    try:
        urllib.request.urlopen(urllib.request.Request(url, data=b"{}", headers=headers), timeout=2).read()
        sys.exit(0)
    except Exception:
        time.sleep(0.2)
sys.exit(f"{name} did not start on {url} within 30 s")
PY
}

# Starts moto's server; prints its URL.
start_moto() {
  local port log="$TOOLS/moto.log"
  port=$(free_port)
  "$VENV/bin/moto_server" -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
  SERVER_PIDS+=($!)
  wait_for_dynamodb "http://127.0.0.1:$port" "moto" || { cat "$log" >&2; exit 1; }
  echo "http://127.0.0.1:$port"
}

# Starts dynalite (in memory); prints its URL.
start_dynalite() {
  local port log="$TOOLS/dynalite.log"
  port=$(free_port)
  "$NODE_PREFIX/node_modules/.bin/dynalite" --port "$port" >"$log" 2>&1 &
  SERVER_PIDS+=($!)
  wait_for_dynamodb "http://127.0.0.1:$port" "dynalite" || { cat "$log" >&2; exit 1; }
  echo "http://127.0.0.1:$port"
}

stop_servers() {
  local pid
  for pid in "${SERVER_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${SERVER_PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  SERVER_PIDS=()
}
