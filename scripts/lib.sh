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

# Every step line carries the time since the outermost script started, so a
# slow CI run shows which stage grew.
export STARTED_AT=${STARTED_AT:-$(date +%s)}
say() {
  local elapsed=$(($(date +%s) - STARTED_AT))
  printf '==> [%d:%02d] %s\n' $((elapsed / 60)) $((elapsed % 60)) "$*" >&2
}
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

need() {
  command -v "$1" >/dev/null 2>&1 || die "$1 is required: $2"
}

# The platform: Linux, or Darwin (macOS). PLATFORM overrides it, so the
# platform switch below is tested on Linux (scripts/test_platform.sh).
platform() {
  echo "${PLATFORM:-$(uname -s)}"
}

# The calls that differ between Linux and macOS, each behind one function:
# a file's SHA-256 and a file's size. (setsid, util-linux only, is used by
# make test and make invoke alone, which need Linux.)
sha256_of() {
  case "$(platform)" in
    Darwin) shasum -a 256 "$1" | cut -d' ' -f1 ;;
    *) sha256sum "$1" | cut -d' ' -f1 ;;
  esac
}

size_of() {
  case "$(platform)" in
    Darwin) stat -f %z "$1" ;;
    *) stat -c %s "$1" ;;
  esac
}

# The tools the platform's functions above need.
platform_tools() {
  case "$(platform)" in
    Darwin) echo "shasum stat" ;;
    Linux) echo "sha256sum setsid stat" ;;
  esac
}

# What make run, make watch, make check and make deploy rely on beyond the
# toolchains, on Linux or macOS: one line each for what is missing. With
# `no-rust` (a deploy from a release), cargo is not needed.
check_everyday_prerequisites() {
  case "$(platform)" in
    Linux | Darwin) ;;
    *) die "these commands run on Linux and macOS; on $(platform) use WSL or a Linux VM" ;;
  esac
  [[ ${1:-} == no-rust ]] || need cargo "install the Rust toolchain (rustup)"
  need python3 "install Python 3 (3.10 or later) with pip"
  local tool
  for tool in $(platform_tools); do
    need "$tool" "install it (Linux: GNU coreutils and util-linux; macOS: it ships with the system)"
  done
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
    die "$(python3 -V 2>&1) is too old: install Python 3.10 or later"
  python3 -c 'import venv, ensurepip' 2>/dev/null ||
    die "python3 cannot create virtualenvs: install python3-venv (Debian/Ubuntu: apt-get install python3-venv)"
}

# make test and make invoke also run `sam local invoke` in Docker, which
# they install and start as root on Debian: Linux only.
check_prerequisites() {
  [[ "$(platform)" == Linux ]] || die "make test and make invoke run on Linux only (they install and start Docker as root for sam local invoke); make run, make watch and make check work on macOS"
  check_everyday_prerequisites
}

# Fails at once when a folder's disk cannot take what is still to be
# written there: a full disk otherwise fails late and obscurely (pip's "No
# space left on device" after minutes of building). What a folder already
# holds counts towards the need, so a warm build needs little.
need_disk_space() {
  local dir=$1 needed_mb=$2 what=$3 remedy=$4 existing=$1 held_mb=0 free_mb
  while [[ ! -d "$existing" ]]; do existing=$(dirname "$existing"); done
  [[ -d "$dir" ]] && held_mb=$(du -sm "$dir" 2>/dev/null | cut -f1)
  free_mb=$(df -Pm "$existing" | awk 'NR == 2 { print $4 }')
  ((free_mb + held_mb >= needed_mb)) ||
    die "$what in $dir needs about $((needed_mb - held_mb)) MB more disk and $free_mb MB are free: $remedy"
}

# Fails at once when a port the command listens on is taken, naming the
# variable that moves it.
# A port is free when a listener can bind it as the pipeline binds
# (SO_REUSEADDR, as tokio does): sockets of a pipeline just stopped, in
# TIME_WAIT, do not hold it. When it is held, says by what, where `ss` can
# tell.
need_free_port() {
  local port=$1 variable=$2 holder
  python3 -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()' "$port" 2>/dev/null && return 0
  holder=$(ss -ltnpH "sport = :$port" 2>/dev/null | grep -o 'users:(("[^"]*",pid=[0-9]*' | head -1 |
    sed -E 's/users:\(\("([^"]*)",pid=([0-9]*)/\1 (pid \2)/') || true
  die "port $port is in use${holder:+ by $holder}: stop it, or set $variable to another port"
}

# Where cargo puts what it builds, as cargo itself sees it: CARGO_TARGET_DIR
# or a build.target-dir setting when set (a shared build cache), else
# target/ in the workspace.
debug_bin_dir() {
  local dir
  dir=$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps --offline 2>/dev/null |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])') ||
    die "cargo metadata failed: is this the workspace?"
  echo "$dir/debug"
}

