#!/usr/bin/env bash
# Makes sure this Debian machine can run Ratchet's sandbox: Docker installed
# and running, and the sandbox images built: the image, and its data variant
# (Debian's Flask, pandas, ...: what web_app and data_pipeline tasks, and the
# tests of the project profiles, run in). Idempotent: each step checks first.
#   RATCHET_SANDBOX_IMAGE       image to build when missing (default ratchet-sandbox:3)
#   RATCHET_SANDBOX_DATA_IMAGE  the data variant to build when missing (default
#                               ratchet-sandbox:3-data; "none" skips it)
set -euo pipefail
cd "$(dirname "$0")/.."

image="${RATCHET_SANDBOX_IMAGE:-ratchet-sandbox:3}"
data_image="${RATCHET_SANDBOX_DATA_IMAGE:-ratchet-sandbox:3-data}"
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
  echo "ensure-docker: installing docker.io and debootstrap"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends docker.io debootstrap >/dev/null
fi

# gVisor's runsc as an optional runtime (sandbox.runtime: runsc). It must run
# containers without a network namespace of its own: --network=none; and the
# install sandbox reaches the runner's registry proxy through a Unix socket
# bound in from the host, which gVisor only opens with --host-uds=open.
if ! command -v runsc >/dev/null; then
  echo "ensure-docker: installing runsc (gVisor)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends runsc >/dev/null || echo "ensure-docker: runsc is not available; the gVisor option stays off"
fi
runsc_changed=0
if command -v runsc >/dev/null; then
  runsc_changed="$(as_root node -e '
    const fs = require("fs");
    const file = "/etc/docker/daemon.json";
    const config = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : {};
    const wanted = { path: process.argv[1], runtimeArgs: ["--network=none", "--host-uds=open"] };
    if (JSON.stringify(config.runtimes?.runsc) === JSON.stringify(wanted)) { console.log(0); process.exit(0); }
    config.runtimes = { ...config.runtimes, runsc: wanted };
    fs.mkdirSync("/etc/docker", { recursive: true });
    fs.writeFileSync(file, JSON.stringify(config, null, 2) + "\n");
    console.log(1);
  ' "$(command -v runsc)")"
fi

if [ "$runsc_changed" = 1 ] && docker info >/dev/null 2>&1; then
  echo "ensure-docker: registered runsc with the running daemon (SIGHUP reloads runtimes)"
  as_root kill -HUP "$(pidof dockerd)"
  sleep 1
fi

if ! docker info >/dev/null 2>&1; then
  log="${TMPDIR:-/tmp}/ratchet-dockerd.log"
  echo "ensure-docker: starting dockerd (log: $log)"
  # setsid: the daemon must outlive this script and the shell that ran it.
  as_root setsid dockerd >"$log" 2>&1 < /dev/null &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  if ! docker info >/dev/null 2>&1; then
    echo "ensure-docker: dockerd did not come up within 60 s; last lines of $log:" >&2
    tail -20 "$log" >&2 || true
    exit 1
  fi
fi

# A RATCHET_SANDBOX_IMAGE naming the data variant is built as the data variant.
if [ "$image" != "$data_image" ] && ! docker image inspect "$image" >/dev/null 2>&1; then
  echo "ensure-docker: building the sandbox image $image (a few minutes, once)"
  as_root bash deploy/sandbox/build-image.sh "$image"
fi
if [ "$data_image" != none ] && ! docker image inspect "$data_image" >/dev/null 2>&1; then
  echo "ensure-docker: building the sandbox image's data variant $data_image (a few minutes, once)"
  as_root bash deploy/sandbox/build-image.sh --variant data "$data_image"
fi
images="$image"
[ "$data_image" = none ] || [ "$data_image" = "$image" ] || images="$images and $data_image"
echo "ensure-docker: Docker is running; images present: $images"
