#!/bin/sh
# Entry point of the offline PostgreSQL image: the same environment as the
# official postgres image (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB,
# PGDATA), so docker-compose.yml drives either. First start: initdb with
# SCRAM passwords and connections from the network; then run the server.
set -eu
bin=/usr/lib/postgresql/15/bin
export PGDATA="${PGDATA:-/var/lib/postgresql/data}"
user="${POSTGRES_USER:-postgres}"
: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD (the compose .env file: RATCHET_POSTGRES_PASSWORD)}"

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  password_file="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" >"$password_file"
  "$bin/initdb" --username="$user" --pwfile="$password_file" --auth=scram-sha-256 --encoding=UTF8 >/dev/null
  rm -f "$password_file"
  printf "listen_addresses = '*'\n" >>"$PGDATA/postgresql.conf"
  printf 'host all all all scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
  db="${POSTGRES_DB:-$user}"
  if [ "$db" != postgres ]; then
    "$bin/postgres" --single -D "$PGDATA" postgres >/dev/null <<SQL
CREATE DATABASE "$db" OWNER "$user";
SQL
  fi
  echo "postgres-entrypoint: initialised $PGDATA (user $user, database $db)"
fi
exec "$bin/postgres" -D "$PGDATA" -c unix_socket_directories=/tmp "$@"
