#!/bin/sh
# Builds localhost/gantry-notebook:1, the offline default image of examples/60-container.yaml,
# from Debian packages only: FROM scratch with the static busybox of busybox-static and a
# page, served by busybox httpd on port 8888 (what the Jupyter images listen on). No registry
# is needed. Does nothing when the image exists; says why and exits 0 when podman or
# /bin/busybox is missing (the container example then fails its deploy with Podman's words).
#   sh examples/container/build-image.sh          (scripts/run.sh runs it on a first start)
set -eu
IMAGE=localhost/gantry-notebook:1
if ! command -v podman >/dev/null 2>&1; then
  echo "container example: podman is not installed (apt-get install podman runc catatonit), image not built"
  exit 0
fi
if podman image exists "$IMAGE"; then
  echo "container example: $IMAGE is present"
  exit 0
fi
# A dynamically linked busybox (Debian's `busybox`) cannot run in an empty image: ldd knows it.
if ! [ -x /bin/busybox ] || ldd /bin/busybox >/dev/null 2>&1; then
  echo "container example: no static /bin/busybox (apt-get install busybox-static), image not built"
  exit 0
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/www"
cp /bin/busybox "$dir/busybox"
cat >"$dir/www/index.html" <<'HTML'
<!doctype html>
<title>Gantry container notebook</title>
<h1>A container deployed by Gantry</h1>
<p>This page is served from localhost/gantry-notebook:1, an image built on this host from
Debian's busybox-static. Pick another image with the instance's <code>image</code> variable
(e.g. quay.io/jupyter/minimal-notebook, once mirrored or reachable).</p>
HTML
cat >"$dir/Containerfile" <<'CF'
FROM scratch
COPY busybox /bin/busybox
COPY www /www
CMD ["/bin/busybox", "httpd", "-f", "-p", "8888", "-h", "/www"]
CF
podman build -q -t "$IMAGE" "$dir" >/dev/null
echo "container example: built $IMAGE"
