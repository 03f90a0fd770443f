// What a user of the bus reaches for after the first message (issue 16),
// on the in-memory transport and virtual time: message ids from every
// send, a handler's sends with options, request/response, scheduled sends,
// routing by type, and the harness's time since its start.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "bus/header_names.hpp"
#include "bus/testing/harness.hpp"
#include "support/refusing_transport.hpp"
#include "support/sample_messages.hpp"

using namespace std::chrono_literals;
using bus::event_kind;
using bus::test::invoice_requested;
using bus::test::order_placed;

namespace {

// Every message of `queue` the harness's transport holds.
std::vector<bus::envelope_ptr> held(bus::testing::harness& h, const std::string& queue) {
  return h.queue(queue);
}

// The handled events of `endpoint`, in order.
std::vector<bus::testing::recorded_event> handled_by(const bus::testing::harness& h,
                                                     const std::string& endpoint) {
  std::vector<bus::testing::recorded_event> out;
  for (const auto& e : h.events_of(event_kind::handled))
    if (e.endpoint == endpoint)
      out.push_back(e);
  return out;
}

bus::send_options with_message_id(std::string id) {
  bus::send_options o;
  o.message_id = std::move(id);
  return o;
}

bus::send_options with_response_address(std::string address) {
  bus::send_options o;
  o.response_address = std::move(address);
  return o;
}

} // namespace

// -- 1. message ids -------------------------------------------------------------------

TEST_CASE("send and publish return the id of the message they sent") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed").message<invoice_requested>("invoice_requested");
  auto& bus = h.start(b);
  REQUIRE(h.transport().declare_queue("audit"));
  REQUIRE(h.transport().subscribe("audit", "invoice_requested"));

  auto sent = bus.send("audit", order_placed{"o-1", 1});
  REQUIRE(sent);
  auto chosen = bus.send("audit", order_placed{"o-2", 2}, with_message_id("my-key-2"));
  REQUIRE(chosen);
  auto published = bus.publish(invoice_requested{"o-3", {}});
  REQUIRE(published);

  auto q = held(h, "audit");
  REQUIRE(q.size() == 3);
  CHECK(q[0]->message_id == *sent);
  CHECK(*chosen == "my-key-2");
  CHECK(q[1]->message_id == "my-key-2");
  CHECK(q[2]->message_id == *published);
  CHECK(*sent != *published);
}

TEST_CASE("code that keeps a send's result as result<void> still sees success and failure") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed");
  auto& bus = h.start(b);
  REQUIRE(h.transport().declare_queue("audit"));
  bus::result<void> ok = bus.send("audit", order_placed{"o-1", 1});
  CHECK(ok);
  ok = bus.send("nowhere", order_placed{"o-2", 2});
  REQUIRE_FALSE(ok);
  CHECK(ok.error().code == bus::errc::unknown_queue);
}

TEST_CASE("an async send's completion carries the id of the message it sent") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed").message<invoice_requested>("invoice_requested");
  auto& bus = h.start(b);
  REQUIRE(h.transport().declare_queue("audit"));
  REQUIRE(h.transport().subscribe("audit", "invoice_requested"));

  std::optional<bus::result<std::string>> sent, chosen, published;
  bus.send_async("audit", order_placed{"o-1", 1},
                 [&](bus::result<std::string> r) { sent.emplace(std::move(r)); });
  bus.send_async(
      "audit", order_placed{"o-2", 2},
      [&](bus::result<std::string> r) { chosen.emplace(std::move(r)); }, with_message_id("key-2"));
  bus.publish_async(invoice_requested{"o-3", {}},
                    [&](bus::result<std::string> r) { published.emplace(std::move(r)); });
  h.run();

  REQUIRE(sent);
  REQUIRE(*sent);
  REQUIRE(chosen);
  REQUIRE(*chosen);
  REQUIRE(published);
  REQUIRE(*published);
  auto q = held(h, "audit");
  REQUIRE(q.size() == 3);
  CHECK(q[0]->message_id == **sent);
  CHECK(**chosen == "key-2");
  CHECK(q[1]->message_id == "key-2");
  CHECK(q[2]->message_id == **published);

  // A refused send completes with the error, and no id.
  std::optional<bus::result<std::string>> refused;
  bus.send_async("nowhere", order_placed{"o-4", 4},
                 [&](bus::result<std::string> r) { refused.emplace(std::move(r)); });
  REQUIRE(refused);
  REQUIRE_FALSE(*refused);
  CHECK(refused->error().code == bus::errc::unknown_queue);
}

