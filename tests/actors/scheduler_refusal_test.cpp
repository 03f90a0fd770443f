// A redelivery handed to a transport that holds delays (a broker): when the
// broker cannot take it right now, the message keeps its slot and is
// offered again; it is never moved to the error queue for an outage, since
// its delivery could come back and end a second time.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "bus/header_names.hpp"
#include "support/caf_fixture.hpp"
#include "support/delaying_transport.hpp"
#include "support/forwarding_transport.hpp"
#include "support/shutdown_anyway.hpp"

using namespace bus::test;
using namespace std::chrono_literals;

namespace {

// Refuses the next sends to one queue, as a full or unreachable queue would.
class flaky_queue_transport final : public forwarding_transport {
public:
  flaky_queue_transport(bus::transport& inner, std::string queue)
    : forwarding_transport(inner), queue_(std::move(queue)) {}
  int refusals_left = 0;
  int refused = 0;
  std::string_view name() const noexcept override { return "flaky"; }
  bus::result<void> send(const std::string& q, bus::envelope msg) override {
    if (q == queue_ && refusals_left > 0) {
      --refusals_left;
      ++refused;
      return bus::error{bus::errc::transport_failure, "queue '" + q + "' is full"};
    }
    return inner_.send(q, std::move(msg));
  }

private:
  std::string queue_;
};

// Billing fails every first delivery and succeeds on the redelivery.
std::unique_ptr<bus::message_bus> start_on(caf_fixture& f, std::shared_ptr<delaying_transport> t) {
  auto b = f.builder();
  b.transport(t)
    .add_resilience([](bus::policy_builder& p) { p.on_any().redeliver({1min}).jitter(false); })
    .endpoint("billing", [](bus::endpoint_builder& e) {
      e.slots(1).handle<order_placed>([](const order_placed&, bus::handler_context& ctx) {
        if (ctx.delivery_count() == 0)
          throw std::runtime_error("payment service down");
      });
    });
  return f.start(b);
}

} // namespace

TEST_CASE_METHOD(caf_fixture,
                 "a redelivery the broker cannot take now keeps its slot and is offered again") {
  auto delaying = std::make_shared<delaying_transport>(*transport);
  delaying->refusals_left = 3;
  auto bus = start_on(*this, delaying);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  sched.run();
  CHECK(delaying->refused == 1);
  // Waiting: unacknowledged, in flight, nowhere else.
  CHECK(transport->unacked("billing") == 1);
  CHECK(stats(*bus, "billing").in_flight == 1);

  // Offered again after 1 s, 2 s, 4 s: the fourth time is accepted.
  for (auto wait : {1s, 2s}) {
    sched.advance_time(wait);
    sched.run();
  }
  CHECK(delaying->refused == 3);
  CHECK(delaying->accepted == 0);
  sched.advance_time(4s - 1ms);
  sched.run();
  CHECK(delaying->accepted == 0);
  sched.advance_time(1ms);
  sched.run();
  CHECK(delaying->accepted == 1);

  auto s = stats(*bus, "billing");
  CHECK(s.redeliveries_scheduled == 1);
  CHECK(s.handled == 1); // the redelivered copy, which the double delivers at once
  CHECK(s.dead_lettered == 0);
  CHECK(s.in_flight == 0);
  CHECK(transport->depth("billing_error") == 0);
  CHECK(transport->unacked("billing") == 0);
  CHECK(log_count("cannot hand message") == 3);
}

TEST_CASE_METHOD(caf_fixture, "a redelivery the broker can never hold goes to the error queue") {
  auto delaying = std::make_shared<delaying_transport>(*transport);
  delaying->refusals_left = 1;
  delaying->refusal = bus::errc::invalid_configuration;
  auto bus = start_on(*this, delaying);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  sched.run();
  auto s = stats(*bus, "billing");
  CHECK(s.dead_lettered == 1);
  CHECK(s.in_flight == 0);
  REQUIRE(transport->depth("billing_error") == 1);
  auto parked = transport->browse("billing_error");
  auto reason = parked[0]->headers.find(bus::header::fault_reason);
  REQUIRE(reason);
  CHECK_THAT(std::string(*reason), Catch::Contains("the scheduler refused the redelivery")
                                     && Catch::Contains("the broker refuses"));
  CHECK(log_count("cannot hand message") == 0);
}

TEST_CASE_METHOD(caf_fixture,
                 "a redelivery whose return the transport refuses is kept whole and returned later") {
  auto flaky = std::make_shared<flaky_queue_transport>(*transport, "billing");
  std::vector<order_placed> handled;
  auto b = builder();
  b.transport(flaky)
    .add_resilience([](bus::policy_builder& p) { p.on_any().redeliver({1min}).jitter(false); })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.handle<order_placed>([&](const order_placed& m, bus::handler_context& ctx) {
        if (ctx.delivery_count() == 0)
          throw std::runtime_error("payment service down");
        handled.push_back(m);
      });
    });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 7}));
  sched.run();
  REQUIRE(stats(*bus, "billing").pending_redelivery == 1);

  flaky->refusals_left = 1;
  sched.advance_time(1min);
  sched.run();
  CHECK(flaky->refused == 1);
  CHECK(stats(*bus, "billing").pending_redelivery == 1); // still held

  sched.advance_time(1s);
  sched.run();
  REQUIRE(handled.size() == 1);
  CHECK(handled[0] == order_placed{"o-1", 7});
  auto s = stats(*bus, "billing");
  CHECK(s.handled == 1);
  CHECK(s.skipped == 0);
  CHECK(s.pending_redelivery == 0);
}

