// One delivery through an endpoint, end to end, on virtual time.
#include <catch2/catch.hpp>

#include <algorithm>

#include "bus/actor_handler.hpp"
#include "bus/header_names.hpp"
#include "support/caf_fixture.hpp"

using namespace bus::test;
namespace h = bus::header;

namespace {

std::optional<std::string> header_of(const bus::envelope_ptr& env, std::string_view name) {
  auto v = env->headers.find(name);
  return v ? std::optional<std::string>(std::string(*v)) : std::nullopt;
}

struct counting_handler {
  std::shared_ptr<int> calls = std::make_shared<int>(0);
  void handle(const order_placed&, bus::handler_context&) { ++*calls; }
};

} // namespace

TEST_CASE_METHOD(caf_fixture, "a sent message is handled once and settled") {
  std::vector<order_placed> seen;
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(2).handle<order_placed>([&](const order_placed& m) { seen.push_back(m); });
  });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 10}));
  sched.run();
  CHECK(seen == std::vector<order_placed>{{"o-1", 10}});
  auto s = stats(*bus, "billing");
  CHECK(s.received == 1);
  CHECK(s.handled == 1);
  CHECK(s.in_flight == 0);
  CHECK(transport->depth("billing") == 0);
  CHECK(transport->unacked("billing") == 0);
}

TEST_CASE_METHOD(caf_fixture, "a published event reaches every endpoint that handles its type") {
  int billed = 0, shipped = 0;
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.handle<order_placed>([&](const order_placed&) { ++billed; });
  });
  b.endpoint("shipping", [&](bus::endpoint_builder& e) {
    e.handle<order_placed>([&](const order_placed&) { ++shipped; });
  });
  b.endpoint("invoicing", [&](bus::endpoint_builder& e) {
    e.handle<invoice_requested>([&](const invoice_requested&) {});
  });
  auto bus = start(b);
  for (int i = 0; i < 3; ++i)
    REQUIRE(bus->publish(order_placed{"o-" + std::to_string(i), 1}));
  sched.run();
  CHECK(billed == 3);
  CHECK(shipped == 3);
  CHECK(stats(*bus, "invoicing").received == 0);
}

TEST_CASE_METHOD(caf_fixture, "a handler can be an object with a handle member, or a shared one") {
  counting_handler by_value, shared;
  auto shared_ptr = std::make_shared<counting_handler>(shared);
  auto b = builder();
  b.endpoint("a", [&](bus::endpoint_builder& e) { e.handle<order_placed>(by_value); });
  b.endpoint("b", [&](bus::endpoint_builder& e) { e.handle<order_placed>(shared_ptr); });
  auto bus = start(b);
  REQUIRE(bus->publish(order_placed{"o-1", 1}));
  sched.run();
  CHECK(*by_value.calls == 1);
  CHECK(*shared.calls == 1);
}

TEST_CASE_METHOD(caf_fixture, "what a handler sends is released only when it succeeds") {
  std::vector<std::string> invoices;
  auto b = builder();
  b.endpoint("billing", [](bus::endpoint_builder& e) {
    e.handle<order_placed>([](const order_placed& m, bus::handler_context& ctx) {
      REQUIRE(ctx.send("invoicing", invoice_requested{m.order_id, {"line"}}));
      if (m.amount < 0)
        throw std::invalid_argument("negative amount");
    });
  });
  b.endpoint("invoicing", [&](bus::endpoint_builder& e) {
    e.handle<invoice_requested>([&](const invoice_requested& m, bus::handler_context& ctx) {
      invoices.push_back(m.order_id);
      CHECK(ctx.message().source_address == "billing");
    });
  });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"good", 5}));
  REQUIRE(bus->send("billing", order_placed{"bad", -5}));
  sched.run();
  CHECK(invoices == std::vector<std::string>{"good"});
  CHECK(stats(*bus, "billing").handled == 1);
  CHECK(stats(*bus, "billing").dead_lettered == 1);
}

