// Request/response and scheduled sends (issue 16) on a real broker: a
// reply over the bus's reply queue, a failure coming back as its fault, a
// timeout; a scheduled send that outlives the bus, actor system and
// connection that sent it, and a handler's ctx.defer held by the broker.
#include <catch2/catch.hpp>

#include <condition_variable>
#include <map>
#include <mutex>

#include <caf/all.hpp>
#include <spdlog/sinks/null_sink.h>

#include "broker.hpp"
#include "bus/bus.hpp"
#include "support/sample_messages.hpp"

using namespace std::chrono_literals;
using bus::test::invoice_requested;
using bus::test::order_placed;
using steady = std::chrono::steady_clock;

namespace {

// When each message was handled, by id, waking the test.
struct handled_log {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::string, steady::time_point> at;

  bus::event_observer observer() {
    return [this](const bus::bus_event& e) {
      if (e.kind != bus::event_kind::handled)
        return;
      std::lock_guard<std::mutex> guard(mutex);
      at.emplace(e.message_id, steady::now());
      changed.notify_all();
    };
  }

  std::optional<steady::time_point> wait_for(const std::string& id, std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mutex);
    if (!changed.wait_for(lock, limit, [&] { return at.count(id) != 0; }))
      return std::nullopt;
    return at[id];
  }

  std::size_t size() {
    std::lock_guard<std::mutex> guard(mutex);
    return at.size();
  }
};

struct names {
  std::string order = bus::test::unique_name("order_placed");
  std::string invoice = bus::test::unique_name("invoice_requested");
};

caf::actor_system_config& two_threads(caf::actor_system_config& cfg) {
  cfg.set("scheduler.max-threads", 2);
  return cfg;
}

bus::bus_builder builder_on_broker(caf::actor_system& sys, const names& n) {
  bus::bus_builder b{sys};
  b.transport(bus::test::connect_transport())
      .log_sinks({std::make_shared<spdlog::sinks::null_sink_mt>()})
      .message<order_placed>(n.order)
      .message<invoice_requested>(n.invoice);
  return b;
}

} // namespace

TEST_CASE(
    "on RabbitMQ a request gets its reply, a failed request its fault, a silent one a timeout",
    "[rabbitmq][request]") {
  names n;
  auto pricing = bus::test::unique_name("pricing");
  auto silent = bus::test::unique_name("silent");
  caf::actor_system_config cfg;
  caf::actor_system sys{two_threads(cfg)};
  auto b = builder_on_broker(sys, n);
  b.name(bus::test::unique_name("shop")).endpoint(pricing, [](bus::endpoint_builder& e) {
    e.slots(2).handle<order_placed>([](const order_placed& m, bus::handler_context& ctx) {
      if (m.order_id.empty())
        throw std::invalid_argument("an order needs an id");
      (void)ctx.reply(invoice_requested{m.order_id, {"priced"}}); // no Catch2 on a handler's thread
    });
  });
  auto built = b.build();
  REQUIRE(built);
  auto& bus = **built;
  REQUIRE(bus.start());
  REQUIRE(bus.transport().declare_queue(silent));

  auto reply = bus.request<invoice_requested>(pricing, order_placed{"o-1", 1}, 10s);
  REQUIRE(reply);
  CHECK(reply->order_id == "o-1");
  CHECK(reply->lines == std::vector<std::string>{"priced"});

  auto failed = bus.request<invoice_requested>(pricing, order_placed{"", 1}, 10s);
  REQUIRE_FALSE(failed);
  CHECK(failed.error().code == bus::errc::request_failed);
  CHECK_THAT(failed.error().message,
             Catch::Contains("an order needs an id") && Catch::Contains(pricing));

  auto started = steady::now();
  auto unanswered = bus.request<invoice_requested>(silent, order_placed{"o-2", 1}, 300ms);
  REQUIRE_FALSE(unanswered);
  CHECK(unanswered.error().code == bus::errc::timeout);
  CHECK(steady::now() - started >= 300ms);
  bus.stop();
}

TEST_CASE("on RabbitMQ a scheduled send survives the bus, actor system and connection that sent it",
          "[rabbitmq][scheduled]") {
  names n;
  auto billing = bus::test::unique_name("billing");
  std::string id;
  steady::time_point sent_at;
  {
    caf::actor_system_config cfg;
    caf::actor_system sys{two_threads(cfg)};
    auto b = builder_on_broker(sys, n);
    auto built = b.build();
    REQUIRE(built);
    auto& sender = **built;
    REQUIRE(sender.start());
    REQUIRE(sender.transport().declare_queue(billing));
    sent_at = steady::now();
    auto sent = sender.send_after(1500ms, billing, order_placed{"o-1", 1});
    REQUIRE(sent);
    id = *sent;
    sender.stop();
  } // the sending side is gone: bus, actor system, connection

  handled_log handled;
  caf::actor_system_config cfg;
  caf::actor_system sys{two_threads(cfg)};
  auto b = builder_on_broker(sys, n);
  b.observe(handled.observer()).endpoint(billing, [](bus::endpoint_builder& e) {
    e.handle<order_placed>([](const order_placed&) {});
  });
  auto built = b.build();
  REQUIRE(built);
  REQUIRE((*built)->start());
  auto at = handled.wait_for(id, 20s);
  REQUIRE(at);
  CHECK(*at - sent_at >= 1500ms);
  (*built)->stop();
  CHECK(handled.size() == 1);
}

