#!/usr/bin/env bash
# Lint, typecheck, test and build every project, as
# `nx run-many -t lint typecheck test build` does, in three lanes after the
# builds:
#   1. the CLI's tests, two jest workers (its end-to-end files spend most of
#      their time waiting on processes, sandboxes and the bus: one worker used
#      0.6 of a core);
#   2. the suites that mostly wait on Docker: deploy (images, the compose
#      stack) and the sandbox runner;
#   3. every other project's tests, then every project's lint and typecheck.
# One nx run with two workers started the CLI's tests last (nx runs first the
# tasks others depend on, and nothing depends on a test), and two lanes left
# either lane over 30 minutes. Each lane's output is printed when all lanes
# end, one after another, so the log reads one task after another. Exits
# non-zero when any target failed.
set -uo pipefail
cd "$(dirname "$0")/.."

nx() { node node_modules/nx/dist/bin/nx.js "$@" --outputStyle=static; }

nx run-many -t build || exit $?

waiting=(@ratchet/deploy @ratchet/sandbox-runner)
others="@ratchet/cli,$(IFS=,; echo "${waiting[*]}")"
logs=()
pids=()
names=()
trap 'rm -f "${logs[@]}"' EXIT
lane() {
  local name="$1"
  shift
  local log
  log="$(mktemp)"
  logs+=("$log")
  names+=("$name")
  ("$@") >"$log" 2>&1 &
  pids+=($!)
}

lane "the CLI's tests" nx run-many -t test --projects=@ratchet/cli --maxWorkers=2
lane "deploy and the sandbox runner" nx run-many -t test --projects="$(IFS=,; echo "${waiting[*]}")" --parallel=1
rest() {
  nx run-many -t test --exclude="$others" --parallel=1
  local tests=$?
  nx run-many -t lint typecheck --parallel=1
  local checks=$?
  [ "$tests" -eq 0 ] && [ "$checks" -eq 0 ]
}
lane "every other project, then lint and typecheck" rest

failed=0
for index in "${!pids[@]}"; do
  wait "${pids[$index]}"
  status=$?
  cat "${logs[$index]}"
  echo "test-all: ${names[$index]} exited $status"
  [ "$status" -eq 0 ] || failed=1
done
exit "$failed"