TEST_CASE_METHOD(caf_fixture, "messages sent by a handler carry the conversation's correlation id") {
  std::string correlation;
  auto b = builder();
  b.endpoint("billing", [](bus::endpoint_builder& e) {
    e.handle<order_placed>([](const order_placed& m, bus::handler_context& ctx) {
      REQUIRE(ctx.publish(invoice_requested{m.order_id, {}}));
    });
  });
  b.endpoint("invoicing", [&](bus::endpoint_builder& e) {
    e.handle<invoice_requested>([&](const invoice_requested&, bus::handler_context& ctx) {
      correlation = ctx.message().correlation_id;
    });
  });
  auto bus = start(b);
  bus::send_options opts;
  opts.correlation_id = "conversation-7";
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}, opts));
  sched.run();
  CHECK(correlation == "conversation-7");
}

TEST_CASE_METHOD(caf_fixture, "a failing handler's message lands on the error queue with fault headers") {
  auto b = builder();
  b.endpoint("billing", [](bus::endpoint_builder& e) {
    e.handle<order_placed>([](const order_placed&) -> void { throw std::out_of_range("no such customer"); });
  });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  sched.run();
  auto errors = transport->browse("billing_error");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0]->message_type == "order_placed");
  CHECK(header_of(errors[0], h::fault_exception_type) == "std::out_of_range");
  CHECK(header_of(errors[0], h::fault_message) == "no such customer");
  CHECK(header_of(errors[0], h::fault_endpoint) == "billing");
  CHECK(header_of(errors[0], h::fault_original_address) == "billing");
  CHECK(header_of(errors[0], h::fault_host).has_value());
  CHECK(*errors[0]->body.get<order_placed>() == order_placed{"o-1", 1});
  CHECK(log_count("[bus.move_to_error] [error] moving message " + errors[0]->message_id) == 1);
  auto s = stats(*bus, "billing");
  CHECK(s.dead_lettered == 1);
  CHECK(s.failed_attempts == 1);
  CHECK(transport->unacked("billing") == 0);
}

TEST_CASE_METHOD(caf_fixture, "an exception not derived from std::exception is caught like any other") {
  auto b = builder();
  b.endpoint("billing", [](bus::endpoint_builder& e) {
    e.handle<order_placed>([](const order_placed&) -> void { throw 42; });
  });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  sched.run();
  auto errors = transport->browse("billing_error");
  REQUIRE(errors.size() == 1);
  CHECK(header_of(errors[0], h::fault_exception_type) == "int");
}

TEST_CASE_METHOD(caf_fixture, "a message no handler accepts goes to the skipped queue, saying why") {
  std::vector<bus::bus_event> events;
  auto b = builder();
  b.observe([&](const bus::bus_event& e) {
    if (e.kind == bus::event_kind::skipped)
      events.push_back(e);
  });
  b.endpoint("billing", [](bus::endpoint_builder& e) {
    e.handle<order_placed>([](const order_placed&) {});
  });
  auto bus = start(b);
  REQUIRE(bus->send("billing", invoice_requested{"o-1", {}}));
  sched.run();
  auto skipped = transport->browse("billing_skipped");
  REQUIRE(skipped.size() == 1);
  CHECK_THAT(*header_of(skipped[0], h::skipped_reason), Catch::Contains("no handler for 'invoice_requested'"));
  CHECK(stats(*bus, "billing").skipped == 1);
  REQUIRE(events.size() == 1); // the event says why too
  CHECK(events[0].detail == std::string(*header_of(skipped[0], h::skipped_reason)));
}

TEST_CASE_METHOD(caf_fixture, "skipped messages can be discarded instead of kept") {
  auto b = builder();
  b.endpoint("billing", [](bus::endpoint_builder& e) {
    e.discard_skipped().handle<order_placed>([](const order_placed&) {});
  });
  auto bus = start(b);
  REQUIRE(bus->send("billing", invoice_requested{"o-1", {}}));
  sched.run();
  CHECK(transport->depth("billing_skipped") == 0);
  CHECK(stats(*bus, "billing").skipped == 1);
  CHECK(log_count("[bus.skipped] [info] discarding message") == 1);
}

