#!/usr/bin/env bash
# bench/run_all.sh: Gantry's benchmarks, each against a reference program measured in the same
# run. Figures and analysis: docs/performance.md. These are measurements, not tests: the script
# exits non-zero only when a benchmark could not run, never because a target was missed.
#
#   GANTRY_BENCH_REV=HEAD bench/run_all.sh  # everything, about 6-8 minutes on 2 cores
#   BENCH_ONLY=get,create bench/run_all.sh
#
# Benchmarks (BENCH_ONLY names): get, create, store, list (includes memory), deploy, spawn, lifecycle,
# usage, webhooks, container (needs podman; skipped without it), admission, fairshare.
# Knobs (environment):
#   GANTRYD           gantryd binary (default: build-bench/src/app/gantryd, built if missing)
#   GANTRY_BENCH_REV  build and measure this commit instead of the working tree (e.g. HEAD):
#                     `git archive` of it into build-bench/rev-SHA, so edits in progress in
#                     the tree do not leak into the figures
#   BENCH_THREADS     gantryd --threads and nginx worker_processes (default 2)
#   BENCH_WORKERS     gantryd --workers for the deploy benchmark (default 16)
#   BENCH_INSTANCES   instances stored for the list/memory benchmarks (default 100000)
#   BENCH_DEPLOYS     instances deployed at once (default 1000)
#   BENCH_DEPLOY_SYNC gantryd --sqlite-synchronous for the deploy benchmark (default FULL)
#   BENCH_ROUNDS      alternating rounds of the get and create benchmarks (default 4)
#   BENCH_SECONDS     duration of the wrk and create runs (default 10)
#   BENCH_OUT         directory to keep raw outputs and results.tsv in (default: discarded)
#   BENCH_SIM_STEP    simulated seconds per step of the lifecycle simulation (default 60)
#   BENCH_CHANGES     state changes of the webhooks benchmark (default 1000, x 3 webhooks)
#   BENCH_CONTAINER_ROUNDS  container deploys and `podman run`s, alternating (default 10)
#   BENCH_TOOLS       a directory with every bench program already built (loadgen, sqlite_ref,
#                     webhooks_bench, spawn_rate, lifecycle_sim, usage_bench, admission_bench,
#                     fair_share_sim: a CMake build's bench/): nothing is compiled
#   BENCH_SMOKE=1     every section tiny (a few seconds each), then a check that each section
#                     recorded its figures: the CI smoke test (ctest -L bench, bench_smoke, which
#                     runs the ASan build's gantryd and programs). Its figures mean nothing.
#
# Everything listens on 127.0.0.1 only, lives in one temp directory, and is stopped and
# removed on exit (also on Ctrl-C).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/fixtures.sh"
SMOKE=${BENCH_SMOKE:-0}
# small SMOKE-VALUE FULL-VALUE: the value for this run's size.
small() { if [[ $SMOKE == 1 ]]; then echo "$1"; else echo "$2"; fi; }
BUILD=${GANTRY_BENCH_BUILD:-$ROOT/build-bench}
GANTRYD_SET=${GANTRYD:-}
GANTRYD=${GANTRYD:-$BUILD/src/app/gantryd}
THREADS=${BENCH_THREADS:-2}
WORKERS=${BENCH_WORKERS:-16}
N_INSTANCES=${BENCH_INSTANCES:-$(small 300 100000)}
N_DEPLOYS=${BENCH_DEPLOYS:-$(small 10 1000)}
DEPLOY_SYNC=${BENCH_DEPLOY_SYNC:-FULL}
ROUNDS=${BENCH_ROUNDS:-$(small 1 4)}
SECONDS_RUN=${BENCH_SECONDS:-$(small 1 10)}
WARMUP=$(small 1 2)   # seconds of wrk before the GET rounds
LIST_COUNT=$(small 20 1000) LIST_SECONDS=$(small 5 30)  # lists per selector, and at most
N_SEQ=$(small 3 50)   # the deploys one after another
N_PATCHES=$(small 5 50)  # label patches, 10 a second, before and after the burst (5c)
N_SPAWN=$(small 20 500) SPAWN_BIG_MB=$(small 64 1024)
ONLY=${BENCH_ONLY:-get,create,store,list,deploy,spawn,lifecycle,usage,webhooks,container,admission,fairshare}
N_CHANGES=${BENCH_CHANGES:-$(small 10 1000)}
TOOLS=${BENCH_TOOLS:-$BUILD/bench-tools}
API=/apis/paas.gantry.dev/v1/namespaces/default

log() { printf '\n== %s  [load average %s]\n' "$*" "$(cut -d' ' -f1-3 /proc/loadavg)" >&2; }
die() { printf 'run_all.sh: %s\n' "$*" >&2; exit 1; }
want() { [[ ",$ONLY," == *",$1,"* ]]; }

# ---------------------------------------------------------------------------------------------
# Prerequisites: Debian packages, gantryd, and the two helper programs.
need_pkgs=()
command -v wrk >/dev/null || need_pkgs+=(wrk)
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || need_pkgs+=(nginx-light)
command -v curl >/dev/null || need_pkgs+=(curl)
command -v python3 >/dev/null || need_pkgs+=(python3)
command -v pgrep >/dev/null || need_pkgs+=(procps)
[[ -f /usr/include/sqlite3.h ]] || need_pkgs+=(libsqlite3-dev)
[[ -f /usr/include/boost/beast.hpp ]] || need_pkgs+=(libboost-dev)
[[ -f /usr/lib/x86_64-linux-gnu/libboost_json.so || -f /usr/lib/aarch64-linux-gnu/libboost_json.so ]] ||
  need_pkgs+=(libboost-json-dev)
