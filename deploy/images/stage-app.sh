#!/usr/bin/env bash
# Lays out what the service image holds in /app, from a built checkout:
# every workspace's package.json and dist/, config/, protos/, and the
# production dependencies only (npm install --omit=dev against the lockfile).
# Both image builds use it: the Dockerfile in its build stage, and
# build-offline.sh on the host (which has the npm registry; containers may not).
#
#   deploy/images/stage-app.sh OUT_DIR      (run from anywhere; needs `npm run build` first)
set -euo pipefail
out="${1:?usage: stage-app.sh OUT_DIR}"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"

for service in orchestrator planner coder tester reflector safety memory sandbox-runner web; do
  [ -f "services/$service/dist/main.js" ] || { echo "stage-app: services/$service/dist/main.js is missing; run npm run build first" >&2; exit 1; }
done
# The dashboard's app, built by Vite into services/web/dist/app, ships with the web service's dist/.
[ -f services/web/dist/app/index.html ] || { echo "stage-app: services/web/dist/app/index.html is missing; run npm run build first" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"
cp package.json package-lock.json "$out/"
# npm needs every workspace's package.json to install; only built code ships.
for dir in libs/* services/* deploy; do
  [ -f "$dir/package.json" ] || continue
  mkdir -p "$out/$dir"
  cp "$dir/package.json" "$out/$dir/"
  if [ -d "$dir/dist" ]; then cp -r "$dir/dist" "$out/$dir/"; fi
done
# Source maps and type declarations are for developers, not for running.
find "$out" -path "$out/node_modules" -prune -o -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.tsbuildinfo' \) -print0 | xargs -0 rm -f
cp -r services/cli/bin "$out/services/cli/"
# The sandbox supervisor, read at run time and passed to python3 in each sandbox.
cp -r services/sandbox-runner/supervisor "$out/services/sandbox-runner/"
cp -r config protos "$out/"
rm -f "$out/config/"*.local.yaml
install -m 0755 deploy/images/ratchet-service deploy/images/healthcheck.sh "$out/"

(cd "$out" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
# What npm leaves that nothing reads at run time.
find "$out/node_modules" \( -name '*.md' -o -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \) -type f -delete
rm -rf "$out/node_modules/.package-lock.json" "$out/node_modules/.cache"
# Grammars: only their .wasm is loaded (web-tree-sitter), not the C sources or native builds.
for grammar in "$out"/node_modules/tree-sitter-*; do
  find "$grammar" -mindepth 1 -maxdepth 1 ! -name '*.wasm' ! -name package.json ! -name LICENSE -exec rm -rf {} +
done
# CommonJS build only (the services are CommonJS); TypeScript is a peer of
# @qdrant/js-client-rest for its types and is never loaded at run time.
rm -rf "$out/node_modules/gpt-tokenizer/esm" "$out/node_modules/gpt-tokenizer/src" "$out/node_modules/typescript"
echo "stage-app: $(du -sh "$out" | cut -f1) in $out"
