#!/usr/bin/env bash
# The benchmarks: what `./bus.sh bench [--peer]` runs.
#
#   scripts/bench.sh            build in release mode, run every case, print the table
#   scripts/bench.sh --peer     the same, plus the in-memory workload on @node-ts/bus-core
#   scripts/bench.sh --quick    smaller sizes and 3 runs (a quick look, not figures to quote)
#   scripts/bench.sh --only-rabbitmq   only the RabbitMQ cases (bus vs raw rabbitmq-c)
#   scripts/bench.sh --only-blocking   only the blocking-handler cases, the round trip
#                                      beside them and the 8-slot no-op row (no broker)
#   scripts/bench.sh --only-outbox     only the outbox and inbox cases (SQLite, PostgreSQL)
#
# Builds build-release/ (programs in build-release/bin/), writes
# build/bench/results.json and build/bench/table.txt. The RabbitMQ cases run
# against a throwaway broker in a temporary folder
# (scripts/rabbitmq-test-broker.sh), up only while they run and stopped
# however the run exits; the outbox cases' PostgreSQL server
# (scripts/postgres-test-server.sh) likewise. A benchmark never fails the
# run: a missing peer, a broker that does not start or a failed case is
# reported and skipped. Only a failed build stops it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR=${BUS_BENCH_BUILD_DIR:-build-release}
OUT_DIR=build/bench
JOBS=${BUS_JOBS:-$(nproc)}
# The peer, pinned: the same workload on the Node.js bus it is compared with
# (BUS_BENCH_PEER overrides it, e.g. to see what happens when it cannot be had).
PEER_PACKAGE=${BUS_BENCH_PEER:-"@node-ts/bus-core@1.3.3"}

say() { printf '==> %s\n' "$*"; }

peer=0
suite_args=()
for arg in "$@"; do
  case "${arg}" in
    --peer) peer=1 ;;
    --quick) suite_args+=(--quick yes) ;;
    --runs=*) suite_args+=(--runs "${arg#--runs=}") ;;
    --only-rabbitmq) suite_args+=(--only rabbitmq) ;;
    --only-blocking) suite_args+=(--only blocking) ;;
    --only-outbox) suite_args+=(--only outbox) ;;
    *) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done

say "configuring ${BUILD_DIR} (Release, benchmarks only)"
cmake -S . -B "${BUILD_DIR}" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DBUS_BUILD_BENCH=ON -DBUS_BUILD_TESTS=OFF -DBUS_BUILD_SAMPLES=OFF -DBUS_BUILD_TOOLS=OFF \
  -DBUS_WITH_RABBITMQ=ON >/dev/null
say "building bus-bench"
cmake --build "${BUILD_DIR}" --target bus-bench -j "${JOBS}"
mkdir -p "${OUT_DIR}"

if ((peer)); then
  peer_dir="${OUT_DIR}/peer"
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    say "the peer ${PEER_PACKAGE} is not measured: node or npm is not installed; going on without it"
    suite_args+=(--peer-status "not measured: node or npm is not installed")
  elif say "installing ${PEER_PACKAGE} into ${peer_dir}" &&
       npm install --prefix "${peer_dir}" --no-audit --no-fund "${PEER_PACKAGE}" \
         >"${OUT_DIR}/peer-install.log" 2>&1; then
    suite_args+=(--peer-script bench/peer/node_bus_core.js
                 --peer-modules "${peer_dir}/node_modules" --peer-package "${PEER_PACKAGE}")
  else
    say "the peer ${PEER_PACKAGE} could not be installed (see ${OUT_DIR}/peer-install.log); going on without it"
    suite_args+=(--peer-status "not measured: ${PEER_PACKAGE} could not be installed")
  fi
fi

# The broker of the RabbitMQ cases: bus-bench starts it in this folder just
# before those cases and stops it after them, so that it never runs beside
# the in-memory ones; then a three-node cluster in this folder's name with
# "-cluster" for the quorum queue rows, the same way. Stopped here too on any exit, Ctrl-C included.
broker_dir=$(mktemp -d "${TMPDIR:-/tmp}/bus-bench-broker.XXXXXX")
stop_broker() {
  scripts/rabbitmq-test-broker.sh stop "${broker_dir}" >/dev/null 2>&1 || true
  # The quorum queue rows' cluster (bus-bench starts it in DIR-cluster).
  if [[ -d "${broker_dir}-cluster" ]]; then
    scripts/rabbitmq-test-broker.sh cluster-stop "${broker_dir}-cluster" >/dev/null 2>&1 || true
  fi
}
# The outbox cases' PostgreSQL server, the same way: bus-bench starts it in
# this folder just before them and stops it after them.
postgres_dir=$(mktemp -d "${TMPDIR:-/tmp}/bus-bench-postgres.XXXXXX")
stop_servers() {
  stop_broker
  scripts/postgres-test-server.sh stop "${postgres_dir}" >/dev/null 2>&1 || true
}
trap stop_servers EXIT
trap 'exit 130' INT TERM
suite_args+=(--rabbitmq-broker-script "$PWD/scripts/rabbitmq-test-broker.sh"
             --rabbitmq-broker-dir "${broker_dir}"
             --postgres-server-script "$PWD/scripts/postgres-test-server.sh"
             --postgres-server-dir "${postgres_dir}")

revision=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n $(git status --porcelain --untracked-files=no 2>/dev/null | head -1) ]]; then revision+="+changes"; fi
say "running the benchmarks (each run in a process of its own; bus and raw interleaved)"
"${BUILD_DIR}/bin/bus-bench" suite --json "${OUT_DIR}/results.json" --revision "${revision}" \
  "${suite_args[@]}" | tee "${OUT_DIR}/table.txt"
