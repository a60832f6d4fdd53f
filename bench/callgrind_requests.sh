#!/usr/bin/env bash
# bench/callgrind_requests.sh: the instructions gantryd executes per create and per GET of a
# compute instance, counted by valgrind's callgrind. Unlike a rate, the count repeats for
# the same binary and requests whatever else the machine is doing, so two builds can be
# compared to the percent on a busy 2-core machine (docs/performance.md).
#
#   bench/callgrind_requests.sh GANTRYD [N]     # N creates, N GETs, N GETs again (default 200)
#
# gantryd runs under callgrind (SQLite synchronous=NORMAL, one I/O thread, no deploys). The
# counters are zeroed before each phase and dumped after it (callgrind_control), so start-up
# is not counted; what gantryd's own background loops do during a phase is (a few percent).
# The first GET of each object reads the database; the second ("get-again") finds it in the
# SQLite store's object cache (store/object_cache.h), as a client polling one object does.
# The requests are sent one at a time by curl over a new connection each, which gantryd's
# count includes (accept and close), the same for every build. Prints per request: the
# instructions, and the 20 functions of Gantry, SQLite and Boost.JSON that executed the most
# of them, inclusive (callgrind_annotate). Keeps nothing (everything lives in a temp
# directory) unless CALLGRIND_KEEP=DIR names a directory to copy the two dumps into, as
# create.out, get.out and get-again.out, for callgrind_annotate or kcachegrind.
set -euo pipefail
source "$(dirname "$0")/fixtures.sh"

GANTRYD=${1:?usage: bench/callgrind_requests.sh GANTRYD [N]}
N=${2:-200}
command -v valgrind >/dev/null && command -v callgrind_control >/dev/null ||
  { echo "callgrind_requests.sh: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
TMP=$(mktemp -d /tmp/gantry-callgrind.XXXXXX)
PID=''
cleanup() {
  [[ -z $PID ]] || kill -TERM "$PID" 2>/dev/null || true
  [[ -z $PID ]] || wait "$PID" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
chmod 711 "$TMP"
TOKEN=bench-bootstrap-token-0123456789
API=/apis/paas.gantry.dev/v1/namespaces/default

GANTRY_BOOTSTRAP_TOKEN=$TOKEN valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out" \
  "$GANTRYD" --listen 127.0.0.1:0 --data-dir "$TMP/data" --sqlite-synchronous NORMAL \
  --threads 1 --workers 1 --log-level info 2>"$TMP/gantryd.log" &
PID=$!
PORT=''
for _ in $(seq 1200); do  # valgrind starts slowly: up to 2 minutes
  PORT=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$TMP/gantryd.log")
  [[ -n $PORT ]] && break
  kill -0 "$PID" 2>/dev/null || { cat "$TMP/gantryd.log" >&2; exit 1; }
  sleep 0.1
done
[[ -n $PORT ]] || { echo "gantryd did not report its port" >&2; exit 1; }

request() {  # METHOD PATH [JSON]
  curl -sS --fail-with-body -o /dev/null -X "$1" -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' ${3:+--data "$3"} "http://127.0.0.1:$PORT$2"
}
bench_fixtures "http://127.0.0.1:$PORT" "$TOKEN"

phase() {  # NAME: runs the requests of one phase between a zero and a dump of the counters
  callgrind_control -z "$PID" >/dev/null
  for i in $(seq "$N"); do
    if [[ $1 == create ]]; then
      request POST "$API/computeinstances" '{"apiVersion":"paas.gantry.dev/v1",
        "kind":"ComputeInstance","metadata":{"name":"cg-'"$i"'","labels":{"team":"t'"$((i % 10))"'",
        "tier":"bench"}},"spec":{"displayName":"Callgrind '"$i"'","profileRef":{"name":"bench"}}}'
    else
      request GET "$API/computeinstances/cg-$(((i - 1) % N + 1))"
    fi
  done
  callgrind_control -d "$1" "$PID" >/dev/null
  local dump
  dump=$(ls -t "$TMP"/cg.out.* | head -n 1)
  [[ -z ${CALLGRIND_KEEP:-} ]] || cp "$dump" "$CALLGRIND_KEEP/$1.out"
  local total
  total=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p; s/^summary: *\([0-9]*\).*/\1/p' "$dump" | head -n 1)
  printf '%-9s %d requests: %s instructions per request\n' "$1" "$N" \
    "$(awk -v t="$total" -v n="$N" 'BEGIN { printf "%.0f", t / n }')"
  # Gantry's own functions, SQLite's and Boost.JSON's, with their arguments cut off.
  callgrind_annotate --inclusive=yes "$dump" 2>/dev/null |
    sed -n 's/^ *\([0-9,]*\) (\([ 0-9.]*%\)) *[^:]*:\([^(]*\).*/\1 \2 \3/p' |
    awk -v n="$N" '$3 ~ /^(gantry::|sqlite3|boost::json::)/ && shown < 20 {
      gsub(",", "", $1); printf "   %9.0f %7s  %s\n", $1 / n, $2, $3; shown++ }'
}
phase create
phase get
phase get-again
