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
#                                           (waits up to BUS_BROKER_RESTART_TIMEOUT s, 180;
#                                           a start waits BUS_BROKER_START_TIMEOUT s, 60)
#   rabbitmq-test-broker.sh ctl DIR ARGS..  rabbitmqctl against that node
#   rabbitmq-test-broker.sh certs DIR       only generate the TLS files (see below)
#   rabbitmq-test-broker.sh env DIR         only (re)write DIR/broker.env, DIR/ctl and
#                                           DIR/restart for the node DIR/node.env
#                                           describes (start does it; for tests of the file)
#
# A three-node cluster on this machine (issue 15): nodes DIR/node1..3, each
# with its own name, ports and data, one Erlang cookie and one private epmd,
# node2 and node3 joined to node1 with rabbitmqctl join_cluster.
#   rabbitmq-test-broker.sh cluster-start DIR    start it (wipes DIR first), write
#                                                DIR/broker.env (below)
#   rabbitmq-test-broker.sh cluster-stop DIR     stop every node; remove DIR
#   rabbitmq-test-broker.sh cluster-kill DIR N   kill -9 node N (1..3): no shutdown,
#                                                as a crashed machine
#   rabbitmq-test-broker.sh cluster-revive DIR N start node N again on its data; it
#                                                rejoins the cluster by itself
#   rabbitmq-test-broker.sh cluster-leader DIR Q [VHOST]
#                                                the number (1..3) of the node that
#                                                leads quorum queue Q
#   rabbitmq-test-broker.sh cluster-stop-dead-letter-worker DIR Q [VHOST]
#                                                end quorum queue Q's dead-letter worker
#                                                (not restarted): Q strands what expires,
#                                                as the broker fault of docs/rabbitmq.md
#   rabbitmq-test-broker.sh cluster-ctl DIR ARGS..  rabbitmqctl on a node that answers
# Its broker.env: BUS_RABBITMQ_URL lists all three nodes
# (amqp://guest:guest@127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3/), BUS_RABBITMQ_NODE<N>_URL
# each node alone, BUS_RABBITMQ_NODE<N>_NAME its Erlang node name (as list_queues
# shows it), BUS_RABBITMQ_MANAGEMENT_URL node 1's management API
# (http://127.0.0.1:P, as guest), and programs for the commands above: BUS_RABBITMQ_CTL (DIR/ctl ARGS),
# BUS_RABBITMQ_KILL (DIR/kill N), BUS_RABBITMQ_REVIVE (DIR/revive N),
# BUS_RABBITMQ_LEADER (DIR/leader Q [VHOST]),
# BUS_RABBITMQ_STOP_DEAD_LETTER_WORKER (DIR/stop-dead-letter-worker Q [VHOST]).
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
  # A restart boots on data, under tests that wait for it (300 s in
  # ctest): give a slow boot 180 s rather than kill it at 60 s and boot
  # again from the start. A boot that fails (a port still taken) ends the
  # wait at once, whatever this is.
  START_TIMEOUT=${BUS_BROKER_RESTART_TIMEOUT:-180}
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

# ---- the cluster ------------------------------------------------------------

cluster_nodes=(1 2 3)

cluster_node_dir() { printf '%s/node%s\n' "$1" "$2"; }

node_name_of() { (source "$1/node.env" && printf '%s' "${RABBITMQ_NODENAME}"); }

# The number of a node that answers the CLI.
cluster_running_node() {
  local dir=$1 n
  for n in "${cluster_nodes[@]}"; do
    if ctl "$(cluster_node_dir "${dir}" "${n}")" -q status >/dev/null 2>&1; then
      printf '%s\n' "${n}"
      return 0
    fi
  done
  die "no node of the cluster in ${dir} answers"
}

cluster_write_env() {
  local dir=$1 n hosts=() node_urls=()
  for n in "${cluster_nodes[@]}"; do
    # shellcheck disable=SC1091
    source "$(cluster_node_dir "${dir}" "${n}")/node.env"
    hosts+=("127.0.0.1:${NODE_PORT}")
    node_urls+=("amqp://guest:guest@127.0.0.1:${NODE_PORT}/")
  done
  write_command "${dir}" ctl cluster-ctl
  write_command "${dir}" kill cluster-kill
  write_command "${dir}" revive cluster-revive
  write_command "${dir}" leader cluster-leader
  write_command "${dir}" stop-dead-letter-worker cluster-stop-dead-letter-worker
  local joined
  joined=$(IFS=,; printf '%s' "${hosts[*]}")
  {
    env_line BUS_RABBITMQ_URL "amqp://guest:guest@${joined}/"
    env_line BUS_RABBITMQ_NODE1_URL "${node_urls[0]}"
    env_line BUS_RABBITMQ_NODE2_URL "${node_urls[1]}"
    env_line BUS_RABBITMQ_NODE3_URL "${node_urls[2]}"
    for n in "${cluster_nodes[@]}"; do
      env_line "BUS_RABBITMQ_NODE${n}_NAME" "$(node_name_of "$(cluster_node_dir "${dir}" "${n}")")"
    done
    env_line BUS_RABBITMQ_MANAGEMENT_URL \
      "http://127.0.0.1:$(source "$(cluster_node_dir "${dir}" 1)/node.env" && printf '%s' "${MGMT_PORT}")"
    env_line BUS_RABBITMQ_CTL "${dir}/ctl"
    env_line BUS_RABBITMQ_KILL "${dir}/kill"
    env_line BUS_RABBITMQ_REVIVE "${dir}/revive"
    env_line BUS_RABBITMQ_LEADER "${dir}/leader"
    env_line BUS_RABBITMQ_STOP_DEAD_LETTER_WORKER "${dir}/stop-dead-letter-worker"
  } >"${dir}/broker.env"
}

