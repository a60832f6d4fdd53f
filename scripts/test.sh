#!/usr/bin/env bash
# Installs what Gantry and its tests need, builds everything with AddressSanitizer +
# UndefinedBehaviorSanitizer, runs every unit and integration test with ctest, then runs each
# fuzz target briefly, and checks formatting and sizes (scripts/check-style.sh). Prints the
# newcomer test's time (clean clone to a deployed instance).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh test
bash scripts/build-ui.sh   # web/dist and web/node_modules for the web tests
bash scripts/install-test-clients.sh   # tests/clients/js/node_modules (issue 24)
bash scripts/open-path-for-workloads.sh .   # as root, workloads run as gantry-workload
JOBS="${JOBS:-$(nproc)}"
# ccache: share hits between checkouts in different folders (CI clones anew each time).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGANTRY_SANITIZE=ON >/dev/null
ninja -C build-asan -j"$JOBS"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
# The house habits (STYLE.md #17): clang-format and the function/file sizes. A failure is
# reported and fails the run, after the tests have run.
bash scripts/check-style.sh || status=1
(cd build-asan && ctest --output-on-failure -j"$JOBS" --timeout 900) || status=$?
# ctest shows a passing test's output only in its log: the figure of it_local_run_script_test.
grep -h '^\[newcomer\]' build-asan/Testing/Temporary/LastTest.log 2>/dev/null || true
if [ -f scripts/fuzz.sh ]; then
  bash scripts/fuzz.sh "${FUZZ_SECONDS:-20}" || status=$?
fi
exit $status
