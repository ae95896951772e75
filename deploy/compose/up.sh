#!/usr/bin/env bash
# Brings the whole stack up on this host, waits until every service answers
# healthy, then says how to connect:
#   deploy/compose/up.sh               official images (needs a registry)
#   deploy/compose/up.sh --offline     images built here (deploy/images/build-offline.sh,
#                                      run first when an image is missing)
# Any further arguments go to `docker compose up -d`, e.g. --scale sandbox-runner=3.
# Environment: COMPOSE_PROJECT_NAME (default ratchet), RATCHET_ENV_FILE,
# RATCHET_SECRETS_DIR (see init.sh), RATCHET_COMPOSE_OVERRIDE (more compose
# files of yours, colon-separated), RATCHET_UP_TIMEOUT (seconds, default 180).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"
offline=0
if [ "${1:-}" = "--offline" ]; then offline=1; shift; fi
export COMPOSE_PROJECT_NAME="${COMPOSE_PROJECT_NAME:-ratchet}"
env_file="${RATCHET_ENV_FILE:-$repo/.env}"
export RATCHET_ENV_FILE="$env_file"

if docker compose version >/dev/null 2>&1; then compose=(docker compose); 
elif command -v docker-compose >/dev/null; then compose=(docker-compose);
else echo "up: neither 'docker compose' nor docker-compose is installed (apt-get install -y docker-compose)" >&2; exit 1; fi
docker info >/dev/null 2>&1 || { echo "up: the Docker engine is not reachable; start dockerd (tools/ensure-docker.sh does)" >&2; exit 1; }

bash deploy/compose/init.sh
files=(-f docker-compose.yml)
if [ "$offline" = 1 ]; then
  files+=(-f deploy/compose/offline.yml)
  version="$(node -p 'require("./package.json").version')"
  missing=0
  for image in "ratchet:$version" ratchet-nats:2.9 ratchet-postgres:15 ratchet-prometheus:2.42; do
    docker image inspect "$image" >/dev/null 2>&1 || missing=1
  done
  if [ "$missing" = 1 ]; then
    [ -f services/orchestrator/dist/main.js ] || { echo "up: build first: npm install && npm run build" >&2; exit 1; }
    bash deploy/images/build-offline.sh
  fi
fi
IFS=: read -r -a overrides <<<"${RATCHET_COMPOSE_OVERRIDE:-}"
for file in "${overrides[@]}"; do [ -n "$file" ] && files+=(-f "$file"); done
# The runners start sandboxes from this image on the host's engine.
image="${RATCHET_SANDBOX_IMAGE:-ratchet-sandbox:3}"
docker image inspect "$image" >/dev/null 2>&1 || bash deploy/sandbox/build-image.sh "$image"

"${compose[@]}" --env-file "$env_file" "${files[@]}" up -d "$@"

# Every container with a health check (each Ratchet service reports ready
# only once it serves: a runner once it pulls jobs), so a scaled-up runner
# takes work as soon as this returns.
deadline=$(( $(date +%s) + ${RATCHET_UP_TIMEOUT:-180} ))
for container in $("${compose[@]}" --env-file "$env_file" "${files[@]}" ps -q); do
  until status="$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}' "$container" 2>/dev/null)" \
        && { [ "$status" = healthy ] || [ "$status" = none ]; }; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      name="$(docker inspect -f '{{.Name}}' "$container" 2>/dev/null || echo "$container")"
      echo "up: ${name#/} is not healthy after ${RATCHET_UP_TIMEOUT:-180} s (${status:-gone}); its last lines:" >&2
      docker logs --tail 30 "$container" >&2 || true
      exit 1
    fi
    sleep 2
  done
done
port="$(sed -n 's/^RATCHET_GRPC_PORT=//p' "$env_file" | tail -1)"
web_port="$(sed -n 's/^RATCHET_WEB_PORT=//p' "$env_file" | tail -1)"
token="$(sed -n 's/^RATCHET_GRPC_TOKENS=//p' "$env_file" | tail -1 | cut -d, -f1)"
secrets="${RATCHET_SECRETS_DIR:-$repo/deploy/compose/secrets}"
cat <<TEXT
up: Ratchet is running (project $COMPOSE_PROJECT_NAME). Connect with:
  export RATCHET_SERVER=127.0.0.1:${port:-50051} RATCHET_SERVER_CA_FILE=$secrets/ca.crt RATCHET_TOKEN=\$(sed -n 's/^RATCHET_GRPC_TOKENS=//p' $env_file | cut -d, -f1)
  npx ratchet run "a CLI that manages TODO items in a JSON file"
or open the dashboard at http://127.0.0.1:${web_port:-8080}/ and sign in with that token.
TEXT
[ -n "$token" ] || echo "up: RATCHET_GRPC_TOKENS is empty in $env_file" >&2
