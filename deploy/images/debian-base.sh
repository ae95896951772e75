#!/usr/bin/env bash
# Makes DIR a Debian 12 (bookworm) minbase root filesystem with
# ca-certificates, its package lists fetched and its packages at the mirror's
# versions, ready for `chroot DIR apt-get install`. The one base both image
# builds start from: the sandbox image (deploy/sandbox/build-image.sh) and
# the offline service images (deploy/images/build-offline.sh). debootstrap
# takes about a minute of CPU, so its result is kept as a tar in the cache
# directory for a week: the second build on a machine (a fresh one builds
# the sandbox image in setup, then the offline images in the tests) unpacks
# it instead, and the upgrade brings it to the mirror's versions. Needs root
# and debootstrap.
#
#   deploy/images/debian-base.sh DIR
#
# Environment: DEBIAN_MIRROR (default http://deb.debian.org/debian),
# RATCHET_DEBIAN_BASE_CACHE (default /var/cache/ratchet; "none" keeps nothing).
set -euo pipefail
out="${1:?usage: debian-base.sh DIR}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
cache_dir="${RATCHET_DEBIAN_BASE_CACHE:-/var/cache/ratchet}"
command -v debootstrap >/dev/null || { echo "debian-base: debootstrap is required (apt-get install -y debootstrap)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "debian-base: run as root (debootstrap and chroot need it)" >&2; exit 1; }
[ ! -e "$out" ] || [ -z "$(ls -A "$out")" ] || { echo "debian-base: $out is not empty" >&2; exit 1; }
log="$(mktemp "${TMPDIR:-/tmp}/ratchet-debian-base.XXXXXX.log")"
trap 'rm -f "$log"' EXIT

# One file per mirror; a different mirror is a different base.
cache=""
if [ "$cache_dir" != none ]; then
  cache="$cache_dir/debian-bookworm-minbase-$(printf '%s' "$mirror" | sha256sum | cut -c1-12).tar"
fi
# An unpacked base is brought to the mirror's versions; a new debootstrap has them already.
upgrade=0
if [ -n "$cache" ] && [ -n "$(find "$cache" -mmin -10080 2>/dev/null)" ]; then
  echo "debian-base: unpacking $cache (debootstrap of the last week)"
  mkdir -p "$out"
  tar -C "$out" -xf "$cache"
  upgrade=1
else
  echo "debian-base: debootstrap bookworm (minbase) from $mirror"
  debootstrap --variant=minbase --include=ca-certificates bookworm "$out" "$mirror" >"$log" 2>&1 \
    || { tail -30 "$log" >&2; exit 1; }
  if [ -n "$cache" ]; then
    mkdir -p "$cache_dir"
    chmod 0755 "$cache_dir"
    partial="$(mktemp "$cache_dir/.debian-base.XXXXXX")"
    tar -C "$out" -cf "$partial" . && mv "$partial" "$cache" || { rm -f "$partial"; echo "debian-base: could not keep $cache (the build goes on)" >&2; }
  fi
fi
# The host's resolver, for apt in the chroot (an unpacked base may come from another network).
cp /etc/resolv.conf "$out/etc/resolv.conf"
{ chroot "$out" apt-get update -qq &&
  { [ "$upgrade" = 0 ] || chroot "$out" env DEBIAN_FRONTEND=noninteractive apt-get upgrade -y -qq; }; } >"$log" 2>&1 \
  || { tail -30 "$log" >&2; exit 1; }
