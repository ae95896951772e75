#!/usr/bin/env bash
# Lint, typecheck, test and build every project, as
# `nx run-many -t lint typecheck test build` does, in two lanes:
#   1. the CLI's tests (its end-to-end suite is the longest by far), and
#   2. ESLint over every project and the type check of every project, in one
#      process over shared TypeScript programs (tools/check-all.mjs), then
#      every other project's tests, one at a time;
# then each lane, as it ends, takes from the queue of benches run at a tiny
# size (below).
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

# The benches' smoke runs (`bench -c smoke` sets RATCHET_BENCH_SMOKE=1, so a
# bench that no longer runs fails here, never one whose figures moved) are a
# queue both lanes take from when their tests are done, the CLI's first (the
# longest, about a minute alone): run after whichever lane ended first, they
# made that lane the last to end (measured: CLI tests 26 min then 4.9 min of
# benches, against 28 min for the other lane). A project is taken by making
# its directory in the queue, which only one lane can do.
benches=()
while read -r project; do
  if [ "$project" = "@ratchet/cli" ]; then benches=("$project" "${benches[@]}"); elif [ -n "$project" ]; then benches+=("$project"); fi
done < <(nx show projects --with-target bench)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# run_benches NAME: runs the benches no lane has taken yet; their output goes to $work/NAME.bench.log.
run_benches() {
  local project
  for project in "${benches[@]}"; do
    mkdir "$work/taken-${project#@ratchet/}" 2>/dev/null || continue
    # A bench that hangs fails too: 10 minutes bounds a smoke run of about one; it is no speed check.
    timeout 600 node node_modules/nx/dist/bin/nx.js run "$project:bench:smoke" --excludeTaskDependencies --outputStyle=static >>"$work/$1.bench.log" 2>&1
    case $? in
      0) ;;
      124) echo "test-all: the smoke run of $project's bench took over 10 minutes and was stopped" | tee -a "$work/$1.bench.log" >>"$work/benches-failed" ;;
      *) echo "test-all: the smoke run of $project's bench failed" >>"$work/benches-failed" ;;
    esac
  done
}

# The lanes never run a build again: nx would restore outputs from its cache
# (removing and rewriting dist/) while the other lane's tests load them.
cli_lane() {
  nx run-many -t test --projects=@ratchet/cli --parallel=1 --excludeTaskDependencies
  local status=$?
  run_benches cli
  return "$status"
}
# Every project's lint (the CLI's too) and type check in one process, not one
# `nx lint` and `nx typecheck` per project: ESLint's typed rules and the type
# check share one TypeScript program per set of compiler options instead of
# building their own (measured: 165 s of CPU for one `eslint` run with the
# project service plus about 40 s for the type check in its own process,
# against 70-90 s for both in tools/check-all.mjs). `npm run lint` and `npm
# run typecheck` keep the per-project targets and their cache.
others_lane() {
  node tools/check-all.mjs
  local checks=$?
  nx run-many -t test --exclude=@ratchet/cli --parallel=1 --excludeTaskDependencies
  local rest=$?
  [ "$checks" -eq 0 ] || echo "test-all: ESLint or the type check found problems (above)"
  run_benches others
  [ "$checks" -eq 0 ] && [ "$rest" -eq 0 ]
}
cli_lane >"$work/cli.log" 2>&1 &
cli_pid=$!
others_lane &
others_pid=$!
wait "$others_pid"
others=$?
wait "$cli_pid"
cli=$?
cat "$work/cli.log" "$work"/*.bench.log 2>/dev/null
benches_status=0
if [ -s "$work/benches-failed" ]; then
  cat "$work/benches-failed"
  benches_status=1
fi
echo "test-all: other projects exited $others, the benches' smoke runs exited $benches_status, the CLI exited $cli"
[ "$others" -eq 0 ] && [ "$benches_status" -eq 0 ] && [ "$cli" -eq 0 ]