namespace {

// Claims delayed delivery and breaks the port's promise never to throw,
// once: the scheduler that calls it dies.
class throwing_delays final : public forwarding_transport {
public:
  using forwarding_transport::forwarding_transport;
  int throws_left = 1;
  std::string_view name() const noexcept override { return "throwing"; }
  bus::transport_capabilities capabilities() const noexcept override {
    auto c = inner_.capabilities();
    c.delayed_delivery = true;
    return c;
  }
  bus::result<void> send_delayed(const std::string& q, bus::envelope msg,
                                 bus::duration) override {
    if (throws_left > 0) {
      --throws_left;
      throw std::logic_error("a bug in the transport");
    }
    return inner_.send(q, std::move(msg));
  }
};

} // namespace

TEST_CASE_METHOD(caf_fixture,
                 "a scheduler that dies is replaced, and its redeliveries wait for the new one") {
  auto throwing = std::make_shared<throwing_delays>(*transport);
  auto b = builder();
  b.transport(throwing)
    .add_resilience([](bus::policy_builder& p) { p.on_any().redeliver({1min}).jitter(false); })
    .endpoint("billing", [](bus::endpoint_builder& e) {
      e.slots(1).handle<order_placed>([](const order_placed&, bus::handler_context& ctx) {
        if (ctx.delivery_count() == 0)
          throw std::runtime_error("payment service down");
      });
    });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  sched.run();
  CHECK(log_count("the scheduler of endpoint 'billing' died") == 1);
  CHECK(transport->depth("billing_error") == 0); // not an error-queue move
  CHECK(stats(*bus, "billing").in_flight == 1);  // held, with its slot

  sched.advance_time(1s); // offered again, to the new scheduler
  sched.run();
  REQUIRE(bus->send("billing", order_placed{"o-2", 1}));
  sched.run();
  auto s = stats(*bus, "billing");
  CHECK(s.redeliveries_scheduled == 2);
  CHECK(s.handled == 2);
  CHECK(s.dead_lettered == 0);
  CHECK(s.in_flight == 0);
  CHECK(transport->depth("billing_error") == 0);
}

TEST_CASE_METHOD(caf_fixture,
                 "a scheduler that dies during a stop leaves no hand-off waiting: the message "
                 "goes back to its queue and the stop ends") {
  auto throwing = std::make_shared<throwing_delays>(*transport);
  std::unique_ptr<bus::message_bus> bus;
  auto b = builder();
  b.transport(throwing)
    .add_resilience([](bus::policy_builder& p) { p.on_any().redeliver({1min}).jitter(false); })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.slots(1).drain_timeout(10s).handle<order_placed>([&](const order_placed&) {
        // The stop comes while the handler runs (asked from inside it, so
        // that on the test coordinator it lands exactly then).
        bus->request_stop();
        throw std::runtime_error("payment service down");
      });
    });
  bus = start(b);
  shutdown_anyway guard(sys, [&] { return bus->stopped(); });
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  sched.run(); // the hand-off kills the scheduler
  CHECK(log_count("the scheduler of endpoint 'billing' died") == 1);
  sched.advance_time(10s - 1ms); // within the drain timeout
  sched.run();
  CHECK(bus->stopped());
  auto s = stats(*bus, "billing");
  CHECK(s.requeued == 1);
  CHECK(s.redeliveries_scheduled == 0);
  CHECK(s.in_flight == 0);
  CHECK(transport->depth("billing") == 1);
  CHECK(transport->unacked("billing") == 0);
}

namespace {

// Throws once from a send that returns a redelivery to `queue` (a raised
// delivery count), breaking the port's promise: the in-memory scheduler
// that calls it dies in that call.
class throwing_return final : public forwarding_transport {
public:
  throwing_return(bus::transport& inner, std::string queue)
    : forwarding_transport(inner), queue_(std::move(queue)) {}
  int throws_left = 1;
  int returns_before_throwing = 0;
  std::string_view name() const noexcept override { return "throwing"; }
  bus::result<void> send(const std::string& q, bus::envelope msg) override {
    if (q == queue_ && msg.delivery_count > 0 && throws_left > 0
        && returns_before_throwing-- <= 0) {
      --throws_left;
      throw std::logic_error("a bug in the transport");
    }
    return inner_.send(q, std::move(msg));
  }

private:
  std::string queue_;
};

// Billing, on `t`, fails every first delivery and records the order of
// each redelivery it handles in `handled`.
std::unique_ptr<bus::message_bus> start_recording(caf_fixture& f, std::shared_ptr<bus::transport> t,
                                                  std::vector<std::string>& handled) {
  auto b = f.builder();
  b.transport(std::move(t))
    .add_resilience([](bus::policy_builder& p) { p.on_any().redeliver({1min}).jitter(false); })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.handle<order_placed>([&](const order_placed& m, bus::handler_context& ctx) {
        if (ctx.delivery_count() == 0)
          throw std::runtime_error("payment service down");
        handled.push_back(m.order_id);
      });
    });
  return f.start(b);
}

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

} // namespace

