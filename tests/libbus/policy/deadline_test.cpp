// Deadlines: the bus-expires-at header, its inheritance, and decide()
// never scheduling a retry to fire after the message's expiry or a
// redelivery after the retry time limit.
#include "bus/deadline.hpp"

#include <catch2/catch.hpp>

#include "bus/header_names.hpp"
#include "bus/policy/decide.hpp"
#include "bus/policy/deadline.hpp"
#include "bus/policy/resilience.hpp"
#include "support/policy_support.hpp"

using namespace std::chrono_literals;
using namespace bus::test;

namespace {

// Follows decide() for a handler that always fails, as the consumer does;
// returns each step with the time it fails at ("20h: error").
std::vector<std::string> timeline(const bus::recoverability_config& config,
                                  std::optional<bus::time_point> expires_at = std::nullopt) {
  auto generator = fixed_draw{middle};
  bus::error_context context;
  context.exception = std::make_exception_ptr(http_error{503});
  context.first_failure = t0;
  context.now = t0;
  context.expires_at = expires_at;
  std::vector<std::string> out;
  for (int i = 0; i < 100; ++i) {
    auto a = bus::decide(config, context, generator);
    out.push_back(bus::to_short_string(std::chrono::duration_cast<bus::duration>(context.now - t0))
                  + ": " + summary(a));
    if (auto* r = std::get_if<bus::immediate_retry>(&a)) {
      ++context.immediate_attempts;
      context.now += r->delay;
    } else if (auto* d = std::get_if<bus::delayed_retry>(&a)) {
      ++context.delivery_count;
      context.immediate_attempts = 1;
      context.now += d->delay;
    } else {
      break;
    }
  }
  return out;
}

} // namespace

TEST_CASE("redeliveries every 10 h with a 24 h limit end at 20 h, not 30 h") {
  const auto config = config_of([](bus::policy_builder& p) {
    p.on_any().redeliver({10h, 10h, 10h, 10h}).jitter(false).max_delay(10h);
  });
  CHECK(timeline(config) == std::vector<std::string>{"0ms: redeliver 10h", "10h: redeliver 10h", "20h: error"});
  auto generator = fixed_draw{middle};
  bus::error_context at_20h;
  at_20h.exception = std::make_exception_ptr(http_error{503});
  at_20h.first_failure = t0;
  at_20h.now = t0 + 20h;
  at_20h.delivery_count = 2;
  const auto last = bus::decide(config, at_20h, generator);
  REQUIRE(std::holds_alternative<bus::move_to_error>(last));
  CHECK(std::get<bus::move_to_error>(last).reason
        == "rule #1 on_any(): a retry after 10:00:00 would come after the retry time limit of "
           "24:00:00 since the first failure");
}

TEST_CASE("a redelivery that fires exactly at the limit still runs, and one after it is never "
          "scheduled") {
  const auto config = config_of([](bus::policy_builder& p) {
    p.on_any().redeliver({12h, 12h, 12h}).jitter(false).max_delay(12h);
  });
  // The second fires at 24 h, the limit itself: it runs, as it always did.
  CHECK(timeline(config)
        == std::vector<std::string>{"0ms: redeliver 12h", "12h: redeliver 12h", "24h: error"});
}

TEST_CASE("no retry is scheduled to fire at or after the message's expiry") {
  const auto config = config_of([](bus::policy_builder& p) {
    p.on_any().retry(3, 1s).jitter(false).then_redeliver({1min, 5min}).jitter(false);
  });
  // Retries after 1, 2 and 4 s (3 s of 7 s elapse), then a redelivery of 1 min: too late.
  CHECK(timeline(config, t0 + 30s)
        == std::vector<std::string>{"0ms: retry 1s", "1s: retry 2s", "3s: retry 4s", "7s: error"});
  // An immediate retry that would fire at the expiry itself is not scheduled.
  CHECK(timeline(config, t0 + 1s) == std::vector<std::string>{"0ms: error"});
  // No expiry: the whole chain.
  CHECK(timeline(config).size() == 12);
}

TEST_CASE("the bus-expires-at header: read with bounds, set, inherited") {
  bus::envelope m;
  CHECK_FALSE(bus::expires_at(m));
  CHECK_FALSE(bus::expired(m, t0));
  bus::set_expires_at(m, t0 + 5s);
  CHECK(m.headers.find(bus::header::expires_at) == std::optional<std::string_view>("1800000005000"));
  CHECK(bus::expires_at(m) == t0 + 5s);
  CHECK_FALSE(bus::expired(m, t0 + 4999ms));
  CHECK(bus::expired(m, t0 + 5s));
  for (const char* bad : {"soon", "12x", "", "99999999999999999999"}) {
    INFO(bad);
    m.headers.set(bus::header::expires_at, bad);
    CHECK_FALSE(bus::expires_at(m)); // ignored, never a reason to drop a message
  }

  bus::envelope handled, sent;
  bus::inherit_deadline(sent, handled);
  CHECK_FALSE(bus::expires_at(sent)); // nothing to inherit
  bus::set_expires_at(handled, t0 + 10s);
  bus::inherit_deadline(sent, handled);
  CHECK(bus::expires_at(sent) == t0 + 10s);
  bus::set_expires_at(sent, t0 + 3s); // an earlier one of its own stays
  bus::inherit_deadline(sent, handled);
  CHECK(bus::expires_at(sent) == t0 + 3s);
  bus::set_expires_at(sent, t0 + 60s); // a later one is cut to the handled message's
  bus::inherit_deadline(sent, handled);
  CHECK(bus::expires_at(sent) == t0 + 10s);
}

TEST_CASE("expired_action and budget_fallback read and print their names") {
  bus::expired_action e{};
  CHECK(bus::parse_expired_action("dead_letter", e));
  CHECK(e == bus::expired_action::dead_letter);
  CHECK_FALSE(bus::parse_expired_action("drop", e));
  bus::budget_fallback f{};
  CHECK(bus::parse_budget_fallback("longest_delay", f));
  CHECK(bus::to_string(f) == "longest_delay");
  CHECK_FALSE(bus::parse_budget_fallback("later", f));
}