TEST_CASE_METHOD(caf_fixture, "a body that cannot be decoded goes straight to the error queue") {
  int calls = 0;
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.handle<order_placed>([&](const order_placed&) { ++calls; });
  });
  auto bus = start(b);
  bus::envelope broken;
  broken.message_id = "broken-1";
  broken.message_type = "order_placed";
  broken.body = bus::message_body::text(R"({"order_id": 17})");
  REQUIRE(transport->send("billing", broken));
  sched.run();
  CHECK(calls == 0);
  auto errors = transport->browse("billing_error");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0]->message_id == "broken-1");
  CHECK(header_of(errors[0], h::fault_exception_type) == "bus::message_deserialization_error");
  CHECK_THAT(*header_of(errors[0], h::fault_message), Catch::Contains("order_placed"));
}

TEST_CASE_METHOD(caf_fixture, "an endpoint can be added and removed while the bus runs") {
  int billed = 0;
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.handle<order_placed>([&](const order_placed&) { ++billed; });
  });
  auto bus = start(b);
  int audited = 0;
  bus::endpoint_builder audit("audit");
  audit.handle<order_placed>([&](const order_placed&) { ++audited; });
  REQUIRE(bus->add_endpoint(std::move(audit)));
  sched.run();
  REQUIRE(bus->publish(order_placed{"o-1", 1}));
  sched.run();
  CHECK(billed == 1);
  CHECK(audited == 1);

  REQUIRE(bus->remove_endpoint("audit"));
  sched.run();
  REQUIRE(bus->publish(order_placed{"o-2", 1}));
  sched.run();
  CHECK(billed == 2);
  CHECK(audited == 1);
  CHECK(transport->depth("audit") == 1); // kept for when it comes back
  CHECK_FALSE(bus->remove_endpoint("nowhere"));
}

// -- handlers served by the user's own actors ---------------------------------

TEST_CASE_METHOD(caf_fixture, "an actor can serve a message type, replying to succeed") {
  auto seen = std::make_shared<std::vector<std::string>>();
  auto billing = sys.spawn([seen](caf::event_based_actor*) -> caf::behavior {
    return {[seen](bus::handle_atom, const order_placed& m) { seen->push_back(m.order_id); }};
  });
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.handle_with_actor<order_placed>(billing, std::chrono::seconds(5));
  });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  sched.run();
  CHECK(*seen == std::vector<std::string>{"o-1"});
  CHECK(stats(*bus, "billing").handled == 1);
  caf::anon_send_exit(billing, caf::exit_reason::user_shutdown);
}

TEST_CASE_METHOD(caf_fixture, "an actor's reply of any type counts as success") {
  auto billing = sys.spawn([](caf::event_based_actor*) -> caf::behavior {
    return {[](bus::handle_atom, const order_placed& m) { return m.order_id + " billed"; }};
  });
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.handle_with_actor<order_placed>(billing, std::chrono::seconds(5));
  });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  sched.run();
  CHECK(stats(*bus, "billing").handled == 1);
  caf::anon_send_exit(billing, caf::exit_reason::user_shutdown);
}

TEST_CASE_METHOD(caf_fixture, "an actor's error reply is a failed attempt") {
  auto billing = sys.spawn([](caf::event_based_actor*) -> caf::behavior {
    return {[](bus::handle_atom, const order_placed&) -> caf::result<void> {
      return caf::make_error(caf::sec::runtime_error, "card declined");
    }};
  });
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.handle_with_actor<order_placed>(billing, std::chrono::seconds(5));
  });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  sched.run();
  auto errors = transport->browse("billing_error");
  REQUIRE(errors.size() == 1);
  CHECK(header_of(errors[0], h::fault_exception_type) == "bus::handler_actor_error");
  CHECK_THAT(*header_of(errors[0], h::fault_message), Catch::Contains("card declined"));
  caf::anon_send_exit(billing, caf::exit_reason::user_shutdown);
}