TEST_CASE_METHOD(caf_fixture,
                 "an in-memory scheduler that dies leaves what it held to the new one: the "
                 "message it was returning and those still waiting") {
  auto throwing = std::make_shared<throwing_return>(*transport, "billing");
  std::vector<std::string> handled;
  auto bus = start_recording(*this, throwing, handled);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  sched.run();
  sched.advance_time(30s);
  REQUIRE(bus->send("billing", order_placed{"o-2", 1}));
  sched.run();
  REQUIRE(stats(*bus, "billing").pending_redelivery == 2);

  sched.advance_time(30s); // o-1's return throws: its scheduler dies
  sched.run();
  CHECK(log_count("the scheduler of endpoint 'billing' died") == 1);
  CHECK(log_count("takes over 2 redeliveries") == 1);
  CHECK(stats(*bus, "billing").pending_redelivery == 2);
  sched.advance_time(1s); // o-1 is returned again a second later
  sched.run();
  CHECK(handled == std::vector<std::string>{"o-1"});
  CHECK(stats(*bus, "billing").pending_redelivery == 1);

  sched.advance_time(29s); // o-2's due time, kept by the new scheduler
  sched.run();
  CHECK(handled == std::vector<std::string>{"o-1", "o-2"});
  auto s = stats(*bus, "billing");
  CHECK(s.pending_redelivery == 0);
  CHECK(s.handled == 2);
  CHECK(s.dead_lettered == 0);
}

TEST_CASE_METHOD(caf_fixture,
                 "a scheduler that dies returning several at once leaves to the new one only "
                 "those the transport did not take") {
  auto throwing = std::make_shared<throwing_return>(*transport, "billing");
  throwing->returns_before_throwing = 1; // o-1 goes back, o-2's return throws
  std::vector<std::string> handled;
  auto bus = start_recording(*this, throwing, handled);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  REQUIRE(bus->send("billing", order_placed{"o-2", 1}));
  sched.run();
  REQUIRE(stats(*bus, "billing").pending_redelivery == 2);

  sched.advance_time(1min); // both due: returned in one call, which throws at o-2
  sched.run();
  CHECK(log_count("the scheduler of endpoint 'billing' died") == 1);
  CHECK(log_count("takes over 1 redeliveries") == 1);
  CHECK(handled == std::vector<std::string>{"o-1"});
  sched.advance_time(1s);
  sched.run();
  CHECK(handled == std::vector<std::string>{"o-1", "o-2"}); // o-1 not twice
  auto s = stats(*bus, "billing");
  CHECK(s.pending_redelivery == 0);
  CHECK(s.handled == 2);
  CHECK(s.dead_lettered == 0);
}

TEST_CASE_METHOD(caf_fixture,
                 "a redelivery whose return the transport refuses during a stop is written to "
                 "the dead-letter file, not lost") {
  auto dir = (std::filesystem::temp_directory_path() / "bus-test-stop-refused").string();
  std::filesystem::remove_all(dir);
  auto flaky = std::make_shared<flaky_queue_transport>(*transport, "billing");
  auto b = builder();
  b.transport(flaky)
    .dead_letter_directory(dir)
    .add_resilience([](bus::policy_builder& p) { p.on_any().redeliver({1min}).jitter(false); })
    .endpoint("billing", [](bus::endpoint_builder& e) {
      e.handle<order_placed>(
        [](const order_placed&) { throw std::runtime_error("payment service down"); });
    });
  auto bus = start(b);
  shutdown_anyway guard(sys, [&] { return bus->stopped(); });
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  sched.run();
  REQUIRE(stats(*bus, "billing").pending_redelivery == 1);

  flaky->refusals_left = 100; // the queue refuses everything from now on
  bus->request_stop();
  sched.run();
  CHECK(bus->stopped());
  CHECK(flaky->refused == 1); // tried once, then kept in the file
  auto lines = lines_of(dir + "/billing.dead-letters.jsonl");
  REQUIRE(lines.size() == 1);
  auto j = nlohmann::json::parse(lines[0]);
  CHECK(j["headers"]["bus-message-type"] == "order_placed");
  CHECK(j["headers"]["bus-delivery-count"] == "1");
  CHECK_THAT(j["headers"]["bus-fault-reason"].get<std::string>(),
             Catch::Contains("could not be returned to 'billing'")
               && Catch::Contains("is full"));
  CHECK(log_count("wrote it to the dead-letter file") == 1);
  std::filesystem::remove_all(dir);
}
