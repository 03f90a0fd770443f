#!/usr/bin/env bash
# A throwaway RabbitMQ node for the tests: its own folder, ports, node name,
# Erlang cookie and epmd, so it never touches a system broker or another
# test run's node, and leaves nothing running once stopped.
#
#   rabbitmq-test-broker.sh start DIR       start a node whose state lives in DIR
#                                           (created empty; an old DIR is stopped
#                                           and wiped first), wait until it takes
#                                           AMQP connections, write DIR/broker.env
#   rabbitmq-test-broker.sh stop DIR        stop the node started in DIR, by its
#                                           own name, and its epmd; remove DIR
#   rabbitmq-test-broker.sh restart DIR     stop the node started in DIR and start it
#                                           again on its data (same name, ports and
#                                           messages), as a broker restart in production
#                                           would; returns once it takes AMQP connections
#   rabbitmq-test-broker.sh ctl DIR ARGS..  rabbitmqctl against that node
#   rabbitmq-test-broker.sh certs DIR       only generate the TLS files (see below)
#   rabbitmq-test-broker.sh env DIR         only (re)write DIR/broker.env, DIR/ctl and
#                                           DIR/restart for the node DIR/node.env
#                                           describes (start does it; for tests of the file)
#
# DIR/broker.env (KEY=VALUE lines, read by the tests; `source DIR/broker.env`
# in bash sets them too: a value with anything a shell would read specially,
# such as a space or a quote, is written in single quotes):
#   BUS_RABBITMQ_URL        amqp://guest:guest@127.0.0.1:<port>/
#   BUS_RABBITMQ_CHAOS_URL  the same node, vhost "bus-chaos": tests that close
#                           connections on purpose use it, so that they never
#                           disturb tests running at the same time in "/"
#   BUS_RABBITMQ_TLS_URL    amqps://guest:guest@localhost:<tls port>/?cacertfile=...
#   BUS_RABBITMQ_WRONG_CA   a CA certificate that did not sign the broker's
#   BUS_RABBITMQ_CTL        DIR/ctl, a program that runs rabbitmqctl on the node
#                           with its arguments ("$BUS_RABBITMQ_CTL" list_queues)
#   BUS_RABBITMQ_RESTART    DIR/restart, a program that restarts the node (see restart)
#
# Needs rabbitmq-server and openssl (Debian packages). Works as root (CI) or
# as any user: /usr/lib/rabbitmq/bin/* runs the node as the calling user.
set -euo pipefail

RABBIT_BIN=/usr/lib/rabbitmq/bin
START_TIMEOUT=${BUS_BROKER_START_TIMEOUT:-60}

die() { printf 'rabbitmq-test-broker: %s\n' "$*" >&2; exit 1; }
say() { printf 'rabbitmq-test-broker: %s\n' "$*"; }

# A TCP port nobody listens on. /dev/tcp needs no extra package; `ss` is
# not in a minimal image. Random, so parallel runs rarely pick the same
# one; a start that still collides is retried with new ports.
free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % 30000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/${p}") 2>/dev/null; then
      printf '%s\n' "$p"
      return 0
    fi
  done
  die "found no free TCP port"
}

# The environment that makes rabbitmq-server and rabbitmqctl use DIR only.
node_env() {
  local dir=$1
  # shellcheck disable=SC1091
  source "${dir}/node.env"
  export HOME="${dir}" # the Erlang cookie: DIR/.erlang.cookie
  export RABBITMQ_NODENAME NODE_PORT TLS_PORT
  export RABBITMQ_DIST_PORT=${DIST_PORT}
  export ERL_EPMD_PORT=${EPMD_PORT} # a private epmd, stopped with the node
  export RABBITMQ_MNESIA_BASE="${dir}/mnesia" RABBITMQ_LOG_BASE="${dir}/log"
  export RABBITMQ_CONFIG_FILE="${dir}/rabbitmq"           # DIR/rabbitmq.conf
  export RABBITMQ_ADVANCED_CONFIG_FILE="${dir}/advanced.config"
  export RABBITMQ_CONF_ENV_FILE="${dir}/rabbitmq-env.conf" # not /etc/rabbitmq/
  export RABBITMQ_ENABLED_PLUGINS_FILE="${dir}/enabled_plugins"
  export RABBITMQ_PID_FILE="${dir}/mnesia/${RABBITMQ_NODENAME}.pid"
}

ctl() {
  local dir=$1
  shift
  (node_env "${dir}" && cd "${dir}" && "${RABBIT_BIN}/rabbitmqctl" -n "${RABBITMQ_NODENAME}" "$@")
}

