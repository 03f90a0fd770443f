// Endpoints that read a stream (issue 27), on virtual time and the
// in-memory transport's logs: each reads from its own offset, and a failed
// message is never tried again.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "bus/failed_messages.hpp"
#include "bus/header_names.hpp"
#include "bus/testing/harness.hpp"
#include "support/sample_messages.hpp"

using namespace std::chrono_literals;
using bus::event_kind;
using bus::test::order_placed;

namespace {

// Appends orders o-<from> .. o-<to - 1> to `stream`.
void append(bus::testing::harness& h, const std::string& stream, int from, int to) {
  for (int i = from; i < to; ++i)
    REQUIRE(h.bus().send(stream, order_placed{"o-" + std::to_string(i), 1}));
}

// An order as another process would have appended it: a JSON body.
bus::envelope order_text(const std::string& id) {
  bus::envelope env;
  env.message_id = id;
  env.message_type = "order_placed";
  env.body = bus::message_body::text(R"({"order_id":")" + id + R"(","amount":1})");
  return env;
}

// What the offset file of `reader` in `stream` holds; empty if none.
std::string saved_offset(const bus::testing::harness& h, const std::string& stream,
                         const std::string& reader) {
  std::ifstream in(std::filesystem::path(h.stream_offset_directory())
                   / (stream + "." + reader + ".offset"));
  std::string text;
  std::getline(in, text);
  return text;
}

std::vector<std::string> orders_of(const std::vector<order_placed>& seen) {
  std::vector<std::string> out;
  for (const auto& m : seen)
    out.push_back(m.order_id);
  return out;
}

} // namespace

TEST_CASE("a stream endpoint whose rules retry or redeliver does not build, naming rule and "
          "endpoint") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
      .add_resilience([](bus::policy_builder& p) { p.on_any().retry(3).then_redeliver(); })
      .stream_endpoint(
          "projection", "audit",
          [](bus::endpoint_builder& e) { e.handle<order_placed>([](const order_placed&) {}); })
      // A queue endpoint keeps the bus's rules: only the stream's reader is refused.
      .endpoint("billing", [](bus::endpoint_builder& e) {
        e.handle<order_placed>([](const order_placed&) {});
      });
  auto built = b.build();
  REQUIRE_FALSE(built);
  CHECK(built.error().code == bus::errc::invalid_configuration);
  CHECK_THAT(built.error().message,
             Catch::Contains("endpoint 'projection' reads the stream 'audit', handler of "
                             "'order_placed': bus scope, rule #1 on_any(): retries and "
                             "redelivers, which a message read from a stream may not"));
  CHECK_THAT(built.error().message, !Catch::Contains("'billing'"));
}

TEST_CASE("start_from and retention are for stream endpoints only") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed").endpoint("billing", [](bus::endpoint_builder& e) {
    e.start_from(bus::stream_start::first()).handle<order_placed>([](const order_placed&) {});
  });
  auto built = b.build();
  REQUIRE_FALSE(built);
  CHECK_THAT(built.error().message,
             Catch::Contains("endpoint 'billing': start_from() is for an endpoint that reads a "
                             "stream"));
}

TEST_CASE("two stream endpoints read one stream, each from its own start") {
  bus::testing::harness h;
  REQUIRE(h.transport().declare_stream("audit", {}));
  for (int i = 0; i < 2; ++i)
    REQUIRE(h.transport().send("audit", order_text("early-" + std::to_string(i))));
  std::vector<order_placed> replayed, followed;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
      .stream_endpoint("replay", "audit",
                       [&](bus::endpoint_builder& e) {
                         e.start_from(bus::stream_start::first())
                             .handle<order_placed>(
                                 [&](const order_placed& m) { replayed.push_back(m); });
                       })
      .stream_endpoint("follow", "audit", [&](bus::endpoint_builder& e) {
        e.handle<order_placed>([&](const order_placed& m) { followed.push_back(m); });
      });
  h.start(b);
  append(h, "audit", 0, 2);
  // A publish of a type they handle is appended once, and read by both.
  REQUIRE(h.bus().publish(order_placed{"o-2", 1}));
  h.run();
  CHECK(orders_of(replayed) == std::vector<std::string>{"early-0", "early-1", "o-0", "o-1", "o-2"});
  CHECK(orders_of(followed) == std::vector<std::string>{"o-0", "o-1", "o-2"});
  // Reading removes nothing.
  CHECK(h.transport().stream_bounds("audit")->next == 5);
  CHECK(h.stats("replay").handled == 5);
  CHECK(h.stats("follow").handled == 3);
}

