#!/usr/bin/env bash
# Builds the web UI (PaaS Studio) into web/dist, which gantryd serves from /: `npm ci` when
# web/node_modules is missing or older than the lock file, then type-check and `vite build`.
set -euo pipefail
cd "$(dirname "$0")/../web"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
npm run build