# Installs a pinned requirements file into a project-local virtualenv,
# again only when the file changes.
ensure_venv() {
  local venv=$1 requirements=$2 what=$3
  need python3 "install Python 3 (3.10 or later) with pip"
  local stamp="$venv/.installed-$(basename "$requirements" .txt)" wanted
  wanted=$(sha256_of "$requirements")
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

# aws-sam-cli alone: what a deploy from a release needs.
ensure_sam_tools() {
  ensure_venv "$SAM_VENV" "$ROOT/scripts/requirements-sam.txt" "SAM CLI"
}

# aws-sam-cli, cfn-lint, cargo-lambda and zig, apart from moto's pins.
ensure_deploy_tools() {
  ensure_sam_tools
  ensure_venv "$SAM_VENV" "$ROOT/scripts/requirements-build.txt" "cfn-lint, cargo-lambda and zig"
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

# A free TCP port on 127.0.0.1, or on the address given.
free_port() {
  python3 -c 'import socket, sys; s=socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "${1:-127.0.0.1}"
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

# Starts moto's server on 127.0.0.1, or on the address given; prints its URL.
# Each command keeps its own URL file (.tools/<command>-moto.url) and log,
# so make run, bench, chaos and test never overwrite each other's.
start_moto() {
  local host=${1:-127.0.0.1} port log
  port=$(free_port "$host")
  log="$TOOLS/moto-$port.log"
  "$VENV/bin/moto_server" -H "$host" -p "$port" >"$log" 2>&1 &
  SERVER_PIDS+=($!)
  wait_for_dynamodb "http://$host:$port" "moto" || { cat "$log" >&2; exit 1; }
  echo "http://$host:$port"
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

# Docker's architecture name for this host, as template.yaml's Architecture.
host_architecture() {
  case "$(uname -m)" in
    x86_64 | amd64) echo x86_64 ;;
    aarch64 | arm64) echo arm64 ;;
    *) die "no Lambda architecture for $(uname -m)" ;;
  esac
}

# A Docker engine that answers. On a machine without one, as root: installs
# Debian's docker.io and starts dockerd (its pid in STARTED_DOCKERD, its log
# in .tools/dockerd.log). Without root, says what to do.
STARTED_DOCKERD=""
ensure_docker() {
  if docker info >/dev/null 2>&1; then return; fi
  if ! command -v dockerd >/dev/null 2>&1; then
    [[ $(id -u) == 0 ]] || die "Docker is missing: install Docker (Debian: apt-get install docker.io) and start it"
    need apt-get "install Docker (a Docker engine with dockerd) for sam local invoke"
    say "installing Debian's docker.io (log: .tools/apt.log)"
    mkdir -p "$TOOLS"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io; } >"$TOOLS/apt.log" 2>&1 ||
      { tail -5 "$TOOLS/apt.log" >&2; die "docker.io could not be installed: see .tools/apt.log"; }
  fi
  if ! docker info >/dev/null 2>&1; then
    [[ $(id -u) == 0 ]] || die "no Docker daemon answers: start it (sudo systemctl start docker)"
    say "starting dockerd (log: .tools/dockerd.log)"
    mkdir -p "$TOOLS"
    setsid dockerd >"$TOOLS/dockerd.log" 2>&1 </dev/null &
    STARTED_DOCKERD=$!
    for _ in $(seq 1 60); do
      docker info >/dev/null 2>&1 && return
      sleep 0.5
    done
    tail -5 "$TOOLS/dockerd.log" >&2
    die "dockerd did not start within 30 s (Docker cannot run on this machine?): see .tools/dockerd.log"
  fi
}

# Debian's Chromium and its WebDriver for the console's browser test:
# installed once where missing (root), else what to install is said.
ensure_chromium() {
  if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]]; then return; fi
  [[ $(id -u) == 0 ]] || die "Chromium is missing: install Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"
  need apt-get "install Chromium and chromedriver (Debian: chromium, chromium-driver) for the console's browser test"
  say "installing Debian's chromium and chromium-driver (log: .tools/apt-chromium.log)"
  mkdir -p "$TOOLS"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; } >"$TOOLS/apt-chromium.log" 2>&1 ||
    { tail -5 "$TOOLS/apt-chromium.log" >&2; die "chromium could not be installed: see .tools/apt-chromium.log"; }
}

# The image SAM runs provided.al2023 functions in: AWS's own when it is
# here or can be pulled; else a stand-in built once, under a name of its own
# (never AWS's, so other SAM projects on this machine are not silently run
# on it): a minimal Debian root filesystem (debootstrap, with
# ca-certificates). The function binary needs only glibc, and SAM adds its
# own runtime emulator on top, so the stand-in runs it as Amazon Linux 2023
# would. `sam local invoke --invoke-image` points SAM at it.
lambda_base_image() {
  echo "public.ecr.aws/lambda/provided:al2023-$(host_architecture)"
}

