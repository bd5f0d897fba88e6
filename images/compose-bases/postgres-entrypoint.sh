#!/bin/sh
# The part of the upstream postgres image's entrypoint that compose.yaml relies on: as root, own
# the data directory and re-run as the postgres user; on an empty data directory, create the
# cluster with POSTGRES_USER as its superuser (password POSTGRES_PASSWORD, required over TCP)
# and the database POSTGRES_DB; then run the command (`postgres ...`).
set -eu

if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA"
    chown -R postgres:postgres "$PGDATA" /var/run/postgresql
    chmod 700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ "${1:-}" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
    user=${POSTGRES_USER:-postgres}
    : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}"
    pwfile=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
    initdb --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
        --encoding=UTF8 >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    database=${POSTGRES_DB:-$user}
    if [ "$database" != postgres ]; then
        # Single-user mode: no server, so nothing listens before the cluster is ready.
        echo "CREATE DATABASE \"$database\"" | postgres --single -D "$PGDATA" postgres >/dev/null
    fi
fi
exec "$@"
