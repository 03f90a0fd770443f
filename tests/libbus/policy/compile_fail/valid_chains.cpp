// Must compile, warning-free: every valid chain of the DSL. The positive
// control for the compile-fail checks next to it, proving that the harness
// compiles what it should and that each failure comes from its one invalid
// chain.
#include "bus/policy/resilience.hpp"

#include <chrono>
#include <stdexcept>

using namespace std::chrono_literals;

namespace {

struct http_error : std::runtime_error {
  http_error() : std::runtime_error("http") {}
  int status = 429;
  std::chrono::seconds retry_after{30};
};

} // namespace

void configure(bus::policy_builder& p) {
  p.on<std::invalid_argument>().dead_letter();
  p.on<std::length_error>().discard();
  p.on<std::runtime_error>().retry();
  p.on<std::runtime_error>().retry(3);
  p.on<std::runtime_error>().retry(3, 200ms);
  p.on<std::runtime_error>().retry(3, 1s, bus::backoff::linear).jitter(false).max_delay(5s);
  p.on<std::runtime_error>().retry({100ms, 500ms, 2s});
  p.on<std::runtime_error>().redeliver();
  p.on<std::runtime_error>().redeliver(5, 2min);
  p.on<std::runtime_error>().redeliver({30s, 5min, 30min}).then_dead_letter();
  p.on<std::runtime_error>().retry(3).then_redeliver();
  p.on<std::runtime_error>().retry(3).then_dead_letter();
  p.on<std::runtime_error>().retry(3).then_redeliver().then_dead_letter();
  p.on<std::runtime_error>()
      .retry(5, 500ms)
      .then_redeliver({5min, 15min, 30min})
      .max_delay(2h)
      .then_dead_letter();
  p.on<http_error>([](const http_error& e) { return e.status == 429; })
      .max_attempts(10)
      .max_time(1h)
      .retry(3, [](const http_error& e, int) { return e.retry_after; })
      .then_redeliver(3, [](const http_error& e, int attempt) { return e.retry_after * attempt; });
  p.on<int>().discard();
  p.on_any()
      .retry(2, [](const std::exception_ptr&, int attempt) { return attempt * 1s; })
      .then_redeliver();
}