TEST_CASE_METHOD(caf_fixture, "an actor that does not answer in time fails the attempt at the timeout") {
  // Keeps every request unanswered.
  auto promises = std::make_shared<std::vector<caf::response_promise>>();
  auto billing = sys.spawn([promises](caf::event_based_actor* self) -> caf::behavior {
    return {[=](bus::handle_atom, const order_placed&) -> caf::result<void> {
      promises->push_back(self->make_response_promise());
      return caf::delegated<void>{};
    }};
  });
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.handle_with_actor<order_placed>(billing, std::chrono::seconds(5));
  });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  sched.run();
  CHECK(promises->size() == 1);
  CHECK(stats(*bus, "billing").in_flight == 1);
  sched.advance_time(std::chrono::milliseconds(4999));
  sched.run();
  CHECK(stats(*bus, "billing").in_flight == 1);
  sched.advance_time(std::chrono::milliseconds(1));
  sched.run();
  CHECK(stats(*bus, "billing").dead_lettered == 1);
  CHECK(stats(*bus, "billing").in_flight == 0);
  caf::anon_send_exit(billing, caf::exit_reason::user_shutdown);
}

TEST_CASE_METHOD(caf_fixture, "a consumer that dies mid-message is replaced and the message is not lost") {
  // The first request kills the consumer that sent it; later ones succeed.
  auto handled = std::make_shared<int>(0);
  auto billing = sys.spawn([handled](caf::event_based_actor* self) -> caf::behavior {
    auto first = std::make_shared<bool>(true);
    return {[=](bus::handle_atom, const order_placed&) {
      if (*first) {
        *first = false;
        self->send_exit(caf::actor_cast<caf::actor>(self->current_sender()), caf::exit_reason::kill);
        return;
      }
      ++*handled;
    }};
  });
  auto b = builder();
  b.add_resilience([](bus::policy_builder& p) {
    p.on_any().retry(1, std::chrono::milliseconds(10)).jitter(false);
  });
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.slots(1).handle_with_actor<order_placed>(billing, std::chrono::seconds(5));
  });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  sched.run();
  sched.advance_time(std::chrono::milliseconds(10));
  sched.run();
  CHECK(*handled == 1);
  auto s = stats(*bus, "billing");
  // The death is a failed attempt; the new consumer retries it.
  CHECK(s.received == 1);
  CHECK(s.requeued == 0);
  CHECK(s.failed_attempts == 1);
  CHECK(s.immediate_retries == 1);
  CHECK(s.handled == 1);
  CHECK(s.in_flight == 0);
  CHECK(log_count("a new consumer takes it over") == 1);
  caf::anon_send_exit(billing, caf::exit_reason::user_shutdown);
}

TEST_CASE_METHOD(caf_fixture,
                 "a message that kills every consumer ends on the error queue after its retries") {
  auto requests = std::make_shared<int>(0);
  auto killer = sys.spawn([requests](caf::event_based_actor* self) -> caf::behavior {
    return {[=](bus::handle_atom, const order_placed&) {
      ++*requests;
      self->send_exit(caf::actor_cast<caf::actor>(self->current_sender()), caf::exit_reason::kill);
    }};
  });
  std::vector<bus::bus_event> events;
  auto b = builder();
  b.observe([&](const bus::bus_event& e) { events.push_back(e); })
    .add_resilience([](bus::policy_builder& p) {
      p.on_any().retry(2, std::chrono::milliseconds(10)).jitter(false).then_dead_letter();
    })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.slots(2).handle_with_actor<order_placed>(killer, std::chrono::seconds(5));
    });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  // Bounded, so that a regression that loops fails instead of hanging.
  for (int step = 0; step < 10; ++step) {
    sched.run(10000);
    if (sched.has_pending_timeout())
      sched.trigger_timeout();
  }
  CHECK(*requests == 3); // the first attempt and two retries, each fatal
  auto s = stats(*bus, "billing");
  CHECK(s.received == 1);
  CHECK(s.failed_attempts == 3);
  CHECK(s.immediate_retries == 2);
  CHECK(s.dead_lettered == 1);
  CHECK(s.requeued == 0);
  CHECK(s.in_flight == 0);
  auto parked = transport->browse("billing_error");
  REQUIRE(parked.size() == 1);
  CHECK(parked[0]->headers.find(bus::header::fault_exception_type) == "bus::consumer_died");
  std::vector<int> failed_attempts;
  for (const auto& e : events)
    if (e.kind == bus::event_kind::failed) {
      CHECK(e.exception_type == "bus::consumer_died");
      failed_attempts.push_back(e.attempt);
    }
  CHECK(failed_attempts == std::vector<int>{1, 2, 3});
  caf::anon_send_exit(killer, caf::exit_reason::user_shutdown);
}

