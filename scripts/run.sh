#!/usr/bin/env bash
# Installs what Gantry needs, builds it, and starts gantryd on the embedded default
# (SQLite in ./.gantry, local machine). Extra arguments go to gantryd.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGANTRY_TESTS=OFF >/dev/null
ninja -C build-release gantryd gantry
LISTEN="${GANTRY_LISTEN:-127.0.0.1:8080}"
cat <<MSG

  Gantry is starting on http://${LISTEN}
  API:   http://${LISTEN}/apis/paas.gantry.dev/v1
  CLI:   ./build-release/src/cli/gantry --server http://${LISTEN} get instances
  Tour:  ./build-release/src/cli/gantry --server http://${LISTEN} apply -f examples/
  Login: none yet: the API is open to anyone who can reach ${LISTEN} (loopback only by default).
  Data:  ./.gantry/gantry.db    Stop: Ctrl-C (drains in-flight requests)

MSG
exec ./build-release/src/app/gantryd --listen "$LISTEN" --data-dir .gantry "$@"
