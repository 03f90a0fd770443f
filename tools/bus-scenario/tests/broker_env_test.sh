#!/usr/bin/env bash
# broker.env, as scripts/rabbitmq-test-broker.sh writes it, sources in bash
# and gives every value back exactly, even for a folder whose name has
# spaces, quotes, a dollar sign and backquotes; and for a plain folder its
# URL lines stay the KEY=VALUE text that line readers (the C++ tests,
# bus-stress, the benchmarks) take as it is. No broker: the script's `env`
# command writes the file for a node that DIR/node.env describes.
#
#   broker_env_test.sh SCRIPT WORK_DIR
set -euo pipefail
script=$1
work=$2
rm -rf "${work}"
mkdir -p "${work}"
work=$(cd "${work}" && pwd)

fail() { printf 'broker_env_test: %s\n' "$*" >&2; exit 1; }

# equals NAME EXPECTED: the variable NAME, as sourced, is EXPECTED.
equals() {
  [[ "${!1}" == "$2" ]] || fail "$1 is [${!1}], expected [$2] (file: $(cat "${env_file}"))"
}

check_dir() {
  local dir=$1
  mkdir -p "${dir}"
  printf '%s\n' "RABBITMQ_NODENAME=bus-test-1@localhost" NODE_PORT=5999 TLS_PORT=5998 \
    DIST_PORT=5997 EPMD_PORT=5996 >"${dir}/node.env"
  "${script}" env "${dir}" || fail "the script could not write ${dir}/broker.env"
  env_file="${dir}/broker.env"
  # In a shell of its own, strict: a line that runs a command instead of
  # assigning, or leaves a variable unset, fails here.
  (
    set -euo pipefail
    unset BUS_RABBITMQ_URL BUS_RABBITMQ_CHAOS_URL BUS_RABBITMQ_TLS_URL BUS_RABBITMQ_WRONG_CA \
      BUS_RABBITMQ_CTL BUS_RABBITMQ_RESTART
    # shellcheck disable=SC1090
    source "${env_file}" >"${work}/source.out" 2>&1 ||
      fail "sourcing ${env_file} failed: $(cat "${work}/source.out")"
    [[ ! -s "${work}/source.out" ]] || fail "sourcing ${env_file} printed: $(cat "${work}/source.out")"
    equals BUS_RABBITMQ_URL "amqp://guest:guest@127.0.0.1:5999/"
    equals BUS_RABBITMQ_CHAOS_URL "amqp://guest:guest@127.0.0.1:5999/bus-chaos"
    equals BUS_RABBITMQ_TLS_URL "amqps://guest:guest@localhost:5998/?cacertfile=${dir}/certs/ca.pem"
    equals BUS_RABBITMQ_WRONG_CA "${dir}/certs/other-ca.pem"
    equals BUS_RABBITMQ_CTL "${dir}/ctl"
    equals BUS_RABBITMQ_RESTART "${dir}/restart"
    # The commands are programs, runnable by their path alone.
    for program in "${BUS_RABBITMQ_CTL}" "${BUS_RABBITMQ_RESTART}"; do
      [[ -x "${program}" ]] || fail "${program} is not an executable file"
      bash -n "${program}" || fail "${program} is not a valid bash script"
    done
    grep -qF -- ' ctl ' "${BUS_RABBITMQ_CTL}" || fail "${BUS_RABBITMQ_CTL} does not run ctl"
    grep -qF -- ' restart ' "${BUS_RABBITMQ_RESTART}" ||
      fail "${BUS_RABBITMQ_RESTART} does not run restart"
  )
}

# The folder of every test run: its lines are plain KEY=VALUE.
check_dir "${work}/plain"
grep -qx 'BUS_RABBITMQ_URL=amqp://guest:guest@127.0.0.1:5999/' "${work}/plain/broker.env" ||
  fail "a line reader no longer finds the URL as it is: $(cat "${work}/plain/broker.env")"
grep -qx "BUS_RABBITMQ_CTL=${work}/plain/ctl" "${work}/plain/broker.env" ||
  fail "a line reader no longer finds the ctl program as it is: $(cat "${work}/plain/broker.env")"

# A folder whose name a shell would read specially in every way it can.
check_dir "${work}/it's a \"dir\" with \$HOME, \`date\` and \\ in it"
printf 'broker.env sources and round-trips (%s)\n' "${work}"