if ((${#need_pkgs[@]})); then
  log "installing ${need_pkgs[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >&2
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

if [[ -n ${GANTRY_BENCH_REV:-} && -z ${GANTRYD_SET:-} ]]; then
  sha=$(git -C "$ROOT" rev-parse --short "$GANTRY_BENCH_REV")
  SRC=$BUILD/rev-$sha/src
  GANTRYD=$BUILD/rev-$sha/build/src/app/gantryd
  SIM_BUILD=$BUILD/rev-$sha/build
  if [[ ! -x $GANTRYD ]]; then
    log "building gantryd $sha (Release) in $BUILD/rev-$sha"
    rm -rf "$SRC" && mkdir -p "$SRC"
    git -C "$ROOT" archive "$sha" | tar -x -C "$SRC"
    cmake -S "$SRC" -B "$BUILD/rev-$sha/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGANTRY_TESTS=OFF >&2
    ninja -j2 -C "$BUILD/rev-$sha/build" gantryd >&2
  fi
elif [[ ! -x $GANTRYD ]]; then
  log "building gantryd (Release) in $BUILD"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGANTRY_TESTS=OFF >&2
  ninja -j2 -C "$BUILD" gantryd >&2
fi
SIM_BUILD=${SIM_BUILD:-$BUILD}  # where bench/lifecycle_sim is built (the gantryd build's tree)
SIM_STEP=${BENCH_SIM_STEP:-$(small 3600 60)}
NOTEBOOKS=$(small 10 200) N_INTERVALS=$(small 2000 100000)
sim() { if [[ -n ${BENCH_TOOLS:-} ]]; then echo "$TOOLS/$1"; else echo "$SIM_BUILD/bench/$1"; fi; }
sim_tool() {  # NAME...: builds the programs of bench/CMakeLists.txt (Release) unless BENCH_TOOLS has them
  local name
  if [[ -n ${BENCH_TOOLS:-} ]]; then
    for name in "$@"; do [[ -x $TOOLS/$name ]] || die "$TOOLS/$name is not built"; done
    return 0
  fi
  [[ -f $SIM_BUILD/build.ninja ]] ||
    cmake -S "$ROOT" -B "$SIM_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGANTRY_TESTS=OFF >&2
  log "building $* (Release) in $SIM_BUILD"
  ninja -j2 -C "$SIM_BUILD" "$@" >&2
}
mkdir -p "$TOOLS"
build_tool() {  # NAME LIBS...: rebuilds bench/NAME.cc when the source is newer than the binary
  local name=$1; shift
  [[ -z ${BENCH_TOOLS:-} ]] || { [[ -x $TOOLS/$name ]] || die "$TOOLS/$name is not built"; return 0; }
  if [[ ! -x $TOOLS/$name || $ROOT/bench/$name.cc -nt $TOOLS/$name ]]; then
    log "compiling bench/$name.cc"
    g++ -std=c++20 -O2 -pthread -o "$TOOLS/$name" "$ROOT/bench/$name.cc" "$@"
  fi
}
build_tool loadgen -lboost_json
build_tool sqlite_ref -lsqlite3
build_tool webhooks_bench -lboost_json
LOADGEN=$TOOLS/loadgen
SQLITE_REF=$TOOLS/sqlite_ref

# ---------------------------------------------------------------------------------------------
# Processes and temp files.
TMP=$(mktemp -d /tmp/gantry-bench.XXXXXX)
chmod 711 "$TMP"  # as root, gantryd's workload user must reach DATA_DIR.workloads beside the data dir
OUT=${BENCH_OUT:-$TMP/out}
mkdir -p "$OUT"
RESULTS=$OUT/results.tsv
# Every API request carries the bootstrap token gantryd is started with (nginx ignores it).
export GANTRY_TOKEN=bench-bootstrap-token-0123456789
AUTH="Authorization: Bearer $GANTRY_TOKEN"
printf 'benchmark\tfigure\tgantryd\treference\tratio\ttarget\tmet\n' >"$RESULTS"
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

GPID='' GPORT='' GDIR=''
launch_gantryd() {  # SYNC POLLS: gantryd on $GDIR/data (with the bootstrap token the
  # benchmarks send); sets GPID GPORT. POLLS: how many 50 ms waits for its port.
  # --log-level info: "listening on" is logged at info; gantryd logs nothing per request there.
  GANTRY_BOOTSTRAP_TOKEN="$GANTRY_TOKEN" "$GANTRYD" --listen 127.0.0.1:0 --data-dir "$GDIR/data" --sqlite-synchronous "$1" \
    --threads "$THREADS" --workers "$WORKERS" --log-level info ${GANTRYD_EXTRA:-} 2>"$GDIR/gantryd.log" &
  GPID=$!
  PIDS+=("$GPID")
  GPORT=''
  for _ in $(seq "$2"); do
    # (The background shell may not have created the log yet: not an error.)
    GPORT=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$GDIR/gantryd.log" 2>/dev/null || true)
    [[ -n $GPORT ]] && break
    kill -0 "$GPID" 2>/dev/null || { cat "$GDIR/gantryd.log" >&2; die "gantryd exited"; }
    sleep 0.05
  done
  [[ -n $GPORT ]] || die "gantryd did not report its port"
}
start_gantryd() {  # NAME SYNC: a fresh gantryd on its own data dir; sets GPID GPORT GDIR
  GDIR=$TMP/$1
  mkdir -p "$GDIR"
  launch_gantryd "$2" 200
}
restart_gantryd() {  # SYNC: same data dir, new process (a restart reads 100k objects: longer)
  local dir=$GDIR
  stop_gantryd
  GDIR=$dir
  launch_gantryd "$1" 600
}
stop_gantryd() {
  [[ -n $GPID ]] || return 0
  kill -TERM "$GPID" 2>/dev/null || true
  for _ in $(seq 150); do kill -0 "$GPID" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$GPID" 2>/dev/null || true
  wait "$GPID" 2>/dev/null || true
  GPID=''
}
post() {  # PATH JSON
  curl -sS --fail-with-body -X POST -H "$AUTH" -H 'Content-Type: application/json' --data "$2" \
    "http://127.0.0.1:$GPORT$1" >/dev/null || die "POST $1 failed"
}
setup_profile() {  # bench/fixtures.sh's template and profile
  bench_fixtures "http://127.0.0.1:$GPORT" "$GANTRY_TOKEN" || die "creating the fixtures failed"
}
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# A free port below the kernel's ephemeral range (ip_local_port_range, 32768 up): for ports
# podman publishes. A container removed uncleanly can leave its DNAT rule behind, and such a
# rule on an ephemeral port would send later connections to a gantryd (or anything listening
# on port 0) to a dead container: "connection refused".
free_low_port() {
  python3 -c '
import random, socket
for port in random.sample(range(17000, 18000), 1000):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port)); print(port); break
    except OSError:
        pass
    finally:
        s.close()'
}
field() {  # KEY LINE: the value of KEY=VALUE in a loadgen/sqlite_ref output line
  sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2" | head -1
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
record() {  # BENCH FIGURE GANTRYD REFERENCE RATIO TARGET MET
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"
  printf '   %-8s %-34s gantryd=%-10s ref=%-10s ratio=%-6s target %-12s %s\n' "$@" >&2
}
cpu_ticks() {  # PID...: utime + stime of the processes, in clock ticks
  local p t=0
  for p in "$@"; do
    [[ -r /proc/$p/stat ]] || continue
    t=$((t + $(sed 's/.*) //' "/proc/$p/stat" | awk '{print $12 + $13}')))
  done
  echo "$t"
}
HZ=$(getconf CLK_TCK)
us_per() {  # TICKS COUNT: CPU microseconds per operation
  awk -v t="$1" -v n="$2" -v hz="$HZ" 'BEGIN { if (n > 0) printf "%.0f", t * 1e6 / hz / n; else print "n/a" }'
}
yesno() { if "$@"; then echo yes; else echo NO; fi; }
# PREFIX COUNT VALUE: gantryd's CPU us per label patch (label n=VALUE on PREFIX-0, PREFIX-1, ...;
# a new VALUE each call: a patch that changes nothing commits nothing), 10 patches a second.
patch_cpu_us() {
  local i t0
  t0=$(cpu_ticks "$GPID")
  for ((i = 0; i < $2; i++)); do
    curl -sS --fail-with-body -o /dev/null -X PATCH -H "$AUTH" \
      -H 'Content-Type: application/merge-patch+json' --data "{\"metadata\":{\"labels\":{\"n\":\"$3\"}}}" \
      "http://127.0.0.1:$GPORT$API/computeinstances/$1-$i" || die "PATCH $1-$i failed"
    sleep 0.1
  done
  us_per "$(($(cpu_ticks "$GPID") - t0))" "$2"
}
lg() { timeout 400 "$LOADGEN" "$@"; }

log "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)," \
  "$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo);" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg); gantryd: $GANTRYD" \
  "$([[ -n ${GANTRY_BENCH_REV:-} ]] && echo "(commit $sha)" ||
     echo "(working tree at $(git -C "$ROOT" rev-parse --short HEAD), $(git -C "$ROOT" status --porcelain -- src | wc -l) paths changed under src/)")"

# ---------------------------------------------------------------------------------------------
# 1. GET one instance over keep-alive: gantryd vs nginx serving the same bytes.
if want get; then
  log "1. GET one instance, wrk -t2 -c64, $ROUNDS alternating rounds of $(( (SECONDS_RUN + ROUNDS - 1) / ROUNDS ))s, gantryd --threads $THREADS vs nginx worker_processes $THREADS"
  start_gantryd get FULL
  setup_profile
  post "$API/computeinstances" '{"apiVersion":"paas.gantry.dev/v1","kind":"ComputeInstance",
    "metadata":{"name":"gpu-instance-prod","labels":{"env":"prod","team":"llm"}},
    "spec":{"displayName":"GPU instance (prod)","description":"Dedicated cluster for LLM pre-training.",
    "profileRef":{"name":"bench"},"variables":{}}}'
  NG=$TMP/nginx
  mkdir -p "$NG/www" "$NG/tmp"
  curl -sS -H "$AUTH" "http://127.0.0.1:$GPORT$API/computeinstances/gpu-instance-prod" >"$NG/www/instance.json"
  NPORT=$(free_port)
  cat >"$NG/nginx.conf" <<EOF
