# bench/fixtures.sh: the objects every benchmark creates before it measures, sourced by
# run_all.sh, postgres.sh, callgrind_requests.sh and pg_statements.sh so that they all measure
# the same instance: a no-op exec EnvironmentTemplate "noop" and the ComputeProfile "bench" on
# it, in project default.
#
#   source "$(dirname "$0")/fixtures.sh"
#   bench_fixtures http://127.0.0.1:PORT TOKEN    # non-zero (curl's message on stderr) on failure

BENCH_API=/apis/paas.gantry.dev/v1/namespaces/default

bench_post() {  # BASE_URL TOKEN PATH JSON
  curl -sS --fail-with-body -o /dev/null -X POST -H "Authorization: Bearer $2" \
    -H 'Content-Type: application/json' --data "$4" "$1$3"
}

bench_fixtures() {  # BASE_URL TOKEN
  bench_post "$1" "$2" "$BENCH_API/environmenttemplates" '{"apiVersion":"paas.gantry.dev/v1",
    "kind":"EnvironmentTemplate","metadata":{"name":"noop"},"spec":{"displayName":"No-op",
    "driver":"exec","exec":{"command":["true"],"timeoutSeconds":60}}}' &&
    bench_post "$1" "$2" "$BENCH_API/computeprofiles" '{"apiVersion":"paas.gantry.dev/v1",
    "kind":"ComputeProfile","metadata":{"name":"bench"},"spec":{"displayName":"Bench",
    "templateRef":{"name":"noop"},"resources":{"cpu":1,"memoryGiB":1}}}'
}
