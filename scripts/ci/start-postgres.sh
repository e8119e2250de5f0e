#!/usr/bin/env bash
# Starts a private PostgreSQL for the test suite when DATABASE_URL is not already set: Debian's binaries
# (the `postgresql` package is installed with apt-get only when initdb is missing), a cluster in a fresh
# temporary directory owned by the postgres user, listening on loopback only with trust auth on a private
# port. No system service is started. Meant to be sourced: it exports DATABASE_URL and PG_PRIVATE_DIR;
# `stop_private_postgres` stops the server and removes the directory (call it from an EXIT trap).
#   source scripts/ci/start-postgres.sh && trap stop_private_postgres EXIT

start_private_postgres() {
  local bindir
  bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
    echo "--- installing Debian's postgresql (initdb not found)"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update
    # policy-rc.d 101: the package's postinst must not start a system cluster or service.
    if [ "$(id -u)" -eq 0 ] && [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
      local made_policy=1
    fi
    $sudo apt-get install -y --no-install-recommends postgresql </dev/null
    if [ "${made_policy:-0}" = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
    bindir="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
  fi

  local run_as=()
  if [ "$(id -u)" -eq 0 ]; then run_as=(runuser -u postgres --); fi
  local port="${PG_PRIVATE_PORT:-$(( 20000 + RANDOM % 20000 ))}"
  PG_PRIVATE_DIR="$(mktemp -d -t arr-pg.XXXXXX)"
  chmod 755 "$PG_PRIVATE_DIR"
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$PG_PRIVATE_DIR"; fi
  "${run_as[@]}" "$bindir/initdb" -D "$PG_PRIVATE_DIR/data" -U postgres -A trust --no-sync -E UTF8 >"$PG_PRIVATE_DIR/initdb.log" 2>&1 || {
    cat "$PG_PRIVATE_DIR/initdb.log" >&2
    return 1
  }
  "${run_as[@]}" "$bindir/pg_ctl" -D "$PG_PRIVATE_DIR/data" -l "$PG_PRIVATE_DIR/server.log" -w -t 60 \
    -o "-k $PG_PRIVATE_DIR -p $port -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=on" start >/dev/null || {
    cat "$PG_PRIVATE_DIR/server.log" >&2
    return 1
  }
  PG_PRIVATE_BINDIR="$bindir"
  export PG_PRIVATE_DIR PG_PRIVATE_BINDIR
  export DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres"
  echo "private PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (data in $PG_PRIVATE_DIR)"
}

stop_private_postgres() {
  if [ -n "${PG_PRIVATE_DIR:-}" ] && [ -d "$PG_PRIVATE_DIR/data" ]; then
    local run_as=()
    if [ "$(id -u)" -eq 0 ]; then run_as=(runuser -u postgres --); fi
    "${run_as[@]}" "$PG_PRIVATE_BINDIR/pg_ctl" -D "$PG_PRIVATE_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$PG_PRIVATE_DIR"
  fi
}

start_private_postgres
