#!/usr/bin/env bash
# bench/build_experiment.sh [REV]: builds gantryd at REV (default HEAD) with
# bench/experiments.patch applied, in build-bench/exp-SHA, and prints the binary's path.
# The experiments are off unless their GANTRY_EXP_* variable is set (see the patch header);
# run them through run_all.sh, e.g.
#   GANTRYD=$(bench/build_experiment.sh) GANTRY_EXP_VFORK=1 BENCH_ONLY=deploy bench/run_all.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
sha=$(git -C "$ROOT" rev-parse --short "${1:-HEAD}")
DIR=${GANTRY_BENCH_BUILD:-$ROOT/build-bench}/exp-$sha
if [[ ! -x $DIR/build/src/app/gantryd ]]; then
  rm -rf "$DIR/src" && mkdir -p "$DIR/src"
  git -C "$ROOT" archive "$sha" | tar -x -C "$DIR/src"
  patch -s -d "$DIR/src" -p1 <"$ROOT/bench/experiments.patch" >&2
  cmake -S "$DIR/src" -B "$DIR/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGANTRY_TESTS=OFF >&2
  ninja -j2 -C "$DIR/build" gantryd >&2
fi
echo "$DIR/build/src/app/gantryd"