# TLS material: a CA, a server certificate it signed for localhost and
# 127.0.0.1, and a second CA that signed nothing (a client that trusts only
# that one must refuse the broker). EC keys: instant to generate.
make_certs() {
  local d="$1/certs"
  mkdir -p "$d"
  local key=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${key[@]}" -keyout "$d/ca.key" -out "$d/ca.pem" -days 3 \
    -subj "/CN=bus test CA" 2>/dev/null
  openssl req -x509 "${key[@]}" -keyout "$d/other-ca.key" -out "$d/other-ca.pem" -days 3 \
    -subj "/CN=bus test CA" 2>/dev/null # same name, other key: only the signature differs
  openssl req "${key[@]}" -keyout "$d/server.key" -out "$d/server.csr" \
    -subj "/CN=localhost" 2>/dev/null
  printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=CA:FALSE" \
    "keyUsage=digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" >"$d/server.ext"
  openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
    -out "$d/server.pem" -days 3 -extfile "$d/server.ext" 2>/dev/null
  rm -f "$d/server.csr" "$d/server.ext" "$d/ca.srl"
}

# rabbit_password_hashing_sha256: base64(salt ++ sha256(salt ++ password)).
password_hash() {
  local tmp
  tmp=$(mktemp -d)
  head -c 4 /dev/urandom >"${tmp}/salt"
  { cat "${tmp}/salt"; printf '%s' "$1"; } | openssl dgst -sha256 -binary >"${tmp}/hash"
  cat "${tmp}/salt" "${tmp}/hash" | base64 -w0
  rm -rf "${tmp}"
}

write_config() {
  local dir=$1
  cat >"${dir}/rabbitmq.conf" <<EOF
listeners.tcp.1 = 127.0.0.1:${NODE_PORT}
listeners.ssl.1 = 127.0.0.1:${TLS_PORT}
ssl_options.cacertfile = ${dir}/certs/ca.pem
ssl_options.certfile = ${dir}/certs/server.pem
ssl_options.keyfile = ${dir}/certs/server.key
ssl_options.verify = verify_none
ssl_options.fail_if_no_peer_cert = false
load_definitions = ${dir}/definitions.json
EOF
  local perms='"configure": ".*", "write": ".*", "read": ".*"'
  cat >"${dir}/definitions.json" <<EOF
{
  "users": [{"name": "guest", "password_hash": "$(password_hash guest)",
             "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": ["administrator"]}],
  "vhosts": [{"name": "/"}, {"name": "bus-chaos"}],
  "permissions": [{"user": "guest", "vhost": "/", ${perms}},
                  {"user": "guest", "vhost": "bus-chaos", ${perms}}]
}
EOF
  : >"${dir}/rabbitmq-env.conf"
  printf '[].\n' >"${dir}/enabled_plugins"
}

stop_node() {
  local dir=$1
  [[ -f "${dir}/node.env" ]] || return 0
  (
    node_env "${dir}"
    cd "${dir}"
    if ! "${RABBIT_BIN}/rabbitmqctl" -n "${RABBITMQ_NODENAME}" -q shutdown >/dev/null 2>&1; then
      # Not answering (hung, or still booting): end the processes of this
      # node only, found by the pid file it wrote and by its unique name.
      local pids=()
      [[ -s "${RABBITMQ_PID_FILE}" ]] && pids+=("$(cat "${RABBITMQ_PID_FILE}")")
      if command -v pgrep >/dev/null; then
        mapfile -t -O "${#pids[@]}" pids < <(pgrep -f -- "${RABBITMQ_NODENAME}" || true)
      fi
      for pid in "${pids[@]}"; do
        kill -9 "${pid}" 2>/dev/null || true
      done
    fi
    # Our private epmd: it refuses -kill while a node is still registered.
    epmd -port "${EPMD_PORT}" -kill >/dev/null 2>&1 || true
  )
}

# Starts the node described by DIR/node.env on whatever DIR already holds,
# and waits until it takes AMQP connections.
launch_node() {
  local dir=$1
  (
    node_env "${dir}"
    cd "${dir}"
    say "starting ${RABBITMQ_NODENAME} (AMQP 127.0.0.1:${NODE_PORT}, TLS ${TLS_PORT}) in ${dir}"
    "${RABBIT_BIN}/rabbitmq-server" -detached >"${dir}/start.out" 2>&1
    "${RABBIT_BIN}/rabbitmqctl" -n "${RABBITMQ_NODENAME}" -q wait --timeout "${START_TIMEOUT}" \
      "${RABBITMQ_PID_FILE}" >>"${dir}/start.out" 2>&1
  )
}

