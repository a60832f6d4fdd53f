#!/usr/bin/env bash
# Configures build-release/, the build of scripts/run.sh (and of the newcomer test, which
# builds the same way first): RelWithDebInfo at -Og (with -g1), no tests, and a unity build
# with each library in one batch (CMAKE_UNITY_BUILD_BATCH_SIZE=0), so the shared headers
# (Boost.JSON, Asio, absl, spdlog) are parsed once per library instead of once per file. Only
# the two files named in CMakeLists.txt (gantry_not_in_unity) are compiled on their own.
#   GANTRY_OPT=-O2   another optimisation level (default -Og)
# -Og is the first run's: a cold build of gantryd and the CLI on 2 cores takes 83 s instead
# of 106-118 s at -O1 and 150-157 s at -O2; it costs a GET about a sixth more CPU and a create
# nothing bench/run_all.sh can tell apart (docs/performance.md, "First run"). A gantryd that
# serves many users for long is worth GANTRY_OPT=-O2 (docs/operations.md); the benchmarks
# build their own Release (-O3) binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="${GANTRY_OPT:--Og} -DNDEBUG" -DGANTRY_TESTS=OFF \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=0 "$@"