$([[ $(id -u) == 0 ]] && echo 'user root;')
worker_processes $THREADS;
daemon off;
pid $NG/nginx.pid;
error_log $NG/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  client_body_temp_path $NG/tmp/body;
  proxy_temp_path $NG/tmp/proxy;
  fastcgi_temp_path $NG/tmp/fastcgi;
  uwsgi_temp_path $NG/tmp/uwsgi;
  scgi_temp_path $NG/tmp/scgi;
  server {
    listen 127.0.0.1:$NPORT;
    root $NG/www;
    location / { default_type application/json; }
  }
}
EOF
  "$NGINX" -p "$NG" -c "$NG/nginx.conf" -e "$NG/error.log" &
  NGPID=$!
  PIDS+=("$NGPID")
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$NPORT/instance.json" >/dev/null && break; sleep 0.05; done
  cmp -s <(curl -s "http://127.0.0.1:$NPORT/instance.json") "$NG/www/instance.json" ||
    die "nginx does not serve the instance"
  bytes=$(wc -c <"$NG/www/instance.json")
  # Alternating rounds (ROUNDS of them, sharing the duration), so that a noisy neighbour on a
  # shared machine hits both servers alike; the figure is the mean of the rounds.
  half=$(( (SECONDS_RUN + ROUNDS - 1) / ROUNDS ))
  g_url="http://127.0.0.1:$GPORT$API/computeinstances/gpu-instance-prod"
  n_url="http://127.0.0.1:$NPORT/instance.json"
  wrk -t2 -c64 -d"${WARMUP}s" -H "$AUTH" "$g_url" >/dev/null
  wrk -t2 -c64 -d"${WARMUP}s" "$n_url" >/dev/null
  # CPU time per request too: unlike req/s, it hardly moves when a neighbour takes the cores.
  declare -A cpu=([gantryd]=0 [nginx]=0) reqs=([gantryd]=0 [nginx]=0)
  for round in $(seq "$ROUNDS"); do
    for who in gantryd nginx; do
      url=$g_url pids=$GPID
      if [[ $who == nginx ]]; then url=$n_url pids="$NGPID $(pgrep -P "$NGPID" | tr '\n' ' ')"; fi
      # shellcheck disable=SC2086
      t0=$(cpu_ticks $pids)
      wrk -t2 -c64 -d"${half}s" --latency -H "$AUTH" "$url" >"$OUT/wrk-$who-$round.txt" 2>&1
      # shellcheck disable=SC2086
      cpu[$who]=$((cpu[$who] + $(cpu_ticks $pids) - t0))
      reqs[$who]=$((reqs[$who] + $(awk '/requests in/ {print $1}' "$OUT/wrk-$who-$round.txt")))
      echo "   $who round $round: $(awk '/Requests\/sec/ {print $2 " req/s"}' "$OUT/wrk-$who-$round.txt")," \
        "p99 $(awk '$1 == "99%" {print $2}' "$OUT/wrk-$who-$round.txt")" >&2
    done
  done
  ! grep -q 'Non-2xx\|Socket errors' "$OUT"/wrk-gantryd-*.txt || die "gantryd answered GET with errors"
  mean_rps() { awk '/Requests\/sec/ {s += $2; n++} END {printf "%.0f", s / n}' "$@"; }
  p99s() { awk '$1 == "99%" {printf "%s%s", sep, $2; sep = " "}' "$@"; }
  g_rps=$(mean_rps "$OUT"/wrk-gantryd-*.txt)
  n_rps=$(mean_rps "$OUT"/wrk-nginx-*.txt)
  r=$(ratio "$g_rps" "$n_rps")
  record get "req/s (${bytes}-byte object)" "$g_rps" "$n_rps" "$r" ">=0.5x" "$(yesno ge "$r" 0.5)"
  g_us=$(us_per "${cpu[gantryd]}" "${reqs[gantryd]}")
  n_us=$(us_per "${cpu[nginx]}" "${reqs[nginx]}")
  record get "  CPU us per request" "$g_us" "$n_us" "$(ratio "$n_us" "$g_us")" "-" "-"
  record get "  latency p99 per round" "$(p99s "$OUT"/wrk-gantryd-*.txt)" "$(p99s "$OUT"/wrk-nginx-*.txt)" \
    "-" "-" "-"
  kill -TERM "$NGPID" 2>/dev/null || true
  wait "$NGPID" 2>/dev/null || true
  stop_gantryd