TEST_CASE_METHOD(caf_fixture,
                 "redelivery_scheduled is raised when the scheduler accepts the copy, not later") {
  std::vector<bus::bus_event> events;
  auto b = builder();
  b.observe([&](const bus::bus_event& e) { events.push_back(e); })
    .add_resilience([](bus::policy_builder& p) {
      p.on_any().redeliver({std::chrono::milliseconds(1)}).jitter(false);
    })
    .endpoint("billing", [](bus::endpoint_builder& e) {
      e.slots(1).handle<order_placed>([](const order_placed&) { throw std::runtime_error("down"); });
    });
  auto bus = start(b);
  REQUIRE(bus->send("billing", order_placed{"o-1", 1}));
  // Step until the scheduler holds the copy: its answer to the consumer is
  // still in a mailbox, and the copy could come back before it is read.
  while (stats(*bus, "billing").pending_redelivery == 0 && sched.try_run_once()) {
  }
  REQUIRE(stats(*bus, "billing").pending_redelivery == 1);
  auto scheduled = std::count_if(events.begin(), events.end(), [](const bus::bus_event& e) {
    return e.kind == bus::event_kind::redelivery_scheduled;
  });
  CHECK(scheduled == 1);
  CHECK(events.back().kind == bus::event_kind::redelivery_scheduled);
  CHECK(events.back().delay == std::chrono::milliseconds(1));
  CHECK(events.back().delivery_count == 0); // of the delivery that failed
  CHECK(events.back().detail == "redelivery 1");
}

TEST_CASE_METHOD(caf_fixture,
                 "redeliveries due at once go back in turns, not in one that holds a thread") {
  constexpr int messages = 1000;
  int handled = 0;
  auto b = builder();
  b.add_resilience([](bus::policy_builder& p) {
     p.on_any().redeliver({std::chrono::minutes(1)}).jitter(false);
   })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.slots(8).handle<order_placed>([&](const order_placed&, bus::handler_context& ctx) {
        if (ctx.delivery_count() == 0)
          throw std::runtime_error("down");
        ++handled;
      });
    });
  auto bus = start(b);
  for (int i = 0; i < messages; ++i)
    REQUIRE(bus->send("billing", order_placed{"o-" + std::to_string(i), double(i)}));
  sched.run();
  REQUIRE(stats(*bus, "billing").pending_redelivery == messages);
  // All come due together. One message at a time, until the scheduler's
  // first turn has sent some back.
  sched.advance_time(std::chrono::minutes(1));
  while (stats(*bus, "billing").pending_redelivery == messages && sched.try_run_once()) {
  }
  auto after_first_turn = stats(*bus, "billing").pending_redelivery;
  CHECK(after_first_turn > 0);
  CHECK(after_first_turn < messages);
  sched.run();
  CHECK(stats(*bus, "billing").pending_redelivery == 0);
  CHECK(handled == messages);
}

TEST_CASE_METHOD(caf_fixture,
                 "a message that carries a held-back mark from elsewhere runs its handler") {
  int handled = 0;
  auto b = builder();
  b.endpoint("billing", [&](bus::endpoint_builder& e) {
    e.handle<order_placed>([&](const order_placed&) { ++handled; });
  });
  auto bus = start(b);
  for (const auto* mark : {"1", "shipping"}) { // the old mark, another endpoint's
    bus::send_options foreign;
    foreign.headers.set(h::fault_pending, mark);
    foreign.headers.set(h::fault_exception_type, "std::runtime_error");
    foreign.headers.set(h::failed_attempts, "-5");
    REQUIRE(bus->send("billing", order_placed{"o-1", 1}, foreign));
  }
  sched.run();
  CHECK(handled == 2);
  CHECK(transport->depth("billing_error") == 0);
  CHECK(log_count("bus-failed-attempts") == 2); // the bad count is named in the log
}
