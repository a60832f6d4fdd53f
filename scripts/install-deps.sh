#!/usr/bin/env bash
# Installs every Debian package Gantry needs to build, test and benchmark.
# Used by both README commands and by .ci/run. Idempotent: skips apt when all are present.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config clang libclang-rt-14-dev
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev libabsl-dev libsqlite3-dev
  libsodium-dev libssl-dev libyaml-cpp-dev libspdlog-dev libcli11-dev libgtest-dev libgmock-dev
  libbenchmark-dev sqlite3 curl procps python3 chromium
  slurm-wlm
  libpq-dev postgresql
  python3-kubernetes  # tests: the official Python client (issue 24)
)
# The web UI: node and npm (Debian's, unless a node is already installed, e.g. from NodeSource).
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || PACKAGES+=(nodejs npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The unprivileged account a root gantryd runs workloads, exec scripts and Slurm jobs as
# (gantryd --workload-user, default gantry-workload; without it gantryd falls back to nobody).
if ! getent passwd gantry-workload >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "creating system user gantry-workload"
  $SUDO useradd --system --user-group --home-dir /var/lib/gantry-workload --create-home \
    --shell /usr/sbin/nologin --comment "Gantry workloads" gantry-workload
fi