fi

# ---------------------------------------------------------------------------------------------
# 2. Durable creates/s vs raw SQLite inserts of the same rows, FULL and NORMAL.
if want create; then
  for sync in FULL NORMAL; do
    log "2. creates/s, synchronous=$sync, 16 connections, $ROUNDS alternating rounds, ${SECONDS_RUN}s each side, vs sqlite_ref (same rows, one transaction each)"
    start_gantryd "create-$sync" "$sync"
    setup_profile
    # The reference inserts the very body gantryd stores for such an instance.
    lg create --port "$GPORT" --prefix tmpl --count 1 --connections 1 >/dev/null
    curl -sS -H "$AUTH" "http://127.0.0.1:$GPORT$API/computeinstances/tmpl-0" |
      sed 's/"name":"tmpl-0"/"name":"@NAME@"/' >"$GDIR/body.json"
    # Alternating rounds (gantryd, reference, gantryd, reference...) sharing the duration: the
    # latency of a flush on a shared virtual disk changes by 10x from one second to the next.
    half=$(awk -v s="$SECONDS_RUN" -v r="$ROUNDS" 'BEGIN { printf "%.2f", s / r }')
    g_lines='' r_lines='' r_done=0
    for round in $(seq "$ROUNDS"); do
      t0=$(cpu_ticks "$GPID")
      line=$(lg create --port "$GPORT" --prefix "c$round" --connections 16 --seconds "$half")
      line+=" cpu_ticks=$(($(cpu_ticks "$GPID") - t0))"
      echo "   gantryd round $round: $line" >&2
      g_lines+="$line"$'\n'
      ref=$("$SQLITE_REF" insert --db "$GDIR/ref.db" --sync "$sync" --body "$GDIR/body.json" \
        --seconds "$half" --start "$r_done")
      echo "   sqlite_ref round $round (objects+events rows, one transaction each): $ref" >&2
      r_lines+="$ref"$'\n'
      r_done=$((r_done + $(field inserts "$ref")))
    done
    stop_gantryd
    ref1=$("$SQLITE_REF" insert --db "$GDIR/ref1.db" --sync "$sync" --body "$GDIR/body.json" \
      --seconds "$half" --objects-only)
    echo "   sqlite_ref (objects row only): $ref1" >&2
    total_rate() {  # COUNT-KEY LINES: sum of counts / sum of seconds
      awk -v k="$1" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) n += kv[2];
        if (kv[1] == "seconds") t += kv[2] } } END { printf "%.1f", n / t }' <<<"$2"
    }
    mean_of() {  # KEY LINES
      awk -v k="$1" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) { s += kv[2]; n++ } } }
        END { printf "%.2f", s / n }' <<<"$2"
    }
    sum_of() { awk -v k="$1" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) s += kv[2] } }
      END { print s + 0 }' <<<"$2"; }
    g_cpu=$(us_per "$(sum_of cpu_ticks "$g_lines")" "$(sum_of creates "$g_lines")")
    r_cpu=$(awk -v u="$(sum_of cpu_us "$r_lines")" -v n="$(sum_of inserts "$r_lines")" 'BEGIN { printf "%.0f", u / n }')
    g_rate=$(total_rate creates "$g_lines")
    r_rate=$(total_rate inserts "$r_lines")
    r=$(ratio "$g_rate" "$r_rate")
    record create "creates/s $sync" "$g_rate" "$r_rate" "$r" ">=0.5x" "$(yesno ge "$r" 0.5)"
    record create "  vs objects-row-only ref $sync" "$g_rate" "$(field rate "$ref1")" \
      "$(ratio "$g_rate" "$(field rate "$ref1")")" "-" "-"
    record create "  CPU us per create $sync" "$g_cpu" "$r_cpu" "$(ratio "$r_cpu" "$g_cpu")" "-" "-"
    record create "  latency p50/p99 ms $sync" "$(mean_of p50_ms "$g_lines")/$(mean_of p99_ms "$g_lines")" \
      "$(mean_of p50_ms "$r_lines")/$(mean_of p99_ms "$r_lines")" "-" "-" "-"
    rm -f "$GDIR"/ref*.db*
  done
fi

