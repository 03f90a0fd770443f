// Delayed delivery held by the broker in binary delay levels: on time, in
// delay order rather than send order, to the right queue only, and still
// there when the process that scheduled it is killed.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "broker.hpp"
#include "delay_levels.hpp"
#include "raw_client.hpp"
#include "timed_collector.hpp"

using namespace std::chrono_literals;
using bus::test::timed_collector;

namespace {

bus::envelope payment_due_message(std::string id) {
  bus::envelope env;
  env.message_id = std::move(id);
  env.message_type = "payment_due";
  env.headers.set("tenant", "acme");
  env.body = bus::message_body::text(R"({"invoice":"i-1"})");
  return env;
}

std::vector<std::string> ids(const std::vector<timed_collector::arrival>& arrivals) {
  std::vector<std::string> out;
  for (const auto& a : arrivals)
    out.push_back(a.item.message->message_id);
  return out;
}

} // namespace

TEST_CASE("a delayed message arrives after its delay, and a shorter one sent later overtakes it",
          "[rabbitmq][delayed]") {
  auto t = bus::test::connect_transport(); // 100 ms units
  auto q = bus::test::unique_name("delayed");
  REQUIRE(t->declare_queue(q));
  timed_collector got;
  REQUIRE(t->consume(q, 10, got.handler()));

  auto long_sent = timed_collector::clock::now();
  REQUIRE(t->send_delayed(q, payment_due_message("long"), 1500ms));
  auto short_sent = timed_collector::clock::now();
  REQUIRE(t->send_delayed(q, payment_due_message("short"), 400ms));

  REQUIRE(got.wait_for(2, 10s));
  auto arrivals = got.arrivals();
  CHECK(ids(arrivals) == std::vector<std::string>{"short", "long"});
  CHECK(arrivals[0].at - short_sent >= 400ms);
  CHECK(arrivals[1].at - long_sent >= 1500ms);
  // Held, not lost in the levels: it comes whole, without the broker's
  // dead-letter bookkeeping (x-death) among its headers.
  const auto& env = *arrivals[1].item.message;
  CHECK(env.message_type == "payment_due");
  CHECK(env.headers.find("tenant") == std::optional<std::string_view>("acme"));
  CHECK_FALSE(env.headers.contains("x-death"));
  for (const auto& a : arrivals)
    CHECK(t->ack(a.item.tag));
}

TEST_CASE("a delayed message reaches its own queue only, even when queue names nest",
          "[rabbitmq][delayed]") {
  auto t = bus::test::connect_transport();
  auto billing = bus::test::unique_name("billing");
  auto billing_audit = billing + ".audit"; // a name that extends the other
  REQUIRE(t->declare_queue(billing));
  REQUIRE(t->declare_queue(billing_audit));
  timed_collector got;
  REQUIRE(t->consume(billing, 10, got.handler(0)));
  REQUIRE(t->consume(billing_audit, 10, got.handler(1)));
  REQUIRE(t->send_delayed(billing, payment_due_message("to-billing"), 300ms));
  REQUIRE(t->send_delayed(billing_audit, payment_due_message("to-audit"), 200ms));
  REQUIRE(got.wait_for(2, 10s));
  for (const auto& a : got.arrivals()) {
    CHECK(a.item.message->message_id == (a.consumer == 0 ? "to-billing" : "to-audit"));
    CHECK(t->ack(a.item.tag));
  }
  CHECK(got.size() == 2);
}

TEST_CASE("a delay of zero is a plain send, and delays the levels cannot hold are refused",
          "[rabbitmq][delayed]") {
  auto t = bus::test::connect_transport();
  auto q = bus::test::unique_name("bounds");
  REQUIRE(t->declare_queue(q));
  REQUIRE(t->send_delayed(q, payment_due_message("now"), 0ms));
  CHECK(t->message_count(q).value() == 1);

  auto too_long =
      t->send_delayed(q, payment_due_message("later"), 26s); // 8 levels of 100 ms hold 25.5 s
  REQUIRE_FALSE(too_long);
  CHECK(too_long.error().code == bus::errc::invalid_configuration);
  CHECK_THAT(too_long.error().message, Catch::Contains("at most 00:00:25.500"));

  auto nowhere =
      t->send_delayed(bus::test::unique_name("never_declared"), payment_due_message("lost"), 1s);
  REQUIRE_FALSE(nowhere);
  CHECK(nowhere.error().code == bus::errc::unknown_queue);

  auto wildcard = t->send_delayed(q + ".*", payment_due_message("wild"), 1s);
  REQUIRE_FALSE(wildcard);
  CHECK_THAT(wildcard.error().message, Catch::Contains("wildcard"));
}

