// The peer benchmark: the in-memory workload of bus-bench's throughput case
// on @node-ts/bus-core (pinned by scripts/bench.sh), for the ratio.
//
// A producer sends `messages` messages to the bus's in-memory queue, at most
// `window` unfinished at once (bus-bench's producer does the same), and a
// no-op handler runs with the given concurrency. Prints one JSON line:
// {"msgs_per_s": ..., "peak_rss_kb": ...}.
//
//   NODE_PATH=<prefix>/node_modules node node_bus_core.js --concurrency 8 --messages 100000
'use strict'

const { Bus, handlerFor } = require('@node-ts/bus-core')

function option(name, fallback) {
  const i = process.argv.indexOf('--' + name)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}

class Ping {
  constructor(seq) {
    this.$name = 'bench/ping'
    this.$version = 1
    this.seq = seq
  }
}

// The bus logs through a logger factory; debug and info lines would
// dominate the work, as the null sink keeps ours out of the C++ figures.
const silent = { debug() {}, info() {}, warn() {}, error() {}, fatal() {}, trace() {} }

async function main() {
  const concurrency = option('concurrency', 1)
  const messages = option('messages', 100000)
  const window = option('window', 1000)
  let handled = 0
  let finish
  const allHandled = new Promise(resolve => (finish = resolve))
  let wakeProducer = null
  const onHandled = handlerFor(Ping, () => {
    handled += 1
    if (handled === messages) finish()
    if (wakeProducer && sent - handled < window / 2) {
      const wake = wakeProducer
      wakeProducer = null
      wake()
    }
  })
  const bus = await Bus.configure()
    .withLogger(() => silent)
    .withConcurrency(concurrency)
    .withHandler(onHandled)
    .build()
  await bus.initialize()
  await bus.start()

  let sent = 0
  const start = process.hrtime.bigint()
  while (sent < messages) {
    if (sent - handled >= window) await new Promise(resolve => (wakeProducer = resolve))
    sent += 1
    await bus.send(new Ping(sent))
  }
  await allHandled
  const seconds = Number(process.hrtime.bigint() - start) / 1e9
  await bus.stop()
  await bus.dispose()
  const peak = require('process').resourceUsage().maxRSS // kilobytes
  process.stdout.write(JSON.stringify({ msgs_per_s: messages / seconds, seconds, peak_rss_kb: peak }) + '\n')
}

main().catch(err => {
  console.error(err)
  process.exit(1)
})