# ---------------------------------------------------------------------------------------------
# 2b. The store alone, without HTTP: SqliteStore::Commit from 1 and 16 threads (the group
# commit batches the calls that wait), vs sqlite_ref's one transaction per create.
if want store; then
  sim_tool store_bench
  SD=$TMP/store
  mkdir -p "$SD"
  printf '%s' '{"apiVersion":"paas.gantry.dev/v1","kind":"ComputeInstance","metadata":{"name":"@NAME@","namespace":"default","labels":{"env":"prod","team":"t1","shard":"s1"},"resourceVersion":"1"},"spec":{"displayName":"Bench @NAME@","profileRef":{"name":"bench"},"variables":{}},"status":{"phase":"NotDeployed"}}' >"$SD/body.json"
  for sync in FULL NORMAL; do
    log "2b. store: SqliteStore::Commit creates/s, synchronous=$sync, ${SECONDS_RUN}s each: 1 thread, 16 threads, sqlite_ref"
    one=$("$(sim store_bench)" commit --db "$SD/one-$sync.db" --sync "$sync" --threads 1 --seconds "$SECONDS_RUN")
    echo "   store_bench 1 thread: $one" >&2
    many=$("$(sim store_bench)" commit --db "$SD/many-$sync.db" --sync "$sync" --threads 16 --seconds "$SECONDS_RUN")
    echo "   store_bench 16 threads: $many" >&2
    ref=$("$SQLITE_REF" insert --db "$SD/ref-$sync.db" --sync "$sync" --body "$SD/body.json" --seconds "$SECONDS_RUN")
    echo "   sqlite_ref (objects+events rows, one transaction each): $ref" >&2
    r=$(ratio "$(field rate "$many")" "$(field rate "$ref")")
    record store "Commit/s $sync, 16 threads" "$(field rate "$many")" "$(field rate "$ref")" "$r" ">=1.0x" "$(yesno ge "$r" 1.0)"
    record store "  1 thread $sync" "$(field rate "$one")" "$(field rate "$ref")" \
      "$(ratio "$(field rate "$one")" "$(field rate "$ref")")" "-" "-"
    record store "  calls per transaction, 16 threads" "$(field per_txn "$many")" "1" "-" "-" "-"
    r_cpu=$(awk -v u="$(field cpu_us "$ref")" -v n="$(field inserts "$ref")" 'BEGIN { printf "%.0f", u / n }')
    record store "  CPU us per create, 16 threads" "$(field cpu_us "$many")" "$r_cpu" \
      "$(ratio "$r_cpu" "$(field cpu_us "$many")")" "-" "-"
  done
  log "2b. store: SqliteStore::List, one page of 100 of $N_INSTANCES instances by labelSelector (the label index), vs sqlite_ref query (the JSON scan the store ran before)"
  for sel in "broad:50%:env:prod" "medium:10%:team:t3" "selective:0.1%:shard:s7"; do
    IFS=: read -r name share key value <<<"$sel"
    line=$("$(sim store_bench)" list --db "$SD/list.db" --instances "$N_INSTANCES" \
      --count 200 --key "$key" --value "$value")
    echo "   store_bench list $key=$value ($share): $line" >&2
    ref=$("$SQLITE_REF" query --db "$SD/list.db" --key "$key" --value "$value" --count 50)
    echo "   sqlite_ref query (JSON scan, bodies read, not parsed): $ref" >&2
    p99=$(field p99_ms "$line")
    record store "List p99 ms, $name ($share match)" "$p99" "$(field p99_ms "$ref")" \
      "$(ratio "$p99" "$(field p99_ms "$ref")")" "<=10ms" "$(yesno le "$p99" 10)"
  done
fi

# ---------------------------------------------------------------------------------------------
# 3 and 4. Lists over N instances, then gantryd's resident memory.
if want list; then
  log "3. list one page of 100 with a labelSelector over $N_INSTANCES instances (loaded with synchronous=NORMAL)"
  start_gantryd list NORMAL
  setup_profile
  line=$(lg create --port "$GPORT" --prefix i --count "$N_INSTANCES" --connections 8)
  echo "   load: $line" >&2
  [[ $(field creates "$line") == "$N_INSTANCES" ]] || die "loading $N_INSTANCES instances failed"
  record list "load rate (creates/s NORMAL, 8 conns)" "$(field rate "$line")" "-" "-" "-" "-"
  # selector NAME, share of instances matching, then the key and value.
  for sel in "none:100%::" "broad:50%:env:prod" "medium:10%:team:t3" "selective:0.1%:shard:s7"; do
    IFS=: read -r name share key value <<<"$sel"
    path="$API/computeinstances?limit=100"
    [[ -n $key ]] && path+="&labelSelector=$key%3D$value"
    line=$(lg list --port "$GPORT" --path "$path" --count "$LIST_COUNT" --seconds "$LIST_SECONDS")
    echo "   $name (${key:-no selector}${key:+=$value}, $share match): $line" >&2
    if [[ -n $key ]]; then
      ref=$("$SQLITE_REF" query --db "$GDIR/data/gantry.db" --key "$key" --value "$value" --count 100)
      echo "   sqlite_ref query (same SQL, bodies read, not parsed): $ref" >&2
      refp=$(field p99_ms "$ref")
      ref2=$("$SQLITE_REF" query --db "$GDIR/data/gantry.db" --key "$key" --value "$value" --count 100 --page-only)
      echo "   sqlite_ref query, page query only (no resourceVersion query): $ref2" >&2
    else
      refp=-
    fi
    p99=$(field p99_ms "$line")
    record list "p99 ms, $name ($share match)" "$p99" "$refp" \
      "$([[ $refp == - ]] && echo - || ratio "$p99" "$refp")" "<=10ms" "$(yesno le "$p99" 10)"
    record list "  p50 ms, $name, $(field requests "$line") reqs" "$(field p50_ms "$line")" "-" "-" "-" "-"
    if [[ -n $key ]]; then
      record list "  SQL page query alone p50/p99 ms" "-" \
        "$(field p50_ms "$ref2")/$(field p99_ms "$ref2")" "-" "-" "-"
    fi
  done
  rss_kib=$(awk '/VmRSS/ {print $2}' /proc/"$GPID"/status)
  hwm_kib=$(awk '/VmHWM/ {print $2}' /proc/"$GPID"/status)
  db_kib=$(du -sk "$GDIR/data" | cut -f1)
  log "4. gantryd memory with $N_INSTANCES instances stored, after the list benchmark"
  rss=$(awk -v k="$rss_kib" 'BEGIN { printf "%.1f", k / 1024 }')
  record memory "VmRSS MiB (peak $(awk -v k="$hwm_kib" 'BEGIN { printf "%.0f", k / 1024 }'))" "$rss" \
    "$(awk -v k="$db_kib" 'BEGIN { printf "%.0f", k / 1024 }') (data dir)" "-" "<=150MiB" "$(yesno le "$rss" 150)"
  # One client that does not paginate: the whole collection in one answer, then a watch from
  # resourceVersion 0 (which first sends every object as ADDED). The peak (VmHWM) is reset
  # before each (clear_refs 5), so that it is the peak during that request, not the load's.
  reset_peak() { echo 5 >/proc/"$GPID"/clear_refs 2>/dev/null || true; }
  reset_peak
  curl -sS -H "$AUTH" -o "$TMP/list.json" -m 300 "http://127.0.0.1:$GPORT$API/computeinstances" || die "unpaginated list failed"
  rss3=$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' /proc/"$GPID"/status)
  hwm3=$(awk '/VmHWM/ {printf "%.0f", $2 / 1024}' /proc/"$GPID"/status)
  # The answer is one valid JSON list of every instance.
  items=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["items"]))' "$TMP/list.json") ||
    die "the unpaginated list is not valid JSON"
  echo "   unpaginated list: $items items, $(wc -c <"$TMP/list.json") bytes" >&2
  [[ $items == "$N_INSTANCES" ]] || die "the unpaginated list has $items items, not $N_INSTANCES"
  rm -f "$TMP/list.json"
  record memory "  after 1 unpaginated list (peak $hwm3)" "$rss3" "-" "-" "<=150MiB" "$(yesno le "$hwm3" 150)"
  reset_peak
  added=$(curl -sS -H "$AUTH" -m 300 "http://127.0.0.1:$GPORT$API/computeinstances?watch=true&timeoutSeconds=$(small 2 10)" |
    grep -c '"type":"ADDED"' || true)
  echo "   watch from 0: $added ADDED events before its timeout" >&2
  rss4=$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' /proc/"$GPID"/status)
  hwm4=$(awk '/VmHWM/ {printf "%.0f", $2 / 1024}' /proc/"$GPID"/status)
  record memory "  after 1 watch from rv 0 (peak $hwm4)" "$rss4" "-" "-" "<=150MiB" "$(yesno le "$hwm4" 150)"
  record memory "  ADDED events of the watch from rv 0" "$added" "$N_INSTANCES" "$(ratio "$added" "$N_INSTANCES")" "-" "-"
  # The same store in a fresh process: what start-up and a few lists cost, without the load.
  restart_gantryd NORMAL
  lg list --port "$GPORT" --path "$API/computeinstances?limit=100&labelSelector=env%3Dprod" --count 100 >/dev/null
  rss2=$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' /proc/"$GPID"/status)
  record memory "VmRSS MiB, restarted + 100 lists" "$rss2" "-" "-" "<=150MiB" "$(yesno le "$rss2" 150)"
  stop_gantryd
