#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ with clang into build-fuzz/ and runs each for SECONDS
# (default 20) over a temporary copy of its seed corpus (fuzz/corpus/<target>/) plus every input
# that once broke it (fuzz/regressions/<target>/), so the committed corpus does not grow and a
# regression fails the run at once.
# Crash inputs are written to fuzz/ as crash-*/leak-*/timeout-*/oom-* (gitignored patterns
# for crash-*; keep the interesting ones by adding them to the corpus). Exits non-zero if any
# target found a problem.
#
# usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail

SECONDS_PER_TARGET="${1:-20}"
if ! [[ "$SECONDS_PER_TARGET" =~ ^[0-9]+$ ]] || ((SECONDS_PER_TARGET < 1)); then
  echo "usage: $0 [SECONDS]  (a positive whole number of seconds per target)" >&2
  exit 2
fi

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build-fuzz"
JOBS="${FUZZ_JOBS:-2}"
TARGETS=(label_selector object_json squeue_json json_patch yaml_json)

cmake -S "$ROOT/fuzz" -B "$BUILD" -G Ninja -DCMAKE_CXX_COMPILER="${CXX_FUZZ:-clang++}" >/dev/null
ninja -C "$BUILD" -j "$JOBS"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/gantry-fuzz.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

status=0
for t in "${TARGETS[@]}"; do
  corpus="$WORK/$t"
  mkdir -p "$corpus"
  cp -R "$ROOT/fuzz/corpus/$t/." "$corpus/"
  if [[ -d "$ROOT/fuzz/regressions/$t" ]]; then
    cp -R "$ROOT/fuzz/regressions/$t/." "$corpus/"
  fi
  dict=()
  [[ -f "$ROOT/fuzz/$t.dict" ]] && dict=("-dict=$ROOT/fuzz/$t.dict")
  echo "=== fuzz_$t: ${SECONDS_PER_TARGET}s over $(ls "$corpus" | wc -l) seeds"
  if "$BUILD/fuzz_$t" "$corpus" "${dict[@]}" \
      -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="$ROOT/fuzz/" -print_final_stats=1 >"$WORK/$t.log" 2>&1; then
    grep -E '^stat::number_of_executed_units|^stat::new_units_added' "$WORK/$t.log" | sed 's/^/  /'
    echo "  ok"
  else
    status=1
    tail -n 60 "$WORK/$t.log"
    echo "  FAILED: fuzz_$t found a problem; the input is in $ROOT/fuzz/ (see above)" >&2
  fi
done
exit "$status"
