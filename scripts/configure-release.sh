#!/usr/bin/env bash
# Configures build-release/, the build of scripts/run.sh (and of the newcomer test, which
# builds the same way first): RelWithDebInfo at -O1 (with -g1), no tests, and a unity build
# with each library in one batch (CMAKE_UNITY_BUILD_BATCH_SIZE=0), so the shared headers
# (Boost.JSON, Asio, absl, spdlog) are parsed once per library instead of once per file. Only
# the two files named in CMakeLists.txt (gantry_not_in_unity) are compiled on their own.
# -O1 instead of -O2: a cold build of gantryd and the CLI on 2 cores takes 114 s instead of
# 150-157 s, with the same GET and create rates and CPU per request in bench/run_all.sh,
# measured side by side (docs/performance.md, "First run"; the benchmarks build their own
# Release binaries).
set -euo pipefail
cd "$(dirname "$0")/.."
exec cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" -DGANTRY_TESTS=OFF \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=0 "$@"