TEST_CASE("delayed messages survive the death of the process that scheduled them",
          "[rabbitmq][delayed]") {
  auto settings = bus::test::test_settings(); // read before fork: the child uses no Catch
  auto q = bus::test::unique_name("survivor");
  {
    auto t = bus::test::connect_transport(settings);
    REQUIRE(t->declare_queue(q));
  } // its threads are gone before fork()

  auto scheduled = timed_collector::clock::now();
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The scheduling process: it holds nothing itself, and dies without
    // any chance to clean up.
    auto t = bus::rabbitmq_transport::connect(settings);
    if (!t)
      ::_exit(2);
    const std::pair<const char*, std::chrono::milliseconds> plan[] = {
        {"third", 900ms}, {"first", 300ms}, {"second", 600ms}};
    for (const auto& [id, delay] : plan)
      if (!(*t)->send_delayed(q, payment_due_message(id), delay))
        ::_exit(3);
    ::kill(::getpid(), SIGKILL);
    ::_exit(4); // not reached
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGKILL);

  auto t = bus::test::connect_transport(settings);
  timed_collector got;
  REQUIRE(t->consume(q, 10, got.handler()));
  REQUIRE(got.wait_for(3, 10s));
  auto arrivals = got.arrivals();
  CHECK(ids(arrivals) == std::vector<std::string>{"first", "second", "third"});
  CHECK(arrivals[0].at - scheduled >= 300ms);
  CHECK(arrivals[2].at - scheduled >= 900ms);
  for (const auto& a : arrivals)
    CHECK(t->ack(a.item.tag));
}

// Level queues are placed by the broker (x-queue-leader-locator=balanced),
// so a node's death moves the leaders of a share of them only; a level an
// older bus declared without a placement is left as it is and still works.
TEST_CASE("delay levels are placed balanced, and a level declared without a placement still "
          "holds and forwards",
          "[rabbitmq][delayed]") {
  auto settings = bus::test::test_settings();
  settings.delay_unit = 50ms; // levels of their own: names carry the unit and the count
  settings.delay_levels = 3;
  bus::detail::delay_levels levels(settings.delay_levels, settings.delay_unit);
  bus::test::raw_declare_unplaced_level(settings, levels.level_name(0), levels.level_ttl_ms(0),
                                        levels.next_exchange(0));
  auto t = bus::test::connect_transport(settings);
  auto q = bus::test::unique_name("placed");
  REQUIRE(t->declare_queue(q));
  timed_collector got;
  REQUIRE(t->consume(q, 10, got.handler()));
  auto sent =
      t->send_delayed(q, payment_due_message("through-both"), 150ms); // 3 units: levels 1 and 0
  INFO((sent ? std::string("sent") : sent.error().message));
  REQUIRE(sent);
  REQUIRE(got.wait_for(1, 10s));

  std::map<std::string, std::string> arguments;
  for (const auto& row : bus::test::list_queues("arguments")) {
    std::string text;
    for (std::size_t i = 1; i < row.size(); ++i)
      text += row[i] + " ";
    arguments[row[0]] = text;
  }
  INFO("level 0: " << arguments[levels.level_name(0)]);
  INFO("level 1: " << arguments[levels.level_name(1)]);
  CHECK_THAT(arguments[levels.level_name(1)],
             Catch::Contains("x-queue-leader-locator") && Catch::Contains("balanced"));
  CHECK_THAT(arguments[levels.level_name(0)], !Catch::Contains("x-queue-leader-locator"));
  t->cancel(q);
}
