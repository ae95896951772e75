#!/usr/bin/env bash
# One command from a fresh clone to the offline demo: installs what is missing
# (Node 24, Docker and the sandbox image, npm packages), builds, and runs
# `ratchet demo` with the scripted model.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=setup.sh
source tools/setup.sh
ratchet_log "build"
npx nx run-many -t build --outputStyle=static >/dev/null
ratchet_log "ratchet demo"
npx ratchet demo "$@"
