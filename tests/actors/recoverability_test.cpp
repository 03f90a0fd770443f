// The policy decision carried out by the actors, on virtual time: every
// chain of the policy table end to end, with the time of each attempt.
#include <catch2/catch.hpp>

#include <map>

#include <unistd.h>

#include "bus/handler_verdicts.hpp"
#include "bus/header_names.hpp"
#include "bus/testing/harness.hpp"
#include "support/sample_messages.hpp"

using namespace std::chrono_literals;
using bus::event_kind;
using bus::test::invoice_requested;
using bus::test::order_placed;

namespace {

struct transient_error : std::runtime_error {
  transient_error() : std::runtime_error("database unavailable") {}
};

using configure_fn = std::function<void(bus::policy_builder&)>;

// A bus with one endpoint, "billing", whose handler fails the first
// `failures` attempts of each message (forever when negative).
bus::message_bus& start_failing(bus::testing::harness& h, int failures, configure_fn policy,
                                std::size_t slots = 1) {
  auto attempts = std::make_shared<std::map<std::string, int>>();
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .add_resilience(std::move(policy))
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.slots(slots).handle<order_placed>([attempts, failures](const order_placed& m) {
        if (failures < 0 || (*attempts)[m.order_id]++ < failures)
          throw transient_error();
      });
    });
  return h.start(b);
}

// When each attempt at `message_id` failed, relative to the first.
std::vector<bus::duration> failure_times(const bus::testing::harness& h,
                                         const std::string& message_id) {
  std::vector<bus::duration> out;
  std::optional<bus::time_point> first;
  for (const auto& e : h.events_for(message_id)) {
    if (e.kind != event_kind::failed)
      continue;
    if (!first)
      first = e.at;
    out.push_back(std::chrono::duration_cast<bus::duration>(e.at - *first));
  }
  return out;
}

std::optional<event_kind> terminal_of(const bus::testing::harness& h, const std::string& id) {
  for (const auto& e : h.events_for(id))
    if (e.kind == event_kind::handled || e.kind == event_kind::dead_lettered
        || e.kind == event_kind::discarded)
      return e.kind;
  return std::nullopt;
}

std::string only_message_id(const bus::testing::harness& h) {
  auto received = h.events_of(event_kind::received);
  REQUIRE_FALSE(received.empty());
  return received.front().message_id;
}

} // namespace

TEST_CASE("every chain of the policy table runs through the actors at the planned times") {
  using ms = std::chrono::milliseconds;
  struct row {
    const char* chain;
    configure_fn policy;
    std::vector<bus::duration> attempts; // time of each failed attempt
    event_kind end;
  };
  // Jitter off, so the times are the nominal ones. Default retry: 3 x 200 ms
  // exponential; default redelivery: 5, 15, 30 min.
  const std::vector<bus::duration> retries = {0ms, 200ms, 600ms, 1400ms};
  auto cycle_at = [&](bus::duration start) {
    std::vector<bus::duration> out;
    for (auto r : retries)
      out.push_back(start + r);
    return out;
  };
  auto concat = [](std::vector<std::vector<bus::duration>> parts) {
    std::vector<bus::duration> out;
    for (auto& p : parts)
      out.insert(out.end(), p.begin(), p.end());
    return out;
  };
  auto d1 = 1400ms + 5min, d2 = d1 + 1400ms + 15min, d3 = d2 + 1400ms + 30min;
  std::vector<row> rows = {
    {"discard()", [](auto& p) { p.on_any().discard(); }, {0ms}, event_kind::discarded},
    {"dead_letter()", [](auto& p) { p.on_any().dead_letter(); }, {0ms}, event_kind::dead_lettered},
    {"retry()", [](auto& p) { p.on_any().retry().jitter(false); }, retries, event_kind::dead_lettered},
    {"retry(3)", [](auto& p) { p.on_any().retry(3).jitter(false); }, retries,
     event_kind::dead_lettered},
    {"redeliver()", [](auto& p) { p.on_any().redeliver().jitter(false); },
     {0ms, ms(5min), ms(20min), ms(50min)}, event_kind::dead_lettered},
    {"retry(3).then_redeliver()",
     [](auto& p) { p.on_any().retry(3).jitter(false).then_redeliver().jitter(false); },
     concat({cycle_at(0ms), cycle_at(d1), cycle_at(d2), cycle_at(d3)}), event_kind::dead_lettered},
    {"retry(3).then_dead_letter()",
     [](auto& p) { p.on_any().retry(3).jitter(false).then_dead_letter(); }, retries,
     event_kind::dead_lettered},
    {"retry(3).then_redeliver().then_dead_letter()",
     [](auto& p) {
       p.on_any().retry(3).jitter(false).then_redeliver().jitter(false).then_dead_letter();
     },
     concat({cycle_at(0ms), cycle_at(d1), cycle_at(d2), cycle_at(d3)}), event_kind::dead_lettered},
  };
  for (const auto& r : rows) {
    INFO(r.chain);
    bus::testing::harness h;
    auto& bus = start_failing(h, -1, r.policy);
    REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
    h.advance_until_idle();
    auto id = only_message_id(h);
    CHECK(failure_times(h, id) == r.attempts);
    CHECK(terminal_of(h, id) == r.end);
    auto s = h.stats("billing");
    CHECK(s.failed_attempts == r.attempts.size());
    CHECK(s.in_flight == 0);
    CHECK(s.pending_redelivery == 0);
    CHECK(h.error_queue("billing").size() == (r.end == event_kind::dead_lettered ? 1u : 0u));
  }
}

