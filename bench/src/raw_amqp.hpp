// The raw side of the RabbitMQ cases: rabbitmq-c 0.11 used directly, with
// the guarantees the bus gives (persistent messages, publisher confirms,
// a durable queue, manual acknowledgements with a prefetch), and nothing of
// the bus. One connection per object, used by one thread only, as
// rabbitmq-c requires. Every failure throws: a benchmark run that cannot
// talk to its broker has nothing to report.
#pragma once

#include <amqp.h>

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace bench {

// One message as the bus puts it on the wire: its string headers and JSON
// body, sent persistent with content type application/json.
struct amqp_payload {
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

class raw_amqp {
public:
  // Connects and logs in to `url` (amqp://user:password@host:port/vhost)
  // and opens channel 1.
  explicit raw_amqp(const std::string& url);
  ~raw_amqp();
  raw_amqp(const raw_amqp&) = delete;
  raw_amqp& operator=(const raw_amqp&) = delete;

  // A durable classic queue, declared as the transport declares it.
  void declare_queue(const std::string& queue);
  void delete_queue(const std::string& queue);

  // Turns on publisher confirms (channel 1).
  void confirm_select();
  // Publishes persistent to the default exchange, routing key `queue`,
  // mandatory like the bus's send. The payload's bytes are not kept.
  void publish(const std::string& queue, const amqp_payload& m);
  // Reads confirms until at most `left` publishes are unconfirmed. Throws
  // on a nack, a returned message or a closed channel.
  void await_confirms(std::size_t left);
  [[nodiscard]] std::size_t unconfirmed() const noexcept { return pending_.size(); }

  // basic.qos(prefetch) and basic.consume with manual acks on `queue`,
  // then calls `on_message` with each body and acknowledges, until
  // `messages` were acked. ack_every = 1: one basic.ack per message (the
  // same guarantee per message as the bus). ack_every = k > 1: one
  // basic.ack(multiple) per k messages and one for the rest at the end (the
  // "limit" of what rabbitmq-c can consume, at the cost of acking late).
  void consume(const std::string& queue, std::uint16_t prefetch, std::uint64_t messages,
               const std::function<void(amqp_bytes_t body)>& on_message,
               std::uint64_t ack_every = 1);

private:
  void check(amqp_rpc_reply_t reply, const char* what);

  amqp_connection_state_t conn_ = nullptr;
  std::uint64_t next_tag_ = 1;
  std::set<std::uint64_t> pending_; // publish sequence numbers not confirmed yet
};

// Publishes `messages` payloads made by `make(i)` to `queue`, with at most
// `window` unconfirmed, and waits for the last confirm. Used to fill a
// queue before a consume run (same code for the bus and the raw side).
void raw_fill_queue(const std::string& url, const std::string& queue, std::uint64_t messages,
                    std::size_t window, const std::function<amqp_payload(std::uint64_t)>& make);

} // namespace bench
