// The RabbitMQ cases: the bus on its RabbitMQ transport against rabbitmq-c
// used directly (raw_amqp.hpp), with the same guarantees on both sides:
// persistent messages, publisher confirms, a durable classic queue, manual
// acknowledgements: one basic.ack per message on the raw side, and on the
// bus's side acks of messages already handled, which its transport may
// coalesce into one basic.ack(multiple) without acknowledging any other.
//
// rabbitmq_send: --senders S threads each call bus.send() in a loop; each
//   call returns once the broker confirmed its message, so at most S are
//   unconfirmed (the transport pipelines them over one connection). Raw:
//   one thread publishes with at most S unconfirmed (a sliding window).
// rabbitmq_async_send: one thread keeps --window sends in flight. Bus:
//   bus.send_async, a completion per message (called once the broker
//   confirmed it); the thread waits only when the window is full. Raw: one publisher with at most --window
//   unconfirmed, as in rabbitmq_send.
// rabbitmq_consume: the queue is filled first (by the same raw publisher
//   for both sides, not timed), then consumed with prefetch = --slots. Bus:
//   an endpoint with that many slots and a no-op handler, which the bus
//   acknowledges after it returns. Raw: basic.consume, decode the JSON
//   body (what any consumer must do with a message), ack. --ack-every k > 1
//   (raw only): one basic.ack(multiple) per k messages, the "limit" row.
// --queue-type quorum (all three cases): the queue is a quorum queue
// (replicated to a majority of a cluster's nodes before the broker
// confirms), declared for both sides through the bus's own transport, so
// that both use exactly the bus's arguments (delivery limit, at-least-once
// dead-lettering to `<queue>_error`).
// Every run uses queues of its own and deletes them at the end, so runs
// leave the broker as they found it.
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "actor_system.hpp"
#include "bus/bus.hpp"
#include "bus/header_names.hpp"
#include "bus/rabbitmq_transport.hpp"
#include "bus/wire.hpp"
#include "measure.hpp"
#include "raw_amqp.hpp"
#include "workload.hpp"

namespace bench {

namespace {

const std::string ping_type = "bench_ping";

std::string unique_queue(const std::string& what) {
  std::random_device rd;
  return "bench-" + what + "-" + std::to_string(getpid()) + "-" + std::to_string(rd() % 100000);
}

std::shared_ptr<bus::rabbitmq_transport> connect_transport(const std::string& url, bool quorum) {
  auto settings = bus::parse_rabbitmq_url(url);
  if (!settings)
    throw std::runtime_error("bad broker URL: " + settings.error().message);
  settings->log = [](bus::rabbitmq_log_level, const std::string&) {};
  if (quorum)
    settings->queue_type = bus::rabbitmq_queue_type::quorum;
  auto transport = bus::rabbitmq_transport::connect(*settings);
  if (!transport)
    throw std::runtime_error(transport.error().message);
  return *transport;
}

// A bus on `transport` that knows `ping`; with an endpoint on `queue`
// when slots > 0.
template <class Handler>
std::unique_ptr<bus::message_bus> make_bus(caf::actor_system& sys, bus::transport_ptr transport,
                                           const std::string& queue, int slots, Handler handler) {
  bus::bus_builder b{sys};
  b.transport(std::move(transport))
      .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
      .message<ping>(ping_type);
  if (slots > 0)
    b.endpoint(queue, [&](bus::endpoint_builder& e) {
      e.slots(static_cast<std::size_t>(slots)).handle<ping>(std::move(handler));
    });
  auto built = b.build();
  if (!built)
    throw std::runtime_error("the benchmark bus does not build: " + built.error().message);
  return std::move(*built);
}

// The wire form the bus gives a ping sent to `queue` (its headers and JSON
// body), made with the bus's own to_wire, so the raw side sends the same
// bytes. Each message gets its own id.
class payload_maker {
public:
  explicit payload_maker(const std::string& queue) {
    bus::envelope env;
    env.message_id = bus::make_message_id(random_(), random_());
    env.message_type = ping_type;
    env.sent_at = std::chrono::system_clock::now();
    env.source_address = "bus";
    env.destination_address = queue;
    env.body = bus::message_body::text(nlohmann::json(ping{}).dump());
    auto wire = bus::to_wire(env);
    if (!wire)
      throw std::runtime_error(wire.error().message);
    for (const auto& [name, value] : wire->headers)
      template_.headers.emplace_back(std::string(name), std::string(value));
  }

