#!/usr/bin/env bash
# Removes the host state that Ratchet's code and tests create outside the
# checkout, so that a run on a machine used before sees what a new machine
# sees (deploy/sandbox/README.md, "Host state", lists it). Keeps what setup
# installs and is slow to rebuild: the sandbox image, its root filesystem,
# the Debian base both image builds start from (/var/cache/ratchet, a week),
# Node 24 and Debian's packages; and the runners' dependency layer cache
# (/var/lib/ratchet/deps), which no test uses (the dependency tests keep
# theirs in $TMPDIR/ratchet-*, removed below). .ci/run calls it before the tests.
#
# It stops Ratchet's leftovers, so do not run it while a sandbox runner,
# `npm run stack` or a test run is going on on this host.
#   TMPDIR   where the tests made their temporary directories (default /tmp)
set -euo pipefail

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
say() { printf 'reset-host-state: %s\n' "$*"; }
tmp="${TMPDIR:-/tmp}"
tmp="${tmp%/}"

# The tests' and benches' temporary directories (data of nats-server,
# Postgres, PGlite, test stacks, CLI runs), never one holding this checkout.
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
temporary=()
while IFS= read -r directory; do
  case "$repo/" in "$directory/"*) continue ;; esac
  temporary+=("$directory")
done < <(find "$tmp" -maxdepth 1 -type d -name 'ratchet-*')

# 1. Processes left in them by killed test runs (nats-server, postgres,
# services of a test stack): their working directory or command line is there.
leftovers=()
for proc in /proc/[0-9]*; do
  pid="${proc#/proc/}"
  [ "$pid" = "$$" ] && continue
  where="$(readlink "$proc/cwd" 2>/dev/null || true) $(tr '\0' ' ' <"$proc/cmdline" 2>/dev/null || true)"
  for directory in "${temporary[@]}"; do
    case "$where" in *"$directory/"* | *"$directory "*) leftovers+=("$pid"); break ;; esac
  done
done
if [ "${#leftovers[@]}" -gt 0 ]; then
  say "killing ${#leftovers[@]} processes left in $tmp/ratchet-*: ${leftovers[*]}"
  as_root kill -KILL "${leftovers[@]}" 2>/dev/null || true
fi

# 2. Sandbox tmpfs mounts and their state directories (the bubblewrap driver's,
# and the ones its tests make beside it), deepest mounts first.
mounts="$(awk '$2 ~ "^/run/ratchet-sandbox" { print $2 }' /proc/self/mounts | sort -r)"
for mount in $mounts; do as_root umount -l "$mount" 2>/dev/null || true; done
for directory in /run/ratchet-sandbox /run/ratchet-sandbox-test-*; do
  if [ -e "$directory" ] || [ -L "$directory" ]; then
    say "removing $directory"
    as_root rm -rf "$directory"
  fi
done

# 3. Job cgroups (v2 and v1 layouts), and their parent: its processes killed,
# then the directories removed deepest first (the kernel removes only empty ones).
for parent in /sys/fs/cgroup/ratchet-sandbox /sys/fs/cgroup/{memory,pids,cpu}/ratchet-sandbox; do
  [ -d "$parent" ] || continue
  say "removing the job cgroups under $parent"
  while IFS= read -r group; do
    if [ -f "$group/cgroup.kill" ]; then echo 1 | as_root tee "$group/cgroup.kill" >/dev/null 2>&1 || true; fi
    while read -r pid; do as_root kill -KILL "$pid" 2>/dev/null || true; done <"$group/cgroup.procs"
  done < <(find "$parent" -depth -type d)
  for _ in $(seq 1 50); do
    find "$parent" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    [ -d "$parent" ] || break
    sleep 0.1
  done
  if [ -d "$parent" ]; then say "warning: $parent still has processes in it; it stays"; fi
done

# 4. Sandbox containers (labelled with their job id), and what compose tests left.
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  containers="$(docker ps -aq --filter label=dev.ratchet.job-id)"
  if [ -n "$containers" ]; then
    say "removing $(echo "$containers" | wc -l) sandbox containers"
    # shellcheck disable=SC2086 # one id per word
    docker rm -f $containers >/dev/null
  fi
  # What an interrupted compose test (deploy/test/compose-offline.spec.ts,
  # project ratchet-e2e-PID) left: its containers, volumes and network. A
  # network the engine still counts endpoints on stays until dockerd restarts;
  # it holds nothing and the next test uses a project of its own.
  containers="$(docker ps -aq --filter label=com.docker.compose.project | xargs -r docker inspect -f '{{.Id}} {{index .Config.Labels "com.docker.compose.project"}}' | awk '$2 ~ /^ratchet-e2e-[0-9]+$/ {print $1}')"
  if [ -n "$containers" ]; then
    say "removing $(echo "$containers" | wc -l) containers of earlier compose tests"
    # shellcheck disable=SC2086 # one id per word
    docker rm -f $containers >/dev/null
  fi
  docker volume ls -q | grep -E '^ratchet-e2e-[0-9]+_' | xargs -r docker volume rm >/dev/null 2>&1 || true
  docker network ls --format '{{.Name}}' | grep -E '^ratchet-e2e-[0-9]+_default$' | xargs -r docker network rm >/dev/null 2>&1 || true
fi

# 5. The temporary directories themselves.
for directory in "${temporary[@]}"; do as_root rm -rf "$directory"; done
[ "${#temporary[@]}" -eq 0 ] || say "removed ${#temporary[@]} temporary directories $tmp/ratchet-*"

say "done"
