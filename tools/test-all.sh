#!/usr/bin/env bash
# Lint, typecheck, test and build every project, as
# `nx run-many -t lint typecheck test build` does, in two lanes:
#   1. the CLI's tests (its end-to-end suite is the longest by far), and
#   2. one ESLint run over every project, one type check of every project
#      (tools/typecheck-all.mjs), then every other project's tests, one at a
#      time;
# then, in whichever lane ends first, every bench (the CLI's too) at a tiny
# size: `bench -c smoke` sets RATCHET_BENCH_SMOKE=1, so a bench that no
# longer runs fails here, never one whose figures moved. They take about 2.5
# minutes, and which lane ends first changes with the machine's load.
# One nx run with two workers starts the CLI's tests last (nx runs first the
# tasks most others depend on, and nothing depends on them), so for the last
# quarter of the run one worker sat idle while they finished. Two lanes keep
# the same two tasks at a time and start the CLI's tests as soon as the
# builds are done. The CLI lane's output is printed when both lanes end, so
# the log reads one task after another. Exits non-zero when any target failed.
set -uo pipefail
cd "$(dirname "$0")/.."

nx() { node node_modules/nx/dist/bin/nx.js "$@" --outputStyle=static; }

nx run-many -t build || exit $?

cli_log="$(mktemp)"
trap 'rm -f "$cli_log"' EXIT
# The lanes never run a build again: nx would restore outputs from its cache
# (removing and rewriting dist/) while the other lane's tests load them.
nx run-many -t test --projects=@ratchet/cli --parallel=1 --excludeTaskDependencies >"$cli_log" 2>&1 &
cli_lane=$!
# Every project's lint (the CLI's too) in one ESLint process, not one `nx
# lint` per project: the typed rules then build one TypeScript program for
# the whole repository instead of one per project, each loading the same
# libraries (measured: 72 s against about 165 s for the 22 projects one by
# one). `npm run lint` keeps the per-project targets and their cache.
# The same for the type check: projects with the same compiler options share
# one TypeScript program (measured: 30 s against about 130 s for the projects'
# typecheck targets one by one, on a CI run's busiest stretch of CPU).
others() {
  echo "test-all: eslint libs services deploy"
  node node_modules/eslint/bin/eslint.js libs services deploy --max-warnings=0
  local lint=$?
  echo "test-all: typecheck every project"
  node tools/typecheck-all.mjs
  local types=$?
  nx run-many -t test --exclude=@ratchet/cli --parallel=1 --excludeTaskDependencies
  local rest=$?
  [ "$lint" -eq 0 ] || echo "test-all: eslint found problems (above)"
  [ "$types" -eq 0 ] || echo "test-all: the type check found problems (above)"
  [ "$lint" -eq 0 ] && [ "$types" -eq 0 ] && [ "$rest" -eq 0 ]
}
others &
others_lane=$!
wait -n -p first "$cli_lane" "$others_lane"
first_status=$?
bench_log="$(mktemp)"
trap 'rm -f "$cli_log" "$bench_log"' EXIT
# A bench that hangs fails too: 15 minutes bounds a run of about 3 on a loaded machine; it is no speed check.
timeout 900 node node_modules/nx/dist/bin/nx.js run-many -t bench -c smoke --parallel=1 --excludeTaskDependencies --outputStyle=static >"$bench_log" 2>&1
benches=$?
[ "$benches" -eq 124 ] && echo "test-all: the benches' smoke run took over 15 minutes and was stopped" >>"$bench_log"
if [ "$first" = "$cli_lane" ]; then
  cli=$first_status
  wait "$others_lane"
  others=$?
else
  others=$first_status
  wait "$cli_lane"
  cli=$?
fi
cat "$cli_log" "$bench_log"
echo "test-all: other projects exited $others, the benches' smoke run exited $benches, the CLI exited $cli"
[ "$others" -eq 0 ] && [ "$benches" -eq 0 ] && [ "$cli" -eq 0 ]