# Stops the node and starts it again on the same data: durable queues and
# persistent messages come back, clients see their connections close. The
# node keeps its ports, so clients reconnect to the same URL.
restart() {
  local dir=$1
  [[ -f "${dir}/node.env" ]] || die "no node was started in ${dir}"
  dir=$(cd "${dir}" && pwd)
  stop_node "${dir}"
  say "stopped $(grep NODENAME "${dir}/node.env" | cut -d= -f2); starting it again"
  # One retry: a port of the old node may linger for a moment.
  launch_node "${dir}" || { stop_node "${dir}"; launch_node "${dir}"; } ||
    { tail -n 20 "${dir}/start.out" "${dir}"/log/*.log 2>/dev/null | sed 's/^/    /' >&2 || true
      die "the node did not come back after the restart"; }
  say "ready again: amqp://127.0.0.1:$(grep NODE_PORT "${dir}/node.env" | cut -d= -f2)/"
}

# KEY=VALUE for broker.env. The value is written as it is when bash would
# take it literally in an assignment (letters, digits and _@%+=:,./?-; no
# globbing happens in an assignment), so that the tests' line readers see the
# URLs unchanged; anything else is single-quoted, each ' as '\'', so that
# sourcing the file gives the value back exactly.
env_line() {
  local key=$1 value=$2 quote="'" escaped="'\\''"
  if [[ "${value}" =~ ^[A-Za-z0-9_@%+=:,./?-]*$ ]]; then
    printf '%s=%s\n' "${key}" "${value}"
  else
    printf "%s='%s'\n" "${key}" "${value//${quote}/${escaped}}"
  fi
}

# A program DIR/NAME that runs this script's COMMAND on DIR with its own
# arguments: one path stands for a whole command line, so broker.env holds
# no command line that a reader would have to split.
write_command() {
  local dir=$1 name=$2 command=$3 script
  script=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
  {
    printf '#!/usr/bin/env bash\n'
    printf '# Written by rabbitmq-test-broker.sh: "%s" for the node in this folder.\n' "${command}"
    printf 'exec %q %q %q "$@"\n' "${script}" "${command}" "${dir}"
  } >"${dir}/${name}"
  chmod +x "${dir}/${name}"
}

# DIR/broker.env, DIR/ctl and DIR/restart for the node DIR/node.env describes.
write_env() {
  local dir=$1
  # shellcheck disable=SC1091
  source "${dir}/node.env"
  write_command "${dir}" ctl ctl
  write_command "${dir}" restart restart
  {
    env_line BUS_RABBITMQ_URL "amqp://guest:guest@127.0.0.1:${NODE_PORT}/"
    env_line BUS_RABBITMQ_CHAOS_URL "amqp://guest:guest@127.0.0.1:${NODE_PORT}/bus-chaos"
    env_line BUS_RABBITMQ_TLS_URL \
      "amqps://guest:guest@localhost:${TLS_PORT}/?cacertfile=${dir}/certs/ca.pem"
    env_line BUS_RABBITMQ_WRONG_CA "${dir}/certs/other-ca.pem"
    env_line BUS_RABBITMQ_CTL "${dir}/ctl"
    env_line BUS_RABBITMQ_RESTART "${dir}/restart"
  } >"${dir}/broker.env"
}

start() {
  local dir=$1
  [[ -x "${RABBIT_BIN}/rabbitmq-server" ]] ||
    die "rabbitmq-server is not installed (apt-get install rabbitmq-server)"
  command -v openssl >/dev/null || die "openssl is not installed (apt-get install openssl)"
  mkdir -p "${dir}"
  dir=$(cd "${dir}" && pwd)
  stop_node "${dir}"
  rm -rf "${dir:?}"/* "${dir}/.erlang.cookie"
  make_certs "${dir}"
  local attempt
  for attempt in 1 2 3; do
    cat >"${dir}/node.env" <<EOF
RABBITMQ_NODENAME=bus-test-$$-${RANDOM}@localhost
NODE_PORT=$(free_port)
TLS_PORT=$(free_port)
DIST_PORT=$(free_port)
EPMD_PORT=$(free_port)
EOF
    (node_env "${dir}" && write_config "${dir}") && launch_node "${dir}" && break
    say "the node did not start (attempt ${attempt}):"
    tail -n 20 "${dir}/start.out" "${dir}"/log/*.log 2>/dev/null | sed 's/^/    /' >&2 || true
    stop_node "${dir}"
    ((attempt < 3)) || die "giving up: no broker, so the RabbitMQ tests cannot run"
  done
  write_env "${dir}"
  # shellcheck disable=SC1091
  source "${dir}/node.env"
  say "ready: ${RABBITMQ_NODENAME}, amqp://127.0.0.1:${NODE_PORT}/"
}

cmd=${1:-}
dir=${2:-}
[[ -n "${cmd}" && -n "${dir}" ]] || { sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
shift 2
case "${cmd}" in
  start) start "${dir}" ;;
  stop)
    [[ -d "${dir}" ]] || exit 0
    stop_node "${dir}"
    if [[ -f "${dir}/node.env" ]]; then say "stopped $(grep NODENAME "${dir}/node.env" | cut -d= -f2)"; fi
    rm -rf "${dir:?}"
    ;;
  restart) restart "${dir}" ;;
  ctl) ctl "${dir}" "$@" ;;
  certs) make_certs "${dir}" ;;
  env)
    [[ -f "${dir}/node.env" ]] || die "no ${dir}/node.env: nothing to describe"
    write_env "$(cd "${dir}" && pwd)"
    ;;
  *) die "unknown command '${cmd}' (start, stop, restart, ctl, certs, env)" ;;
esac
