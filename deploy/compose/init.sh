#!/usr/bin/env bash
# Makes what the compose stack needs and must never be committed, once:
#   .env (from .env.example): every empty password, token and key filled with
#     a random value; DOCKER_GID from the Docker socket. Values already set
#     are kept, so your model settings survive a second run.
#   the secrets directory (default deploy/compose/secrets): a private CA, TLS
#     certificates for NATS (name `nats`) and the orchestrator's gRPC
#     (`orchestrator`, `localhost`, 127.0.0.1), and the metrics token file
#     Prometheus reads; the CA's key goes to deploy/compose/ca, which no
#     container mounts.
# Idempotent. Environment: RATCHET_ENV_FILE (default .env at the repository
# root), RATCHET_SECRETS_DIR (default deploy/compose/secrets),
# RATCHET_TLS_NAMES (more names for the gRPC certificate, comma-separated,
# e.g. ratchet.example.com).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
env_file="${RATCHET_ENV_FILE:-$repo/.env}"
secrets="${RATCHET_SECRETS_DIR:-$repo/deploy/compose/secrets}"
ca_dir="$(dirname "$secrets")/ca"
command -v openssl >/dev/null || { echo "init: openssl is required (apt-get install -y openssl)" >&2; exit 1; }

# Starts with a letter: nats-server parses a password from the environment as
# a config value, and one starting with digits would read as a number.
random() { echo "r$(openssl rand -hex 24)"; }

# .env: copy the example, then fill what is empty.
[ -f "$env_file" ] || { cp "$repo/.env.example" "$env_file"; chmod 0600 "$env_file"; echo "init: wrote $env_file"; }
fill() {
  local key="$1" value="$2"
  if grep -q "^$key=$" "$env_file"; then
    sed -i "s|^$key=$|$key=$value|" "$env_file"
  elif ! grep -q "^$key=" "$env_file"; then
    echo "$key=$value" >>"$env_file"
  fi
}
# One NATS user per role of deploy/nats/authorization.conf.
for role in $(sed -n 's/^ *user: "\(.*\)"$/\1/p' "$repo/deploy/nats/authorization.conf"); do
  fill "RATCHET_NATS_PASSWORD_$(echo "$role" | tr 'a-z-' 'A-Z_')" "$(random)"
done
for key in RATCHET_POSTGRES_PASSWORD RATCHET_QDRANT_API_KEY RATCHET_METRICS_TOKEN RATCHET_GRPC_TOKENS RATCHET_GRAFANA_ADMIN_PASSWORD; do
  fill "$key" "$(random)"
done
if [ -S /var/run/docker.sock ]; then fill DOCKER_GID "$(stat -c %g /var/run/docker.sock)"; fi
value_of() { sed -n "s/^$1=//p" "$env_file" | tail -1; }

# Certificates, signed by a CA of this deployment.
mkdir -p "$secrets" "$ca_dir"
chmod 0755 "$secrets"
chmod 0700 "$ca_dir"
if [ ! -f "$ca_dir/ca.key" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 -subj "/CN=Ratchet compose CA" \
    -keyout "$ca_dir/ca.key" -out "$secrets/ca.crt" 2>/dev/null
  echo "init: made a CA ($secrets/ca.crt)"
fi
certificate() {
  local name="$1" names="$2"
  [ -f "$secrets/$name.crt" ] && return
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
    -keyout "$secrets/$name.key" -out "$ca_dir/$name.csr" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$names" >"$ca_dir/$name.ext"
  openssl x509 -req -in "$ca_dir/$name.csr" -CA "$secrets/ca.crt" -CAkey "$ca_dir/ca.key" -CAcreateserial \
    -days 825 -extfile "$ca_dir/$name.ext" -out "$secrets/$name.crt" 2>/dev/null
  echo "init: made the $name certificate ($names)"
}
certificate nats "DNS:nats,DNS:localhost,IP:127.0.0.1"
extra=""
for name in $(echo "${RATCHET_TLS_NAMES:-}" | tr ',' ' '); do extra="$extra,DNS:$name"; done
certificate grpc "DNS:orchestrator,DNS:localhost,IP:127.0.0.1$extra"
printf '%s' "$(value_of RATCHET_METRICS_TOKEN)" >"$secrets/metrics-token"

# Each key readable by the one process that needs it: nats-server (root in
# the official image, uid 65534 in the offline one), the orchestrator
# (uid 10001), Prometheus (65534). Without root, they stay readable to all
# (mode 0644) and you should keep the directory on a host of its own.
chmod 0644 "$secrets"/*.crt
if [ "$(id -u)" = 0 ]; then
  chown 65534:65534 "$secrets/nats.key" "$secrets/metrics-token"
  chown 10001:10001 "$secrets/grpc.key"
  chmod 0400 "$secrets/nats.key" "$secrets/metrics-token" "$secrets/grpc.key"
else
  chmod 0644 "$secrets/nats.key" "$secrets/metrics-token" "$secrets/grpc.key"
  echo "init: not root, so the keys are readable by every user of this host (mode 0644); run as root to give each its owner" >&2
fi
echo "init: secrets in $secrets, settings in $env_file"

# Dependency layers: a host directory the runners (uid 10001) own, bound at
# the same path inside their containers, since the engine mounts layers into
# sandboxes by host path. Its own directory: an embedded runner as root keeps
# its layers in /var/lib/ratchet/deps.
deps_dir="${RATCHET_DEPS_DIR:-/var/lib/ratchet/compose-deps}"
if [ "$(id -u)" = 0 ]; then
  install -d -m 0755 /var/lib/ratchet
  install -d -m 0755 -o 10001 -g 10001 "$deps_dir"
  chown 10001:10001 "$deps_dir"
elif [ ! -d "$deps_dir" ]; then
  echo "init: create $deps_dir owned by uid 10001 (as root: install -d -o 10001 -g 10001 $deps_dir); runners install packages there" >&2
fi