cluster_stop() {
  local dir=$1 n
  for n in "${cluster_nodes[@]}"; do
    stop_node "$(cluster_node_dir "${dir}" "${n}")" &
  done
  wait
}

# Three nodes with their own names, ports and data; one cookie and one
# private epmd (nodes find each other through it), so they can cluster.
cluster_prepare() {
  local dir=$1 epmd cookie tag n nd
  epmd=$(free_port)
  cookie=$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')
  tag="bus-cluster-$$-${RANDOM}"
  for n in "${cluster_nodes[@]}"; do
    nd=$(cluster_node_dir "${dir}" "${n}")
    rm -rf "${nd}"
    mkdir -p "${nd}"
    make_certs "${nd}"
    {
      printf 'RABBITMQ_NODENAME=%s-%s@localhost\n' "${tag}" "${n}"
      printf 'NODE_PORT=%s\nTLS_PORT=%s\nDIST_PORT=%s\n' "$(free_port)" "$(free_port)" "$(free_port)"
      printf 'EPMD_PORT=%s\nMGMT_PORT=%s\n' "${epmd}" "$(free_port)"
    } >"${nd}/node.env"
    printf '%s' "${cookie}" >"${nd}/.erlang.cookie"
    chmod 400 "${nd}/.erlang.cookie"
    (node_env "${nd}" && write_config "${nd}")
    write_cluster_config "${nd}"
  done
}

# What a cluster node has on top of a single node's configuration. A quorum
# queue's at-least-once dead-lettering (the delay levels, the endpoint's
# delivery limit) forwards each message to its target and waits for the
# target's confirm; when the target's leader died with the message in
# flight, the forwarder sends it again only after this timeout, 3 minutes by
# default. The fault tests kill leaders, so they use 5 s: messages in the
# delay levels come back within seconds, not minutes (docs/rabbitmq.md).
write_cluster_config() {
  local dir=$1
  cat >"${dir}/advanced.config" <<EOF
[{rabbit, [{dead_letter_worker_publisher_confirm_timeout, 5000}]}].
EOF
  # The management API (rabbitmq_management, shipped in rabbitmq-server):
  # what a transport with a management_url asks to find a stranded delay
  # level. Its figures refreshed every second, not 5, so a test waits less.
  (
    # shellcheck disable=SC1091
    source "${dir}/node.env"
    printf 'management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = %s\n' "${MGMT_PORT}"
    printf 'collect_statistics_interval = 1000\n'
  ) >>"${dir}/rabbitmq.conf"
  printf '[rabbitmq_management].\n' >"${dir}/enabled_plugins"
}

# Boots the three at once (about as long as one), then joins 2 and 3 to 1.
cluster_boot() {
  local dir=$1 n nd pids=() ok=0 first
  for n in "${cluster_nodes[@]}"; do
    launch_node "$(cluster_node_dir "${dir}" "${n}")" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "${pid}" || ok=1; done
  ((ok == 0)) || return 1
  first=$(node_name_of "$(cluster_node_dir "${dir}" 1)")
  for n in 2 3; do
    nd=$(cluster_node_dir "${dir}" "${n}")
    { ctl "${nd}" -q stop_app && ctl "${nd}" -q join_cluster "${first}" &&
      ctl "${nd}" -q start_app; } >>"${nd}/start.out" 2>&1 || return 1
  done
}

