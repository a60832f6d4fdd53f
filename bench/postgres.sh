#!/usr/bin/env bash
# bench/postgres.sh: gantryd on PostgreSQL, one and two replicas, against pgbench on the same
# server in the same run. Figures and analysis: docs/performance.md. A measurement, not a
# test: exits non-zero only when something could not run.
#
#   bench/postgres.sh                       # about 2-3 minutes
#   BENCH_SECONDS=20 BENCH_DEPLOYS=1000 bench/postgres.sh
#
# What it measures, all on one throwaway PostgreSQL server with its default durability
# (fsync=on, synchronous_commit=on), started here in a temp directory:
#   creates/s   16 connections POSTing ComputeInstances for BENCH_SECONDS: one replica; two
#               replicas on one database (8 connections to each, the sum)
#   deploys/s   BENCH_DEPLOYS no-op exec deploys at once: one replica; two replicas (half the
#               deploys posted to each; each client watches its half through its replica)
#   list        one page of 100 instances with a labelSelector (none, env=prod 50 %,
#               team=t3 10 %, shard=s7 0.1 %) over BENCH_LIST_INSTANCES instances, one replica:
#               p50/p99 of sequential GETs; reference: the page query of the selector on the
#               jsonb column (what gantryd ran before the label index), alone, with pgbench
#   pgbench     16 clients for BENCH_SECONDS, one transaction each:
#                 row:   INSERT of one row the size of a stored instance (same columns and
#                        indexes as the objects table)
#                 shape: what a gantryd create does in SQL (advance the counter, INSERT the
#                        object, INSERT the event, NOTIFY), without HTTP, JSON or validation
#
# Knobs: GANTRYD (default build-bench/src/app/gantryd, built Release if missing),
# BENCH_THREADS (gantryd --threads, default 2), BENCH_WORKERS (--workers, default 16),
# BENCH_SECONDS (default 10), BENCH_DEPLOYS (default 500), BENCH_LIST_INSTANCES (default
# 20000; 0 skips the list section), GANTRYD_EXTRA (more gantryd flags, e.g. --write-threads 0
# for the old request path), GANTRY_PG_BIN (initdb, postgres,
# pg_ctl, psql, pgbench; default: the newest /usr/lib/postgresql/*/bin).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/fixtures.sh"
BUILD=${GANTRY_BENCH_BUILD:-$ROOT/build-bench}
GANTRYD=${GANTRYD:-$BUILD/src/app/gantryd}
THREADS=${BENCH_THREADS:-2}
WORKERS=${BENCH_WORKERS:-16}
SECS=${BENCH_SECONDS:-10}
N_DEPLOYS=${BENCH_DEPLOYS:-500}
N_LIST=${BENCH_LIST_INSTANCES:-20000}
API=/apis/paas.gantry.dev/v1/namespaces/default
TOOLS=$BUILD/bench-tools

log() { printf '\n== %s  [load average %s]\n' "$*" "$(cut -d' ' -f1-3 /proc/loadavg)" >&2; }
die() { printf 'postgres.sh: %s\n' "$*" >&2; exit 1; }
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2" | head -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