TEST_CASE("on RabbitMQ a handler's ctx.defer comes back to its endpoint after the delay",
          "[rabbitmq][scheduled]") {
  names n;
  auto orders = bus::test::unique_name("orders");
  handled_log handled;
  std::mutex mutex;
  std::string deferred_id;
  steady::time_point deferred_at;
  caf::actor_system_config cfg;
  caf::actor_system sys{two_threads(cfg)};
  auto b = builder_on_broker(sys, n);
  b.observe(handled.observer()).endpoint(orders, [&](bus::endpoint_builder& e) {
    e.handle<order_placed>([&](const order_placed& m, bus::handler_context& ctx) {
      if (m.amount > 0) {
        auto id = ctx.defer(800ms, order_placed{m.order_id, -1});
        std::lock_guard<std::mutex> guard(mutex);
        deferred_id = id ? *id : std::string("<refused>");
        // The deferred message leaves once the handler has returned: its
        // delay starts after this.
        deferred_at = steady::now();
      }
    });
  });
  auto built = b.build();
  REQUIRE(built);
  auto& bus = **built;
  REQUIRE(bus.start());
  auto sent = bus.send(orders, order_placed{"o-1", 5});
  REQUIRE(sent);
  auto first = handled.wait_for(*sent, 20s);
  REQUIRE(first);
  std::string id;
  {
    std::lock_guard<std::mutex> guard(mutex);
    id = deferred_id;
  }
  REQUIRE(id != "<refused>");
  auto second = handled.wait_for(id, 20s);
  REQUIRE(second);
  // Counted from the handler's call, not from the first message's handled
  // event: the deferred message is queued before that event (it failed at
  // 799.6 ms so). The broker counts a TTL from its enqueue time in whole
  // milliseconds, so it may expire up to 1 ms before the exact delay.
  {
    std::lock_guard<std::mutex> guard(mutex);
    CHECK(*second - deferred_at >= 799ms);
  }
  bus.stop();
}

TEST_CASE("on RabbitMQ two processes' buses of the same name never take each other's replies",
          "[rabbitmq][request]") {
  names n;
  auto pricing = bus::test::unique_name("pricing");
  auto shared_name = bus::test::unique_name("shop");
  caf::actor_system_config cfg;
  caf::actor_system sys{two_threads(cfg)};
  // Two buses, each on a connection of its own as two processes would be,
  // with one name; the first serves pricing.
  auto b1 = builder_on_broker(sys, n);
  b1.name(shared_name).endpoint(pricing, [](bus::endpoint_builder& e) {
    e.slots(4).handle<order_placed>([](const order_placed& m, bus::handler_context& ctx) {
      (void)ctx.reply(invoice_requested{m.order_id, {"priced"}});
    });
  });
  auto b2 = builder_on_broker(sys, n);
  b2.name(shared_name);
  auto first = b1.build();
  auto second = b2.build();
  REQUIRE(first);
  REQUIRE(second);
  REQUIRE((*first)->start());
  REQUIRE((*second)->start());
  CHECK((*first)->reply_queue() != (*second)->reply_queue());

  // Requests of both, in flight at once: each answer reaches its asker.
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::string, bus::result<invoice_requested>> answers;
  auto ask = [&](bus::message_bus& bus, const std::string& order) {
    bus.request_async<invoice_requested>(
        pricing, order_placed{order, 1}, 10s, [&, order](bus::result<invoice_requested> r) {
          std::lock_guard<std::mutex> guard(mutex);
          answers.emplace(order, std::move(r));
          changed.notify_all();
        });
  };
  for (int i = 0; i < 5; ++i) {
    ask(**first, "first-" + std::to_string(i));
    ask(**second, "second-" + std::to_string(i));
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    REQUIRE(changed.wait_for(lock, 20s, [&] { return answers.size() == 10; }));
  }
  for (const auto& [order, answer] : answers) {
    INFO(order);
    REQUIRE(answer);
    CHECK(answer->order_id == order);
  }
  (*second)->stop();
  (*first)->stop();
}

TEST_CASE("on RabbitMQ a scheduled send to a queue that does not exist is refused at the call, "
          "naming it",
          "[rabbitmq][scheduled]") {
  names n;
  auto missing = bus::test::unique_name("missing");
  caf::actor_system_config cfg;
  caf::actor_system sys{two_threads(cfg)};
  auto b = builder_on_broker(sys, n);
  auto built = b.build();
  REQUIRE(built);
  auto& bus = **built;
  REQUIRE(bus.start());
  auto later = bus.send_after(2s, missing, order_placed{"o-1", 1});
  REQUIRE_FALSE(later);
  CHECK(later.error().code == bus::errc::unknown_queue);
  CHECK_THAT(later.error().message, Catch::Contains("'" + missing + "'"));
  bus.stop();
}
