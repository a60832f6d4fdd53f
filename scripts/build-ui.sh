#!/usr/bin/env bash
# Builds the web UI (PaaS Studio) into web/dist, which gantryd serves from /: `npm ci` when
# web/node_modules is missing or older than the lock file, then type-check and `vite build`
# (package.json's `typecheck` script, then `vite build`: what `npm run build` runs).
#   --no-typecheck   only `vite build` (scripts/run.sh: the type check is the test command's
#                    job, and leaving it out saves a newcomer about 12 s of CPU;
#                    docs/performance.md, "First run")
set -euo pipefail
cd "$(dirname "$0")/../web"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
[ "${1:-}" = "--no-typecheck" ] || npm run typecheck
npx --no-install vite build