cluster_start() {
  local dir=$1 attempt n
  [[ -x "${RABBIT_BIN}/rabbitmq-server" ]] ||
    die "rabbitmq-server is not installed (apt-get install rabbitmq-server)"
  command -v openssl >/dev/null || die "openssl is not installed (apt-get install openssl)"
  mkdir -p "${dir}"
  dir=$(cd "${dir}" && pwd)
  cluster_stop "${dir}"
  rm -rf "${dir:?}"/*
  for attempt in 1 2 3; do
    cluster_prepare "${dir}"
    cluster_boot "${dir}" && break
    say "the cluster did not start (attempt ${attempt}):"
    for n in "${cluster_nodes[@]}"; do
      tail -n 10 "$(cluster_node_dir "${dir}" "${n}")/start.out" 2>/dev/null | sed 's/^/    /' >&2 || true
    done
    cluster_stop "${dir}"
    ((attempt < 3)) || die "giving up: no cluster, so the RabbitMQ cluster tests cannot run"
  done
  cluster_write_env "${dir}"
  say "cluster ready: $(grep '^BUS_RABBITMQ_URL=' "${dir}/broker.env" | cut -d= -f2-)"
}

# SIGKILL, as a crashed machine: no shutdown, no goodbye to the peers.
cluster_kill() {
  local dir=$1 n=$2 nd pid
  nd=$(cluster_node_dir "${dir}" "${n}")
  [[ -f "${nd}/node.env" ]] || die "no node ${n} in ${dir}"
  pid=$(cat "${nd}/mnesia/$(node_name_of "${nd}").pid" 2>/dev/null) ||
    die "node ${n} has no pid file: not running?"
  kill -9 "${pid}" 2>/dev/null || die "node ${n} (pid ${pid}) was not running"
  while kill -0 "${pid}" 2>/dev/null; do sleep 0.05; done
  rm -f "${nd}/mnesia/$(node_name_of "${nd}").pid"
  say "killed node ${n} (pid ${pid}) with SIGKILL"
}

# Starts a killed node again on its data; it rejoins the cluster by itself.
cluster_revive() {
  local dir=$1 n=$2 nd
  nd=$(cluster_node_dir "${dir}" "${n}")
  [[ -f "${nd}/node.env" ]] || die "no node ${n} in ${dir}"
  launch_node "${nd}" >/dev/null || die "node ${n} did not come back"
  say "node ${n} is back"
}

# Ends quorum queue Q's dead-letter worker, wherever it runs, and prints how
# many it ended (0 or 1). Not restarted (terminate_child of a simple
# supervisor), the queue is left as RabbitMQ 3.10.8 leaves a queue whose new
# leader's worker failed to register (rabbitmq-server#7677): expired
# messages stay, counted in `messages` but not `messages_ready`, until the
# next leader change starts a worker again. The tests make a stranded delay
# level this way, deterministically, instead of hoping a kill races.
cluster_stop_dead_letter_worker() {
  local dir=$1 queue=$2 vhost=${3:-/} any
  any=$(cluster_running_node "${dir}")
  ctl "$(cluster_node_dir "${dir}" "${any}")" -q eval "
    R = rabbit_misc:r(<<\"${vhost}\">>, queue, <<\"${queue}\">>),
    Workers = [{N, P} || N <- rabbit_nodes:all_running(),
                         {_, P, _, _} <- rpc:call(N, supervisor, which_children, [rabbit_fifo_dlx_sup]),
                         lists:member(R, tuple_to_list(rpc:call(N, sys, get_state, [P])))],
    [ok = rpc:call(N, supervisor, terminate_child, [rabbit_fifo_dlx_sup, P]) || {N, P} <- Workers],
    io:format(\"~b~n\", [length(Workers)])." | head -n 1
}

# The node (1..3) that leads quorum queue Q, from `list_queues name leader`.
cluster_leader() {
  local dir=$1 queue=$2 vhost=${3:-/} any leader n
  any=$(cluster_running_node "${dir}")
  leader=$(ctl "$(cluster_node_dir "${dir}" "${any}")" -q list_queues -p "${vhost}" name leader \
    --no-table-headers | awk -v q="${queue}" '$1 == q { print $2 }')
  [[ -n "${leader}" ]] || die "no quorum queue '${queue}' in vhost '${vhost}'"
  for n in "${cluster_nodes[@]}"; do
    if [[ "$(node_name_of "$(cluster_node_dir "${dir}" "${n}")")" == "${leader}" ]]; then
      printf '%s\n' "${n}"
      return 0
    fi
  done
  die "queue '${queue}' is led by '${leader}', not a node of ${dir}"
}

cmd=${1:-}
dir=${2:-}
[[ -n "${cmd}" && -n "${dir}" ]] || { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 2; }
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
  cluster-start) cluster_start "${dir}" ;;
  cluster-stop)
    [[ -d "${dir}" ]] || exit 0
    dir=$(cd "${dir}" && pwd)
    cluster_stop "${dir}"
    say "stopped the cluster in ${dir}"
    rm -rf "${dir:?}"
    ;;
  cluster-kill) cluster_kill "$(cd "${dir}" && pwd)" "${1:?which node (1..3)?}" ;;
  cluster-revive) cluster_revive "$(cd "${dir}" && pwd)" "${1:?which node (1..3)?}" ;;
  cluster-leader) cluster_leader "$(cd "${dir}" && pwd)" "${1:?which queue?}" "${2:-/}" ;;
  cluster-stop-dead-letter-worker)
    cluster_stop_dead_letter_worker "$(cd "${dir}" && pwd)" "${1:?which queue?}" "${2:-/}"
    ;;
  cluster-ctl)
    dir=$(cd "${dir}" && pwd)
    ctl "$(cluster_node_dir "${dir}" "$(cluster_running_node "${dir}")")" "$@"
    ;;
  *) die "unknown command '${cmd}' (start, stop, restart, ctl, certs, env, cluster-start, cluster-stop, cluster-kill, cluster-revive, cluster-leader, cluster-stop-dead-letter-worker, cluster-ctl)" ;;
esac