TEST_CASE("a message that recovers on a retry or a redelivery is handled once, at that attempt") {
  bus::testing::harness h;
  // Fails 5 times: attempts 1-4 in the first delivery, the 5th in the
  // second, the 6th succeeds.
  auto& bus = start_failing(h, 5, [](auto& p) {
    p.on_any().retry({10ms, 20ms, 30ms}).jitter(false).then_redeliver({1s, 2s}).jitter(false);
  });
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  h.advance_until_idle();
  auto id = only_message_id(h);
  using ms = std::chrono::milliseconds;
  CHECK(failure_times(h, id) == std::vector<bus::duration>{0ms, 10ms, 30ms, 60ms, ms(1060)});
  CHECK(terminal_of(h, id) == event_kind::handled);
  auto handled = h.events_of(event_kind::handled);
  REQUIRE(handled.size() == 1);
  CHECK(handled[0].attempt == 2);
  CHECK(handled[0].delivery_count == 1);
  auto s = h.stats("billing");
  CHECK(s.received == 2);
  CHECK(s.handled == 1);
  CHECK(s.immediate_retries == 4);
  CHECK(s.redeliveries_scheduled == 1);
}

TEST_CASE("with one slot a message waiting for redelivery frees the slot and one waiting for a retry does not") {
  bus::testing::harness h;
  auto attempts = std::make_shared<int>(0);
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .add_resilience([](auto& p) { p.on_any().retry({1s}).jitter(false).then_redeliver({10s}).jitter(false); })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.slots(1).handle<order_placed>([attempts](const order_placed& m) {
        if (m.order_id == "slow" && ++*attempts <= 2)
          throw transient_error();
      });
    });
  auto& bus = h.start(b);
  REQUIRE(bus.send("billing", order_placed{"slow", 1}));
  REQUIRE(bus.send("billing", order_placed{"fast", 1}));
  h.run();
  h.advance(999ms); // "slow" waits for its immediate retry, holding the slot
  CHECK(h.events_of(event_kind::handled).empty());
  h.advance(1ms);   // its retry fails: redelivery in 10 s, the slot is free
  auto handled = h.events_of(event_kind::handled);
  REQUIRE(handled.size() == 1);
  CHECK(h.elapsed() == 1s);
  CHECK(h.stats("billing").pending_redelivery == 1);
  h.advance(10s);
  CHECK(h.events_of(event_kind::handled).size() == 2);
  CHECK(h.stats("billing").pending_redelivery == 0);
}