PGBIN=${GANTRY_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[[ -x $PGBIN/postgres && -x $PGBIN/pgbench ]] || die "PostgreSQL server binaries not found (apt-get install postgresql)"
if [[ ! -x $GANTRYD ]]; then
  log "building gantryd (Release) in $BUILD"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGANTRY_TESTS=OFF >&2
  ninja -j2 -C "$BUILD" gantryd >&2
fi
mkdir -p "$TOOLS"
if [[ ! -x $TOOLS/loadgen || $ROOT/bench/loadgen.cc -nt $TOOLS/loadgen ]]; then
  log "compiling bench/loadgen.cc"
  g++ -std=c++20 -O2 -pthread -o "$TOOLS/loadgen" "$ROOT/bench/loadgen.cc" -lboost_json
fi
LG=$TOOLS/loadgen

# gantryd requires credentials: each replica gets the same bootstrap (org-admin) token, and
# loadgen and curl send it.
export GANTRY_TOKEN=${GANTRY_TOKEN:-bench-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')}
TMP=$(mktemp -d /tmp/gantry-pgbench.XXXXXX)
chmod 711 "$TMP"  # as root, gantryd's workload user must reach DATA_DIR.workloads beside the data dir
chmod 755 "$TMP"
PIDS=()
AS=()  # run PostgreSQL programs as the postgres user when root (initdb refuses root)
if [[ $(id -u) == 0 ]]; then
  chown postgres: "$TMP"
  AS=(runuser -u postgres --)
fi
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  [[ -f $TMP/pg/data/postmaster.pid ]] && "${AS[@]}" "$PGBIN/pg_ctl" -D "$TMP/pg/data" -m immediate stop >/dev/null 2>&1
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------------------------
# The server: defaults except the socket directory and no TCP listener.
log "PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') in $TMP/pg (fsync=on, synchronous_commit=on)"
"${AS[@]}" mkdir -p "$TMP/pg"
"${AS[@]}" "$PGBIN/initdb" -D "$TMP/pg/data" -U postgres -A trust -E UTF8 --locale=C >/dev/null
PGPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${AS[@]}" "$PGBIN/pg_ctl" -D "$TMP/pg/data" -l "$TMP/pg/server.log" -w \
  -o "-k $TMP/pg -p $PGPORT -c listen_addresses= -c max_connections=300 -c shared_buffers=256MB" \
  start >/dev/null
psql() { "$PGBIN/psql" -h "$TMP/pg" -p "$PGPORT" -U postgres -X -q -v ON_ERROR_STOP=1 "$@"; }
url() { echo "postgresql:///$1?host=$TMP/pg&port=$PGPORT&user=postgres"; }

# ---------------------------------------------------------------------------------------------
# Replicas.
declare -A PORT
start_replica() {  # NAME DB [KEY_FROM]: gantryd on database DB; sets PORT[NAME]
  local dir=$TMP/$1
  mkdir -p "$dir/data"
  [[ -n ${3:-} ]] && cp "$TMP/$3/data/secret.key" "$dir/data/secret.key"
  GANTRY_BOOTSTRAP_TOKEN=$GANTRY_TOKEN \
  "$GANTRYD" --listen 127.0.0.1:0 --data-dir "$dir/data" --store "$(url "$2")" \
    --threads "$THREADS" --workers "$WORKERS" --log-level info ${GANTRYD_EXTRA:-} 2>"$dir/gantryd.log" &
  PIDS+=($!)
  local p=''
  for _ in $(seq 200); do
    p=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$dir/gantryd.log")
    [[ -n $p ]] && break
    sleep 0.05
  done
  [[ -n $p ]] || { cat "$dir/gantryd.log" >&2; die "gantryd $1 did not start"; }
  PORT[$1]=$p
}
stop_replicas() {
  local p
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
}
setup_profile() {  # PORT: bench/fixtures.sh's template and profile
  bench_fixtures "http://127.0.0.1:$1" "$GANTRY_TOKEN" || die "creating the fixtures failed"
}
now() { date +%s.%N; }

RESULTS=$TMP/results.tsv
printf 'figure\tone replica\ttwo replicas\tpgbench row\tpgbench shape\n' >"$RESULTS"

# ---------------------------------------------------------------------------------------------
log "1. creates/s, one replica, 16 connections, ${SECS}s"
psql -c "CREATE DATABASE one" -c "CREATE DATABASE two"
start_replica r1 one
setup_profile "${PORT[r1]}"
line=$("$LG" create --port "${PORT[r1]}" --prefix c --connections 16 --seconds "$SECS")
echo "   $line" >&2
c1=$(field rate "$line")

log "2. deploys/s, one replica, $N_DEPLOYS no-op exec deploys at once (--workers $WORKERS)"
"$LG" create --port "${PORT[r1]}" --prefix d --count "$N_DEPLOYS" --connections 16 --set burst >/dev/null
line=$("$LG" deploy --port "${PORT[r1]}" --prefix d --set burst --count "$N_DEPLOYS" --connections 32) || true
echo "   $line" >&2
d1=$(field rate "$line")
[[ $(field deployed "$line") == "$N_DEPLOYS" ]] || echo "   (not every deploy reached Success)" >&2
stop_replicas

log "3. creates/s, two replicas on one database, 8 connections to each, ${SECS}s"
start_replica r2a two
start_replica r2b two r2a
setup_profile "${PORT[r2a]}"
"$LG" create --port "${PORT[r2a]}" --prefix ca --connections 8 --seconds "$SECS" >"$TMP/ca" &
a=$!
"$LG" create --port "${PORT[r2b]}" --prefix cb --connections 8 --seconds "$SECS" >"$TMP/cb" &
b=$!
wait $a $b
echo "   a: $(cat "$TMP/ca")" >&2
echo "   b: $(cat "$TMP/cb")" >&2
c2=$(awk -v a="$(field rate "$(cat "$TMP/ca")")" -v b="$(field rate "$(cat "$TMP/cb")")" 'BEGIN { printf "%.1f", a + b }')

log "4. deploys/s, two replicas, $N_DEPLOYS deploys at once, half posted to each"
half=$((N_DEPLOYS / 2))
"$LG" create --port "${PORT[r2a]}" --prefix da --count "$half" --connections 8 --set burst-a >/dev/null
"$LG" create --port "${PORT[r2b]}" --prefix db --count "$half" --connections 8 --set burst-b >/dev/null
t0=$(now)
"$LG" deploy --port "${PORT[r2a]}" --prefix da --set burst-a --count "$half" --connections 16 >"$TMP/da" &
a=$!
"$LG" deploy --port "${PORT[r2b]}" --prefix db --set burst-b --count "$half" --connections 16 >"$TMP/db" &
b=$!
wait $a $b || true
t1=$(now)
echo "   a: $(cat "$TMP/da")" >&2
echo "   b: $(cat "$TMP/db")" >&2
done2=$(( $(field deployed "$(cat "$TMP/da")") + $(field deployed "$(cat "$TMP/db")") ))
# Both clients started together: the pair's rate is every deploy over the slower one's time.
d2=$(awk -v n="$done2" -v a="$(field seconds "$(cat "$TMP/da")")" -v b="$(field seconds "$(cat "$TMP/db")")" \
  'BEGIN { s = a > b ? a : b; printf "%.1f", n / s }')
stop_replicas

# ---------------------------------------------------------------------------------------------
LIST_ROWS=()
if ((N_LIST > 0)); then
  log "6. list one page of 100 with a labelSelector over $N_LIST instances, one replica"
  psql -c "CREATE DATABASE list"
  start_replica rl list
  setup_profile "${PORT[rl]}"
  line=$("$LG" create --port "${PORT[rl]}" --prefix i --count "$N_LIST" --connections 16)
  echo "   load: $line" >&2
  [[ $(field creates "$line") == "$N_LIST" ]] || die "loading $N_LIST instances failed"
  psql -d list -c "ANALYZE"
  for sel in "none:100%::" "broad:50%:env:prod" "medium:10%:team:t3" "selective:0.1%:shard:s7"; do
    IFS=: read -r name share key value <<<"$sel"
    path="$API/computeinstances?limit=100"
    [[ -n $key ]] && path+="&labelSelector=$key%3D$value"
    line=$("$LG" list --port "${PORT[rl]}" --path "$path" --count 300 --seconds 20)
    echo "   $name (${key:-no selector}${key:+=$value}, $share match): $line" >&2
    ref=-
    if [[ -n $key ]]; then
      # The page query on the jsonb column, as gantryd ran it before the label index.
      printf "SELECT id, body FROM objects WHERE kind = 'ComputeInstance' AND labels->>'%s' = '%s' ORDER BY id DESC LIMIT 101;\n" \
        "$key" "$value" >"$TMP/page.sql"
      chmod 644 "$TMP/page.sql"
      out=$("$PGBIN/pgbench" -h "$TMP/pg" -p "$PGPORT" -U postgres -n -c 1 -T 5 -f "$TMP/page.sql" list 2>&1)
      ref=$(sed -n 's/^latency average = \([0-9.]*\) ms.*/\1/p' <<<"$out" | head -1)
    fi
    LIST_ROWS+=("$(printf '%s (%s)\t%s\t%s\t%s' "$name" "$share" "$(field p50_ms "$line")" \
      "$(field p99_ms "$line")" "$ref")")
  done
  stop_replicas
fi

# ---------------------------------------------------------------------------------------------
log "5. pgbench, 16 clients, ${SECS}s, one transaction each"
size=$(psql -d one -At -c "SELECT avg(length(body))::int FROM objects WHERE kind = 'ComputeInstance'")
labels=$(psql -d one -At -c "SELECT labels::text FROM objects WHERE kind = 'ComputeInstance' LIMIT 1")
echo "   stored instance body: $size bytes; labels like $labels" >&2
psql -c "CREATE DATABASE ref"
psql -d ref <<'SQL'
CREATE TABLE objects (id BIGSERIAL PRIMARY KEY, kind TEXT NOT NULL, namespace TEXT NOT NULL,
  name TEXT NOT NULL, rv BIGINT NOT NULL, labels JSONB NOT NULL, phase TEXT NOT NULL,
  ref_name TEXT NOT NULL, search TEXT NOT NULL, body TEXT NOT NULL, UNIQUE (kind, namespace, name));
CREATE INDEX ON objects (kind, namespace, id);
CREATE INDEX ON objects (kind, id);
CREATE INDEX ON objects (kind, phase, id);
CREATE TABLE events (rv BIGINT PRIMARY KEY, commit_rv BIGINT NOT NULL, type TEXT NOT NULL,
  kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE gantry_state (id INTEGER PRIMARY KEY, rv BIGINT NOT NULL);
INSERT INTO gantry_state VALUES (1, 0);
CREATE SEQUENCE names;
SQL
cat >"$TMP/row.sql" <<SQL
INSERT INTO objects (kind, namespace, name, rv, labels, phase, ref_name, search, body)
  VALUES ('ComputeInstance', 'default', 'r-' || nextval('names'), 1, '$labels', '', 'bench',
          'x', repeat('x', $size));
SQL
cat >"$TMP/shape.sql" <<SQL
BEGIN;
UPDATE gantry_state SET rv = rv + 1 WHERE id = 1 RETURNING rv \\gset
INSERT INTO objects (kind, namespace, name, rv, labels, phase, ref_name, search, body)
  VALUES ('ComputeInstance', 'default', 's-' || :rv, :rv, '$labels', '', 'bench', 'x',
          repeat('x', $size));
INSERT INTO events (rv, commit_rv, type, kind, namespace, name, body)
  VALUES (:rv, :rv, 'ADDED', 'ComputeInstance', 'default', 's-' || :rv, repeat('x', $size));
SELECT pg_notify('gantry_events', CAST(:rv AS text));
COMMIT;
SQL
chmod 644 "$TMP/row.sql" "$TMP/shape.sql"
pgb() { "$PGBIN/pgbench" -h "$TMP/pg" -p "$PGPORT" -U postgres -n -c 16 -j 2 -T "$SECS" -f "$1" ref 2>&1; }
out=$(pgb "$TMP/row.sql")
rrow=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -1)
echo "   row:   $rrow tps" >&2
out=$(pgb "$TMP/shape.sql")
rshape=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -1)
echo "   shape: $rshape tps" >&2

printf 'creates/s\t%s\t%s\t%s\t%s\n' "$c1" "$c2" "$rrow" "$rshape" >>"$RESULTS"
printf 'creates vs pgbench row\t%s\t%s\t-\t-\n' "$(ratio "$c1" "$rrow")" "$(ratio "$c2" "$rrow")" >>"$RESULTS"
printf 'creates vs pgbench shape\t%s\t%s\t-\t-\n' "$(ratio "$c1" "$rshape")" "$(ratio "$c2" "$rshape")" >>"$RESULTS"
printf 'deploys/s (%s at once)\t%s\t%s\t-\t-\n' "$N_DEPLOYS" "$d1" "$d2" >>"$RESULTS"
log "results (instance body $size bytes; $(nproc) CPUs; gantryd --threads $THREADS --workers $WORKERS per replica)"
column -t -s $'\t' "$RESULTS" || cat "$RESULTS"
if ((${#LIST_ROWS[@]} > 0)); then
  log "list, one page of 100 over $N_LIST instances (ms)"
  { printf 'selector\tp50\tp99\tjsonb page query alone, mean\n'; printf '%s\n' "${LIST_ROWS[@]}"; } |
    column -t -s $'\t'
fi