TEST_CASE("a failure on a stream goes to the error queue at once, and the reading goes on") {
  bus::testing::harness h;
  std::map<std::string, int> attempts;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
      .stream_endpoint("projection", "audit", [&](bus::endpoint_builder& e) {
        e.handle<order_placed>([&](const order_placed& m) {
          ++attempts[m.order_id];
          if (m.order_id == "o-1")
            throw std::runtime_error("projection table locked");
        });
      });
  h.start(b);
  append(h, "audit", 0, 3);
  h.advance_until_idle();
  CHECK(attempts == std::map<std::string, int>{{"o-0", 1}, {"o-1", 1}, {"o-2", 1}});
  auto failed = h.error_queue("projection");
  REQUIRE(failed.size() == 1);
  CHECK(h.events_of(event_kind::immediate_retry).empty());
  CHECK(h.events_of(event_kind::redelivery_scheduled).empty());
  CHECK(h.events_of(event_kind::dead_lettered).size() == 1);
  CHECK(h.stats("projection").handled == 2);
  CHECK(failed[0]->headers.find(bus::header::fault_stream_offset)
        == std::optional<std::string_view>("1"));
}

TEST_CASE("the page does not replay a message read from a stream into the stream") {
  bus::testing::harness h;
  bool locked = true;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
      .stream_endpoint("projection", "audit", [&](bus::endpoint_builder& e) {
        e.handle<order_placed>([&](const order_placed&) {
          if (locked)
            throw std::runtime_error("projection table locked");
        });
      });
  h.start(b);
  append(h, "audit", 0, 1);
  h.advance_until_idle();
  REQUIRE(h.error_queue("projection").size() == 1);
  locked = false;

  auto* page_access = h.transport().error_queues();
  REQUIRE(page_access != nullptr);
  auto replayed = page_access->replay(
    "projection_error", [](const bus::failed_message&) { return true; }, "audit",
    std::chrono::system_clock::now());
  REQUIRE_FALSE(replayed);
  CHECK_THAT(replayed.error().message, Catch::Contains("replayed 0 of 1")
                                         && Catch::Contains("read from stream 'audit' at offset 0"));
  // It keeps its place, and the stream was not appended to.
  CHECK(h.error_queue("projection").size() == 1);
  h.advance_until_idle();
  CHECK(h.stats("projection").handled == 0);
  CHECK(h.stats("projection").stream_offset == 0);
}

TEST_CASE("a custom policy that asks a stream endpoint for a retry ends the message in fault") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
      .stream_endpoint("projection", "audit", [&](bus::endpoint_builder& e) {
        e.recoverability_policy([](const bus::recoverability_config&, const bus::error_context&,
                                   bus::random_source) -> bus::action {
           return bus::delayed_retry{1min, {}};
         }).handle<order_placed>([&](const order_placed&) { throw std::runtime_error("boom"); });
      });
  h.start(b);
  append(h, "audit", 0, 1);
  h.advance_until_idle();
  REQUIRE(h.error_queue("projection").size() == 1);
  CHECK(h.events_of(event_kind::redelivery_scheduled).empty());
  // Its reason says why in a stream's words, not a transport's.
  auto reason = std::string(*h.error_queue("projection")[0]->headers.find(bus::header::fault_reason));
  CHECK_THAT(reason, Catch::Contains("cannot be carried out: a message read from a stream may be "
                                     "neither retried nor redelivered"));
}

TEST_CASE("a send scheduled to a stream is refused at the call") {
  bus::testing::harness h;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .stream_endpoint("projection", "audit", [&](bus::endpoint_builder& e) {
      e.handle<order_placed>([](const order_placed&) {});
    });
  auto& bus = h.start(b);
  auto later = bus.send_after(1min, "audit", order_placed{"o-1", 1});
  REQUIRE_FALSE(later);
  CHECK(later.error().code == bus::errc::invalid_configuration);
  CHECK_THAT(later.error().message, Catch::Contains("'audit' is a stream"));
  h.advance_until_idle();
  CHECK(h.transport().stream_bounds("audit")->next == 0);
}

