#!/usr/bin/env bash
# Configures build-release/, the build of scripts/run.sh (and of the newcomer test, which
# builds the same way first): RelWithDebInfo (-g1), no tests, and a unity build: the files of
# each library are compiled 16 to a batch, so the shared headers (Boost.JSON, Asio, absl,
# spdlog) are parsed once per batch instead of once per file. A cold build of gantryd and the
# CLI on 2 cores: 221 s instead of 468 s (docs/performance.md, "First run"). Only the two
# files named in CMakeLists.txt (gantry_not_in_unity) are compiled on their own.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGANTRY_TESTS=OFF \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 "$@"