fi

# ---------------------------------------------------------------------------------------------
# 5. Engine: N no-op deploys at once, then one at a time; reference: spawning `true` directly.
if want deploy; then
  log "5. engine: $N_DEPLOYS no-op exec deploys at once (synchronous=$DEPLOY_SYNC, --workers $WORKERS)"
  start_gantryd deploy "$DEPLOY_SYNC"
  setup_profile
  line=$(lg create --port "$GPORT" --prefix d --count "$N_DEPLOYS" --connections 16 --set burst)
  [[ $(field creates "$line") == "$N_DEPLOYS" ]] || die "creating the deploy instances failed"
  lg create --port "$GPORT" --prefix s --count "$N_SEQ" --connections 4 --set seq >/dev/null
  idle_us=$(patch_cpu_us d "$N_PATCHES" before)  # 5c's reference: none of them running yet
  line=$(lg deploy --port "$GPORT" --prefix d --set burst --count "$N_DEPLOYS" --connections 32) || true
  echo "   burst: $line" >&2
  ref=$(lg spawn --count "$N_DEPLOYS" --parallel "$WORKERS")
  echo "   spawn reference (fork/exec true, $WORKERS at a time): $ref" >&2
  ref2=$(lg spawn --count "$N_DEPLOYS" --parallel "$WORKERS" --posix-spawn)
  echo "   posix_spawn reference ($WORKERS at a time): $ref2" >&2
  r=$(ratio "$(field rate "$line")" "$(field rate "$ref")")
  record deploy "deploys/s ($(field deployed "$line")/$N_DEPLOYS ok)" "$(field rate "$line")" \
    "$(field rate "$ref")" "$r" ">=200/s" "$(yesno ge "$(field rate "$line")" 200)"
  record deploy "  vs posix_spawn reference" "$(field rate "$line")" "$(field rate "$ref2")" \
    "$(ratio "$(field rate "$line")" "$(field rate "$ref2")")" "-" "-"
  record deploy "  burst POST->Success p50 ms" "$(field p50_ms "$line")" "$(field p50_ms "$ref")" "-" "-" "-"
  record deploy "  burst POST->Success p99 ms" "$(field p99_ms "$line")" "$(field p99_ms "$ref")" "-" "-" "-"
  record deploy "  burst POST deploy answer p50/p99 ms" \
    "$(field post_p50_ms "$line")/$(field post_p99_ms "$line")" "-" "-" "-" "-"
  log "5b. engine: $N_SEQ deploys one after another (overhead without queueing)"
  line=$(lg deploy --port "$GPORT" --prefix s --set seq --count "$N_SEQ" --sequential) || true
  echo "   sequential: $line" >&2
  ref=$(lg spawn --count "$N_SEQ" --parallel 1)
  echo "   spawn reference (one at a time): $ref" >&2
  over=$(awk -v a="$(field p50_ms "$line")" -v b="$(field p50_ms "$ref")" 'BEGIN { printf "%.1f", a - b }')
  record deploy "single deploy POST->Success p50 ms" "$(field p50_ms "$line")" "$(field p50_ms "$ref")" "-" "-" "-"
  record deploy "single deploy p50 overhead ms" "$over" "0" "-" "<=20ms" "$(yesno le "$over" 20)"
  record deploy "single deploy POST->Success p99 ms" "$(field p99_ms "$line")" "$(field p99_ms "$ref")" "-" "-" "-"
  # 5c. What one commit costs once the burst runs: each patch wakes the lifecycle controller
  # (at most once a second), which reads the instances the commit touched, not all of them.
  log "5c. engine: CPU per label patch with $N_DEPLOYS instances running vs none running"
  busy_us=$(patch_cpu_us d "$N_PATCHES" after)
  record deploy "CPU us per patch, $N_DEPLOYS running" "$busy_us" "$idle_us" \
    "$(ratio "$busy_us" "$idle_us")" "<=1.5x" "$(yesno le "$(ratio "$busy_us" "$idle_us")" 1.5)"
  stop_gantryd
fi

# ---------------------------------------------------------------------------------------------
# 6. The ProcessLauncher alone: RunProcess(true) from a process with gantryd's shape (idle
# threads, touched heap); references: fork+exec and posix_spawn from the same process.
if want spawn; then
  if [[ -z ${BENCH_TOOLS:-} ]] && [[ ! -x $TOOLS/spawn_rate ||
        $ROOT/bench/spawn_rate.cc -nt $TOOLS/spawn_rate ||
        $ROOT/src/drivers/common/process.cc -nt $TOOLS/spawn_rate ]]; then
    log "compiling bench/spawn_rate.cc"
    g++ -std=c++20 -O2 -pthread -I"$ROOT/src" -o "$TOOLS/spawn_rate" "$ROOT/bench/spawn_rate.cc" \
      "$ROOT/src/drivers/common/process.cc" "$ROOT/src/drivers/common/sandbox.cc" \
      -labsl_status -labsl_statusor -labsl_strings
  fi
  for mb in 16 "$SPAWN_BIG_MB"; do
    log "6. spawn: $N_SPAWN x RunProcess(true) from a process with ${mb} MiB of heap and 8 threads"
    line=$("$TOOLS/spawn_rate" "$N_SPAWN" "$mb" 8)
    echo "   $line" >&2
    record spawn "RunProcess/s, ${mb} MiB heap" "$(field per_second "$line")" \
      "$(field fork_per_second "$line")" \
      "$(ratio "$(field per_second "$line")" "$(field fork_per_second "$line")")" "-" "-"
    record spawn "  vs posix_spawn" "$(field per_second "$line")" \
      "$(field posix_spawn_per_second "$line")" \
      "$(ratio "$(field per_second "$line")" "$(field posix_spawn_per_second "$line")")" "-" "-"
  done