// -- 2. a handler's sends take the facade's options -----------------------------------

TEST_CASE("a handler's send, publish and reply take the facade's options and return their ids") {
  bus::testing::harness h;
  auto b = h.builder();
  std::vector<std::string> ids;
  b.message<order_placed>("order_placed")
      .message<invoice_requested>("invoice_requested")
      .endpoint("billing", [&](bus::endpoint_builder& e) {
        e.handle<order_placed>([&](const order_placed& m, bus::handler_context& ctx) {
          bus::send_options o;
          o.correlation_id = "conversation-9";
          o.response_address = "answers";
          o.fault_address = "faults";
          o.message_id = "idem-" + m.order_id;
          o.headers.set("x-tenant", "acme");
          ids.push_back(ctx.send("audit", invoice_requested{m.order_id, {}}, o).value());
          ids.push_back(ctx.send("audit", invoice_requested{m.order_id, {"plain"}}).value());
          ids.push_back(ctx.publish(invoice_requested{m.order_id, {"published"}}).value());
          ids.push_back(
              ctx.reply(invoice_requested{m.order_id, {"reply"}}, with_message_id("reply-1"))
                  .value());
        });
      });
  auto& bus = h.start(b);
  REQUIRE(h.transport().declare_queue("audit"));
  REQUIRE(h.transport().declare_queue("answers"));
  REQUIRE(h.transport().subscribe("audit", "invoice_requested"));
  auto sent = bus.send("billing", order_placed{"o-1", 5}, with_response_address("answers"));
  REQUIRE(sent);
  h.run();

  REQUIRE(ids.size() == 4);
  auto audit = held(h, "audit");
  REQUIRE(audit.size() == 3);
  const auto& with_options = *audit[0];
  CHECK(with_options.message_id == "idem-o-1");
  CHECK(ids[0] == "idem-o-1");
  CHECK(with_options.correlation_id == "conversation-9");
  CHECK(with_options.response_address == "answers");
  CHECK(with_options.fault_address == "faults");
  CHECK(with_options.headers.find("x-tenant") == std::optional<std::string_view>("acme"));
  CHECK(with_options.source_address == "billing");
  // Without options, the correlation id is carried over: the handled
  // message had none, so its own id starts the conversation.
  CHECK(audit[1]->message_id == ids[1]);
  CHECK(audit[1]->correlation_id == *sent);
  CHECK(audit[2]->message_id == ids[2]);
  auto answers = held(h, "answers");
  REQUIRE(answers.size() == 1);
  CHECK(answers[0]->message_id == "reply-1");
  CHECK(answers[0]->correlation_id == *sent);
}

// -- 3. request/response --------------------------------------------------------------

namespace {

// "pricing" answers an order with its invoice, fails an order without an
// id, and answers an order of amount 99 only after 10 s.
bus::message_bus& start_pricing(bus::testing::harness& h) {
  auto b = h.builder();
  b.name("shop")
      .message<order_placed>("order_placed")
      .message<invoice_requested>("invoice_requested")
      .endpoint("pricing", [](bus::endpoint_builder& e) {
        e.handle<order_placed>([](const order_placed& m, bus::handler_context& ctx) {
          if (m.order_id.empty())
            throw std::invalid_argument("an order needs an id");
          invoice_requested answer{m.order_id, {"line for " + std::to_string(m.amount)}};
          if (m.amount == 99)
            (void)ctx.defer(10s, ctx.message().response_address, answer);
          else
            (void)ctx.reply(answer);
        });
      });
  return h.start(b);
}

template <class T> struct captured {
  std::optional<bus::result<T>> value;
  std::function<void(bus::result<T>)> sink() {
    return [this](bus::result<T> r) { value.emplace(std::move(r)); };
  }
};

} // namespace

