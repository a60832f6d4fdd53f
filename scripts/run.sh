#!/usr/bin/env bash
# Installs what running Gantry needs, builds it, and starts gantryd on the embedded default
# (SQLite in ./.gantry, the local driver on this machine). On first start it loads examples/ so
# the first thing to do is deploy an instance. Extra arguments go to gantryd.
#   GANTRY_LISTEN=HOST:PORT   where to listen (default 127.0.0.1:8080)
#   GANTRY_TLS_LISTEN=HOST:PORT  where to serve HTTPS for kubectl (default 127.0.0.1:8443;
#                             a self-signed certificate in .gantry/tls.crt)
#   GANTRY_GPUS=TYPE:COUNT    GPUs to configure when nvidia-smi is absent (default demo-gpu:4)
#   GANTRY_OPT=-O2            the compiler's optimisation level (default -Og: the quickest
#                             build; -O2 for a gantryd that serves many users for long)
# It prints one line per step; the full output of apt, npm, cmake, the compiler and the CLI
# goes to build-release/run.log (on a failure, its last lines are printed). gantryd's own log
# stays on the terminal.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build-release
LOG=build-release/run.log
: >"$LOG"
# ccache: hits between checkouts in different folders, as in scripts/test.sh.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true

# step MESSAGE COMMAND...: prints MESSAGE, runs COMMAND with its output in the log, then the
# time it took; on a failure the log's last lines and exit 1.
step() {
  local msg="$1" t0=$SECONDS
  shift
  printf '%s ... ' "$msg"
  echo "=== $msg: $*" >>"$LOG"
  if "$@" >>"$LOG" 2>&1; then
    echo "done ($((SECONDS - t0)) s)"
  else
    echo "FAILED"
    echo "--- the last lines of $LOG:"
    tail -n 40 "$LOG"
    echo "--- (the whole output is in $LOG)"
    exit 1
  fi
}

build() {
  bash scripts/configure-release.sh && ninja -C build-release gantryd gantry
}

# The web UI (web/dist, which gantryd serves from /) builds beside gantryd: npm and vite use
# about one core (and the network on a first run) while the C++ build's last, longest files
# leave a core idle. Its output joins the log when it is done; both builds must succeed. No
# type check here (the test command runs it): a newcomer needs only the bundle.
build_all() {
  bash scripts/build-ui.sh --no-typecheck >build-release/ui.log 2>&1 &
  local ui=$! rc=0
  build || rc=$?
  wait "$ui" || rc=$?
  echo "=== the web UI's build:"
  cat build-release/ui.log
  return "$rc"
}

echo "Gantry: the full output of each step goes to $LOG"
step "installing packages" bash scripts/install-deps.sh run
grep -E '^(packages|creating system user)' "$LOG" | sed 's/^/  /' || true
bash scripts/open-path-for-workloads.sh .   # as root, workloads run as gantry-workload
step "building the web UI, gantryd and the CLI" build_all
LISTEN="${GANTRY_LISTEN:-127.0.0.1:8080}"
TLS_LISTEN="${GANTRY_TLS_LISTEN:-127.0.0.1:8443}"
SERVER="http://${LISTEN}"
GANTRY=./build-release/src/cli/gantry
args=(--listen "$LISTEN" --tls-listen "$TLS_LISTEN" --data-dir .gantry)
if ! command -v nvidia-smi >/dev/null 2>&1; then
  args+=(--gpus "${GANTRY_GPUS:-demo-gpu:4}")
fi
first_start=0
[ -f .gantry/gantry.db ] || first_start=1
# The first user, admin (org-admin): its password is kept in .gantry/admin-password (0600)
# unless GANTRY_ADMIN_PASSWORD is given. gantryd uses it only when it creates the user, so it
# gets the password on the first start only: later starts leave it out of gantryd's
# environment altogether (gantryd also forgets it once read).
PASSWORD_FILE=.gantry/admin-password
if [ "$first_start" = 1 ]; then
  if [ -z "${GANTRY_ADMIN_PASSWORD:-}" ]; then
    if [ ! -f "$PASSWORD_FILE" ]; then
      mkdir -p .gantry
      (umask 077; head -c 18 /dev/urandom | base64 | tr '+/' '-_' > "$PASSWORD_FILE")
    fi
    GANTRY_ADMIN_PASSWORD="$(cat "$PASSWORD_FILE")"
  fi
  export GANTRY_ADMIN_PASSWORD
else
  export -n GANTRY_ADMIN_PASSWORD 2>/dev/null || true
fi

echo "starting gantryd on ${SERVER}"
./build-release/src/app/gantryd "${args[@]}" "$@" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid' INT TERM
for _ in $(seq 1 100); do
  curl -sf "$SERVER/readyz" >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || { wait $pid; exit 1; }
  sleep 0.1
done
if [ "$first_start" = 1 ] && [ -n "${GANTRY_ADMIN_PASSWORD:-}" ]; then
  # Log the CLI in (a token in ~/.config/gantry/config.yaml), then load the examples with it.
  printf '%s\n' "$GANTRY_ADMIN_PASSWORD" |
    "$GANTRY" --server "$SERVER" login --user admin --password-stdin || true
  # Full lines from here: gantryd's log shares the terminal.
  echo "first start: loading examples/"
  # The container example's offline image (busybox-static and a page), when Podman is here.
  sh examples/container/build-image.sh 2>&1 | sed 's/^/  /' || true
  echo "=== gantry apply -f examples/" >>"$LOG"
  if "$GANTRY" --server "$SERVER" apply -f examples/ >"$LOG.apply" 2>&1; then
    echo "  loaded $(grep -c -E ' (created|configured|unchanged)$' "$LOG.apply") objects"
  else
    echo "  FAILED (gantryd keeps running); the CLI said:"
    tail -n 20 "$LOG.apply"
  fi
  cat "$LOG.apply" >>"$LOG"
  rm -f "$LOG.apply"
fi
if [ -f "$PASSWORD_FILE" ]; then
  LOGIN="user admin, password $(cat "$PASSWORD_FILE")   (kept in $PASSWORD_FILE)"
else
  LOGIN="user admin, with the password GANTRY_ADMIN_PASSWORD had when gantryd created it"
fi
cat <<MSG

  Gantry is running on ${SERVER}
  UI:     ${SERVER}/   (PaaS Studio)
  API:    ${SERVER}/apis/paas.gantry.dev/v1
  GPUs:   curl -s ${SERVER}/apis/paas.gantry.dev/v1/nodes
  Login:  ${LOGIN}
          CLI: logged in by this script when it created admin; elsewhere: ${GANTRY} login --server ${SERVER} --user admin
  kubectl: ${GANTRY} kubeconfig --tls-server https://${TLS_LISTEN} --ca-file .gantry/tls.crt > gantry.kubeconfig
          kubectl --kubeconfig gantry.kubeconfig get ci -A     (kubectl sends tokens only over TLS)
  Try:    ${GANTRY} get instances -n ml-research
          ${GANTRY} deploy my-notebook -n ml-research --wait      # then open status.outputs.endpoint
          ${GANTRY} get instance my-notebook -n ml-research -o yaml
  Data:   ./.gantry/    Stop: Ctrl-C (drains in-flight requests)

MSG
wait $pid