fi

# ---------------------------------------------------------------------------------------------
# 7. Lifecycle policies: one week of 200 notebooks through the engine, the lifecycle
# controller and the GPU sampler on a fake clock (bench/lifecycle_sim.cc); GPU-hours held
# with no policy (the reference) vs idle 30m + ttl 12h + a night schedule. The trace is kept
# as lifecycle-trace.csv in BENCH_OUT.
if want lifecycle; then
  sim_tool lifecycle_sim
  log "7. lifecycle: one week, $NOTEBOOKS notebooks, a step of ${SIM_STEP}s, no policy vs policy"
  "$(sim lifecycle_sim)" --out "$OUT" --step "$SIM_STEP" --notebooks "$NOTEBOOKS" >"$OUT/lifecycle.txt"
  sed 's/^/   /' "$OUT/lifecycle.txt" >&2
  line=$(tail -1 "$OUT/lifecycle.txt")
  record lifecycle "GPU-hours held (policy vs none)" "$(field held_policy_gpu_hours "$line")" \
    "$(field held_none_gpu_hours "$line")" \
    "$(ratio "$(field held_policy_gpu_hours "$line")" "$(field held_none_gpu_hours "$line")")" "-" "-"
  record lifecycle "reclaimed fraction (headline)" "$(field reclaimed_fraction "$line")" "-" "-" "-" "-"
  record lifecycle "busy GPU-hours lost to stops" "$(field busy_lost_fraction "$line")" "-" "-" "-" "-"
  record lifecycle "simulation wall s (both runs)" "$(field wall_s "$line")" "-" "-" "-" "-"
fi

# ---------------------------------------------------------------------------------------------
# 8. Usage reports: a year of a 50-GPU fleet's ledger (100,000 UsageIntervals in a real
# SqliteStore with their rollups), the report gantryd computes (Tally: rollups + open intervals,
# by project, GPU type and month) and the same from every interval, vs the same GROUP BY run by
# the sqlite3 program on the same file (bench/usage_bench.cc; it fails if the two differ).
if want usage; then
  sim_tool usage_bench
  "$(sim usage_bench)" --dir "$TMP/usage" --intervals "$N_INTERVALS" >"$OUT/usage.txt"
  sed 's/^/   /' "$OUT/usage.txt" >&2
  line=$(tail -1 "$OUT/usage.txt")
  ms=$(field report_ms "$line")
  record usage "report of 100k intervals, ms" "$ms" "$(field sqlite3_ms "$line")" \
    "$(field ratio "$line")" "< 200 ms" "$(le "$ms" 200 && echo yes || echo no)"
fi

# 9. Webhooks (bench/webhooks_bench.cc): N state changes x 3 webhooks to a receiver on
# 127.0.0.1 (deliveries/s, POST->delivery delay), and creates/s and state changes/s without and
# with the webhooks in the same run (the outbox must not halve them).
if want webhooks; then
  log "9. webhooks: $N_CHANGES state changes x 3 webhooks (synchronous=FULL), 8 connections"
  GANTRYD_EXTRA=--webhook-allow-private start_gantryd webhooks FULL
  line=$(timeout 600 "$TOOLS/webhooks_bench" --port "$GPORT" --changes "$N_CHANGES" --hooks 3 \
    --connections 8) || die "the webhooks benchmark failed: $line"
  echo "   $line" >&2
  record webhooks "deliveries/s ($(field deliveries "$line")/$(field expected "$line"))" \
    "$(field deliveries_per_s "$line")" "-" "-" "-" "-"
  record webhooks "  POST->delivery p50/p99 ms" \
    "$(field delay_p50_ms "$line")/$(field delay_p99_ms "$line")" "-" "-" "-" "-"
  r=$(ratio "$(field creates_per_s_with "$line")" "$(field creates_per_s_without "$line")")
  record webhooks "creates/s with vs without hooks" "$(field creates_per_s_with "$line")" \
    "$(field creates_per_s_without "$line")" "$r" ">=0.5x" "$(yesno ge "$r" 0.5)"
  r=$(ratio "$(field changes_per_s_with "$line")" "$(field changes_per_s_without "$line")")
  record webhooks "state changes/s with vs without" "$(field changes_per_s_with "$line")" \
    "$(field changes_per_s_without "$line")" "$r" ">=0.5x" "$(yesno ge "$r" 0.5)"
  stop_gantryd
fi

