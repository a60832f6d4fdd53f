#!/usr/bin/env bash
# Installs the JavaScript Kubernetes client the tests in tests/clients/js drive gantryd with
# (@kubernetes/client-node and typescript, pinned in its package-lock.json): `npm ci` when
# tests/clients/js/node_modules is missing or older than the lock file, as build-ui.sh does
# for web/. The Python client is a Debian package (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/../tests/clients/js"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
