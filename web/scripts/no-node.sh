#!/bin/sh
# Stands in for node in the web tests when node is not installed (see web/CMakeLists.txt).
if [ -n "${CI:-}${GANTRY_CI:-}" ]; then echo "FAIL: node is not installed (CI must run the web tests)"; exit 1; fi
echo "SKIP: node is not installed (bash scripts/install-deps.sh)"
exit 77