TEST_CASE("a request gets the reply its handler sent with ctx.reply") {
  bus::testing::harness h;
  auto& bus = start_pricing(h);
  captured<invoice_requested> got;
  bus.request_async<invoice_requested>("pricing", order_placed{"o-7", 3}, 5s, got.sink());
  h.run();
  REQUIRE(got.value);
  REQUIRE(*got.value);
  CHECK((*got.value)->order_id == "o-7");
  CHECK((*got.value)->lines == std::vector<std::string>{"line for 3.000000"});
  // The reply came over the bus's own reply queue, and left nothing there.
  CHECK_THAT(bus.reply_queue(), Catch::StartsWith("shop_replies"));
  CHECK(h.queue(bus.reply_queue()).empty());
}

TEST_CASE("a request whose handler fails for good gets its fault as an error, not a timeout") {
  bus::testing::harness h;
  auto& bus = start_pricing(h);
  captured<invoice_requested> got;
  bus.request_async<invoice_requested>("pricing", order_placed{"", 3}, 5s, got.sink());
  h.run();
  REQUIRE(got.value);
  REQUIRE_FALSE(*got.value);
  const auto& err = got.value->error();
  CHECK(err.code == bus::errc::request_failed);
  CHECK_THAT(err.message, Catch::Contains("pricing") && Catch::Contains("an order needs an id")
                              && Catch::Contains("std::invalid_argument"));
  CHECK(h.elapsed() == 0s);
}

TEST_CASE("a request with no reply in time times out, and the late reply is logged and dropped") {
  bus::testing::harness h;
  auto& bus = start_pricing(h);
  captured<invoice_requested> got;
  bus.request_async<invoice_requested>("pricing", order_placed{"o-late", 99}, 5s, got.sink());
  h.advance(4900ms);
  CHECK_FALSE(got.value);
  h.advance(100ms);
  REQUIRE(got.value);
  REQUIRE_FALSE(*got.value);
  CHECK(got.value->error().code == bus::errc::timeout);
  CHECK_FALSE(h.logged("dropping reply"));

  h.advance(5s); // the reply comes at 10 s
  CHECK(h.logged("[bus.request] [warning] dropping reply"));
  CHECK(h.queue(bus.reply_queue()).empty()); // acknowledged, not left behind
  // A new request after it works as before.
  captured<invoice_requested> next;
  bus.request_async<invoice_requested>("pricing", order_placed{"o-8", 1}, 5s, next.sink());
  h.run();
  REQUIRE(next.value);
  CHECK(*next.value);
}

TEST_CASE("a request whose correlation id another request already waits with is refused, and "
          "never sent") {
  bus::testing::harness h;
  int asked = 0;
  auto b = h.builder();
  b.name("shop")
      .message<order_placed>("order_placed")
      .message<invoice_requested>("invoice_requested")
      .endpoint("pricing", [&asked](bus::endpoint_builder& e) {
        e.handle<order_placed>([&asked](const order_placed& m, bus::handler_context& ctx) {
          ++asked;
          (void)ctx.reply(invoice_requested{m.order_id, {}});
        });
      });
  auto& bus = h.start(b);
  bus::send_options same;
  same.correlation_id = "c-1";
  captured<invoice_requested> first;
  captured<invoice_requested> second;
  bus.request_async<invoice_requested>("pricing", order_placed{"o-1", 1}, 5s, first.sink(), same);
  bus.request_async<invoice_requested>("pricing", order_placed{"o-2", 1}, 5s, second.sink(), same);
  h.run();
  REQUIRE(second.value);
  REQUIRE_FALSE(*second.value);
  CHECK(second.value->error().code == bus::errc::duplicate);
  REQUIRE(first.value);
  REQUIRE(*first.value);
  CHECK((*first.value)->order_id == "o-1");
  CHECK(asked == 1); // the refused request never reached the handler
}

TEST_CASE("the blocking request returns its reply on the test coordinator") {
  bus::testing::harness h;
  auto& bus = start_pricing(h);
  auto reply = bus.request<invoice_requested>("pricing", order_placed{"o-9", 2}, 5s);
  REQUIRE(reply);
  CHECK(reply->order_id == "o-9");
  CHECK(h.elapsed() == 0s);

  // No reply in time: it returns errc::timeout once the virtual timeout passed.
  auto late = bus.request<invoice_requested>("pricing", order_placed{"o-late", 99}, 5s);
  REQUIRE_FALSE(late);
  CHECK(late.error().code == bus::errc::timeout);
  CHECK(h.elapsed() == 5s);
}