TEST_CASE("three immediate and two delayed retries log like NServiceBus's example, twelve attempts in all") {
  bus::testing::harness h;
  auto& bus = start_failing(h, -1, [](auto& p) {
    p.on_any().retry({0ms, 0ms, 0ms}).then_redeliver({10s, 20s}).jitter(false);
  });
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  h.advance_until_idle();
  std::vector<std::string> retry_lines;
  for (const auto& line : h.log_lines())
    if (line.find("[bus.immediate_retry]") == 0 || line.find("[bus.delayed_retry]") == 0
        || line.find("[bus.move_to_error]") == 0)
      retry_lines.push_back(line);
  REQUIRE(retry_lines.size() == 12);
  for (std::size_t attempt = 1; attempt <= 12; ++attempt) {
    const auto& line = retry_lines[attempt - 1];
    INFO("attempt " << attempt << ": " << line);
    if (attempt == 4)
      CHECK_THAT(line, Catch::StartsWith("[bus.delayed_retry] [warning] delayed retry 1 will "
                                         "reschedule message")
                         && Catch::Contains("after a delay of 00:00:10"));
    else if (attempt == 8)
      CHECK_THAT(line, Catch::StartsWith("[bus.delayed_retry] [warning] delayed retry 2 will "
                                         "reschedule message")
                         && Catch::Contains("after a delay of 00:00:20"));
    else if (attempt == 12)
      CHECK_THAT(line, Catch::StartsWith("[bus.move_to_error] [error] moving message")
                         && Catch::Contains("to the error queue 'billing_error'"));
    else
      CHECK_THAT(line, Catch::StartsWith("[bus.immediate_retry] [info] immediate retry of message")
                         && Catch::Contains("transient_error: database unavailable"));
  }
  CHECK(h.stats("billing").failed_attempts == 12);
}

TEST_CASE("a message on the error queue carries fault headers and raises fault<T> once") {
  bus::testing::harness h;
  std::vector<bus::fault<order_placed>> faults;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .add_resilience([](auto& p) { p.on_any().retry({0ms}).then_redeliver({1s}); })
    .endpoint("billing", [](bus::endpoint_builder& e) {
      e.handle<order_placed>([](const order_placed&) -> void { throw transient_error(); });
    })
    .endpoint("alerts", [&](bus::endpoint_builder& e) {
      e.handle<bus::fault<order_placed>>(
        [&](const bus::fault<order_placed>& f) { faults.push_back(f); });
    });
  auto& bus = h.start(b);
  REQUIRE(bus.send("billing", order_placed{"o-1", 7}));
  h.advance_until_idle();
  auto errors = h.error_queue("billing");
  REQUIRE(errors.size() == 1);
  namespace hdr = bus::header;
  auto header = [&](std::string_view name) { return std::string(*errors[0]->headers.find(name)); };
  CHECK_THAT(header(hdr::fault_exception_type), Catch::EndsWith("transient_error"));
  CHECK(header(hdr::fault_message) == "database unavailable");
  CHECK(header(hdr::fault_immediate_retries) == "1");
  CHECK(header(hdr::fault_delivery_count) == "1");
  CHECK(header(hdr::fault_endpoint) == "billing");
  CHECK(header(hdr::fault_original_address) == "billing");
  CHECK(header(hdr::fault_process) == std::to_string(::getpid()));
  CHECK_THAT(header(hdr::fault_reason), Catch::Contains("retries exhausted"));
  REQUIRE(faults.size() == 1); // once, not at each redelivery
  CHECK(faults[0].message == order_placed{"o-1", 7});
  CHECK(faults[0].message_id == errors[0]->message_id);
  CHECK(faults[0].delivery_count == 1);
  CHECK(faults[0].endpoint == "billing");
}

TEST_CASE("a fault goes to the message's fault address instead of being published") {
  bus::testing::harness h;
  int published = 0;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .endpoint("billing", [](bus::endpoint_builder& e) {
      e.handle<order_placed>([](const order_placed&) -> void { throw transient_error(); });
    })
    .endpoint("alerts", [&](bus::endpoint_builder& e) {
      e.handle<bus::fault<order_placed>>([&](const bus::fault<order_placed>&) { ++published; });
    });
  auto& bus = h.start(b);
  REQUIRE(h.transport().declare_queue("ops"));
  bus::send_options opts;
  opts.fault_address = "ops";
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}, opts));
  h.run();
  CHECK(published == 0);
  auto ops = h.queue("ops");
  REQUIRE(ops.size() == 1);
  CHECK(ops[0]->message_type == "fault<order_placed>");
}

