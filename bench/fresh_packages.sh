#!/usr/bin/env bash
# The package step of a fresh machine, measured without touching this one's packages: makes a
# minimal Debian 12 (bookworm) root with debootstrap in a temporary directory, then times
# `scripts/install-deps.sh run` (what the README's run command installs) and
# `scripts/install-deps.sh test` (what the test command adds) inside it with chroot, and
# prints, for each, the packages installed, the seconds and the disk used. The downloads come
# from the machine's Debian mirror, so the figures include its bandwidth. Needs root and
# debootstrap (apt-get install debootstrap); removes the root when done (KEEP_ROOT=1 keeps it).
#   usage: sudo bench/fresh_packages.sh [MIRROR]   (default http://deb.debian.org/debian)
set -euo pipefail
ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MIRROR="${1:-http://deb.debian.org/debian}"
[ "$(id -u)" -eq 0 ] || { echo "needs root (debootstrap, chroot)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }

FRESH="$(mktemp -d "${TMPDIR:-/tmp}/gantry-fresh.XXXXXX")"
chmod 755 "$FRESH"   # the root's /: system users (munge's postinst runs su munge) traverse it
cleanup() {
  umount "$FRESH/proc" 2>/dev/null || true
  [ "${KEEP_ROOT:-0}" = 1 ] && { echo "kept $FRESH"; return; }
  rm -rf "$FRESH"
}
trap cleanup EXIT

t0=$SECONDS
debootstrap --variant=minbase bookworm "$FRESH" "$MIRROR" >"$FRESH.debootstrap.log" 2>&1 ||
  { tail -n 30 "$FRESH.debootstrap.log"; exit 1; }
rm -f "$FRESH.debootstrap.log"
echo "minimal bookworm root in $((SECONDS - t0)) s: $(du -smx "$FRESH" | cut -f1) MiB"
cp /etc/resolv.conf "$FRESH/etc/resolv.conf" 2>/dev/null || true
mount -t proc proc "$FRESH/proc"
mkdir -p "$FRESH/gantry/scripts"
cp "$ROOT_DIR/scripts/install-deps.sh" "$FRESH/gantry/scripts/"

for mode in run test; do
  before=$(du -smx "$FRESH" | cut -f1)
  t0=$SECONDS
  chroot "$FRESH" bash /gantry/scripts/install-deps.sh "$mode" >"$FRESH/install-$mode.log" 2>&1 ||
    { tail -n 30 "$FRESH/install-$mode.log"; exit 1; }
  echo "install-deps.sh $mode: $((SECONDS - t0)) s, +$(($(du -smx "$FRESH" | cut -f1) - before)) MiB;" \
    "$(grep -E '^packages' "$FRESH/install-$mode.log")," \
    "$(grep -c '^Setting up ' "$FRESH/install-$mode.log" || true) Debian packages set up with their dependencies"
  grep -E '^disabling|^creating' "$FRESH/install-$mode.log" | sed 's/^/  /' || true
done