TEST_CASE("two buses of the same name on one transport each get their own replies") {
  bus::testing::harness h;
  auto& first = start_pricing(h);
  auto b = h.builder();
  b.name("shop").message<order_placed>("order_placed").message<invoice_requested>(
      "invoice_requested");
  auto built = b.build();
  REQUIRE(built);
  auto& second = **built;
  REQUIRE(second.start());
  CHECK(first.reply_queue() != second.reply_queue());

  captured<invoice_requested> to_first, to_second;
  first.request_async<invoice_requested>("pricing", order_placed{"o-1", 1}, 5s, to_first.sink());
  second.request_async<invoice_requested>("pricing", order_placed{"o-2", 2}, 5s,
                                          to_second.sink());
  h.run();
  REQUIRE(to_first.value);
  REQUIRE(*to_first.value);
  CHECK((*to_first.value)->order_id == "o-1");
  REQUIRE(to_second.value);
  REQUIRE(*to_second.value);
  CHECK((*to_second.value)->order_id == "o-2");
  CHECK_FALSE(h.logged("dropping reply"));
  second.request_stop();
  h.run();
}

TEST_CASE("a reply queue of a fixed name is used when the builder sets one") {
  bus::testing::harness h;
  auto b = h.builder();
  std::string response_address;
  b.message<order_placed>("order_placed")
      .message<invoice_requested>("invoice_requested")
      .reply_queue("shop_replies")
      .endpoint("pricing", [&](bus::endpoint_builder& e) {
        e.handle<order_placed>([&](const order_placed& m, bus::handler_context& ctx) {
          response_address = ctx.message().response_address;
          (void)ctx.reply(invoice_requested{m.order_id, {}});
        });
      });
  auto& bus = h.start(b);
  CHECK(bus.reply_queue() == "shop_replies");
  auto reply = bus.request<invoice_requested>("pricing", order_placed{"o-1", 1}, 5s);
  REQUIRE(reply);
  CHECK(response_address == "shop_replies");
}

TEST_CASE("a request to a queue that does not exist fails at once") {
  bus::testing::harness h;
  auto& bus = start_pricing(h);
  captured<invoice_requested> got;
  bus.request_async<invoice_requested>("nowhere", order_placed{"o-1", 1}, 5s, got.sink());
  h.run();
  REQUIRE(got.value);
  REQUIRE_FALSE(*got.value);
  CHECK(got.value->error().code == bus::errc::unknown_queue);
  CHECK(h.elapsed() == 0s);
}

// -- 4. scheduled sends ---------------------------------------------------------------

TEST_CASE("send_after and send_at deliver a message when it is due, not before") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed").endpoint("billing", [](bus::endpoint_builder& e) {
    e.handle<order_placed>([](const order_placed&) {});
  });
  auto& bus = h.start(b);
  // The bus's clock (wall time moving with virtual time), read off the
  // event of a message handled at once: send_at takes a time by it.
  REQUIRE(bus.send("billing", order_placed{"probe", 0}));
  h.run();
  REQUIRE(handled_by(h, "billing").size() == 1);
  auto bus_now = handled_by(h, "billing")[0].at;

  auto later = bus.send_after(30s, "billing", order_placed{"o-1", 1});
  REQUIRE(later);
  auto at = bus.send_at(bus_now + 2min, "billing", order_placed{"o-2", 2});
  REQUIRE(at);
  h.run();
  CHECK(handled_by(h, "billing").size() == 1);
  h.advance(29s);
  CHECK(handled_by(h, "billing").size() == 1);
  h.advance(1s);
  auto handled = handled_by(h, "billing");
  REQUIRE(handled.size() == 2);
  CHECK(handled[1].message_id == *later);
  CHECK(handled[1].since_start == 30s);
  h.advance(89s);
  CHECK(handled_by(h, "billing").size() == 2);
  h.advance(1s);
  handled = handled_by(h, "billing");
  REQUIRE(handled.size() == 3);
  CHECK(handled[2].message_id == *at);
  CHECK(handled[2].since_start == 2min);
}

