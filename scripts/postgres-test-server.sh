#!/usr/bin/env bash
# A throwaway PostgreSQL 15 server for the tests (issue 21): its own data
# directory and unix socket, no TCP port, so it never touches a system
# server or another test run's, and leaves nothing running once stopped.
#
#   postgres-test-server.sh start DIR   initdb a new cluster and start it (an old
#                                       DIR is stopped and wiped first); write
#                                       DIR/server.env once it takes connections
#   postgres-test-server.sh stop DIR    stop the server started in DIR; remove DIR
#   postgres-test-server.sh crash DIR   stop it as a crash would (pg_ctl -m
#                                       immediate: no checkpoint, clients cut off);
#                                       its data stays for `resume`
#   postgres-test-server.sh resume DIR  start it again on its data; returns once it
#                                       takes connections (crash recovery included)
#
# DIR/server.env (KEY=VALUE lines, read by the tests; `source` works too):
#   BUS_POSTGRES_CONNINFO  a libpq connection string for database "postgres" as
#                          the superuser "bus" (trust: no password), over the
#                          unix socket
#   BUS_POSTGRES_CRASH     DIR/crash, a program doing `crash DIR`
#   BUS_POSTGRES_RESUME    DIR/resume, a program doing `resume DIR`
#
# The cluster lives in a folder of its own under /tmp: the server runs as
# the `postgres` user when this runs as root (initdb refuses root), and
# that user must reach the folder; a socket path must also stay under 108
# bytes, which a build tree's path may not. DIR holds a link to it.
# Needs Debian's postgresql-15 (./bus.sh installs it).
set -euo pipefail

PG_BIN=${BUS_POSTGRES_BIN:-/usr/lib/postgresql/15/bin}
PORT=5432 # only names the socket file: the server listens on no TCP port

die() { printf 'postgres-test-server: %s\n' "$*" >&2; exit 1; }
say() { printf 'postgres-test-server: %s\n' "$*"; }

# Runs a server program as the user that owns the cluster.
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# The cluster's folder, once started.
cluster_of() { readlink "$1/cluster" 2>/dev/null || true; }

pg_start() {
  local cluster=$1
  # fsync off: the tests crash clients and the server process, never the
  # machine, so the page cache keeps every commit; it saves seconds.
  as_owner "${PG_BIN}/pg_ctl" -D "${cluster}/data" -l "${cluster}/server.log" -w -t 60 \
    -o "-k ${cluster} -p ${PORT} -c listen_addresses='' -c fsync=off -c max_connections=200" \
    start >/dev/null || {
    tail -n 20 "${cluster}/server.log" >&2 || true
    die "the server in ${cluster} did not start"
  }
}

pg_stop() {
  local cluster=$1 mode=$2
  [[ -f "${cluster}/data/postmaster.pid" ]] || return 0
  as_owner "${PG_BIN}/pg_ctl" -D "${cluster}/data" -m "${mode}" -w -t 60 stop >/dev/null
}

start() {
  local dir=$1
  [[ -x "${PG_BIN}/initdb" ]] || die "no ${PG_BIN}/initdb: install postgresql-15 (./bus.sh does)"
  stop "${dir}"
  mkdir -p "${dir}"
  dir=$(cd "${dir}" && pwd)
  local cluster
  cluster=$(mktemp -d /tmp/bus-pg.XXXXXX)
  chmod 755 "${cluster}"
  [[ $(id -u) -eq 0 ]] && chown postgres "${cluster}"
  ln -s "${cluster}" "${dir}/cluster"
  as_owner "${PG_BIN}/initdb" -D "${cluster}/data" -A trust -U bus --no-sync \
    >"${cluster}/initdb.log" 2>&1 || {
    cat "${cluster}/initdb.log" >&2
    die "initdb failed"
  }
  pg_start "${cluster}"
  local script
  for script in crash resume; do
    printf '#!/bin/sh\nexec %q %s %q\n' "$(realpath "$0")" "${script}" "${dir}" >"${dir}/${script}"
    chmod +x "${dir}/${script}"
  done
  {
    printf "BUS_POSTGRES_CONNINFO='host=%s port=%s user=bus dbname=postgres'\n" "${cluster}" "${PORT}"
    printf 'BUS_POSTGRES_CRASH=%s\n' "${dir}/crash"
    printf 'BUS_POSTGRES_RESUME=%s\n' "${dir}/resume"
  } >"${dir}/server.env"
  say "PostgreSQL up in ${cluster} (socket ${cluster}/.s.PGSQL.${PORT})"
}

stop() {
  local dir=$1 cluster
  cluster=$(cluster_of "${dir}")
  if [[ -n ${cluster} && -d ${cluster} ]]; then
    pg_stop "${cluster}" fast || pg_stop "${cluster}" immediate || true
    rm -rf "${cluster}"
  fi
  rm -rf "${dir}"
}

crash() {
  local cluster
  cluster=$(cluster_of "$1")
  [[ -n ${cluster} ]] || die "no server was started in $1"
  pg_stop "${cluster}" immediate
}

resume() {
  local cluster
  cluster=$(cluster_of "$1")
  [[ -n ${cluster} ]] || die "no server was started in $1"
  pg_start "${cluster}"
}

[[ $# -eq 2 ]] || die "usage: $0 start|stop|crash|resume DIR"
case $1 in
  start | stop | crash | resume) "$1" "$2" ;;
  *) die "unknown command '$1' (start, stop, crash, resume)" ;;
esac