# ---------------------------------------------------------------------------------------------
# 10. Container deploys (issue 23): POST deploy -> phase Success of a container instance (the
# container driver: image found, podman run, readiness on its endpoint) against `podman run`
# of the same image by hand, with the same runtime and isolation flags, until its port
# answers. Alternating, BENCH_CONTAINER_ROUNDS of each; the image is the example's
# (examples/container/build-image.sh, offline).
if want container; then
  if ! command -v podman >/dev/null 2>&1; then
    log "10. container: podman is not installed: skipped"
  else
    C_ROUNDS=${BENCH_CONTAINER_ROUNDS:-$(small 1 10)}
    C_IMAGE=localhost/gantry-notebook:1
    sh "$ROOT/examples/container/build-image.sh" >&2
    log "10. container: $C_ROUNDS deploys of a container instance vs podman run by hand"
    start_gantryd container NORMAL
    C_OWNER=$GDIR/data
    post "$API/environmenttemplates" '{"apiVersion":"paas.gantry.dev/v1","kind":"EnvironmentTemplate",
      "metadata":{"name":"ctr"},"spec":{"displayName":"Container","driver":"container",
      "container":{"image":"'"$C_IMAGE"'","ports":[{"name":"http","containerPort":8888}],
      "readiness":{"httpPath":"/","port":"http"}}}}'
    post "$API/computeprofiles" '{"apiVersion":"paas.gantry.dev/v1","kind":"ComputeProfile",
      "metadata":{"name":"ctr"},"spec":{"displayName":"Container","templateRef":{"name":"ctr"},
      "resources":{"cpu":1,"memoryGiB":1}}}'
    # The driver's flags: nofile and nproc at most this shell's hard limits, as gantryd does.
    lim() { local h; h=$(ulimit -H "$1"); [[ $h == unlimited || $h -gt $2 ]] && h=$2; echo "$h:$h"; }
    hand_flags=(--runtime runc --init --ulimit "nofile=$(lim -n 65536)" --ulimit "nproc=$(lim -u 4096)")
    [[ $(id -u) == 0 ]] && hand_flags+=(--uidmap 0:1000000:65536 --gidmap 0:1000000:65536)
    phase() {  # NAME: status.phase (curl and sed only: a poll must cost little CPU)
      curl -s -H "$AUTH" "http://127.0.0.1:$GPORT$API/computeinstances/$1" |
        sed -n 's/.*"phase":"\([A-Za-z]*\)".*/\1/p'
    }
    wait_phase() {  # NAME PHASE: polls until the instance is in PHASE; fails on Failed
      local i p
      for i in $(seq 3000); do
        p=$(phase "$1")
        [[ $p == "$2" ]] && return 0
        [[ $p == Failed ]] && { curl -s -H "$AUTH" "http://127.0.0.1:$GPORT$API/computeinstances/$1" >&2; return 1; }
        sleep 0.02
      done
      return 1
    }
    ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
    : >"$OUT/container-gantry.ms"; : >"$OUT/container-hand.ms"
    for i in $(seq "$C_ROUNDS"); do
      post "$API/computeinstances" '{"apiVersion":"paas.gantry.dev/v1","kind":"ComputeInstance",
        "metadata":{"name":"c'"$i"'"},"spec":{"profileRef":{"name":"ctr"}}}'
      t0=$(date +%s%N)
      post "$API/computeinstances/c$i/deploy" '{}'
      wait_phase "c$i" Success || die "container instance c$i did not reach Success"
      ms_since "$t0" >>"$OUT/container-gantry.ms"
      port=$(free_low_port)
      t0=$(date +%s%N)
      podman run -d --name "gantry-bench-$i" "${hand_flags[@]}" -p "127.0.0.1:$port:8888" \
        "$C_IMAGE" >/dev/null
      until curl -sf "http://127.0.0.1:$port/" >/dev/null; do sleep 0.02; done
      ms_since "$t0" >>"$OUT/container-hand.ms"
      # Best effort: on some hosts podman cannot unmount the shm at once (EBUSY).
      podman rm -f -t 0 "gantry-bench-$i" >/dev/null || true
      post "$API/computeinstances/c$i/destroy" '{}'
      wait_phase "c$i" NotDeployed || die "container instance c$i was not destroyed"
    done
    p50() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
    g50=$(p50 "$OUT/container-gantry.ms") h50=$(p50 "$OUT/container-hand.ms")
    echo "   gantry ms: $(tr '\n' ' ' <"$OUT/container-gantry.ms")" >&2
    echo "   by hand ms: $(tr '\n' ' ' <"$OUT/container-hand.ms")" >&2
    record container "deploy -> ready p50 ms" "$g50" "$h50" "$(ratio "$g50" "$h50")" "-" "-"
    record container "  gantry overhead p50 ms" "$((g50 - h50))" "0" "-" "-" "-"
    stop_gantryd
    podman ps -aq --filter "label=gantry.owner=$C_OWNER" | xargs -r podman rm -f >/dev/null
  fi
fi

# 11. Fair share (issue 18): one dispatcher pass's admission over 1,000 queued deploys on 64
# GPUs (CPU ms per pass vs a sort-and-visit reference, target 5 ms), then the real
# DispatchPass on SQLite with the same queue (bench/admission_bench.cc); a simulated week of
# three teams on 32 GPUs, FIFO with caps vs fair share (bench/fair_share_sim.cc).
if want admission || want fairshare; then
  sim_tool admission_bench fair_share_sim
fi
if want admission; then
  log "11a. admission: 1,000 queued deploys, 64 GPUs, 4 projects with guarantees"
  "$(sim admission_bench)" $(small "--passes 2 --dispatch-passes 2" "") >"$OUT/admission.txt"
  sed 's/^/   /' "$OUT/admission.txt" >&2
  line=$(grep '^admission ' "$OUT/admission.txt")
  record admission "CPU ms per pass (1,000 queued)" "$(field ms_per_pass "$line")" \
    "$(field reference_ms "$line")" "$(field ratio "$line")" "<=5ms" "$(field met "$line")"
  line=$(grep '^dispatch ' "$OUT/admission.txt")
  record admission "  DispatchPass on SQLite p50/max ms" \
    "$(field dispatch_p50_ms "$line")/$(field dispatch_max_ms "$line")" "-" "-" "-" "-"
fi
if want fairshare; then
  log "11b. fair share: one simulated week, three teams, 32 GPUs, FIFO with caps vs fair share"
  "$(sim fair_share_sim)" >"$OUT/fair_share.txt"
  sed 's/^/   /' "$OUT/fair_share.txt" >&2
  line=$(tail -1 "$OUT/fair_share.txt")
  record fairshare "weekday utilisation (fair vs fifo)" "$(field weekday_utilisation_fair "$line")" \
    "$(field weekday_utilisation_fifo "$line")" \
    "$(ratio "$(field weekday_utilisation_fair "$line")" "$(field weekday_utilisation_fifo "$line")")" "-" "-"
  for team in vision nlp speech; do
    record fairshare "  p95 wait within guarantee, $team (min)" \
      "$(field "p95_within_${team}_min" "$line" | cut -d/ -f2)" \
      "$(field "p95_within_${team}_min" "$line" | cut -d/ -f1)" "-" "-" "-"
  done
fi

log "results"
column -t -s $'\t' "$RESULTS" || cat "$RESULTS"

# The smoke test's one assertion: every section asked for ran and recorded its figures (a row
# at least, none with an empty figure). Whether a target was met is not its business.
if [[ $SMOKE == 1 ]]; then
  failed=()
  for section in ${ONLY//,/ }; do
    [[ $section == container ]] && ! command -v podman >/dev/null 2>&1 && continue
    names=$section
    [[ $section == list ]] && names="list memory"
    for name in $names; do
      rows=$(awk -F'\t' -v b="$name" 'NR > 1 && $1 == b' "$RESULTS" | wc -l)
      empty=$(awk -F'\t' -v b="$name" 'NR > 1 && $1 == b && ($3 == "" || $3 == "n/a")' "$RESULTS" | wc -l)
      ((rows > 0 && empty == 0)) || failed+=("$name ($rows rows, $empty without a figure)")
    done
  done
  ((${#failed[@]} == 0)) || die "sections that did not record their figures: ${failed[*]}"
  log "smoke: every section ran and recorded its figures"
fi