TEST_CASE("ctx.defer sends to the handler's own endpoint or to a queue once the delay passed") {
  bus::testing::harness h;
  auto b = h.builder();
  std::vector<std::string> deferred_ids;
  b.message<order_placed>("order_placed")
      .message<invoice_requested>("invoice_requested")
      .endpoint("orders", [&](bus::endpoint_builder& e) {
        e.handle<order_placed>([&](const order_placed& m, bus::handler_context& ctx) {
          if (m.amount > 0) {
            deferred_ids.push_back(ctx.defer(5min, order_placed{m.order_id, -1}).value());
            deferred_ids.push_back(
                ctx.defer(1min, "audit", invoice_requested{m.order_id, {}}).value());
          }
        });
      });
  auto& bus = h.start(b);
  REQUIRE(h.transport().declare_queue("audit"));
  auto sent = bus.send("orders", order_placed{"o-1", 10});
  REQUIRE(sent);
  h.run();
  REQUIRE(deferred_ids.size() == 2);
  CHECK(held(h, "audit").empty());
  h.advance(1min);
  auto audit = held(h, "audit");
  REQUIRE(audit.size() == 1);
  CHECK(audit[0]->message_id == deferred_ids[1]);
  CHECK(audit[0]->correlation_id == *sent); // carried over like any send of a handler
  CHECK(handled_by(h, "orders").size() == 1);
  h.advance(4min);
  auto handled = handled_by(h, "orders");
  REQUIRE(handled.size() == 2);
  CHECK(handled[1].message_id == deferred_ids[0]);
  CHECK(handled[1].since_start == 5min);
}

TEST_CASE("a failed attempt's deferred message is never sent") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed").endpoint("orders", [](bus::endpoint_builder& e) {
    e.handle<order_placed>([](const order_placed& m, bus::handler_context& ctx) {
      (void)ctx.defer(1min, "audit", m);
      throw std::runtime_error("fails after deferring");
    });
  });
  auto& bus = h.start(b);
  REQUIRE(h.transport().declare_queue("audit"));
  REQUIRE(bus.send("orders", order_placed{"o-1", 1}));
  h.advance(10min);
  CHECK(held(h, "audit").empty());
  CHECK(h.error_queue("orders").size() == 1);
}

TEST_CASE("a scheduled send to a queue that does not exist is refused at the call, naming it") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed").endpoint("orders", [](bus::endpoint_builder& e) {
    e.handle<order_placed>([](const order_placed&) {});
  });
  auto& bus = h.start(b);
  auto later = bus.send_after(1min, "nowhere", order_placed{"o-1", 1});
  REQUIRE_FALSE(later);
  CHECK(later.error().code == bus::errc::unknown_queue);
  CHECK_THAT(later.error().message, Catch::Contains("'nowhere'"));
  // Nothing was left to fail later, far from the call.
  h.advance(2min);
  CHECK_FALSE(h.logged("cannot deliver scheduled message"));
}

TEST_CASE("a scheduled message its queue refuses for good when due is kept in the dead-letter "
          "file, not offered again every second") {
  bus::testing::harness h;
  auto dir = (std::filesystem::temp_directory_path() / "bus-test-scheduled-refused").string();
  std::filesystem::remove_all(dir);
  // Sends to billing whose headers are over 0 bytes, so every send, are
  // refused for good (errc::malformed_message), as an oversized one is.
  auto refusing = std::make_shared<bus::test::refusing_transport>(h.transport(), "billing", 0);
  auto b = h.builder();
  b.transport(refusing)
    .dead_letter_directory(dir)
    .message<order_placed>("order_placed")
    .endpoint("billing", [](bus::endpoint_builder& e) {
      e.handle<order_placed>([](const order_placed&) {});
    });
  auto& bus = h.start(b);
  REQUIRE(bus.send_after(1min, "billing", order_placed{"o-1", 1}));
  h.advance(1min);
  CHECK(refusing->refused == 1);
  h.advance(10s);
  CHECK(refusing->refused == 1); // not again: waiting will not change the answer
  std::ifstream in(dir + "/scheduled-sends.dead-letters.jsonl");
  std::string line;
  REQUIRE(std::getline(in, line));
  auto j = nlohmann::json::parse(line);
  CHECK(j["headers"]["bus-message-type"] == "order_placed");
  CHECK_THAT(j["headers"]["bus-fault-reason"].get<std::string>(),
             Catch::Contains("scheduled for 'billing'") && Catch::Contains("refuses this message"));
  CHECK(h.logged("wrote it to the dead-letter file"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a handler's ctx.defer to a queue that does not exist fails its attempt, naming it") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed").endpoint("orders", [](bus::endpoint_builder& e) {
    e.handle<order_placed>([](const order_placed& m, bus::handler_context& ctx) {
      if (!ctx.defer(1min, "nowhere", m)) // buffered: the queue is checked at release
        throw std::logic_error("a defer of a registered message is buffered");
    });
  });
  auto& bus = h.start(b);
  REQUIRE(bus.send("orders", order_placed{"o-1", 1}));
  h.run();
  CHECK(handled_by(h, "orders").empty());
  CHECK(h.error_queue("orders").size() == 1); // no policy: the first failure dead-letters
  CHECK(h.logged("'nowhere'"));
}

