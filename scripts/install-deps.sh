#!/usr/bin/env bash
# Installs the Debian packages Gantry needs. Idempotent: skips apt when all are present.
#   usage: scripts/install-deps.sh run    what building and running gantryd, the CLI and the
#                                         web UI need (scripts/run.sh)
#          scripts/install-deps.sh test   that and what the tests, fuzzers and benchmarks need
#                                         (scripts/test.sh, .ci/run)
# Nothing it installs is left running or enabled as a system service: packages that ship a
# daemon (PostgreSQL, Slurm's slurmctld/slurmd, munge) are installed without starting it
# (a temporary policy-rc.d, Debian's switch for that) and their units are then disabled. The
# tests start their own throwaway PostgreSQL server and Slurm daemons. A PostgreSQL installed
# here gets no default cluster (create one with pg_createcluster if you want one).
# Ends with one summary line: what it installed and how long that took.
set -euo pipefail

MODE="${1:-test}"
case "$MODE" in
  run | test) ;;
  *)
    echo "usage: $0 run|test" >&2
    exit 2
    ;;
esac

# Building and running gantryd, the CLI and the UI (the README's run command). libpq-dev:
# gantryd is always built with its PostgreSQL store. libldap-dev: gantryd's LDAP logins
# (--ldap-url, issue 21). libcjose-dev (and libjansson-dev, which its pkg-config needs):
# single sign-on's ID token and JWKS checks (--oidc-issuer, issue 21). python3: the examples'
# workloads. libjemalloc-dev: gantryd's allocator (docs/performance.md, "jemalloc").
RUN_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev libabsl-dev libsqlite3-dev
  libsodium-dev libssl-dev libyaml-cpp-dev libspdlog-dev libcli11-dev libpq-dev libldap-dev
  libcjose-dev libjansson-dev libjemalloc-dev
  curl python3
)
# The web UI: node and npm (Debian's, unless a node is already installed, e.g. from NodeSource).
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || RUN_PACKAGES+=(nodejs npm)

# Test-only: what the tests, fuzzers (clang) and benchmarks need on top (the README's test
# command and CI). Add a package only the tests use here, not above.
TEST_PACKAGES=(
  clang clang-format libclang-rt-14-dev libgtest-dev libgmock-dev libbenchmark-dev sqlite3 procps
  chromium
  slurm-wlm
  postgresql
  python3-kubernetes  # tests: the official Python client (issue 24)
  slapd ldap-utils    # tests: a throwaway OpenLDAP directory for the LDAP logins (issue 21)
  # tests: a throwaway OpenID Connect provider for single sign-on (issue 21; docs/sso.md):
  # LemonLDAP::NG's portal under its FastCGI server, behind nginx. The Perl modules are what the
  # portal loads at start but Debian only recommends (this script installs no recommends).
  lemonldap-ng lemonldap-ng-fastcgi-server nginx-light
  libnet-ldap-perl  # its LDAP backend (tests/auth/oidc_refresh_test.cc: users in slapd)
  libgd-securityimage-perl libimage-magick-perl libcrypt-openssl-bignum-perl
  libstring-random-perl libio-string-perl libconvert-base32-perl libipc-run-perl
  libmime-tools-perl libio-socket-timeout-perl libunicode-string-perl fonts-urw-base35
  # tests/container (issue 23): real Podman with the runc runtime (crun fails on a hybrid
  # cgroup layout), catatonit for --init, netavark/aardvark-dns/iptables for published ports,
  # uidmap for user namespaces (named: recommends are not installed), and busybox-static,
  # the one binary of the image the tests build offline (docs/container-driver.md).
  podman runc catatonit netavark aardvark-dns iptables uidmap busybox-static
  # bench/run_all.sh and its CI smoke test (bench_smoke, issue 22): wrk loads gantryd and the
  # nginx reference (nginx-light above); sqlite3 and PostgreSQL's pgbench are the others.
  wrk
)

# Packages that ship a daemon, and its unit: installed without starting it, then disabled.
# The tests bring these (slapd: the tests write their own slapd.conf): slurm-wlm brings munge, Chromium brings dbus (the system message bus;
# under systemd its socket is static, so it still starts when a program first asks for it).
declare -A SERVICE_UNITS=(
  [postgresql]="postgresql"
  [slurmctld]="slurmctld"
  [slurmd]="slurmd"
  [munge]="munge"
  [dbus]="dbus"
  [slapd]="slapd"
  [lemonldap-ng-fastcgi-server]="lemonldap-ng-fastcgi-server"
  [nginx-light]="nginx"
)