TEST_CASE("faulted messages can be discarded instead of moved to the error queue") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed").endpoint("billing", [](bus::endpoint_builder& e) {
    e.discard_faulted_messages().handle<order_placed>(
      [](const order_placed&) -> void { throw transient_error(); });
  });
  auto& bus = h.start(b);
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  h.run();
  CHECK(h.error_queue("billing").empty());
  CHECK(h.stats("billing").discarded == 1);
  CHECK(h.events_of(event_kind::discarded).size() == 1);
}

TEST_CASE("a handler can mark its message as poison or ask for a retry") {
  bus::testing::harness h;
  auto asked = std::make_shared<int>(0);
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .add_resilience([](auto& p) { p.on_any().retry({5ms, 5ms}).then_redeliver({1min}); })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.handle<order_placed>([asked](const order_placed& m, bus::handler_context& ctx) {
        if (m.order_id == "poison-by-call")
          ctx.poison("customer deleted");
        else if (m.order_id == "poison-by-throw")
          throw bus::poison_message("customer deleted");
        else if (m.order_id == "retry" && ++*asked < 3)
          ctx.retry("not replicated yet");
      });
    });
  auto& bus = h.start(b);
  for (const auto* id : {"poison-by-call", "poison-by-throw", "retry"})
    REQUIRE(bus.send("billing", order_placed{id, 1}));
  h.advance_until_idle();
  auto errors = h.error_queue("billing");
  REQUIRE(errors.size() == 2); // at once, whatever the rules say
  for (const auto& e : errors)
    CHECK_THAT(std::string(*e->headers.find(bus::header::fault_reason)), Catch::Contains("poison"));
  CHECK(h.stats("billing").handled == 1);
  CHECK(*asked == 3);
  CHECK(h.stats("billing").immediate_retries == 2);
}

TEST_CASE("a failed attempt's outbox is dropped, so a retry sends its messages once") {
  bus::testing::harness h;
  auto attempts = std::make_shared<int>(0);
  int invoices = 0;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .message<invoice_requested>("invoice_requested")
    .add_resilience([](auto& p) { p.on_any().retry({10ms, 10ms}); })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.handle<order_placed>([attempts](const order_placed& m, bus::handler_context& ctx) {
        REQUIRE(ctx.send("invoicing", invoice_requested{m.order_id, {}}));
        if (++*attempts < 3)
          throw transient_error();
      });
    })
    .endpoint("invoicing", [&](bus::endpoint_builder& e) {
      e.handle<invoice_requested>([&](const invoice_requested&) { ++invoices; });
    });
  auto& bus = h.start(b);
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  h.advance_until_idle();
  CHECK(*attempts == 3);
  CHECK(invoices == 1);
}

TEST_CASE("unrecoverable exceptions and bodies that cannot be decoded skip every retry") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .add_resilience([](auto& p) { p.on_any().retry(5).then_redeliver(); })
    .unrecoverable<std::invalid_argument>()
    .endpoint("billing", [](bus::endpoint_builder& e) {
      e.handle<order_placed>(
        [](const order_placed&) -> void { throw std::invalid_argument("negative amount"); });
    });
  auto& bus = h.start(b);
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  bus::envelope broken;
  broken.message_id = "broken";
  broken.message_type = "order_placed";
  broken.body = bus::message_body::text("{not json");
  REQUIRE(h.transport().send("billing", broken));
  h.run();
  CHECK(h.error_queue("billing").size() == 2);
  CHECK(h.stats("billing").failed_attempts == 2);
  CHECK(h.stats("billing").immediate_retries == 0);
}

