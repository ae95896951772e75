# Sourced by .ci/run and tools/demo.sh: installs what a fresh Debian machine
# lacks for Ratchet and puts Node 24 on PATH. Safe to run again: every step
# checks first. Usage: `source tools/setup.sh [--for-tests]`.
# --for-tests adds nats-server, PostgreSQL, Prometheus, Chromium, kubectl and docker-compose, which only the tests need.

ratchet_log() { printf '\n==> %s\n' "$*"; }
ratchet_as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
ratchet_apt_updated=0
ratchet_apt_install() {
  if [ "$ratchet_apt_updated" -eq 0 ]; then ratchet_as_root apt-get update -qq; ratchet_apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive ratchet_as_root apt-get install -y -qq --no-install-recommends "$@"
}

# Node 24 LTS: the repo targets it; older Nodes get a Node 24 from the npm registry.
ratchet_node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ "$(ratchet_node_major)" -lt 24 ]; then
  ratchet_node24_dir="${RATCHET_NODE24_DIR:-$HOME/.cache/ratchet/node24}"
  if [ ! -x "$ratchet_node24_dir/node_modules/.bin/node" ]; then
    ratchet_log "installing Node 24 into $ratchet_node24_dir"
    npm install --prefix "$ratchet_node24_dir" --no-audit --no-fund node@24 >/dev/null
  fi
  export PATH="$ratchet_node24_dir/node_modules/.bin:$PATH"
fi
ratchet_log "node $(node -v), npm $(npm -v)"

# npm install waits mostly on the registry, the images below mostly on the
# mirror and dpkg: run it beside them, its output kept until it is done.
ratchet_npm_log="$(mktemp)"
ratchet_log "npm install (beside the steps below)"
npm install --no-audit --no-fund >"$ratchet_npm_log" 2>&1 &
ratchet_npm_pid=$!

# What is missing, installed in one apt-get run: each run of its own reads
# the package database and runs dpkg's triggers again.
ratchet_missing=()
if [ "${1:-}" = "--for-tests" ]; then
  command -v nats-server >/dev/null || ratchet_missing+=(nats-server)
  # The compose tests validate and run docker-compose.yml.
  docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null || ratchet_missing+=(docker-compose)
  # The metrics test scrapes a running stack with a real Prometheus (Debian's package: /usr/bin/prometheus).
  command -v prometheus >/dev/null || ratchet_missing+=(prometheus)
  # The dashboard's browser test drives Debian's Chromium headless with playwright-core, which never downloads a browser.
  command -v chromium >/dev/null || ratchet_missing+=(chromium)
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || ratchet_missing+=(postgresql)
fi
# The sandbox's: tools/ensure-docker.sh and ensure-sandbox-rootfs.sh check for them again.
command -v dockerd >/dev/null || ratchet_missing+=(docker.io)
command -v debootstrap >/dev/null || ratchet_missing+=(debootstrap)
command -v bwrap >/dev/null || ratchet_missing+=(bubblewrap)
if [ "${#ratchet_missing[@]}" -gt 0 ]; then
  ratchet_log "installing ${ratchet_missing[*]}"
  ratchet_apt_install "${ratchet_missing[@]}" >/dev/null
fi
# kubectl renders k8s/ with its kustomize; Debian's own kubernetes-client is too old, so
# this needs the Kubernetes apt repository, and the k8s test says what to do without it.
if [ "${1:-}" = "--for-tests" ] && ! command -v kubectl >/dev/null; then
  ratchet_log "installing kubectl"; ratchet_apt_install kubectl || ratchet_log "no kubectl package: add the Kubernetes apt repository (the k8s tests need kubectl)"
fi

# The sandbox: a Docker engine and the sandbox image, built offline when missing.
ratchet_log "Docker and the sandbox image"
bash "$(dirname "${BASH_SOURCE[0]}")/ensure-docker.sh"
# The bubblewrap driver's root filesystem (an export of the image) and bwrap itself.
bash "$(dirname "${BASH_SOURCE[0]}")/ensure-sandbox-rootfs.sh"

ratchet_log "npm install"
ratchet_npm_status=0
wait "$ratchet_npm_pid" || ratchet_npm_status=$?
cat "$ratchet_npm_log"; rm -f "$ratchet_npm_log"
[ "$ratchet_npm_status" -eq 0 ] || { ratchet_log "npm install failed (its output is above)"; return 1; }
