#!/usr/bin/env bash
# Makes the root filesystem the bubblewrap driver mounts read-only as `/`:
# an export of the sandbox image when Docker has it, else a debootstrap build
# (deploy/sandbox/build-image.sh --rootfs-only). Also installs bubblewrap.
# Idempotent: an export of the same image is kept.
#   RATCHET_SANDBOX_ROOTFS  where (default /var/lib/ratchet/sandbox-rootfs as
#                           root, ~/.cache/ratchet/sandbox-rootfs otherwise)
#   RATCHET_SANDBOX_IMAGE   image to export (default ratchet-sandbox:3)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then default_dir=/var/lib/ratchet/sandbox-rootfs; else default_dir="$HOME/.cache/ratchet/sandbox-rootfs"; fi
dir="${RATCHET_SANDBOX_ROOTFS:-$default_dir}"
image="${RATCHET_SANDBOX_IMAGE:-ratchet-sandbox:3}"
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# As root, bwrap runs sandboxes as uid 10001, which must be able to enter the
# default directory's parent whatever the umask made it (or an older run left).
if [ "$(id -u)" -eq 0 ] && [ "$dir" = /var/lib/ratchet/sandbox-rootfs ]; then
  mkdir -p /var/lib/ratchet
  chmod 0755 /var/lib/ratchet
fi

if ! command -v bwrap >/dev/null; then
  echo "ensure-sandbox-rootfs: installing bubblewrap"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
fi

if docker image inspect "$image" >/dev/null 2>&1; then
  image_id="$(docker image inspect -f '{{.Id}}' "$image")"
  if [ -x "$dir/usr/bin/python3" ] && [ -c "$dir/dev/null" ] && [ "$(cat "$dir/.ratchet-image-id" 2>/dev/null)" = "$image_id" ]; then
    echo "ensure-sandbox-rootfs: $dir is the export of $image"
    exit 0
  fi
  echo "ensure-sandbox-rootfs: exporting $image into $dir"
  mkdir -p "$(dirname "$dir")"
  staging="$(mktemp -d "$(dirname "$dir")/.rootfs.XXXXXX")"
  container="$(docker create "$image" true)"
  trap 'docker rm -f "$container" >/dev/null 2>&1 || true; rm -rf "$staging"' EXIT
  docker export "$container" | tar -x -C "$staging" --exclude='dev/*'
  # bwrap mounts its own /dev; /dev/null is for chroot (the bench's like-for-like bare-host run).
  mknod -m 0666 "$staging/dev/null" c 1 3 2>/dev/null || true
  echo "$image_id" >"$staging/.ratchet-image-id"
  # Readable by the unprivileged user bwrap runs as; writable by no one but root.
  chmod 0755 "$staging"
  rm -rf "$dir"
  mv "$staging" "$dir"
  echo "ensure-sandbox-rootfs: $dir ready"
elif [ -x "$dir/usr/bin/python3" ]; then
  echo "ensure-sandbox-rootfs: $dir exists (no Docker image to compare with)"
else
  echo "ensure-sandbox-rootfs: no Docker image $image; building the root filesystem with debootstrap"
  as_root bash deploy/sandbox/build-image.sh --rootfs-only "$dir"
fi