// -- 5. routing by type ---------------------------------------------------------------

TEST_CASE("a routed type is sent without a queue name, from the facade and from a handler") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
      .message<invoice_requested>("invoice_requested")
      .route<order_placed>("orders")
      .route<invoice_requested>("invoices")
      .endpoint("orders",
                [](bus::endpoint_builder& e) {
                  e.handle<order_placed>([](const order_placed& m, bus::handler_context& ctx) {
                    REQUIRE(ctx.send(invoice_requested{m.order_id, {}}));
                  });
                })
      .endpoint("invoices", [](bus::endpoint_builder& e) {
        e.handle<invoice_requested>([](const invoice_requested&) {});
      });
  auto& bus = h.start(b);
  auto sent = bus.send(order_placed{"o-1", 1});
  REQUIRE(sent);
  h.run();
  auto orders = handled_by(h, "orders");
  REQUIRE(orders.size() == 1);
  CHECK(orders[0].message_id == *sent);
  CHECK(handled_by(h, "invoices").size() == 1);
}

TEST_CASE("sending a type with no route is an error that names the type") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
      .message<invoice_requested>("invoice_requested")
      .route<order_placed>("orders");
  auto& bus = h.start(b);
  auto sent = bus.send(invoice_requested{"o-1", {}});
  REQUIRE_FALSE(sent);
  CHECK(sent.error().code == bus::errc::invalid_configuration);
  CHECK_THAT(sent.error().message, Catch::Contains("'invoice_requested' has no route"));
  auto later = bus.send_after(1s, invoice_requested{"o-1", {}});
  REQUIRE_FALSE(later);
  CHECK_THAT(later.error().message, Catch::Contains("invoice_requested"));
}

TEST_CASE("a route for a type that is not a registered message is refused at build time") {
  bus::testing::harness h;
  auto b = h.builder();
  b.route<order_placed>("orders");
  auto built = b.build();
  REQUIRE_FALSE(built);
  CHECK_THAT(built.error().message, Catch::Contains("register it as a message first"));
}

// -- 6. the harness's clock -----------------------------------------------------------

TEST_CASE("the harness's events carry the virtual time since the harness started") {
  bus::testing::harness h;
  auto b = h.builder();
  int attempts = 0;
  b.message<order_placed>("order_placed")
      .add_resilience([](bus::policy_builder& p) { p.on_any().redeliver({10s}).jitter(false); })
      .endpoint("billing", [&](bus::endpoint_builder& e) {
        e.handle<order_placed>([&](const order_placed&) {
          if (attempts++ == 0)
            throw std::runtime_error("first attempt fails");
        });
      });
  h.advance(3s); // the harness started before the bus did
  auto& bus = h.start(b);
  REQUIRE(bus.send("billing", order_placed{"o-1", 1}));
  h.advance_until_idle();
  auto failed = h.events_of(event_kind::failed);
  auto handled = h.events_of(event_kind::handled);
  REQUIRE(failed.size() == 1);
  REQUIRE(handled.size() == 1);
  CHECK(failed[0].since_start == 3s);
  CHECK(handled[0].since_start == 13s);
}