TEST_CASE("a stream endpoint shows its offset and lag, and saves the offset as it moves") {
  bus::testing::harness h;
  std::map<std::string, bus::endpoint_stats> while_handling;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .stream_endpoint("projection", "audit", [&](bus::endpoint_builder& e) {
      e.handle<order_placed>([&](const order_placed& m) {
        while_handling[m.order_id] = *h.bus().stats("projection");
        if (m.order_id == "o-3")
          throw std::runtime_error("projection table locked");
      });
    });
  h.start(b);
  CHECK(h.stats("projection").stream_offset == -1);
  CHECK(saved_offset(h, "audit", "projection").empty());
  append(h, "audit", 0, 5);
  h.run();
  // While o-2 runs, o-0 and o-1 are settled, and o-2 to o-4 are behind.
  CHECK(while_handling["o-2"].stream_offset == 1);
  CHECK(while_handling["o-2"].stream_lag == 3);
  // A message on the error queue is settled as one handled is.
  CHECK(h.error_queue("projection").size() == 1);
  CHECK(h.stats("projection").stream_offset == 4);
  CHECK(h.stats("projection").stream_lag == 0);
  CHECK(saved_offset(h, "audit", "projection") == "4");
}

TEST_CASE("a stream endpoint started again resumes after its saved offset, skipping none and "
          "reading none twice") {
  bus::testing::harness h;
  std::vector<std::string> first_run, second_run;
  auto reader = [](std::vector<std::string>& seen) {
    return [&seen](bus::endpoint_builder& e) {
      e.start_from(bus::stream_start::first()).handle<order_placed>([&seen](const order_placed& m) {
        seen.push_back(m.order_id);
      });
    };
  };
  auto b = h.builder();
  b.message<order_placed>("order_placed").stream_endpoint("projection", "audit", reader(first_run));
  h.start(b);
  append(h, "audit", 0, 3);
  h.run();
  h.stop();
  // Appended while nobody reads: another process's.
  for (int i = 3; i < 5; ++i)
    REQUIRE(h.transport().send("audit", order_text("o-" + std::to_string(i))));

  auto again = h.builder();
  again.message<order_placed>("order_placed")
    .stream_endpoint("projection", "audit", reader(second_run));
  h.start(again);
  append(h, "audit", 5, 6);
  h.run();
  CHECK(first_run == std::vector<std::string>{"o-0", "o-1", "o-2"});
  // start_from(first) is for the first start only: the saved offset wins.
  CHECK(second_run == std::vector<std::string>{"o-3", "o-4", "o-5"});
  CHECK(h.stats("projection").stream_offset == 5);
  CHECK(h.logged("endpoint 'projection' resumes reading the stream 'audit' after offset 2"));
}

TEST_CASE("a stream endpoint whose offset file holds no offset does not start, naming the file") {
  bus::testing::harness h;
  std::filesystem::create_directories(h.stream_offset_directory());
  std::ofstream(std::filesystem::path(h.stream_offset_directory()) / "audit.projection.offset")
    << "forty-two\n";
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .stream_endpoint("projection", "audit", [](bus::endpoint_builder& e) {
      e.handle<order_placed>([](const order_placed&) {});
    });
  CHECK_THROWS_WITH(h.start(b), Catch::Contains("audit.projection.offset' should hold a stream "
                                                "offset, and holds 'forty-two'; remove it"));
}

TEST_CASE("a handler on a stream endpoint cannot defer to itself or to a stream") {
  bus::testing::harness h;
  std::vector<bus::result<std::string>> deferred;
  auto b = h.builder();
  b.message<order_placed>("order_placed")
    .stream_endpoint("projection", "audit", [&](bus::endpoint_builder& e) {
      e.handle<order_placed>([&](const order_placed& m, bus::handler_context& ctx) {
        deferred.push_back(ctx.defer(1min, m));
        deferred.push_back(ctx.defer(1min, "audit", m));
        // Sending to a stream now is appending, which is allowed.
        deferred.push_back(ctx.send("billing", m));
      });
    })
    .endpoint("billing", [&](bus::endpoint_builder& e) {
      e.handle<order_placed>([&](const order_placed& m, bus::handler_context& ctx) {
        deferred.push_back(ctx.defer(1min, "audit", m));
      });
    });
  h.start(b);
  append(h, "audit", 0, 1);
  h.advance_until_idle();
  REQUIRE(deferred.size() == 4);
  REQUIRE_FALSE(deferred[0]);
  CHECK_THAT(deferred[0].error().message,
             Catch::Contains("endpoint 'projection' reads a stream: a message cannot be deferred"));
  REQUIRE_FALSE(deferred[1]);
  CHECK_THAT(deferred[1].error().message,
             Catch::Contains("'audit' is a stream: a message cannot be deferred to it"));
  CHECK(deferred[2]);
  // From a queue's endpoint too.
  REQUIRE_FALSE(deferred[3]);
  CHECK(deferred[3].error().code == bus::errc::invalid_configuration);
  CHECK(h.transport().stream_bounds("audit")->next == 1);
}