TEST_CASE("a shorter redelivery scheduled later overtakes a longer one") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .add_resilience([](bus::policy_builder& p) {
      p.on<std::out_of_range>().redeliver({10min}).jitter(false);
      p.on<std::length_error>().redeliver({1min}).jitter(false);
    })
    .endpoint("billing", [](bus::endpoint_builder& e) {
      e.handle<order_placed>([](const order_placed& m, bus::handler_context& ctx) {
        if (ctx.delivery_count() > 0)
          return;
        if (m.order_id == "long")
          throw std::out_of_range("later");
        throw std::length_error("sooner");
      });
    });
  auto& bus = h.start(b);
  REQUIRE(bus.send("billing", order_placed{"long", 1}));
  h.advance(1s);
  REQUIRE(bus.send("billing", order_placed{"short", 1}));
  h.advance_until_idle();
  // "short" comes back at 1 s + 1 min, before "long" at 10 min.
  auto received = h.events_of(event_kind::received);
  auto handled = h.events_of(event_kind::handled);
  REQUIRE(handled.size() == 2);
  CHECK(handled[0].message_id == received[1].message_id);
  CHECK(handled[1].message_id == received[0].message_id);
  CHECK(handled[0].at - received[0].at == 61s);
  CHECK(handled[1].at - received[0].at == 10min);
}

TEST_CASE("stopping with redeliveries pending returns them to the queue instead of losing them") {
  bus::testing::harness h;
  auto& bus = start_failing(h, -1, [](auto& p) { p.on_any().redeliver({1h}); });
  for (int i = 0; i < 3; ++i)
    REQUIRE(bus.send("billing", order_placed{"o-" + std::to_string(i), 1}));
  h.run();
  CHECK(h.stats("billing").pending_redelivery == 3);
  h.stop();
  CHECK(bus.stopped());
  CHECK(h.stats("billing").pending_redelivery == 0);
  auto back = h.queue("billing");
  REQUIRE(back.size() == 3);
  for (const auto& m : back)
    CHECK(m->delivery_count == 1);
  bool warned = false;
  for (const auto& line : h.log_lines())
    warned = warned || line.find("stops with 3 redeliveries pending") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("a message larger than its endpoint accepts goes to the error queue, not to the handler") {
  bus::testing::harness h;
  int calls = 0;
  auto b = h.builder();
  b.message<order_placed>("order_placed").endpoint("billing", [&](bus::endpoint_builder& e) {
    e.max_message_size(64).handle<order_placed>([&](const order_placed&) { ++calls; });
  });
  h.start(b);
  auto text_message = [](std::string id, std::string order_id) {
    bus::envelope env;
    env.message_id = std::move(id);
    env.message_type = "order_placed";
    env.body = bus::message_body::text(R"({"order_id":")" + order_id + R"(","amount":1})");
    return env;
  };
  REQUIRE(h.transport().send("billing", text_message("small", "o-1")));
  REQUIRE(h.transport().send("billing", text_message("large", std::string(100, 'x'))));
  h.run();
  CHECK(calls == 1);
  auto errors = h.error_queue("billing");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0]->message_id == "large");
  CHECK(std::string(*errors[0]->headers.find(bus::header::fault_exception_type))
        == "bus::message_too_large");
  CHECK_THAT(std::string(*errors[0]->headers.find(bus::header::fault_reason)),
             Catch::Contains("more than the endpoint's maximum of 64"));
}

TEST_CASE("an observer of the user's own sees every event beside the harness's recorder") {
  bus::testing::harness h;
  std::vector<event_kind> mine;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .observe([&](const bus::bus_event& e) { mine.push_back(e.kind); })
    .observe([](const bus::bus_event&) { throw std::runtime_error("a faulty observer"); })
    .endpoint("billing", [](bus::endpoint_builder& e) { e.handle<order_placed>([](auto&) {}); });
  auto& bus = h.start(b);
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  h.run();
  CHECK(mine == std::vector<event_kind>{event_kind::received, event_kind::handled});
  CHECK(h.events_of(event_kind::handled).size() == 1);
}

TEST_CASE("a handler reads the bus's clock from its context, virtual time in tests") {
  bus::testing::harness h;
  std::vector<bus::time_point> seen;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .add_resilience([](bus::policy_builder& p) { p.on_any().retry(1, 10s).jitter(false); })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.handle<order_placed>([&](const order_placed&, bus::handler_context& ctx) {
        seen.push_back(ctx.now());
        if (seen.size() == 1)
          throw transient_error();
      });
    });
  auto& bus = h.start(b);
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  h.advance(1min);
  REQUIRE(seen.size() == 2);
  CHECK(seen[1] - seen[0] == 10s);
}
