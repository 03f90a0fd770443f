// What the benchmark cases share: the message, the arguments of a case,
// and its result (one JSON object on standard output).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace bench {

// The benchmark message: a sequence number (which message it is) and when
// it was sent, for send-to-handled latency. Inspectable, so raw CAF sends
// the very same struct.
struct ping {
  std::uint64_t seq = 0;
  std::int64_t sent_ns = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ping, seq, sent_ns)

template <class Inspector> typename Inspector::result_type inspect(Inspector& f, ping& x) {
  return f(x.seq, x.sent_ns);
}

// The failure a handler throws in the failure-path cases.
struct bench_failure : std::runtime_error {
  bench_failure() : std::runtime_error("a benchmark failure") {}
};

// A case's arguments: --name value pairs.
class case_args {
public:
  case_args(int argc, char** argv, int first);

  [[nodiscard]] std::string text(const std::string& name, const std::string& fallback) const;
  [[nodiscard]] std::int64_t number(const std::string& name, std::int64_t fallback) const;
  [[nodiscard]] double real(const std::string& name, double fallback) const;

private:
  std::map<std::string, std::string> values_;
};

// A case: reads its arguments, runs once, returns what it measured.
using case_result = nlohmann::json;

case_result run_throughput(const case_args& args); // throughput and latency
case_result run_retry_path(const case_args& args); // 10% failing once vs none
case_result run_redelivery(const case_args& args); // 1M pending redeliveries
case_result run_blocking(const case_args& args);   // handlers blocking 10 ms vs the ideal
case_result
run_adaptive(const case_args& args); // a dependency past its capacity, fixed vs adaptive slots
case_result run_blocked_round_trip(const case_args& args); // an actor's request/response meanwhile
// The outbox and inbox (outbox.cpp, outbox_raw.cpp, outbox_cleanup.cpp):
// a handler's INSERT and one send with the outbox, without it, and raw.
case_result run_outbox(const case_args& args);         // --impl bus|plain|raw
case_result run_outbox_raw(const case_args& args);     // the raw loop
case_result run_outbox_cleanup(const case_args& args); // N records cleaned beside a consumer
// Built only with the RabbitMQ transport (BUS_BENCH_WITH_RABBITMQ).
case_result run_rabbitmq_send(const case_args& args);    // bus.send vs raw publish, confirmed
case_result run_rabbitmq_consume(const case_args& args); // endpoint vs raw consume, acked
case_result run_rabbitmq_async_send(const case_args& args); // async_send vs raw, a window of confirms

} // namespace bench
