#!/usr/bin/env bash
# bench/pg_statements.sh: the SQL statements gantryd sends PostgreSQL per create of a compute
# instance, counted by pg_stat_statements. Like bench/callgrind_requests.sh for SQLite, the
# count repeats for the same binary whatever else the machine does, so two builds can be
# compared exactly where bench/postgres.sh's rates drown in a 2-core VM's noise.
#
#   bench/pg_statements.sh GANTRYD [N]     # N creates, one at a time (default 200)
#
# A throwaway PostgreSQL server (defaults, pg_stat_statements preloaded) in a temp directory,
# one gantryd on it, an EnvironmentTemplate and a ComputeProfile, then N creates sent one at a
# time by curl. Prints the transactions per create (pg_stat_database, the background loops'
# included: the run is short) and every statement with its calls per create, most first.
set -euo pipefail
source "$(dirname "$0")/fixtures.sh"

GANTRYD=${1:?usage: bench/pg_statements.sh GANTRYD [N]}
N=${2:-200}
PGBIN=${GANTRY_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
[[ -x $PGBIN/initdb && -f $PGBIN/../lib/pg_stat_statements.so ]] ||
  { echo "pg_statements.sh: needs PostgreSQL with pg_stat_statements (apt-get install postgresql)" >&2; exit 1; }
TMP=$(mktemp -d /tmp/gantry-pgstatements.XXXXXX)
chmod 755 "$TMP"
AS=()  # initdb refuses root: run PostgreSQL as the postgres user then
if [[ $(id -u) == 0 ]]; then chown postgres: "$TMP"; AS=(runuser -u postgres --); fi
PID=''
cleanup() {
  [[ -z $PID ]] || { kill -TERM "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
  [[ -f $TMP/pg/data/postmaster.pid ]] &&
    "${AS[@]}" "$PGBIN/pg_ctl" -D "$TMP/pg/data" -m immediate stop >/dev/null 2>&1
  rm -rf "$TMP"
}
trap cleanup EXIT

"${AS[@]}" mkdir -p "$TMP/pg"
"${AS[@]}" "$PGBIN/initdb" -D "$TMP/pg/data" -U postgres -A trust -E UTF8 --locale=C >/dev/null
PGPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${AS[@]}" "$PGBIN/pg_ctl" -D "$TMP/pg/data" -l "$TMP/pg/server.log" -w -o "-k $TMP/pg \
  -p $PGPORT -c listen_addresses= -c shared_preload_libraries=pg_stat_statements \
  -c pg_stat_statements.track=all" start >/dev/null
psql() { "$PGBIN/psql" -h "$TMP/pg" -p "$PGPORT" -U postgres -X -q -t -A -v ON_ERROR_STOP=1 "$@"; }
psql -c "CREATE DATABASE gantry"
psql -d gantry -c "CREATE EXTENSION pg_stat_statements"

TOKEN=bench-bootstrap-token-0123456789
mkdir -p "$TMP/gantryd"
GANTRY_BOOTSTRAP_TOKEN=$TOKEN "$GANTRYD" --listen 127.0.0.1:0 --data-dir "$TMP/gantryd/data" \
  --store "postgresql:///gantry?host=$TMP/pg&port=$PGPORT&user=postgres" --threads 2 \
  --log-level info 2>"$TMP/gantryd/log" &
PID=$!
PORT=''
for _ in $(seq 300); do
  PORT=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$TMP/gantryd/log")
  [[ -n $PORT ]] && break
  kill -0 "$PID" 2>/dev/null || { cat "$TMP/gantryd/log" >&2; exit 1; }
  sleep 0.1
done
[[ -n $PORT ]] || { echo "gantryd did not report its port" >&2; exit 1; }
API=/apis/paas.gantry.dev/v1/namespaces/default
request() {  # METHOD PATH [JSON]
  curl -sS --fail-with-body -o /dev/null -X "$1" -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' ${3:+--data "$3"} "http://127.0.0.1:$PORT$2"
}
bench_fixtures "http://127.0.0.1:$PORT" "$TOKEN"

transactions() {
  psql -d gantry -c "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'gantry'"
}
psql -d gantry -c "SELECT pg_stat_statements_reset()" >/dev/null
before=$(transactions)
for i in $(seq "$N"); do
  request POST "$API/computeinstances" '{"apiVersion":"paas.gantry.dev/v1",
    "kind":"ComputeInstance","metadata":{"name":"pg-'"$i"'","labels":{"team":"t'"$((i % 10))"'"}},
    "spec":{"displayName":"Statements '"$i"'","profileRef":{"name":"bench"}}}'
done
sleep 0.5  # the watch tailer's reads of the last commit
after=$(transactions)
awk -v b="$before" -v a="$after" -v n="$N" \
  'BEGIN { printf "%d creates: %.2f transactions per create\n", n, (a - b) / n }'
echo "statements per create (calls / $N), the statement's first 100 characters:"
psql -d gantry -F $'\t' -c "SELECT calls, left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 100)
  FROM pg_stat_statements WHERE calls >= $N / 4 AND query NOT LIKE '%pg_stat%'
  ORDER BY calls DESC" |
  awk -F '\t' -v n="$N" '{ printf "  %6.2f  %s\n", $1 / n, $2 }'
