#!/usr/bin/env bash
# When gantryd runs as root, workloads and exec scripts run as an unprivileged user
# (--workload-user, docs/security.md "Workload isolation"): they must be able to reach the
# checkout (examples/scripts/...) and DATA_DIR.workloads beside the data directory. A checkout
# under a 0700 home (/root) is closed to them, and gantryd refuses to start, naming the
# directory. This opens the directories above the checkout for traversal only (o+x: no
# listing, no reading), printing each one it changes. Does nothing when not root.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || exit 0
d="$(cd "${1:-.}" && pwd)"
while [ "$d" != "/" ]; do
  if [ "$(( 0$(stat -c '%a' "$d") & 1 ))" -eq 0 ]; then
    echo "workloads run as an unprivileged user: allowing traversal (o+x) of $d"
    chmod o+x "$d"
  fi
  d="$(dirname "$d")"
done
