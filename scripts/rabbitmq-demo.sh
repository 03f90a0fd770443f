#!/usr/bin/env bash
# The order topology as four processes on a throwaway RabbitMQ broker:
# orders, two billing instances competing for the billing queue, and
# shipping. Prints what each process handled and checks that every order
# was billed exactly once (by the two billing processes together) and
# shipped once.
#   rabbitmq-demo.sh BIN_DIR [ORDERS]
set -euo pipefail
bin=$1 count=${2:-300}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
broker="$work/broker"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  "$here/rabbitmq-test-broker.sh" stop "$broker" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

"$here/rabbitmq-test-broker.sh" start "$broker" >/dev/null
# Sourced in a subshell: the file quotes values as a shell reads them back
# (a URL with '&' is single-quoted), so only the shell gives them exactly.
BUS_RABBITMQ_URL=$(. "$broker/broker.env" && printf '%s' "$BUS_RABBITMQ_URL")
export BUS_RABBITMQ_URL
echo "broker: ${BUS_RABBITMQ_URL/guest:guest@/guest:***@}"

# Consumers first, so their queues are bound before anything is published.
start_role() {
  "$bin/rabbitmq_orders" "$1" > "$work/$2.out" 2> "$work/$2.err" &
  pids+=($!)
  for _ in $(seq 1 100); do
    grep -q ready "$work/$2.out" 2>/dev/null && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || { cat "$work/$2.err" >&2; exit 1; }
    sleep 0.1
  done
  echo "$2 did not start" >&2; exit 1
}
start_role billing billing-1
start_role billing billing-2
start_role shipping shipping

"$bin/rabbitmq_orders" orders "$count" > "$work/orders.out" 2> "$work/orders.err" \
  || { cat "$work/orders.err" >&2; exit 1; }

# Wait until the broker holds nothing for billing and shipping: no message
# ready and none delivered but unacknowledged.
for _ in $(seq 1 300); do
  left=$("$here/rabbitmq-test-broker.sh" ctl "$broker" list_queues -q name messages messages_unacknowledged 2>/dev/null \
         | awk '$1=="billing"||$1=="shipping"{s+=$2+$3; n++} END{print (n==2)?s:-1}')
  [[ $left == 0 ]] && break
  sleep 0.2
done
for p in "${pids[@]}"; do kill -TERM "$p"; done
for p in "${pids[@]}"; do wait "$p"; done
pids=()

cat "$work"/*.out | grep handled
billed=$(cat "$work"/billing-*.out | awk '/handled/{s+=$4} END{print s}')
b1=$(awk '/handled/{print $4}' "$work/billing-1.out")
b2=$(awk '/handled/{print $4}' "$work/billing-2.out")
shipped=$(awk '/handled/{print $4}' "$work/shipping.out")
echo "billed $billed of $count (instance 1: $b1, instance 2: $b2), shipped $shipped"
[[ $billed == "$count" && $shipped == "$count" && $b1 -gt 0 && $b2 -gt 0 ]] \
  || { echo "the topology lost or duplicated work, or one billing instance got none" >&2; exit 1; }