  amqp_payload operator()(std::uint64_t seq) {
    auto p = template_;
    for (auto& [name, value] : p.headers)
      if (name == bus::header::message_id)
        value = bus::make_message_id(random_(), random_());
    p.body = nlohmann::json(ping{seq, now_ns()}).dump();
    return p;
  }

private:
  std::mt19937_64 random_{std::random_device{}()};
  amqp_payload template_;
};

bool quorum_queues(const case_args& args) {
  auto type = args.text("queue-type", "classic");
  if (type != "classic" && type != "quorum")
    throw std::runtime_error("--queue-type is classic or quorum, not '" + type + "'");
  return type == "quorum";
}

// The case's queue: a durable classic queue declared raw, or a quorum
// queue declared by the bus's transport (see the top of the file).
void declare_case_queue(raw_amqp& admin, const std::string& url, const std::string& queue,
                        bool quorum) {
  if (!quorum) {
    admin.declare_queue(queue);
    return;
  }
  auto declared = connect_transport(url, true)->declare_queue(queue);
  if (!declared)
    throw std::runtime_error(declared.error().message);
}

// Removes the case's queue, and the error and skipped queues a bus endpoint
// declared beside it (deleting a queue that does not exist is no error).
void delete_case_queues(raw_amqp& admin, const std::string& queue) {
  admin.delete_queue(queue);
  admin.delete_queue(queue + "_error");
  admin.delete_queue(queue + "_skipped");
}

case_result finish(const std::string& name, const std::string& impl, std::uint64_t messages,
                   std::uint64_t done, double seconds, bool finished) {
  return {{"case", name},
          {"impl", impl},
          {"messages", messages},
          {"finished", finished},
          {"seconds", seconds},
          {"msgs_per_s", static_cast<double>(done) / seconds},
          {"peak_rss_kb", peak_rss_kb()}};
}

// Raw rabbitmq-c publishing `messages` to `queue` with at most `window`
// unconfirmed at once: the baseline of both send cases. Returns seconds.
double raw_windowed_publish(const std::string& url, const std::string& queue,
                            std::uint64_t messages, std::size_t window) {
  payload_maker make(queue);
  raw_amqp c(url);
  c.confirm_select();
  auto start = steady::now();
  for (std::uint64_t i = 0; i < messages; ++i) {
    c.publish(queue, make(i));
    if (c.unconfirmed() >= window)
      c.await_confirms(window - 1);
  }
  c.await_confirms(0);
  return seconds_since(start);
}

} // namespace

case_result run_rabbitmq_send(const case_args& args) {
  auto impl = args.text("impl", "bus");
  auto url = args.text("url", "");
  auto senders = static_cast<int>(args.number("senders", 1));
  auto messages = static_cast<std::uint64_t>(args.number("messages", 10'000));
  auto quorum = quorum_queues(args);
  auto queue = unique_queue("send");
  raw_amqp admin(url);
  declare_case_queue(admin, url, queue, quorum);

  double seconds = 0;
  std::uint64_t sent = 0;
  if (impl == "bus") {
    caf::actor_system_config cfg;
    configure(cfg, args);
    caf::actor_system sys{cfg};
    auto bus = make_bus(sys, connect_transport(url, quorum), queue, 0, [](const ping&) {});
    if (auto ok = bus->start(); !ok)
      throw std::runtime_error(ok.error().message);
    std::atomic<std::uint64_t> next{0}, confirmed{0}, failed{0};
    auto start = steady::now();
    std::vector<std::thread> threads;
    for (int s = 0; s < senders; ++s)
      threads.emplace_back([&] {
        for (auto i = next++; i < messages; i = next++) {
          if (bus->send(queue, ping{i, now_ns()}))
            ++confirmed;
          else
            ++failed;
        }
      });
    for (auto& t : threads)
      t.join();
    seconds = seconds_since(start);
    bus->stop();
    sent = confirmed;
    if (failed > 0)
      throw std::runtime_error(std::to_string(failed.load()) + " sends failed");
  } else {
    seconds = raw_windowed_publish(url, queue, messages, static_cast<std::size_t>(senders));
    sent = messages;
  }
  delete_case_queues(admin, queue);
  auto r = finish("rabbitmq_send", impl, messages, sent, seconds, sent == messages);
  r["senders"] = senders;
  r["queue_type"] = quorum ? "quorum" : "classic";
  return r;
}

case_result run_rabbitmq_consume(const case_args& args) {
  auto impl = args.text("impl", "bus");
  auto url = args.text("url", "");
  auto slots = static_cast<int>(args.number("slots", 8));
  auto messages = static_cast<std::uint64_t>(args.number("messages", 10'000));
  auto deadline = steady::now() + std::chrono::seconds(args.number("max-seconds", 300));
  auto quorum = quorum_queues(args);
  auto queue = unique_queue("consume");
  raw_amqp admin(url);
  declare_case_queue(admin, url, queue, quorum);
  payload_maker make(queue);
  raw_fill_queue(url, queue, messages, 1000, std::ref(make));

  double seconds = 0;
  std::uint64_t handled = 0;
  bool finished = false;
  if (impl == "bus") {
    caf::actor_system_config cfg;
    configure(cfg, args);
    caf::actor_system sys{cfg};
    completion done;
    auto bus = make_bus(sys, connect_transport(url, quorum), queue, slots,
                        [&done](const ping&) { done.complete(); });
    auto start = steady::now();
    if (auto ok = bus->start(); !ok)
      throw std::runtime_error(ok.error().message);
    finished = done.wait_for(messages, deadline);
    seconds = seconds_since(start);
    handled = done.done();
    bus->stop();
  } else {
    raw_amqp c(url);
    std::uint64_t decoded = 0, seq_sum = 0;
    auto start = steady::now();
    c.consume(
        queue, static_cast<std::uint16_t>(slots), messages,
        [&](amqp_bytes_t body) {
          auto text = std::string_view(static_cast<const char*>(body.bytes), body.len);
          seq_sum += nlohmann::json::parse(text).get<ping>().seq; // used below: not optimised away
          ++decoded;
        },
        static_cast<std::uint64_t>(args.number("ack-every", 1)));
    seconds = seconds_since(start);
    handled = decoded;
    finished = decoded == messages && seq_sum == messages * (messages - 1) / 2;
  }
  delete_case_queues(admin, queue);
  auto r = finish("rabbitmq_consume", impl, messages, handled, seconds, finished);
  r["slots"] = slots;
  r["queue_type"] = quorum ? "quorum" : "classic";
  r["ack_every"] = args.number("ack-every", 1);
  return r;
}

namespace {

// At most `limit` taken at once: the sender takes one before each send and
// the completion (on the transport's I/O thread) gives it back. The sender
// waits only when all are taken.
class window {
public:
  explicit window(std::int64_t limit) : free_(limit) {}

  void take() {
    if (free_.fetch_sub(1) > 0)
      return;
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return free_.load() >= 0; });
  }

  void give() {
    if (free_.fetch_add(1) >= 0)
      return; // nobody waits
    std::lock_guard<std::mutex> guard(mutex_);
    changed_.notify_one();
  }

private:
  std::atomic<std::int64_t> free_; // below 0: the sender waits for one
  std::mutex mutex_;
  std::condition_variable changed_;
};

} // namespace

case_result run_rabbitmq_async_send(const case_args& args) {
  auto impl = args.text("impl", "bus");
  auto url = args.text("url", "");
  auto in_flight = static_cast<std::int64_t>(args.number("window", 1000));
  auto messages = static_cast<std::uint64_t>(args.number("messages", 20'000));
  auto quorum = quorum_queues(args);
  auto queue = unique_queue("async-send");
  raw_amqp admin(url);
  declare_case_queue(admin, url, queue, quorum);

  double seconds = 0;
  std::uint64_t sent = 0;
  if (impl == "bus") {
    caf::actor_system_config cfg;
    configure(cfg, args);
    caf::actor_system sys{cfg};
    window slots(in_flight);
    completion done;
    std::atomic<std::uint64_t> failed{0};
    // Stopped before what its completions use goes: it owes none after stop().
    auto bus = make_bus(sys, connect_transport(url, quorum), queue, 0, [](const ping&) {});
    if (auto ok = bus->start(); !ok)
      throw std::runtime_error(ok.error().message);
    auto start = steady::now();
    for (std::uint64_t i = 0; i < messages; ++i) {
      slots.take();
      bus->send_async(queue, ping{i, now_ns()}, [&](bus::result<void> r) {
        if (!r)
          ++failed;
        slots.give();
        done.complete();
      });
    }
    done.wait_for(messages, steady::now() + std::chrono::minutes(5));
    seconds = seconds_since(start);
    bus->stop();
    sent = done.done() - failed.load();
    if (failed > 0)
      throw std::runtime_error(std::to_string(failed.load()) + " sends failed");
  } else {
    seconds = raw_windowed_publish(url, queue, messages, static_cast<std::size_t>(in_flight));
    sent = messages;
  }
  delete_case_queues(admin, queue);
  auto r = finish("rabbitmq_async_send", impl, messages, sent, seconds, sent == messages);
  r["window"] = in_flight;
  r["queue_type"] = quorum ? "quorum" : "classic";
  return r;
}

} // namespace bench