standin_image() {
  echo "staticforms-to-crm/lambda-standin:provided-al2023-$(host_architecture)"
}

# Sets INVOKE_IMAGE to the image to run functions in.
INVOKE_IMAGE=""
ensure_invoke_image() {
  local official standin rootfs
  official=$(lambda_base_image)
  standin=$(standin_image)
  # Earlier versions of this script imported the stand-in under AWS's name:
  # remove it, so SAM and other projects get the real image again.
  if [[ "$(docker image inspect "$official" --format '{{.Comment}}' 2>/dev/null)" == "Imported from -" ]]; then
    say "removing an old stand-in tagged as $official"
    docker rmi "$official" >/dev/null
  fi
  if docker image inspect "$official" >/dev/null 2>&1; then INVOKE_IMAGE=$official; return; fi
  say "pulling $official (up to 2 minutes)"
  if timeout 120 docker pull --quiet "$official" >"$TOOLS/docker-pull.log" 2>&1; then
    INVOKE_IMAGE=$official
    return
  fi
  say "$official cannot be pulled here (see .tools/docker-pull.log): using the stand-in $standin"
  INVOKE_IMAGE=$standin
  if docker image inspect "$standin" >/dev/null 2>&1; then return; fi
  if ! command -v debootstrap >/dev/null 2>&1; then
    [[ $(id -u) == 0 ]] || die "$official cannot be pulled and the stand-in cannot be built: install debootstrap (apt-get install debootstrap), or let Docker reach public.ecr.aws"
    say "installing Debian's debootstrap (log: .tools/apt.log)"
    mkdir -p "$TOOLS"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >"$TOOLS/apt.log" 2>&1 ||
      { tail -5 "$TOOLS/apt.log" >&2; die "debootstrap could not be installed: see .tools/apt.log"; }
  fi
  say "building the stand-in $standin (a minimal Debian root filesystem; a few minutes, once)"
  # Outside the workspace, and removed whatever happens: `sam build` hashes
  # every file under the workspace, and a root filesystem's device files
  # stop it ("Illegal seek").
  rootfs=$(mktemp -d "${TMPDIR:-/tmp}/staticforms-standin.XXXXXX")
  mkdir -p "$TOOLS/lambda-base"
  if ! (
    # No mirror named: debootstrap's default Debian mirror.
    debootstrap --variant=minbase --include=ca-certificates bookworm "$rootfs" >"$TOOLS/lambda-base/debootstrap.log" 2>&1 ||
      { tail -5 "$TOOLS/lambda-base/debootstrap.log" >&2; echo "debootstrap failed: see .tools/lambda-base/debootstrap.log" >&2; exit 1; }
    tar -C "$rootfs" -c . | docker import --change "LABEL org.opencontainers.image.description=\"stand-in for $official, built by staticforms-to-crm\"" - "$standin" >/dev/null
  ); then
    rm -rf "$rootfs"
    die "the stand-in image could not be built"
  fi
  rm -rf "$rootfs"
}

# The address of Docker's default bridge on this host: a container reaches
# servers on the host there (SAM's --docker-network host has no effect).
docker_bridge_address() {
  local address
  address=$(docker network inspect bridge --format '{{range .IPAM.Config}}{{.Gateway}}{{end}}' 2>/dev/null || true)
  # Docker 20.10 (Debian's docker.io) leaves Gateway out: read docker0.
  [[ -n "$address" ]] || address=$(ip -4 -o addr show docker0 2>/dev/null | awk '{ split($4, a, "/"); print a[1]; exit }')
  [[ -n "$address" ]] || die "cannot tell the address of Docker's bridge (docker0)"
  echo "$address"
}

# events/local-env.json with its DynamoDB and CRM addresses replaced.
local_env_for() {
  local dynamodb=$1 crm=$2
  python3 - "$ROOT/events/local-env.json" "$dynamodb" "$crm" <<'PY'
import json, sys
path, dynamodb, crm = sys.argv[1:]
env = json.load(open(path))
for function in env.values():
    for name, value in function.items():
        function[name] = value.replace("http://172.17.0.1:9100", dynamodb).replace("http://172.17.0.1:9101", crm)
print(json.dumps(env, indent=2))
PY
}

# The real `sam local invoke` of the built template, for this host's
# architecture, without pulling images, and without AWS credentials in its
# environment: with them SAM first asks STS for the account and stalls for
# ~10 s offline; without them it gives the container fake keys, which local
# servers accept.
sam_local_invoke() {
  local function=$1 event=$2 env_file=$3
  env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_PROFILE \
    SAM_CLI_TELEMETRY=0 sam local invoke "$function" \
    --template "$ROOT/.aws-sam/build/template.yaml" \
    --event "$event" --env-vars "$env_file" \
    --parameter-overrides "Architecture=$(host_architecture)" \
    --invoke-image "$INVOKE_IMAGE" --region us-east-1 --skip-pull-image
}