PACKAGES=("${RUN_PACKAGES[@]}")
[ "$MODE" = test ] && PACKAGES+=("${TEST_PACKAGES[@]}")

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing=()
for p in "${PACKAGES[@]}"; do
  installed "$p" || missing+=("$p")
done

# Daemon packages not installed yet (dependencies included: slurm-wlm brings munge). Only
# these are disabled afterwards; a service the machine already had is left as it was.
new_services=()
for p in "${!SERVICE_UNITS[@]}"; do
  installed "$p" || new_services+=("$p")
done

POLICY=/usr/sbin/policy-rc.d
PG_NO_CLUSTER=/etc/postgresql-common/createcluster.d/gantry-install-no-main-cluster.conf
cleanup() {
  if [ -n "${own_policy:-}" ]; then $SUDO rm -f "$POLICY"; fi
  if [ -n "${own_pg_conf:-}" ]; then $SUDO rm -f "$PG_NO_CLUSTER"; fi
}
trap cleanup EXIT

# Stops (if running) and disables a unit, with systemd or with sysv-rc.
disable_unit() {
  local unit="$1"
  if [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now --quiet "$unit.service" 2>/dev/null || true
  else
    if [ -x "/etc/init.d/$unit" ]; then
      $SUDO "/etc/init.d/$unit" stop >/dev/null 2>&1 || true
      command -v update-rc.d >/dev/null 2>&1 && $SUDO update-rc.d "$unit" disable >/dev/null 2>&1 || true
    fi
    # Without a running systemd, `disable` still removes the unit's enablement links.
    command -v systemctl >/dev/null 2>&1 && $SUDO systemctl disable --quiet "$unit.service" 2>/dev/null || true
  fi
}

if ((${#missing[@]})); then
  started=$SECONDS
  echo "installing ${#missing[@]} packages ($MODE): ${missing[*]}"
  if ((${#new_services[@]})); then
    # invoke-rc.d (and deb-systemd-invoke) ask policy-rc.d; 101 = "action not allowed". An
    # existing policy-rc.d (containers have one that denies everything) is left alone.
    if [ ! -e "$POLICY" ]; then
      printf '#!/bin/sh\n# scripts/install-deps.sh (Gantry): no daemon starts while it installs.\nexit 101\n' |
        $SUDO tee "$POLICY" >/dev/null
      $SUDO chmod 755 "$POLICY"
      own_policy=1
    fi
    if ! installed postgresql-common; then
      $SUDO mkdir -p "$(dirname "$PG_NO_CLUSTER")"
      echo "create_main_cluster = false" | $SUDO tee "$PG_NO_CLUSTER" >/dev/null
      own_pg_conf=1
    fi
    # slapd's debconf would otherwise create a directory for the host's domain (and ask for
    # its admin password on a terminal): the tests bring their own configuration.
    if ! installed slapd && command -v debconf-set-selections >/dev/null 2>&1; then
      echo "slapd slapd/no_configuration boolean true" | $SUDO debconf-set-selections
    fi
  fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
  for p in "${new_services[@]}"; do
    if installed "$p"; then
      echo "disabling the system service $p (installed for the tests, which start their own)"
      disable_unit "${SERVICE_UNITS[$p]}"
    fi
  done
  cleanup
  own_policy="" own_pg_conf=""
  summary="packages ($MODE): installed ${#missing[@]} in $((SECONDS - started)) s"
else
  summary="packages ($MODE): all ${#PACKAGES[@]} present"
fi

# The unprivileged account a root gantryd runs workloads, exec scripts and Slurm jobs as
# (gantryd --workload-user, default gantry-workload; without it gantryd falls back to nobody).
# The run command needs it as much as the tests do.
if ! getent passwd gantry-workload >/dev/null 2>&1; then
  echo "creating system user gantry-workload"
  $SUDO useradd --system --user-group --home-dir /var/lib/gantry-workload --create-home \
    --shell /usr/sbin/nologin --comment "Gantry workloads" gantry-workload
fi
echo "$summary"
